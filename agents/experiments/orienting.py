"""What the experiment policies share: a graph's unresolved edges, the features a target is
chosen by, and the graph an episode's experiments orient.

An edge of the starting graph (an observational algorithm's CPDAG) is *resolved* once an
experiment on one of its ends has said which way it points: after a randomized experiment on
t, a neighbour j that still depends on t is its descendant (t → j), one that does not is not
(j → t). Edges no experiment reached keep the starting graph's marks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from heuresis_env.graphs import EdgeMark, Graph

#: features per variable the RL policy reads (:func:`node_features`), each in [0, 1]
NODE_FEATURES = ("unresolved", "undirected", "degree", "intervened", "neighbours_intervened",
                 "resolved")
#: degree counts are divided by this (and clipped at 1)
DEGREE_SCALE = 4.0


@dataclass
class Orientation:
    """The starting graph and what the experiments so far decided about its edges."""

    start: Graph
    #: (i, j) → True when the experiments say i → j (each edge stored once, i < j or not)
    decided: dict[tuple[int, int], bool] = field(default_factory=dict)
    intervened: list[int] = field(default_factory=list)

    @property
    def d(self) -> int:
        return self.start.d

    def adjacency(self) -> np.ndarray:
        return self.start.skeleton()

    def resolved(self, i: int, j: int) -> bool:
        return (i, j) in self.decided or (j, i) in self.decided

    def unresolved_counts(self) -> np.ndarray:
        adjacency = self.adjacency()
        counts = np.zeros(self.d, dtype=np.int64)
        for i, j in zip(*np.nonzero(np.triu(adjacency, 1)), strict=True):
            if not self.resolved(int(i), int(j)):
                counts[i] += 1
                counts[j] += 1
        return counts

    def record(self, target: int, responded: Mapping[int, bool]) -> None:
        """An experiment on ``target``: each unresolved neighbour that responded is its child,
        one that did not is its parent."""
        self.intervened.append(int(target))
        adjacency = self.adjacency()
        for j in np.nonzero(adjacency[target])[0]:
            j = int(j)
            if self.resolved(target, j) or j not in responded:
                continue
            if responded[j]:
                self.decided[(target, j)] = True
            else:
                self.decided[(j, target)] = True

    def graph(self) -> Graph:
        """The starting graph with every decided edge oriented as decided."""
        marks = self.start.marks.copy()
        for (i, j), _ in self.decided.items():
            marks[i, j], marks[j, i] = EdgeMark.ARROW, EdgeMark.TAIL
        return Graph(self.start.names, marks)


def node_features(orientation: Orientation) -> np.ndarray:
    """Per variable (d × len(NODE_FEATURES)): unresolved, undirected and all incident edges
    (each / 4, clipped), whether it was intervened on, the share of its neighbours that were,
    and its resolved edges (/ 4)."""
    adjacency = orientation.adjacency()
    marks = orientation.start.marks
    undirected = (marks == EdgeMark.TAIL) & (marks.T == EdgeMark.TAIL)
    degree = adjacency.sum(axis=1)
    unresolved = orientation.unresolved_counts()
    intervened = np.zeros(orientation.d)
    intervened[orientation.intervened] = 1.0
    neighbours = np.where(degree > 0, (adjacency @ intervened) / np.maximum(degree, 1), 0.0)
    features = np.column_stack([
        np.minimum(unresolved / DEGREE_SCALE, 1.0),
        np.minimum(undirected.sum(axis=1) / DEGREE_SCALE, 1.0),
        np.minimum(degree / DEGREE_SCALE, 1.0),
        intervened,
        neighbours,
        np.minimum((degree - unresolved) / DEGREE_SCALE, 1.0),
    ])
    return features.astype(np.float32)


def most_unresolved(orientation: Orientation) -> int | None:
    """The active-learning choice: the variable with the most unresolved edges (ties: the
    most undirected ones, then the first); None when every edge is resolved."""
    counts = orientation.unresolved_counts()
    if counts.max(initial=0) == 0:
        return None
    marks = orientation.start.marks
    undirected = ((marks == EdgeMark.TAIL) & (marks.T == EdgeMark.TAIL)).sum(axis=1)
    order = np.lexsort((np.arange(orientation.d), -undirected, -counts))
    return int(order[0])


def responses(columns: Mapping[str, Mapping[str, object]], names: Sequence[str]
              ) -> dict[int, bool]:
    """``intervene``'s per-column result as {column index: responded}."""
    index = {name: k for k, name in enumerate(names)}
    return {index[name]: bool(entry.get("moved")) for name, entry in columns.items()
            if name in index and "moved" in entry}


def edge_list(graph: Graph) -> list[str]:
    """A graph as ``submit``'s edge strings."""
    return [str(edge) for edge in graph.edges()]
