"""The learning curve: training episodes binned by time step, drawn with the test gain's
paired interval."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["binned_curve", "plot_learning_curve"]


def binned_curve(episodes: Sequence[dict[str, float]], bins: int = 20) -> list[dict[str, float]]:
    """Mean F1 gain, F1 and length of training episodes in ``bins`` equal time-step windows."""
    if not episodes:
        return []
    steps = np.array([e["timestep"] for e in episodes])
    edges = np.linspace(0.0, steps.max(), bins + 1)
    out = []
    for low, high in zip(edges[:-1], edges[1:]):
        inside = [e for e, s in zip(episodes, steps) if low < s <= high or (low == 0 and s == 0)]
        if inside:
            out.append({"timestep": float(high), "episodes": len(inside),
                        "f1_gain": float(np.mean([e["f1_gain"] for e in inside])),
                        "f1": float(np.mean([e["f1"] for e in inside])),
                        "length": float(np.mean([e["length"] for e in inside]))})
    return out


def plot_learning_curve(curve: Sequence[dict[str, float]], path: str | os.PathLike,
                        title: str = "", test_gain: Any = None) -> Path:
    """Draw the binned training F1 gain (and the test gain's interval, if given) as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.0), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    if curve:
        steps = [c["timestep"] for c in curve]
        axes.plot(steps, [c["f1_gain"] for c in curve], marker="o", ms=3,
                  label="training episodes: F1 − guided start's F1")
    axes.axhline(0.0, color="0.5", lw=0.8)
    if test_gain is not None:
        x = curve[-1]["timestep"] if curve else 0.0
        axes.errorbar([x], [test_gain.mean], yerr=[[test_gain.mean - test_gain.low],
                                                   [test_gain.high - test_gain.mean]],
                      fmt="s", color="C3", capsize=4, label="test: paired 95% interval")
    axes.set_xlabel("environment steps")
    axes.set_ylabel("adjacency F1 gain over the guided start")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path)
    return path
