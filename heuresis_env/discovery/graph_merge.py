"""merge_k: the edges proposed by at least k of a set of algorithm outputs; merge*: the best k.

Votes are on the skeleton (an edge counts for its pair whatever its marks). A merged edge is
directed when every output that proposes the pair and orients it agrees on one direction, and
undirected otherwise. The spec (section 3) defines merge_k over "the algorithms an agent (or
the full set) called"; ``heuresis report`` uses it on the outputs an agent called (Table 4) and
the baselines on the full set, so both import this one copy.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import EdgeMark, Graph

__all__ = ["best_k", "merge_k", "vote_counts"]


def _check_graphs(graphs: Sequence[Graph]) -> tuple[str, ...]:
    if not graphs:
        raise HeuresisError("merge_k needs at least one graph")
    names = graphs[0].names
    for graph in graphs:
        if not isinstance(graph, Graph):
            raise HeuresisError(f"merge_k merges heuresis_env.graphs.Graph objects, got "
                                f"{type(graph).__name__}")
        if graph.names != names:
            raise HeuresisError(f"merge_k needs graphs over the same variables in the same "
                                f"order; got {list(names)} and {list(graph.names)}")
    return names


def vote_counts(graphs: Sequence[Graph]) -> np.ndarray:
    """Symmetric d × d matrix: how many of ``graphs`` have an edge on each pair."""
    _check_graphs(graphs)
    return np.asarray(np.sum([graph.skeleton() for graph in graphs], axis=0, dtype=np.int64))


def merge_k(graphs: Sequence[Graph], k: int) -> Graph:
    """Edges proposed by at least ``k`` of ``graphs`` (all over the same variables).

    A merged edge points i → j when some output orients it i → j and none orients it j → i;
    otherwise it is undirected (PAG marks count as no orientation).
    """
    names = _check_graphs(graphs)
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= len(graphs):
        raise HeuresisError(f"k must be an integer in 1..{len(graphs)} (the number of graphs), "
                            f"got {k!r}")
    votes = vote_counts(graphs)
    forward = np.sum([graph.directed_adjacency() for graph in graphs], axis=0, dtype=np.int64)
    merged = Graph(names)
    d = len(names)
    for i in range(d):
        for j in range(i + 1, d):
            if votes[i, j] < k:
                continue
            if forward[i, j] > 0 and forward[j, i] == 0:
                merged.set_edge(names[i], names[j], EdgeMark.TAIL, EdgeMark.ARROW)
            elif forward[j, i] > 0 and forward[i, j] == 0:
                merged.set_edge(names[j], names[i], EdgeMark.TAIL, EdgeMark.ARROW)
            else:
                merged.set_edge(names[i], names[j], EdgeMark.TAIL, EdgeMark.TAIL)
    return merged


def best_k(per_instance_graphs: Sequence[Sequence[Graph]], true_dags: Sequence[Graph],
           score: Callable[[Graph, Graph], float],
           clip: bool = False) -> tuple[int, list[float]]:
    """merge*: the k with the best mean ``score(merged, true_dag)`` over instances (hindsight).

    Returns (k*, the mean score for k = 1..K). Ties go to the smaller k. Without ``clip``
    every instance must have the same number K of outputs; with ``clip`` K is the largest
    number and an instance with fewer outputs K_i merges with min(k, K_i) (so an instance with
    one output always contributes that output).
    """
    if len(per_instance_graphs) != len(true_dags):
        raise HeuresisError(f"best_k needs one true DAG per instance; got "
                            f"{len(per_instance_graphs)} instances and {len(true_dags)} DAGs")
    if not per_instance_graphs:
        raise HeuresisError("best_k needs at least one instance")
    counts = {len(graphs) for graphs in per_instance_graphs}
    if 0 in counts:
        raise HeuresisError("every instance needs at least one output to merge")
    if len(counts) != 1 and not clip:
        raise HeuresisError(f"every instance needs the same number of outputs to choose one k "
                            f"(got {sorted(counts)}); pass clip=True to merge with min(k, K_i)")
    largest = max(counts)
    means = []
    for k in range(1, largest + 1):
        values = [score(merge_k(graphs, min(k, len(graphs))), true_dag)
                  for graphs, true_dag in zip(per_instance_graphs, true_dags, strict=True)]
        means.append(float(np.mean(values)))
    return int(np.argmax(means)) + 1, means
