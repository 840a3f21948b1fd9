"""An exact CI oracle: d-separation in a known DAG, for testing PC and for ideal baselines.

With a faithful distribution, x ⟂ y | S holds exactly when S d-separates x and y in the
true DAG; this test answers from the DAG alone (the data only fixes the column count), so
PC run with it must recover the true CPDAG.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from heuresis_env.discovery.citests.base import CITest
from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import Graph, GraphType, has_directed_cycle


def _dag_adjacency(dag: Graph | np.ndarray) -> np.ndarray:
    """The boolean i → j matrix of a DAG given as a :class:`Graph` or an adjacency matrix."""
    if isinstance(dag, Graph):
        if dag.graph_type() != GraphType.DAG:
            raise HeuresisError(
                f"the d-separation oracle needs a DAG; got a graph of type {dag.graph_type()!s} "
                "(every edge must be directed)"
            )
        adjacency = dag.directed_adjacency()
    else:
        adjacency = np.asarray(dag)
        if adjacency.ndim != 2 or adjacency.shape[0] != adjacency.shape[1]:
            raise HeuresisError(
                f"a DAG adjacency matrix must be square, got shape {adjacency.shape}"
            )
        adjacency = adjacency != 0
        if np.any(np.diag(adjacency)):
            raise HeuresisError("a DAG adjacency matrix cannot have self-loops (nonzero diagonal)")
        if np.any(adjacency & adjacency.T):
            raise HeuresisError("a DAG adjacency matrix cannot have both i→j and j→i")
    if has_directed_cycle(adjacency):
        raise HeuresisError("the graph given to the d-separation oracle has a directed cycle")
    return adjacency


def d_separated(parents: list[list[int]], children: list[list[int]], x: int, y: int,
                conditioning_set: tuple[int, ...] | list[int] | set[int]) -> bool:
    """True when ``conditioning_set`` d-separates x and y (Koller and Friedman's Bayes-ball).

    ``parents[v]`` and ``children[v]`` list v's parents and children. The walk follows active
    trails from x; a trail may pass a collider only if it or a descendant is conditioned on,
    i.e. the collider is an ancestor of (or in) the conditioning set.
    """
    given = set(conditioning_set)
    ancestors_of_given: set[int] = set()
    stack = list(given)
    while stack:
        v = stack.pop()
        if v not in ancestors_of_given:
            ancestors_of_given.add(v)
            stack.extend(parents[v])
    # (node, arrived_from_child): arriving from a child the trail travels "up" against an edge
    visited: set[tuple[int, bool]] = set()
    frontier: list[tuple[int, bool]] = [(x, True)]
    while frontier:
        v, from_child = frontier.pop()
        if (v, from_child) in visited:
            continue
        visited.add((v, from_child))
        if v == y and v not in given:
            return False
        if from_child:
            if v not in given:
                frontier.extend((p, True) for p in parents[v])
                frontier.extend((c, False) for c in children[v])
        else:
            if v not in given:
                frontier.extend((c, False) for c in children[v])
            if v in ancestors_of_given:  # an active collider
                frontier.extend((p, True) for p in parents[v])
    return True


class DSeparation(CITest):
    """CI oracle from a true DAG: p = 1 when S d-separates x and y, else p = 0.

    The statistic is 1 for d-connected, 0 for d-separated. ``dag`` is a :class:`Graph` whose
    edges are all directed, or an adjacency matrix with ``dag[i, j] != 0`` for i → j, in the
    data's column order.
    """

    name = "dsep"

    def __init__(self, data: np.ndarray, *, dag: Graph | np.ndarray, **params: Any):
        adjacency = _dag_adjacency(dag)
        super().__init__(data, dag=dag, **params)
        if adjacency.shape[0] != self.d:
            raise HeuresisError(
                f"the DAG has {adjacency.shape[0]} nodes but the data has {self.d} columns"
            )
        self.adjacency = adjacency
        self._parents = [np.flatnonzero(adjacency[:, v]).tolist() for v in range(self.d)]
        self._children = [np.flatnonzero(adjacency[v]).tolist() for v in range(self.d)]

    def cache_params(self) -> dict[str, Any]:
        return {"dag": np.argwhere(_dag_adjacency(self.params["dag"])).tolist()}

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        separated = d_separated(self._parents, self._children, x, y, s)
        return (0.0, 1.0) if separated else (1.0, 0.0)
