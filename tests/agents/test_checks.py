"""Argument checks (agents.checks): what each accepts, and errors that name the option."""

from __future__ import annotations

import numpy as np
import pytest

from agents.checks import check_choice, check_int, check_probability, check_real
from heuresis_env.errors import HeuresisError, UnknownNameError


def test_integers_accept_numpy_and_refuse_booleans_floats_and_small_values():
    assert check_int("steps", np.int64(3)) == 3 and type(check_int("steps", np.int64(3))) is int
    assert check_int("subsample", 2, 2) == 2
    for bad in (True, 2.0, "3", 0):
        with pytest.raises(HeuresisError, match="steps must be an integer ≥ 1"):
            check_int("steps", bad)


def test_probabilities_respect_the_interval_asked_for():
    assert check_probability("alpha", 0.05) == 0.05
    assert check_probability("tau", 0, open_low=False, open_high=False) == 0.0
    assert check_probability("tau", 1, open_low=False, open_high=False) == 1.0
    with pytest.raises(HeuresisError, match=r"alpha must be in \(0, 1\)"):
        check_probability("alpha", 0.0)
    with pytest.raises(HeuresisError, match=r"wall_fraction must be in \(0, 1\]"):
        check_probability("wall_fraction", 1.5, open_high=False)
    for bad in (float("nan"), True, "0.1"):
        with pytest.raises(HeuresisError, match="alpha must be a number"):
            check_probability("alpha", bad)


def test_reals_and_choices():
    assert check_real("gap_threshold", -0.5) == -0.5
    with pytest.raises(HeuresisError, match="gap_threshold must be a finite number"):
        check_real("gap_threshold", float("inf"))
    check_choice("RL algorithm", "ppo", ("maskable_ppo", "ppo"))
    with pytest.raises(UnknownNameError, match="maskable_ppo"):
        check_choice("RL algorithm", "dqn", ("maskable_ppo", "ppo"))
