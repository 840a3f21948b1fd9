"""The expected-F1 decision rule: which pairs to keep as edges, given each pair's probability
of being a true edge (Lipton, Elkan & Naryanaswamy 2014: select a pair only when its
probability clears F1*/2)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["adjacency_f1", "expected_f1_selection"]


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
