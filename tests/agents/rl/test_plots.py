"""The learning curve (agents.rl.plots)."""

from __future__ import annotations

import pytest

from agents.rl import binned_curve


def test_binned_learning_curve():
    episodes = [{"timestep": float(t), "f1_gain": g, "f1": 0.5 + g, "length": 10.0}
                for t, g in [(10, 0.0), (20, 0.1), (60, 0.2), (100, 0.4)]]
    curve = binned_curve(episodes, bins=2)
    assert [c["timestep"] for c in curve] == [50.0, 100.0]
    assert curve[0]["f1_gain"] == pytest.approx(0.05) and curve[0]["episodes"] == 2
    assert curve[1]["f1_gain"] == pytest.approx(0.3)
    assert binned_curve([]) == []
