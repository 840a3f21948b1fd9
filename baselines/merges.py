"""merge_k: the edges proposed by at least k of a set of algorithm outputs; merge*: the best k.

Votes are on the skeleton (an edge counts for a pair whatever its marks). A merged edge is
directed when every output that proposes it and orients it agrees on one direction, and
undirected otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heuresis_env.graphs import EdgeMark, Graph


def merge_k(graphs: Sequence[Graph], k: int) -> Graph:
    """Edges proposed by at least ``k`` of ``graphs`` (all over the same variables)."""
    if not graphs:
        raise ValueError("merge_k needs at least one graph")
    if not 1 <= k <= len(graphs):
        raise ValueError(f"k must be in 1..{len(graphs)}, got {k}")
    names = graphs[0].names
    for g in graphs:
        if g.names != names:
            raise ValueError("merge_k needs graphs over the same variables in the same order")
    votes = sum(g.skeleton().astype(int) for g in graphs)
    forward = sum(g.directed_adjacency().astype(int) for g in graphs)  # [i, j]: i → j votes
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
           score) -> tuple[int, list[float]]:
    """merge*: the k with the best mean ``score(merged, true_dag)`` over instances (hindsight).

    Returns (k*, mean score for k = 1..K). Ties go to the smaller k.
    """
    n_outputs = {len(gs) for gs in per_instance_graphs}
    if len(n_outputs) != 1:
        raise ValueError("every instance needs the same number of outputs to choose one k")
    (big_k,) = n_outputs
    means = []
    for k in range(1, big_k + 1):
        values = [score(merge_k(gs, k), t) for gs, t in zip(per_instance_graphs, true_dags, strict=True)]
        means.append(float(np.mean(values)))
    return int(np.argmax(means)) + 1, means
