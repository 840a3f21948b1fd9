"""Graphs with edge marks: DAGs, CPDAGs (PDAGs) and PAGs over named variables.

One representation serves every graph type. ``marks[i, j]`` is the mark at *j's end* of
the edge between i and j (``EdgeMark.NONE`` when i and j are not adjacent):

=================  ===============  ===============
edge               ``marks[i, j]``  ``marks[j, i]``
=================  ===============  ===============
``i --> j``        ARROW            TAIL
``i --- j``        TAIL             TAIL
``i <-> j``        ARROW            ARROW
``i o-> j``        ARROW            CIRCLE
``i o-o j``        CIRCLE           CIRCLE
=================  ===============  ===============

This is the convention of pcalg's PAG adjacency matrices, written with an enum rather than
magic integers. DAG → CPDAG (v-structures plus Meek's rules) lives here too, because PC,
the generator's hidden record and the metrics all need it.
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError


class EdgeMark(IntEnum):
    """The mark at one end of an edge."""

    NONE = 0
    TAIL = 1
    ARROW = 2
    CIRCLE = 3


_MARK_VALUES = tuple(int(m) for m in EdgeMark)
_LAST_MARK = max(_MARK_VALUES)
_SYMBOL_LEFT = {EdgeMark.TAIL: "-", EdgeMark.ARROW: "<", EdgeMark.CIRCLE: "o"}
_SYMBOL_RIGHT = {EdgeMark.TAIL: "-", EdgeMark.ARROW: ">", EdgeMark.CIRCLE: "o"}


class GraphType(StrEnum):
    """Graph types an algorithm can return."""

    DAG = "dag"
    CPDAG = "cpdag"  # also any PDAG: directed and undirected edges
    PAG = "pag"
    SKELETON = "skeleton"


@dataclass(frozen=True)
class Edge:
    """One edge with its two end marks: ``mark_u`` at u's end, ``mark_v`` at v's end."""

    u: str
    v: str
    mark_u: EdgeMark
    mark_v: EdgeMark

    def __str__(self) -> str:
        return f"{self.u} {_SYMBOL_LEFT[self.mark_u]}-{_SYMBOL_RIGHT[self.mark_v]} {self.v}"

    @property
    def is_directed(self) -> bool:
        return self.mark_u == EdgeMark.TAIL and self.mark_v == EdgeMark.ARROW

    @property
    def is_undirected(self) -> bool:
        return self.mark_u == EdgeMark.TAIL and self.mark_v == EdgeMark.TAIL


_MARK_LEFT = {symbol: mark for mark, symbol in _SYMBOL_LEFT.items()}
_MARK_RIGHT = {symbol: mark for mark, symbol in _SYMBOL_RIGHT.items()}
_EDGE_TEXT = re.compile(r"^(\S+) ([-<o])-([->o]) (\S+)$")


def edge_from_text(text: str) -> Edge:
    """The inverse of ``str(edge)``: ``"X1 o-> X2"`` as an :class:`Edge` (traces store edges
    as this text); anything else raises :class:`GraphError`."""
    match = _EDGE_TEXT.match(str(text))
    if match is None:
        raise GraphError(f"cannot read the edge {text!r}; expected the form 'X1 --> X2' "
                         "(marks -, <, o on the left and -, >, o on the right)")
    u, left, right, v = match.groups()
    return Edge(u, v, _MARK_LEFT[left], _MARK_RIGHT[right])


class GraphError(HeuresisError):
    """An edit that would make an invalid graph (self-loop, cycle, bad mark matrix)."""


class Graph:
    """A mixed graph with edge marks over named variables (see the module docstring)."""

    __slots__ = ("names", "marks", "_index")

    def __init__(self, names: Sequence[str], marks: np.ndarray | None = None):
        self.names: tuple[str, ...] = tuple(str(n) for n in names)
        if len(set(self.names)) != len(self.names):
            raise GraphError(f"duplicate variable names in {self.names}")
        d = len(self.names)
        if marks is None:
            marks = np.zeros((d, d), dtype=np.int8)
        raw = np.asarray(marks)
        if raw.shape != (d, d):
            raise GraphError(f"mark matrix has shape {raw.shape}, expected {(d, d)}")
        # validate before the int8 cast, which would wrap 258 to 2 or truncate 1.5 to 1
        # (ndarray methods, not numpy's functions: a graph is built at every tool call and
        # submission, and on 10 × 10 marks the functions' dispatch is most of the cost)
        if raw.dtype == np.int8:
            invalid = raw.view(np.uint8) > _LAST_MARK  # a negative int8 reads as ≥ 128
        elif raw.dtype.kind in "iub":
            invalid = (raw < 0) | (raw > _LAST_MARK)
        else:
            invalid = ~np.isin(raw, _MARK_VALUES)
        if invalid.any():
            bad = raw[invalid].ravel()[0]
            bad = bad.item() if isinstance(bad, np.generic) else bad
            raise GraphError(f"mark {bad!r} is not one of {list(_MARK_VALUES)} "
                             f"({', '.join(m.name for m in EdgeMark)})")
        marks = raw.astype(np.int8)  # always a copy: the graph owns its mark matrix
        present = marks != 0
        if present.diagonal().any():
            raise GraphError("self-loops are not allowed (nonzero diagonal)")
        if (present != present.T).any():
            raise GraphError("mark matrix must have a mark at both ends of every edge")
        self.marks = marks
        self._index = {n: i for i, n in enumerate(self.names)}

    # ---- construction -------------------------------------------------------------
    @classmethod
    def empty(cls, names: Sequence[str]) -> Graph:
        return cls(names)

    @classmethod
    def from_dag(cls, adjacency: np.ndarray, names: Sequence[str]) -> Graph:
        """From a directed adjacency matrix, ``adjacency[i, j] != 0`` meaning i → j."""
        a = np.asarray(adjacency) != 0
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise GraphError(f"adjacency must be a square matrix, got shape {a.shape}")
        if np.any(np.diag(a)):
            raise GraphError("self-loops are not allowed (nonzero diagonal of the adjacency)")
        if np.any(a & a.T):
            raise GraphError("a DAG adjacency matrix cannot have both i→j and j→i")
        marks = np.zeros(a.shape, dtype=np.int8)
        marks[a] = EdgeMark.ARROW
        marks[a.T] = EdgeMark.TAIL
        return cls(names, marks)

    @classmethod
    def from_cpdag_matrix(cls, directed: np.ndarray, undirected: np.ndarray,
                          names: Sequence[str]) -> Graph:
        """From a directed part (i→j) and a symmetric undirected part (i—j)."""
        g = cls.from_dag(directed, names)
        u = np.asarray(undirected) != 0
        u = u | u.T
        g.marks[u] = EdgeMark.TAIL
        return g

    @classmethod
    def from_edges(cls, names: Sequence[str], edges: Iterable[tuple[str, str] | Edge],
                   directed: bool = True) -> Graph:
        """From (u, v) pairs (u → v when ``directed``, else u — v) or :class:`Edge` objects."""
        g = cls(names)
        for e in edges:
            if isinstance(e, Edge):
                g.set_edge(e.u, e.v, e.mark_u, e.mark_v)
            else:
                u, v = e
                g.set_edge(u, v, EdgeMark.TAIL, EdgeMark.ARROW if directed else EdgeMark.TAIL)
        return g

    def copy(self) -> Graph:
        """An independent copy (its own mark matrix); this graph was checked when it was
        made, so the copy is not checked again (a copy per step is the environment's common
        case)."""
        graph = Graph.__new__(Graph)
        graph.names, graph.marks, graph._index = self.names, self.marks.copy(), self._index
        return graph

    # ---- access ---------------------------------------------------------------------
    @property
    def d(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise UnknownNameError("variable", name, self.names) from None

    def skeleton(self) -> np.ndarray:
        """Symmetric boolean adjacency (edges without direction)."""
        return np.asarray(self.marks != 0)

    def directed_adjacency(self) -> np.ndarray:
        """Boolean matrix of the directed edges only: ``[i, j]`` is True for i → j."""
        return np.asarray((self.marks == EdgeMark.ARROW) & (self.marks.T == EdgeMark.TAIL))

    def undirected_adjacency(self) -> np.ndarray:
        """Symmetric boolean matrix of the undirected (tail–tail) edges."""
        return np.asarray((self.marks == EdgeMark.TAIL) & (self.marks.T == EdgeMark.TAIL))

    def n_edges(self) -> int:
        return int(np.count_nonzero(np.triu(self.skeleton())))

    def adjacent(self, u: str, v: str) -> bool:
        return bool(self.marks[self.index(u), self.index(v)] != 0)

    def edge(self, u: str, v: str) -> Edge | None:
        i, j = self.index(u), self.index(v)
        if self.marks[i, j] == 0:
            return None
        return Edge(u, v, EdgeMark(self.marks[j, i]), EdgeMark(self.marks[i, j]))

    def edges(self) -> list[Edge]:
        """Every edge once, in row-major order; directed edges are given tail first."""
        out = []
        for i, j in zip(*np.nonzero(np.triu(self.skeleton())), strict=True):
            mi, mj = EdgeMark(self.marks[j, i]), EdgeMark(self.marks[i, j])
            if mi == EdgeMark.ARROW and mj == EdgeMark.TAIL:
                out.append(Edge(self.names[j], self.names[i], mj, mi))
            else:
                out.append(Edge(self.names[i], self.names[j], mi, mj))
        return out

    def parents(self, v: str) -> list[str]:
        j = self.index(v)
        return [self.names[i] for i in np.nonzero(self.directed_adjacency()[:, j])[0]]

    def children(self, v: str) -> list[str]:
        i = self.index(v)
        return [self.names[j] for j in np.nonzero(self.directed_adjacency()[i, :])[0]]

    def neighbors(self, v: str) -> list[str]:
        i = self.index(v)
        return [self.names[j] for j in np.nonzero(self.skeleton()[i])[0]]

    def graph_type(self) -> str:
        """The narrowest type that describes the graph's marks."""
        m = self.marks
        if np.any(m == EdgeMark.CIRCLE) or np.any((m == EdgeMark.ARROW) & (m.T == EdgeMark.ARROW)):
            return GraphType.PAG
        if np.any(self.undirected_adjacency()):
            return GraphType.CPDAG
        return GraphType.DAG

    def is_dag(self) -> bool:
        """True when every edge is directed and there is no directed cycle."""
        if self.graph_type() != GraphType.DAG:
            return False
        return not has_directed_cycle(self.directed_adjacency())

    # ---- edits ----------------------------------------------------------------------
    def set_edge(self, u: str, v: str, mark_u: EdgeMark, mark_v: EdgeMark) -> None:
        """Set the edge u–v with ``mark_u`` at u's end and ``mark_v`` at v's end."""
        i, j = self.index(u), self.index(v)
        if i == j:
            raise GraphError(f"self-loop on {u!r} is not allowed")
        for mark in (mark_u, mark_v):
            if mark not in set(EdgeMark):
                raise GraphError(f"mark {mark!r} is not one of "
                                 f"{', '.join(f'{m.name}={int(m)}' for m in EdgeMark)}")
        if (mark_u == EdgeMark.NONE) != (mark_v == EdgeMark.NONE):
            raise GraphError("an edge needs a mark at both ends (or NONE at both to remove it)")
        self.marks[j, i] = mark_u
        self.marks[i, j] = mark_v

    def add_directed(self, u: str, v: str) -> None:
        self.set_edge(u, v, EdgeMark.TAIL, EdgeMark.ARROW)

    def add_undirected(self, u: str, v: str) -> None:
        self.set_edge(u, v, EdgeMark.TAIL, EdgeMark.TAIL)

    def remove_edge(self, u: str, v: str) -> None:
        self.set_edge(u, v, EdgeMark.NONE, EdgeMark.NONE)

    # ---- comparison and serialization -------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Graph) and self.names == other.names
                and np.array_equal(self.marks, other.marks))

    def __hash__(self) -> int:
        return hash((self.names, self.marks.tobytes()))

    def __repr__(self) -> str:
        return f"Graph(d={self.d}, edges={self.n_edges()}, type={self.graph_type()})"

    def to_text(self) -> str:
        """One edge a line, e.g. ``X3 --> X7``; ``(no edges)`` when empty."""
        lines = [str(e) for e in self.edges()]
        return "\n".join(lines) if lines else "(no edges)"

    def to_dict(self) -> dict:
        return {"names": list(self.names), "marks": self.marks.tolist()}

    @classmethod
    def from_dict(cls, data: dict) -> Graph:
        """Inverse of :meth:`to_dict`."""
        missing = [key for key in ("names", "marks") if key not in data]
        if missing:
            raise GraphError(f"graph dict lacks {missing}; expected keys 'names' and 'marks'")
        return cls(data["names"], np.asarray(data["marks"]))

    def restricted(self, names: Sequence[str]) -> Graph:
        """The induced subgraph over ``names`` (in that order)."""
        idx = [self.index(n) for n in names]
        return Graph(names, self.marks[np.ix_(idx, idx)])


