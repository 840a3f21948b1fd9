"""The expected-F1 decision rule: which pairs to keep as edges, given each pair's probability
of being a true edge (Lipton, Elkan & Naryanaswamy 2014: select a pair only when its
probability clears F1*/2)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["RepairPlan", "adjacency_f1", "expected_f1_selection", "repair_plan"]


def expected_f1_selection(probabilities: Sequence[float]) -> tuple[np.ndarray, float, float]:
    """The edge set maximising the expected adjacency F1, given each pair's probability of
    being a true edge: (selected mask, the expected F1*, the threshold F1*/2)."""
    q = np.clip(np.asarray(probabilities, dtype=np.float64), 0.0, 1.0)
    if q.size == 0:
        return np.zeros(0, dtype=bool), 1.0, 0.5
    order = np.argsort(-q, kind="stable")
    total = float(q.sum())
    cumulative = np.cumsum(q[order])
    sizes = np.arange(1, q.size + 1)
    expected = 2 * cumulative / (sizes + total)
    best = int(np.argmax(expected))
    f1_star = float(expected[best])
    if total == 0:  # no pair can be an edge: the empty graph
        return np.zeros(q.size, dtype=bool), 0.0, 0.0
    selected = np.zeros(q.size, dtype=bool)
    selected[order[:best + 1]] = True
    return selected, f1_star, f1_star / 2


def adjacency_f1(predicted: np.ndarray, truth: np.ndarray) -> float:
    """2TP / (2TP + FP + FN) over pairs (1 when both are empty), as ``metrics.score_graph``."""
    predicted, truth = np.asarray(predicted, bool), np.asarray(truth, bool)
    tp = int(np.sum(predicted & truth))
    denominator = 2 * tp + int(np.sum(predicted & ~truth)) + int(np.sum(~predicted & truth))
    return 1.0 if denominator == 0 else 2 * tp / denominator


@dataclass
class RepairPlan:
    """The edits that turn a starting graph's skeleton into the expected-F1 selection: add each
    selected pair the start lacks (undirected), remove each start edge not selected, most
    confident first (the largest |q − F1*/2|); ``decisions`` records every pair's q."""

    edits: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    expected_f1: float = 1.0
    threshold: float = 0.5


def repair_plan(pairs: Sequence[tuple[str, str]], kept: Sequence[bool],
                probabilities: Sequence[float]) -> RepairPlan:
    """Plan the edits of a guided repair policy (``learned-repair``, ``amortized-repair``):
    ``pairs`` names every candidate pair, ``kept`` says whether the start has it, and
    ``probabilities`` its q = P(true edge)."""
    q = np.asarray(probabilities, dtype=np.float64)
    selected, f1_star, threshold = expected_f1_selection(q)
    plan = RepairPlan(expected_f1=f1_star, threshold=threshold)
    ranked = []
    for (x_name, y_name), was_kept, probability, chosen in zip(pairs, kept, q, selected,
                                                               strict=True):
        if chosen and not was_kept:
            ranked.append((abs(probability - threshold), {
                "tool": "add_edge", "args": {"x": x_name, "y": y_name, "directed": False}}))
        elif was_kept and not chosen:
            ranked.append((abs(probability - threshold), {
                "tool": "remove_edge", "args": {"x": x_name, "y": y_name}}))
        plan.decisions.append({"pair": [x_name, y_name], "kept": bool(was_kept),
                               "probability": float(probability), "selected": bool(chosen)})
    ranked.sort(key=lambda item: -item[0])
    plan.edits = [edit for _, edit in ranked]
    return plan
