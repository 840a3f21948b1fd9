"""From a table to a graph with a directed model: its edge probabilities, and the decoding
into a graph with no directed cycle.

:func:`edge_probabilities` computes the instance's pair statistics (and, for a model that
reads it, the local screen of its first 512 rows: :mod:`heuresis_env.evidence.local_screen`),
reads ``tta`` random row subsamples (test-time augmentation: the model reads r rows at a time; the probabilities are
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
from typing import Any

import numpy as np
import torch

from agents.amortized.directed import AviciModel, DirectedModel, cell_inputs, row_inputs
from agents.amortized.evaluation import select_edges
from heuresis_env.data import data_sha256
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import (
    STATISTICS_NODE_FEATURE_NAMES,
    STATISTICS_PAIR_FEATURE_NAMES,
    local_screen,
    pair_statistics,
)
from heuresis_env.graphs import Graph, has_directed_cycle

__all__ = ["Decoded", "Discovery", "adjacency_probabilities", "blend_adjacency",
           "check_blend_weight", "decode", "discover", "edge_probabilities",
           "ensemble_probabilities",
           "probabilities_from_rows"]

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
    statistics = None
    if isinstance(model, DirectedModel) and model.config.statistics:
        computed = pair_statistics(data, names, sha256 or data_sha256(data), searches=False)
        statistics = {"pair_features": STATISTICS_PAIR_FEATURE_NAMES,
                      "node_features": STATISTICS_NODE_FEATURE_NAMES,
                      "pairs": computed.pairs, "nodes": computed.nodes}
    return probabilities_from_rows(model, data, names, statistics, tta, seed)


def ensemble_probabilities(models: Sequence[DirectedModel | AviciModel], data: np.ndarray,
                           names: Sequence[str], sha256: str | None = None, tta: int = 4,
                           seed: int = 0) -> np.ndarray:
    """(d, d) the mean of the models' P(i → j) — a seed ensemble (each member averaged over its
    ``tta`` row subsamples first). The members share one architecture, so the mean of
    directed models is again one distribution over (none, i → j, j → i) per pair."""
    if not models:
        raise HeuresisError("an ensemble needs at least one model")
    if len({model.architecture for model in models}) > 1:
        raise HeuresisError("an ensemble's models must share one architecture, got "
                            f"{sorted({model.architecture for model in models})}")
    return np.mean([edge_probabilities(model, data, names, sha256, tta, seed)
                    for model in models], axis=0)


def probabilities_from_rows(model: DirectedModel | AviciModel, rows: np.ndarray,
                            names: Sequence[str], statistics: dict[str, Any] | None,
                            tta: int = 4, seed: int = 0) -> np.ndarray:
    """(d, d) P(i → j) from what an episode's tools return: rows (``sample_rows``'s data) and
    the statistics (``pair_statistics``'s data: ``pairs`` and ``nodes`` with their feature
    lists, checked against the model's)."""
    rows = np.asarray(rows, dtype=np.float64)
    n, d = rows.shape
    if isinstance(model, DirectedModel) and model.config.statistics:
        if statistics is None:
            raise HeuresisError("this model reads the pair statistics: pass them")
        if (tuple(statistics.get("pair_features", ())) != STATISTICS_PAIR_FEATURE_NAMES
                or tuple(statistics.get("node_features", ())) != STATISTICS_NODE_FEATURE_NAMES):
            raise HeuresisError("the pair statistics' features differ from the model's")
        pairs = np.asarray(statistics["pairs"], dtype=np.float32)
        nodes = np.asarray(statistics["nodes"], dtype=np.float32)
    else:
        pairs = np.zeros((d, d, len(STATISTICS_PAIR_FEATURE_NAMES)), dtype=np.float32)
        nodes = np.zeros((d, len(STATISTICS_NODE_FEATURE_NAMES)), dtype=np.float32)
    if pairs.shape[:2] != (d, d) or nodes.shape[0] != d:
        raise HeuresisError(f"statistics of {pairs.shape[0]} variables for rows of {d}")
    local = isinstance(model, DirectedModel) and model.reads_screen
    if local:  # from the rows themselves, as the stream computes it from its stored rows
        pairs = np.concatenate([pairs, local_screen(rows)], axis=-1)
    return _average(model, torch.from_numpy(cell_inputs(pairs, nodes, local)), rows, tta, seed)


def _average(model: DirectedModel | AviciModel, cells: torch.Tensor, data: np.ndarray,
             tta: int, seed: int) -> np.ndarray:
    """P(i → j) averaged over ``tta`` random subsamples of the model's row count."""
    n, d = data.shape
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


def check_blend_weight(weight: float) -> float:
    """A blend weight, checked: a number in [0, 1]."""
    if not 0.0 <= float(weight) <= 1.0:
        raise HeuresisError(f"a blend weight must lie in [0, 1], got {weight}")
    return float(weight)


def blend_adjacency(first: np.ndarray, second: np.ndarray, weight: float) -> np.ndarray:
    """``weight`` · ``first`` + (1 − ``weight``) · ``second``: two models' P(adjacent) averaged
    (a mixture stays a probability, so the expected-F1 rule applies to it); weight in [0, 1]."""
    weight = check_blend_weight(weight)
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    if first.shape != second.shape:
        raise HeuresisError(f"P(adjacent) matrices of shapes {first.shape} and {second.shape}")
    q = weight * first + (1.0 - weight) * second
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
           exclusive: bool = True, given: np.ndarray | None = None) -> Decoded:
    """The graph of P(i → j) ``p`` (the module docstring); never a directed cycle. ``given``
    (a symmetric boolean matrix) fixes the skeleton instead of the rule — e.g. the first
    model's adjacency decisions — and the model only orients it."""
    if skeleton not in SKELETON_RULES:
        raise HeuresisError(f"skeleton rule must be one of {SKELETON_RULES}, got {skeleton!r}")
    if orient not in ORIENTATIONS:
        raise HeuresisError(f"orientation must be one of {ORIENTATIONS}, got {orient!r}")
    p = np.asarray(p, dtype=np.float64)
    d = p.shape[0]
    q = adjacency_probabilities(p, exclusive)
    if given is not None:
        selected = np.asarray(given, dtype=bool) & ~np.eye(d, dtype=bool)
        if selected.shape != (d, d) or not np.array_equal(selected, selected.T):
            raise HeuresisError("a given skeleton must be a symmetric d × d boolean matrix")
        expected = float("nan")
    elif skeleton == "f1":
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


