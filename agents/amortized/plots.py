"""The learning curve of the grid model: dev gain over PC-KCI against training instances."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot_curve"]


def plot_curve(points: Sequence[dict[str, Any]], path: str | os.PathLike) -> Path:
    """One line per family and one for all (mean F1 − F1(PC-KCI) on dev, with the pooled
    paired 95% interval as a band), x = training instances on a log scale."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.0, 4.2), dpi=110)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    sizes = [p["train_instances"] for p in points]
    families = [name for name in points[0]["dev"] if name != "all"]
    for family in families:
        axes.plot(sizes, [p["dev"][family]["delta_pc_kci"][0] for p in points], marker="o",
                  linewidth=1, markersize=3, label=family)
    pooled = [p["dev"]["all"]["delta_pc_kci"] for p in points]
    axes.plot(sizes, [v[0] for v in pooled], color="black", linewidth=2.2, marker="o",
              label="all (95% paired interval)")
    axes.fill_between(sizes, [v[1] for v in pooled], [v[2] for v in pooled], color="black",
                      alpha=0.12)
    oracle = points[-1]["dev"]["all"]["oracle"] - points[-1]["dev"]["all"]["pc_kci"]
    axes.axhline(oracle, color="grey", linestyle="--", linewidth=1,
                 label=f"ideal oracle, all (+{oracle:.3f})")
    axes.axhline(0.0, color="grey", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_xlabel("training instances (train split, all families)")
    axes.set_ylabel("dev F1 − F1(PC-KCI)")
    axes.set_title("Amortized model: gain on the dev split vs training data")
    axes.legend(fontsize=7, ncol=2, loc="upper left")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    out = Path(path)
    figure.savefig(out)
    return out
