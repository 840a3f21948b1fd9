"""Rendering an episode: as text for ``render_mode="ansi"`` and ``"human"``, and drawn for
``"rgb_array"`` (nodes on a circle, marks at the edge ends)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from heuresis_env.env.toolbox.graph_tools import graph_summary
from heuresis_env.graphs import EdgeMark, Graph


def render_text(heading: str, graph: Graph, last_text: str,
                final_info: Mapping[str, Any] | None) -> str:
    """The text rendering: ``heading``, the working graph, the last output, and the scores once
    the episode is over (``final_info``, None before)."""
    lines = [heading, f"Working graph: {graph_summary(graph)}", graph.to_text()]
    if last_text:
        lines += ["", "Last output:", last_text]
    if final_info is not None:
        scores = final_info["scores"]
        lines += ["", f"Episode over ({final_info['termination_reason']}): " +
                  ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in scores.items())]
        if not final_info["ground_truth"]:
            lines.append("No ground truth: the submitted graph is not scored.")
    return "\n".join(lines) + "\n"


def draw_episode(working_graph: Graph, truth: Graph | None) -> np.ndarray:
    """The working graph drawn, beside the true DAG once the episode is over (``truth``)."""
    panels = [("working graph", working_graph)]
    if truth is not None:
        panels.append(("true DAG", truth))
    return draw_graphs(panels)


def draw_graphs(panels: Sequence[tuple[str, Graph]], size: float = 4.0,
                dpi: int = 80) -> np.ndarray:
    """Draw graphs side by side (nodes on a circle, marks at edge ends) as an RGB array."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch

    figure = Figure(figsize=(size * len(panels), size), dpi=dpi)
    canvas = FigureCanvasAgg(figure)
    for k, (title, graph) in enumerate(panels):
        axes = figure.add_subplot(1, len(panels), k + 1)
        d = graph.d
        angles = np.pi / 2 - 2 * np.pi * np.arange(d) / d
        xy = np.column_stack([np.cos(angles), np.sin(angles)])
        styles = {(EdgeMark.TAIL, EdgeMark.ARROW): "-|>", (EdgeMark.ARROW, EdgeMark.TAIL): "<|-",
                  (EdgeMark.ARROW, EdgeMark.ARROW): "<|-|>"}
        for edge in graph.edges():
            i, j = graph.index(edge.u), graph.index(edge.v)
            style = styles.get((edge.mark_u, edge.mark_v), "-")
            axes.add_patch(FancyArrowPatch(xy[i], xy[j], arrowstyle=style, mutation_scale=14,
                                           shrinkA=11, shrinkB=11, color="0.2", lw=1.3))
            for node, other, mark in ((i, j, edge.mark_u), (j, i, edge.mark_v)):
                if mark == EdgeMark.CIRCLE:
                    point = xy[node] + 0.13 * (xy[other] - xy[node]) / np.linalg.norm(
                        xy[other] - xy[node])
                    axes.plot(*point, marker="o", markersize=5, markerfacecolor="white",
                              markeredgecolor="0.2")
        axes.scatter(xy[:, 0], xy[:, 1], s=420, c="#dbe9f6", edgecolors="#2b5d8a", zorder=3)
        for node, name in enumerate(graph.names):
            axes.text(float(xy[node, 0]), float(xy[node, 1]), name, ha="center", va="center", fontsize=8, zorder=4)
        axes.set_title(f"{title} ({graph.n_edges()} edges)", fontsize=10)
        axes.set_xlim(-1.3, 1.3)
        axes.set_ylim(-1.3, 1.3)
        axes.set_aspect("equal")
        axes.axis("off")
    canvas.draw()
    return np.array(canvas.buffer_rgba())[..., :3].copy()