@dataclass(frozen=True)
class Discovery:
    """A table's graph by a directed model: the graph, P(i → j) of every ordered pair, and
    per edge its probability of being adjacent and of its direction."""

    names: tuple[str, ...]
    graph: Graph
    probabilities: np.ndarray  # (d, d) P(i → j)
    model: str

    def edges(self) -> list[dict[str, Any]]:
        """One entry per output edge: ``from``, ``to``, ``directed``, P(adjacent) and
        P(this direction | adjacent), most probable first."""
        p = self.probabilities
        out = []
        directed = self.graph.directed_adjacency()
        skeleton = self.graph.skeleton()
        for i, j in zip(*np.nonzero(np.triu(skeleton, 1)), strict=True):
            a, b = (j, i) if directed[j, i] else (i, j)
            adjacent = float(p[a, b] + p[b, a])
            out.append({"from": self.names[a], "to": self.names[b],
                        "directed": bool(directed[a, b]), "p_adjacent": adjacent,
                        "p_direction": float(p[a, b] / adjacent) if adjacent > 0 else 0.5})
        return sorted(out, key=lambda e: -e["p_adjacent"])

    def to_dict(self) -> dict[str, Any]:
        return {"variables": list(self.names), "model": self.model, "edges": self.edges(),
                "graph": self.graph.to_text().splitlines(),
                "p_directed": np.round(self.probabilities, 6).tolist()}


def discover(data: np.ndarray, names: Sequence[str], model: DirectedModel | AviciModel,
             skeleton: str = "f1", orient: str = "dag", tta: int = 4, label: str = "",
             seed: int = 0) -> Discovery:
    """The model's graph of a table: its columns standardized (as the benchmark's tables
    are), P(i → j) by :func:`edge_probabilities`, decoded by :func:`decode`."""
    data = np.asarray(data, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != len(names):
        raise HeuresisError(f"a table of {len(names)} named columns is needed, got shape "
                            f"{data.shape}")
    spread = data.std(axis=0)
    if np.any(spread == 0):
        constant = [n for n, s in zip(names, spread, strict=True) if s == 0]
        raise HeuresisError(f"constant columns carry no causal information: {constant}")
    standardized = (data - data.mean(axis=0)) / spread
    p = edge_probabilities(model, standardized, names, data_sha256(standardized), tta, seed)
    decoded = decode(p, skeleton, orient, exclusive=isinstance(model, DirectedModel))
    return Discovery(tuple(names), decoded.graph(names), p, label)