#: one edge as the tools print it (``X1 --> X2``); the names are identifiers
EDGE_PATTERN = re.compile(
    r"^\s*([A-Za-z_][\w.]*)\s*(<->|o->|<-o|o-o|-->|<--|---|->|<-|--)\s*([A-Za-z_][\w.]*)\s*$")
#: each arrow of :data:`EDGE_PATTERN` → (mark at the left name's end, mark at the right's)
EDGE_MARKS = {
    "-->": (EdgeMark.TAIL, EdgeMark.ARROW), "->": (EdgeMark.TAIL, EdgeMark.ARROW),
    "<--": (EdgeMark.ARROW, EdgeMark.TAIL), "<-": (EdgeMark.ARROW, EdgeMark.TAIL),
    "---": (EdgeMark.TAIL, EdgeMark.TAIL), "--": (EdgeMark.TAIL, EdgeMark.TAIL),
    "<->": (EdgeMark.ARROW, EdgeMark.ARROW),
    "o->": (EdgeMark.CIRCLE, EdgeMark.ARROW), "<-o": (EdgeMark.ARROW, EdgeMark.CIRCLE),
    "o-o": (EdgeMark.CIRCLE, EdgeMark.CIRCLE),
}


def parse_edge_text(text: str) -> Edge:
    """One edge string (``"X1 --> X2"``) as an :class:`Edge`; raises on bad syntax or a loop."""
    match = EDGE_PATTERN.match(text)
    if match is None:
        raise GraphError(
            f"cannot read the edge {text!r}; write it as 'X1 --> X2', 'X1 --- X2', "
            "'X1 <-> X2', 'X1 o-> X2' or 'X1 o-o X2'")
    u, symbol, v = match.groups()
    if u == v:
        raise GraphError(f"self-loop in {text!r}: an edge joins two different variables")
    mark_u, mark_v = EDGE_MARKS[symbol]
    return Edge(u, v, mark_u, mark_v)


