"""GES (Chickering 2002) as causal-learn 0.1.4 runs it with the BIC score, without its
per-operator Python overhead.

causal-learn's ``ges`` spends most of its time outside the score: a ``GeneralGraph`` of
node objects, a depth-first enumeration of every semi-directed path for Insert's second
validity condition (exponential in the worst case), and ``dag2cpdag``'s edge ordering
after every step — on win95pts (d = 76, n = 600) 52 s, of which 20 s in ``dag2cpdag``
alone, the score under 2 s. :func:`ges_bic` runs the same search on sets and boolean
matrices:

- the same operators, visited in the same order (pairs i, j in index order, the subsets of
  T₀ and H₀ by size, each size in ``itertools.combinations`` order), the same valid ones,
  the same tie-breaking (the first strictly largest score change wins) and the same
  stopping rule (``score_new - score <= 0``). causal-learn marks the supersets of each
  subset it decides (``find_subset_include``, time quadratic in the number of subsets: on
  Hailfinder more than 10 minutes); the marks only save work, because both conditions are
  monotone — if NA ∪ T is not a clique neither is NA ∪ T' for T' ⊇ T, and a set blocking
  every semi-directed path stays blocking when it grows; likewise NA − H is a clique for
  every H' ⊇ H when it is for H. So an Insert(i, j, T) is valid exactly when NA ∪ T is a
  clique and blocks the paths, and only those T are generated (the cliques among T₀'s
  members adjacent to all of NA, in the same order); a Delete(i, j, H) exactly when
  NA − H is a clique;
- the same local scores: causal-learn's ``LocalScoreClass`` with ``local_score_BIC_from_cov``,
  summed in the same order, so the score it returns is causal-learn's to the last bit;
- Insert's condition "every semi-directed path from Xj to Xi meets NA ∪ T" as what it is,
  Xi unreachable from Xj once NA ∪ T is removed (one breadth-first search, memoized per step);
- after each operator the PDAG is extended to a DAG by causal-learn's own sweep
  (``pdag2dag``, Dor & Tarsi) and the DAG replaced by its CPDAG,
  :func:`heuresis_env.graphs.essential_graph` (the CPDAG of a DAG is unique, so any correct
  construction gives causal-learn's).

The tests run both on many instances and compare graph and score exactly
(``tests/discovery/test_ges.py``); ``benchmarks/bench_ges.py`` times them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from heuresis_env.graphs import essential_graph

#: an operator as applied: (i, j, T) for Insert, (i, j, H) for Delete
Operator = tuple[int, int, tuple[int, ...]]


@dataclass
class GesResult:
    """The CPDAG (``pdag[i, j] and not pdag[j, i]``: i → j; both: i — j), its BIC score and
    the operators applied (forward Inserts, then backward Deletes, as (i, j, subset))."""

    pdag: np.ndarray
    score: float
    inserts: list[Operator]
    deletes: list[Operator]


def _subsets(items: Sequence[int]) -> list[tuple[int, ...]]:
    """All subsets of ``items`` by size, each size in ``itertools.combinations`` order
    (causal-learn's ``Combinatorial``)."""
    return [s for size in range(len(items) + 1) for s in itertools.combinations(items, size)]


class _Structure:
    """Neighbours, adjacents, parents and semi-directed successors of every node of a PDAG,
    as sets (causal-learn's ``precompute_graph_info``)."""

    def __init__(self, pdag: np.ndarray):
        directed = pdag & ~pdag.T
        undirected = pdag & pdag.T
        adjacent = pdag | pdag.T
        n = pdag.shape[0]
        self.nbrs = [set(np.flatnonzero(undirected[k]).tolist()) for k in range(n)]
        self.adj = [set(np.flatnonzero(adjacent[k]).tolist()) for k in range(n)]
        self.pa = [set(np.flatnonzero(directed[:, k]).tolist()) for k in range(n)]
        self.semi = [set(np.flatnonzero(directed[k]).tolist()) | self.nbrs[k]
                     for k in range(n)]
        self._reach: dict[tuple[int, frozenset[int]], set[int]] = {}

    def cliques(self, candidates: list[int]) -> list[tuple[int, ...]]:
        """The subsets of ``candidates`` (sorted) whose members are pairwise adjacent, in the
        order of :func:`_subsets` (by size, then lexicographic): each size's cliques extend
        the previous size's, in order, by a larger adjacent member."""
        out: list[tuple[int, ...]] = [()]
        level = out
        while level:
            level = [c + (x,) for c in level for x in candidates
                     if (not c or x > c[-1]) and all(x in self.adj[y] for y in c)]
            out = out + level
        return out

    def clique(self, nodes: set[int]) -> bool:
        """Every two of ``nodes`` adjacent (check_clique_fast)."""
        members = list(nodes)
        for a in range(len(members)):
            adjacent = self.adj[members[a]]
            for b in range(a + 1, len(members)):
                if members[b] not in adjacent:
                    return False
        return True

    def blocked(self, j: int, i: int, nat: set[int]) -> bool:
        """True when every semi-directed path from j to i passes through ``nat``
        (causal-learn's ``insert_vc2_fast``): i is not reachable from j in the graph
        without ``nat``'s nodes."""
        key = (j, frozenset(nat))
        reached = self._reach.get(key)
        if reached is None:
            reached = {j}
            frontier = [j]
            while frontier:
                node = frontier.pop()
                for nxt in self.semi[node]:
                    if nxt not in reached and nxt not in nat:
                        reached.add(nxt)
                        frontier.append(nxt)
            self._reach[key] = reached
        return i not in reached


def pdag_to_dag(pdag: np.ndarray) -> np.ndarray:
    """A DAG extension of a PDAG by causal-learn's ``pdag2dag`` sweep (Dor & Tarsi 1992):
    repeatedly, in index order, a node with no outgoing directed edge among the remaining
    nodes whose undirected neighbours are adjacent to all its other remaining adjacents
    becomes a sink, its undirected edges pointing into it (an edge already oriented from
    the other end stays). Returns the DAG's adjacency (``dag[i, j]``: i → j)."""
    p = np.asarray(pdag, dtype=bool)
    n = p.shape[0]
    directed = p & ~p.T
    undirected = p & p.T
    adjacent = p | p.T
    dag = directed.copy()
    oriented = directed | directed.T  # pairs whose orientation in ``dag`` is fixed
    remaining = np.ones(n, dtype=bool)
    progress = True
    while remaining.any():
        if not progress:  # pragma: no cover - GES only extends extendable PDAGs
            raise ValueError("the PDAG has no consistent DAG extension")
        progress = False
        for x in range(n):
            if not remaining[x] or (directed[x] & remaining).any():
                continue
            nx = np.flatnonzero(undirected[x] & remaining)
            ax = np.flatnonzero(adjacent[x] & remaining)
            if any(not adjacent[y, ax[ax != y]].all() for y in nx):
                continue
            for y in np.flatnonzero(undirected[x]):
                if not oriented[y, x]:
                    dag[y, x] = True
                    oriented[y, x] = oriented[x, y] = True
            remaining[x] = False
            progress = True
    return dag


def _greedy(pdag: np.ndarray, score: float,
            best_operator: Callable[[_Structure], tuple[float, Operator | None]],
            apply: Callable[[np.ndarray, Operator], None],
            applied: list[Operator]) -> tuple[np.ndarray, float]:
    """One phase of GES: while the best operator (the first strictly largest score change)
    raises the score, apply it, log it and replace the PDAG by the CPDAG of a DAG extension.
    Returns the final CPDAG and score (causal-learn's stop test, ``score_new - score <= 0``)."""
    while True:
        change, chosen = best_operator(_Structure(pdag))
        if chosen is None or (score + change) - score <= 0:
            return pdag, score
        score = score + change
        apply(pdag, chosen)
        applied.append(chosen)
        pdag = essential_graph(pdag_to_dag(pdag))


def ges_bic(data: np.ndarray, lambda_value: float = 0.5,
            max_parents: int | None = None) -> GesResult:
    """GES with causal-learn's BIC score (``score_func="local_score_BIC"``, penalty
    ``lambda_value``), the graph and score causal-learn's ``ges`` returns (see the module's
    text). ``max_parents`` is its ``maxP`` (None: no limit)."""
    from causallearn.score.LocalScoreFunction import local_score_BIC_from_cov
    from causallearn.score.LocalScoreFunctionClass import LocalScoreClass

    data = np.asarray(data)
    n_vars = data.shape[1]
    scorer = LocalScoreClass(data=data, local_score_fun=local_score_BIC_from_cov,
                             parameters={"lambda_value": lambda_value})
    max_p = n_vars if max_parents is None else max_parents
    cache: dict[tuple[int, tuple[int, ...]], float] = {}

    def local(j: int, parents: set[int]) -> float:
        """causal-learn's local score of j given ``parents`` (cached here, so its own
        per-call cache is bypassed)."""
        key = (j, tuple(sorted(parents)))
        value = cache.get(key)
        if value is None:
            value = cache[key] = scorer.score_nocache(j, list(key[1]))
        return value

    def best_insert(g: _Structure) -> tuple[float, Operator | None]:
        """Insert(i, j, T): adds i -> j and orients T — j as T -> j."""
        best: float = -1e7
        chosen: Operator | None = None
        for i in range(n_vars):
            adj_i = g.adj[i]
            for j in range(n_vars):
                if i == j or j in adj_i or len(g.pa[j]) > max_p:
                    continue
                na = g.nbrs[j] & adj_i
                if not g.clique(na):  # then no NA ∪ T is a clique: no valid T
                    continue
                base = na | g.pa[j]
                candidates = sorted(x for x in g.nbrs[j] - adj_i if na <= g.adj[x])
                for t in g.cliques(candidates):  # exactly the T with NA ∪ T a clique
                    if not g.blocked(j, i, na.union(t)):
                        continue
                    without = base.union(t)
                    change = local(j, without | {i}) - local(j, without)
                    if change > best:
                        best, chosen = change, (i, j, t)
        return best, chosen

    def insert(pdag: np.ndarray, operator: Operator) -> None:
        i, j, t = operator
        pdag[i, j], pdag[j, i] = True, False
        for x in t:
            pdag[x, j], pdag[j, x] = True, False

    def best_delete(g: _Structure) -> tuple[float, Operator | None]:
        """Delete(i, j, H): removes i — j or i -> j and orients j — h, i — h as j -> h,
        i -> h."""
        best: float = -1e7
        chosen: Operator | None = None
        for i in range(n_vars):
            for j in range(n_vars):
                if not (j in g.nbrs[i] or i in g.pa[j]):
                    continue
                na = g.nbrs[j] & g.adj[i]
                for h in _subsets(sorted(na)):
                    if not g.clique(na.difference(h)):
                        continue
                    remaining = (na.difference(h) | g.pa[j]) - {i}  # i may be a parent
                    change = local(j, remaining) - local(j, remaining | {i})
                    if change > best:
                        best, chosen = change, (i, j, h)
        return best, chosen

    def delete(pdag: np.ndarray, operator: Operator) -> None:
        i, j, h = operator
        pdag[i, j] = pdag[j, i] = False
        for x in h:
            pdag[j, x], pdag[x, j] = True, False
            pdag[i, x], pdag[x, i] = True, False

    score: float = 0
    for k in range(n_vars):
        score = score + local(k, set())
    inserts: list[Operator] = []
    deletes: list[Operator] = []
    pdag, score = _greedy(np.zeros((n_vars, n_vars), dtype=bool), score, best_insert, insert,
                          inserts)
    pdag, score = _greedy(pdag, score, best_delete, delete, deletes)
    return GesResult(pdag, float(np.ravel(score)[0]), inserts, deletes)
