"""From a table to a graph with a directed model: its edge probabilities, and the decoding
into a graph with no directed cycle.

:func:`edge_probabilities` computes the instance's pair statistics, reads ``tta`` random row
subsamples (test-time augmentation: the model reads r rows at a time; the probabilities are
averaged over the subsamples) and returns P(i → j) for every ordered pair.

:func:`decode` turns them into a graph:

- the **skeleton** by one of two rules — ``"f1"``, the expected-F1 rule (the pairs of largest
  P(adjacent) up to the size that maximises 2 Σq / (|E| + Σq), Lipton et al. 2014; the rule
  of adjacency F1, the benchmark's main score), or ``"shd"``, each pair's most probable class
  (an edge when P(none) is below P(i → j) or P(j → i): the rule that minimises the expected
  SHD pair by pair);
- the **orientation**: each selected pair along its more probable direction, most confident
  first, reversed when that direction would close a directed cycle (one of the two
  directions always fits: both closing a cycle would mean a cycle already) — so the result
  is a DAG; with ``orient="cpdag"`` a pair whose two directions are within ``margin`` of each
  other (relative) stays undirected, a partly directed graph with no directed cycle.

P(adjacent) is P(i → j) + P(j → i) for the three-class model (the classes exclude each
other) and 1 − (1 − P(i → j))(1 − P(j → i)) for AVICI's independent Bernoullis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from agents.amortized.directed import AviciModel, DirectedModel, cell_inputs, row_inputs
from agents.amortized.evaluation import select_edges
from heuresis_env.data import data_sha256
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import (
    STATISTICS_NODE_FEATURE_NAMES,
    STATISTICS_PAIR_FEATURE_NAMES,
    compute_pair_statistics,
    pair_statistics,
)
from heuresis_env.graphs import Graph, has_directed_cycle

__all__ = ["Decoded", "adjacency_probabilities", "decode", "edge_probabilities"]

SKELETON_RULES = ("f1", "shd")
ORIENTATIONS = ("dag", "cpdag")


def edge_probabilities(model: DirectedModel | AviciModel, data: np.ndarray,
                       names: Sequence[str], sha256: str | None = None, tta: int = 4,
                       seed: int = 0) -> np.ndarray:
    """(d, d) P(i → j) of one table (statistics cached by ``sha256`` when given)."""
    data = np.asarray(data, dtype=np.float64)
    n, d = data.shape
    if d < 2:
        raise HeuresisError(f"a graph needs at least 2 variables, got {d}")
    if isinstance(model, DirectedModel) and model.config.statistics:
        statistics = (pair_statistics(data, names, sha256, searches=False) if sha256
                      else compute_pair_statistics(data, names, data_sha256(data),
                                                   searches=False))
        cells = torch.from_numpy(cell_inputs(statistics.pairs, statistics.nodes))
    else:
        cells = torch.from_numpy(cell_inputs(np.zeros((d, d, len(STATISTICS_PAIR_FEATURE_NAMES))),
                                             np.zeros((d, len(STATISTICS_NODE_FEATURE_NAMES)))))
    reads_rows = isinstance(model, AviciModel) or model.config.row_layers > 0
    rows = int(model.config.rows)
    rng = np.random.default_rng(seed)
    total = np.zeros((d, d))
    draws = max(int(tta), 1) if reads_rows and n > rows else 1
    model.eval()
    for _ in range(draws):
        chosen = np.sort(rng.permutation(n)[:rows]) if n > rows else np.arange(n)
        row_in = torch.from_numpy(row_inputs(data[chosen])) if reads_rows else None
        total += model.directed_probabilities(cells, row_in)[0]
    return total / draws


def adjacency_probabilities(p: np.ndarray, exclusive: bool = True) -> np.ndarray:
    """P(i and j adjacent) from P(i → j): the sum for exclusive classes, else 1 − Π(1 − p)."""
    q = p + p.T if exclusive else 1.0 - (1.0 - p) * (1.0 - p.T)
    q = np.clip(q, 0.0, 1.0)
    np.fill_diagonal(q, 0.0)
    return q


@dataclass(frozen=True)
class Decoded:
    """A decoded graph: ``directed[i, j]`` for i → j, ``undirected`` symmetric."""

    directed: np.ndarray
    undirected: np.ndarray
    expected_f1: float

    def graph(self, names: Sequence[str]) -> Graph:
        return Graph.from_cpdag_matrix(self.directed, self.undirected, names)

    @property
    def skeleton(self) -> np.ndarray:
        return self.directed | self.directed.T | self.undirected


def decode(p: np.ndarray, skeleton: str = "f1", orient: str = "dag", margin: float = 0.2,
           exclusive: bool = True) -> Decoded:
    """The graph of P(i → j) ``p`` (the module docstring); never a directed cycle."""
    if skeleton not in SKELETON_RULES:
        raise HeuresisError(f"skeleton rule must be one of {SKELETON_RULES}, got {skeleton!r}")
    if orient not in ORIENTATIONS:
        raise HeuresisError(f"orientation must be one of {ORIENTATIONS}, got {orient!r}")
    p = np.asarray(p, dtype=np.float64)
    d = p.shape[0]
    q = adjacency_probabilities(p, exclusive)
    if skeleton == "f1":
        selected, expected = select_edges(q)
    else:
        none = 1.0 - q
        selected = (np.maximum(p, p.T) > none) & ~np.eye(d, dtype=bool)
        expected = float("nan")
    directed = np.zeros((d, d), dtype=bool)
    undirected = np.zeros((d, d), dtype=bool)
    pairs = [(i, j) for i in range(d) for j in range(i + 1, d) if selected[i, j]]
    pairs.sort(key=lambda ij: -max(p[ij], p[ij[::-1]]))
    for i, j in pairs:
        forward, backward = p[i, j], p[j, i]
        if orient == "cpdag" and abs(forward - backward) <= margin * max(forward + backward,
                                                                          1e-12):
            undirected[i, j] = undirected[j, i] = True
            continue
        a, b = (i, j) if forward >= backward else (j, i)
        directed[a, b] = True
        if has_directed_cycle(directed):
            directed[a, b] = False
            directed[b, a] = True
    return Decoded(directed, undirected, float(expected))