def graph_from_edge_lines(names: Sequence[str], lines: Iterable[str], where: str = "the graph"
                          ) -> Graph:
    """A graph over ``names`` from edge lines (blank lines and ``#`` comments skipped).

    Errors name the line: an unreadable edge, an unknown variable (the known ones listed), or
    two edges on one pair.
    """
    graph = Graph(names)
    seen: dict[frozenset[str], str] = {}
    for number, raw in enumerate(lines, start=1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            edge = parse_edge_text(text)
            graph.index(edge.u)
            graph.index(edge.v)
        except HeuresisError as exc:
            raise GraphError(f"{where}, line {number}: {exc}") from None
        pair = frozenset((edge.u, edge.v))
        if pair in seen:
            raise GraphError(f"{where}, line {number}: {text!r} and {seen[pair]!r} join the "
                             "same pair; give each pair once")
        seen[pair] = text
        graph.set_edge(edge.u, edge.v, edge.mark_u, edge.mark_v)
    return graph


def has_directed_cycle(directed: np.ndarray) -> bool:
    """True when the directed adjacency matrix (``[i, j]`` for i → j) has a cycle (Kahn)."""
    a = np.asarray(directed, dtype=bool).copy()
    indegree = a.sum(axis=0)
    queue = [i for i in range(a.shape[0]) if indegree[i] == 0]
    seen = 0
    while queue:
        i = queue.pop()
        seen += 1
        for j in np.nonzero(a[i])[0]:
            indegree[j] -= 1
            if indegree[j] == 0:
                queue.append(j)
    return seen < a.shape[0]


def topological_order(directed: np.ndarray) -> list[int]:
    """A topological order of a DAG's node indices; raises :class:`GraphError` on a cycle."""
    a = np.asarray(directed, dtype=bool)
    indegree = a.sum(axis=0).astype(int)
    queue = sorted(i for i in range(a.shape[0]) if indegree[i] == 0)
    order = []
    while queue:
        i = queue.pop(0)
        order.append(i)
        for j in np.nonzero(a[i])[0]:
            indegree[j] -= 1
            if indegree[j] == 0:
                queue.append(int(j))
    if len(order) < a.shape[0]:
        raise GraphError("graph has a directed cycle")
    return order


# ---- PDAG orientation: v-structures and Meek's rules ---------------------------------------

def orient_v_structures(skeleton: np.ndarray,
                        separating_sets: dict[frozenset[int], Iterable[int]]) -> np.ndarray:
    """Orient the unshielded colliders of a skeleton given each non-adjacent pair's separating set.

    Returns a PDAG as a directed matrix ``P`` where ``P[i, j] and not P[j, i]`` is i → j and
    ``P[i, j] and P[j, i]`` is i — j. An unshielded triple i — k — j is a collider when k is
    not in the separating set of (i, j). When colliders conflict (possible with errors in the
    separating sets), a triple is skipped whole if either of its edges already points out of
    k — causal-learn's ``uc_priority=2`` ("prioritize existing colliders") — so no bidirected
    edge is made, and it is skipped when its orientation would close a directed cycle. Triples
    are visited in index order so the result is deterministic.
    """
    s = np.asarray(skeleton, dtype=bool)
    d = s.shape[0]
    pdag = s.copy()
    for k in range(d):
        nbrs = np.nonzero(s[k])[0]
        for i, j in itertools.combinations(nbrs, 2):
            if s[i, j]:
                continue
            sepset = separating_sets.get(frozenset((int(i), int(j))))
            if sepset is None or k in set(sepset):
                continue
            if (pdag[k, i] and not pdag[i, k]) or (pdag[k, j] and not pdag[j, k]):
                continue  # an edge already points out of k: keep the earlier collider
            if _reaches(pdag, k, i) or _reaches(pdag, k, j):
                continue  # i -> k or j -> k would close a directed cycle
            pdag[k, i] = False
            pdag[k, j] = False
    return pdag


def apply_meek_rules(pdag: np.ndarray) -> np.ndarray:
    """Close a PDAG under Meek's rules R1–R4 (Meek 1995).

    ``pdag[i, j] and not pdag[j, i]`` is i → j; both True is i — j. Returns a new matrix.
    On a PDAG from erroneous tests the rules could close a directed cycle; as in
    causal-learn, an orientation a → b is skipped when b already reaches a by directed edges,
    so the result never has a directed cycle that the input did not.
    """
    p = np.asarray(pdag, dtype=bool).copy()
    d = p.shape[0]

    def undirected(a: int, b: int) -> bool:
        return bool(p[a, b] and p[b, a])

    def directed(a: int, b: int) -> bool:
        return bool(p[a, b] and not p[b, a])

    def adjacent(a: int, b: int) -> bool:
        return bool(p[a, b] or p[b, a])

    changed = True
    while changed:
        changed = False
        for a in range(d):
            for b in range(d):
                if a == b or not undirected(a, b):
                    continue
                orient = False
                # R1: c -> a — b, c not adjacent to b  ⇒  a -> b
                for c in range(d):
                    if c != b and directed(c, a) and not adjacent(c, b):
                        orient = True
                        break
                # R2: a -> c -> b and a — b  ⇒  a -> b
                if not orient:
                    for c in range(d):
                        if directed(a, c) and directed(c, b):
                            orient = True
                            break
                # R3: a — c1 -> b, a — c2 -> b, c1, c2 non-adjacent  ⇒  a -> b
                if not orient:
                    cs = [c for c in range(d) if undirected(a, c) and directed(c, b)]
                    for c1, c2 in itertools.combinations(cs, 2):
                        if not adjacent(c1, c2):
                            orient = True
                            break
                # R4: a — c -> e -> b, c non-adjacent to b, a adjacent to e  ⇒  a -> b
                if not orient:
                    for c in range(d):
                        if c in (a, b) or not undirected(a, c) or adjacent(c, b):
                            continue
                        for e in range(d):
                            if e in (a, b, c):
                                continue
                            if directed(c, e) and directed(e, b) and adjacent(a, e):
                                orient = True
                                break
                        if orient:
                            break
                if orient and not _reaches(p, b, a):
                    p[b, a] = False
                    changed = True
    return p


def _reaches(p: np.ndarray, source: int, target: int) -> bool:
    """True when a directed path source → … → target exists in PDAG ``p`` (directed edges only)."""
    directed = p & ~p.T
    seen = {source}
    stack = [source]
    while stack:
        node = stack.pop()
        for nxt in np.nonzero(directed[node])[0]:
            if nxt == target:
                return True
            if nxt not in seen:
                seen.add(int(nxt))
                stack.append(int(nxt))
    return False


def pdag_to_graph(pdag: np.ndarray, names: Sequence[str]) -> Graph:
    """Convert a boolean PDAG matrix (see :func:`apply_meek_rules`) to a :class:`Graph`."""
    p = np.asarray(pdag, dtype=bool)
    directed = p & ~p.T
    undirected = p & p.T
    return Graph.from_cpdag_matrix(directed, undirected, names)


def cpdag_from_dag(dag: Graph | np.ndarray, names: Sequence[str] | None = None) -> Graph:
    """The CPDAG (essential graph) of a DAG: keep its v-structures' edges, then Meek's rules."""
    if isinstance(dag, Graph):
        names = dag.names
        a = dag.directed_adjacency()
        if not dag.is_dag():
            raise GraphError("cpdag_from_dag needs a DAG")
    else:
        a = np.asarray(dag) != 0
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise GraphError(f"adjacency must be a square matrix, got shape {a.shape}")
        if np.any(np.diag(a)) or has_directed_cycle(a):
            raise GraphError("cpdag_from_dag needs a DAG; the adjacency has a directed cycle")
        if names is None:
            names = [f"X{i + 1}" for i in range(a.shape[0])]
    return pdag_to_graph(essential_graph(a), names)


def essential_graph(dag: np.ndarray) -> np.ndarray:
    """The CPDAG (essential graph) of a DAG given as a boolean adjacency (``dag[i, j]``:
    i → j), as a PDAG matrix (see :func:`apply_meek_rules`): the edges of v-structures
    stay directed, then Meek's rules R1–R3 orient what they force — from a DAG's pattern
    these three give the CPDAG (Meek 1995). Each round applies the rules to every
    undirected edge at once with matrix products, so a call costs a few products of d × d
    matrices (GES calls it after every operator). The input is trusted to be acyclic
    (:func:`cpdag_from_dag` checks)."""
    a = np.asarray(dag, dtype=bool)
    d = a.shape[0]
    adjacent = a | a.T
    non_adjacent = (~adjacent & ~np.eye(d, dtype=bool)).astype(np.int64)
    parents = a.astype(np.int64)
    # i -> k is in a v-structure when k has a parent j non-adjacent to i
    directed = a & ((non_adjacent @ parents) > 0)
    undirected = a & ~directed
    undirected = undirected | undirected.T
    while undirected.any():
        d_int = directed.astype(np.int64)
        # R1: c -> x — y, c and y non-adjacent  ⇒  x -> y
        rule = (d_int.T @ non_adjacent) > 0
        # R2: x -> c -> y and x — y  ⇒  x -> y
        rule |= (d_int @ d_int) > 0
        orient = undirected & rule
        # R3: x — c1 -> y, x — c2 -> y, c1 and c2 non-adjacent  ⇒  x -> y
        for x, y in zip(*np.nonzero(undirected & ~orient)):
            middle = np.flatnonzero(undirected[x] & directed[:, y])
            if len(middle) > 1 and (non_adjacent[np.ix_(middle, middle)] > 0).any():
                orient[x, y] = True
        if not orient.any():
            break
        directed |= orient
        undirected &= ~(orient | orient.T)
    pdag: np.ndarray = directed | undirected
    return pdag


# ---- paths in a directed graph ---------------------------------------------------------------

def _ancestors_avoiding(directed: np.ndarray, target: int, avoid: int) -> dict[int, int]:
    """Proper ancestors of ``target`` on directed paths that avoid ``avoid``: node → next hop."""
    next_hop: dict[int, int] = {}
    queue = deque([target])
    while queue:
        k = queue.popleft()
        for parent in np.flatnonzero(directed[:, k]).tolist():
            if parent in (avoid, target) or parent in next_hop:
                continue
            next_hop[parent] = k
            queue.append(parent)
    return next_hop


def _path_down(next_hop: dict[int, int], start: int, target: int) -> list[int]:
    path = [start]
    while path[-1] != target:
        path.append(next_hop[path[-1]])
    return path


def backdoor_path(directed: np.ndarray, i: int, j: int) -> tuple[list[int], int] | None:
    """A back-door path i <- ... <- m -> ... -> j through a common cause m, open given the
    empty set, or None (``directed[a, b]`` is True for a → b).

    Returns the path (node indices from i to j) and the position of its source m.

    Such a path exists exactly when some c is an ancestor of i on a path avoiding j and an
    ancestor of j on a path avoiding i; splicing the two directed paths at their last shared
    node gives a simple path without colliders.
    """
    to_i = _ancestors_avoiding(directed, i, j)
    to_j = _ancestors_avoiding(directed, j, i)
    common = sorted(set(to_i) & set(to_j))
    if not common:
        return None
    c = common[0]
    path_i = _path_down(to_i, c, i)  # c ... i
    path_j = _path_down(to_j, c, j)  # c ... j
    on_j = set(path_j)
    split = max(k for k, node in enumerate(path_i) if node in on_j)
    m = path_i[split]
    left = path_i[split:]  # m ... i
    right = path_j[path_j.index(m):]  # m ... j
    return list(reversed(left)) + right[1:], len(left) - 1  # i ... m ... j
