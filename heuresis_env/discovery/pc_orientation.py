"""PC's orientation phase: decide every unshielded triple, orient the colliders, close under Meek.

An unshielded triple x — m — y of PC's skeleton (x, y non-adjacent) is a collider x → m ← y
or not, depending on the separating sets of (x, y). Four rules decide it
(:data:`ORIENTATION_RULES`):

- ``union`` (the default) — causal-learn's ``pc()`` with its defaults (``stable=True``,
  ``uc_rule=0``, ``uc_priority=2``), step for step: m is a non-collider when it is in *any*
  separating set PC found for (x, y) at the level that deleted the pair. In the stable variant
  causal-learn tests every set of that level from both ends (it does not stop at the first),
  so these are re-tested here (served from the test's cache where PC already asked); in the
  original variant the deleting set is the only one found, as in causal-learn's
  ``stable=False``.
- ``single`` — Heuresis's earlier rule: the one set that deleted the pair (the deletion log's
  set), colliders by :func:`~heuresis_env.graphs.orient_v_structures` and Meek's rules by
  :func:`~heuresis_env.graphs.apply_meek_rules`.
- ``conservative`` — CPC (Ramsey, Zhang & Spirtes 2006): test x ⟂ y | S for every subset S
  of adj(x) and every subset of adj(y) in the final skeleton (sizes up to ``max_depth``);
  collider when m is in none of the separating sets, non-collider when in all, otherwise —
  or when no subset separates — *ambiguous*.
- ``majority`` — MPC (Colombo & Maathuis 2014): the same separating sets; collider when m
  is in fewer than half, non-collider when in more than half, ambiguous at exactly half or
  when no subset separates.

The two neighbourhood rules follow pcalg's ``pc(conservative=TRUE | maj.rule=TRUE)`` with its
defaults (``version.unf = c(2, 1)``): the subsets are drawn from adj(x) and from adj(y) (m
belongs to both), a set found from both ends counts twice, and a triple that no subset
separates is ambiguous. We call a set separating when p > α (pcalg: p ≥ α), as in PC's
skeleton phase.

Orientation for ``union``, ``conservative`` and ``majority`` repeats causal-learn's
``UCSepset.uc_sepset(priority=2)`` then ``Meek.meek``, including their order of operations:
triples in causal-learn's order (middle node, then x, then y, by column index); a collider is
skipped whole when either of its edges already points out of m ("prioritize existing
colliders"); then R1 (unshielded triples), R2 (triangles) and R3 (kites) are swept in
causal-learn's list orders, fixed before the first sweep, until nothing changes. The
neighbourhood rules add only pcalg's treatment of ambiguous triples: they are never oriented
as colliders, and R1 and R3 do not use them as non-colliders. (pcalg's own default,
``solve.confl=FALSE``, lets a later collider overwrite an earlier one; we keep causal-learn's
priority rule for all three.)

**The one difference from causal-learn**: no orientation may close a directed cycle. A
collider that would is skipped, and so is a Meek orientation a → b when b already reaches a.
causal-learn's collider step has no such guard, and its Meek step asks an ancestor record
(``GeneralGraph.dpath``) that is updated incrementally and is not a full transitive closure,
so on conflicting finite-sample evidence its output can hold a directed cycle. Its record
only ever under-reports ancestry, and it never removes or reverses a directed edge once
placed, so our output differs from causal-learn's exactly when causal-learn's has a directed
cycle (the tests and ``docs/baselines.md`` give the measured counts).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np

from heuresis_env.discovery.citests.base import CITest
from heuresis_env.graphs import apply_meek_rules, orient_v_structures

ORIENTATION_RULES = ("union", "single", "conservative", "majority")
DEFAULT_ORIENTATION = "union"

COLLIDER, NON_COLLIDER, AMBIGUOUS = "collider", "non-collider", "ambiguous"

#: pair (as a frozenset of column indices) → (the end whose neighbours gave the set, the set)
DeletingSets = Mapping[frozenset[int], tuple[int, tuple[int, ...]]]


@dataclass(frozen=True)
class TripleDecision:
    """One unshielded triple x — middle — y of the skeleton and what the rule made of it.

    ``separating_sets`` are the sets the rule counted (each with p > α for x ⟂ y), and
    ``found_from[k]`` names the end whose neighbours supplied set k (a set found from both
    ends appears twice). ``applied`` says whether a collider's two arrowheads were placed (a
    collider is skipped when it conflicts with an earlier one).
    """

    x: str
    middle: str
    y: str
    decision: str
    separating_sets: tuple[tuple[str, ...], ...]
    found_from: tuple[str, ...]
    applied: bool

    @property
    def with_middle(self) -> int:
        """How many of the counted separating sets contain the middle node."""
        return sum(self.middle in s for s in self.separating_sets)

    def to_dict(self) -> dict[str, Any]:
        return {"x": self.x, "middle": self.middle, "y": self.y, "decision": self.decision,
                "separating_sets": [list(s) for s in self.separating_sets],
                "found_from": list(self.found_from), "with_middle": self.with_middle,
                "applied": self.applied}

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> TripleDecision:
        return cls(x=str(record["x"]), middle=str(record["middle"]), y=str(record["y"]),
                   decision=str(record["decision"]),
                   separating_sets=tuple(tuple(str(v) for v in s)
                                         for s in record["separating_sets"]),
                   found_from=tuple(str(v) for v in record["found_from"]),
                   applied=bool(record["applied"]))


@dataclass(frozen=True)
class Orientation:
    """The orientation phase's output: a boolean PDAG (``[i, j] and not [j, i]`` is i → j,
    both is i — j), the decision on every unshielded triple, and the CI tests it asked for
    (normalized keys ``(x, y, S)`` with x < y and S sorted)."""

    pdag: np.ndarray
    triples: tuple[TripleDecision, ...]
    tests_asked: frozenset[tuple[int, int, tuple[int, ...]]]


def unshielded_triples(skeleton: np.ndarray) -> list[tuple[int, int, int]]:
    """Every unshielded triple (x, m, y) with x < y, in causal-learn's ``uc_sepset`` order:
    by middle node m, then x, then y (column indices)."""
    s = np.asarray(skeleton, dtype=bool)
    triples = []
    for m in range(s.shape[0]):
        neighbours = np.flatnonzero(s[m]).tolist()
        for x, y in itertools.combinations(neighbours, 2):
            if not s[x, y]:
                triples.append((x, m, y))
    return triples


def orient(skeleton: np.ndarray, deleting_sets: DeletingSets, names: Sequence[str],
           tester: CITest, alpha: float, rule: str = DEFAULT_ORIENTATION,
           variant: str = "stable", max_depth: int | None = None) -> Orientation:
    """Decide every unshielded triple of ``skeleton`` by ``rule`` and orient PC's CPDAG.

    ``deleting_sets`` maps each non-adjacent pair to the end and set that deleted it (PC's
    log); the deleting level is the set's size. ``tester`` must be the test PC ran (extra
    sets are tested with it, at ``alpha``); ``variant`` and ``max_depth`` are PC's.
    """
    s = np.asarray(skeleton, dtype=bool)
    triples = unshielded_triples(s)
    asked: set[tuple[int, int, tuple[int, ...]]] = set()

    def separates(end: int, other: int, conditioning_set: tuple[int, ...]) -> bool:
        result = tester.test(end, other, conditioning_set)
        asked.add((result.x, result.y, result.conditioning_set))
        return result.p_value > alpha

    pairs = list(dict.fromkeys((x, y) for x, _, y in triples))
    if rule == "single" or (rule == "union" and variant == "original"):
        found = {pair: [deleting_sets[frozenset(pair)]] for pair in pairs}
    elif rule == "union":
        found = _deleting_level_sets(s.shape[0], pairs, deleting_sets, separates)
    else:
        found = {pair: _neighbourhood_sets(s, pair, max_depth, separates) for pair in pairs}

    decisions = [_decide(rule, m, found[(x, y)]) for x, m, y in triples]
    if rule == "single":
        pattern = orient_v_structures(s, {frozenset(p): sets[0][1] for p, sets in found.items()})
        applied = [d == COLLIDER and pattern[x, m] and not pattern[m, x]
                   and pattern[y, m] and not pattern[m, y]
                   for (x, m, y), d in zip(triples, decisions, strict=True)]
        pdag = apply_meek_rules(pattern)
    else:
        graph = _CausalLearnPattern(s)
        applied = [d == COLLIDER and graph.orient_collider(x, m, y)
                   for (x, m, y), d in zip(triples, decisions, strict=True)]
        ambiguous = {t for (x, m, y), d in zip(triples, decisions, strict=True)
                     if d == AMBIGUOUS for t in ((x, m, y), (y, m, x))}
        graph.apply_meek_rules(ambiguous)
        pdag = graph.pdag()

    records = tuple(
        TripleDecision(x=names[x], middle=names[m], y=names[y], decision=decision,
                       separating_sets=tuple(tuple(names[v] for v in c) for _, c in found[(x, y)]),
                       found_from=tuple(names[end] for end, _ in found[(x, y)]),
                       applied=bool(was_applied))
        for (x, m, y), decision, was_applied in zip(triples, decisions, applied, strict=True))
    return Orientation(pdag=pdag, triples=records, tests_asked=frozenset(asked))


def _decide(rule: str, middle: int, sets: list[tuple[int, tuple[int, ...]]]) -> str:
    with_middle = sum(middle in c for _, c in sets)
    if rule in ("union", "single"):
        return NON_COLLIDER if with_middle else COLLIDER
    if not sets:
        return AMBIGUOUS
    if rule == "conservative":
        if with_middle == 0:
            return COLLIDER
        return NON_COLLIDER if with_middle == len(sets) else AMBIGUOUS
    if 2 * with_middle < len(sets):
        return COLLIDER
    return NON_COLLIDER if 2 * with_middle > len(sets) else AMBIGUOUS


def _deleting_level_sets(d: int, pairs: list[tuple[int, int]], deleting_sets: DeletingSets,
                         separates: Callable[[int, int, tuple[int, ...]], bool]
                         ) -> dict[tuple[int, int], list[tuple[int, tuple[int, ...]]]]:
    """Stable PC's separating sets as causal-learn collects them: every set of the deleting
    level ℓ, drawn from either end's adjacencies frozen at the start of level ℓ (the
    complete graph minus the pairs deleted at lower levels), that gives p > α."""
    frozen_at: dict[int, np.ndarray] = {}
    found = {}
    for x, y in pairs:
        level = len(deleting_sets[frozenset((x, y))][1])
        if level not in frozen_at:
            adjacency = ~np.eye(d, dtype=bool)
            for pair, (_, conditioning_set) in deleting_sets.items():
                if len(conditioning_set) < level:
                    a, b = tuple(pair)
                    adjacency[a, b] = adjacency[b, a] = False
            frozen_at[level] = adjacency
        adjacency = frozen_at[level]
        sets: list[tuple[int, tuple[int, ...]]] = []
        for end, other in ((x, y), (y, x)):  # x < y: causal-learn visits x's turn first
            neighbours = [v for v in np.flatnonzero(adjacency[end]).tolist() if v != other]
            sets.extend((end, c) for c in itertools.combinations(neighbours, level)
                        if separates(end, other, c))
        found[(x, y)] = sets
    return found


def _neighbourhood_sets(skeleton: np.ndarray, pair: tuple[int, int], max_depth: int | None,
                        separates: Callable[[int, int, tuple[int, ...]], bool]
                        ) -> list[tuple[int, tuple[int, ...]]]:
    """CPC's and MPC's separating sets of (x, y): every subset of adj(x), then of adj(y), in
    the final skeleton (at most ``max_depth`` elements) with p > α."""
    x, y = pair
    sets: list[tuple[int, tuple[int, ...]]] = []
    for end in (x, y):
        neighbours = np.flatnonzero(skeleton[end]).tolist()
        largest = len(neighbours) if max_depth is None else min(len(neighbours), max_depth)
        for size in range(largest + 1):
            sets.extend((end, c) for c in itertools.combinations(neighbours, size)
                        if separates(x, y, c))
    return sets


class _CausalLearnPattern:
    """A PDAG held as causal-learn's ``CausalGraph`` holds it, to repeat its steps exactly.

    ``g[i, j]`` is the mark at i's end of the edge i–j (−1 tail, 1 arrow, 0 no edge), so
    i → j is ``g[i, j] = -1, g[j, i] = 1``. Orientations that would close a directed cycle
    are skipped (see the module docstring for how this departs from causal-learn).
    """

    def __init__(self, skeleton: np.ndarray):
        self.g = np.where(skeleton, -1, 0).astype(np.int8)
        self.d = self.g.shape[0]

    def directed(self, i: int, j: int) -> bool:
        return self.g[i, j] == -1 and self.g[j, i] == 1

    def undirected(self, i: int, j: int) -> bool:
        return self.g[i, j] == -1 and self.g[j, i] == -1

    def _reaches(self, source: int, target: int) -> bool:
        """Whether a directed path source → … → target exists."""
        children = (self.g == -1) & (self.g.T == 1)  # [i, j]: i → j
        seen = {source}
        stack = [source]
        while stack:
            v = stack.pop()
            if v == target:
                return True
            for w in np.flatnonzero(children[v]).tolist():
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        return False

    def _orient(self, i: int, j: int) -> None:
        self.g[i, j], self.g[j, i] = -1, 1

    def orient_collider(self, x: int, m: int, y: int) -> bool:
        """``uc_priority=2``: orient x → m ← y unless m → x or m → y is already there (or the
        collider would close a directed cycle)."""
        if self.directed(m, x) or self.directed(m, y):
            return False
        if self._reaches(m, x) or self._reaches(m, y):
            return False
        self._orient(x, m)
        self._orient(y, m)
        return True

    def _adjacency_list(self) -> list[tuple[int, int]]:
        """causal-learn's ``find_adj``: tails then arrowheads, each as (other end, node)."""
        tails = [(c, r) for r, c in zip(*np.nonzero(self.g == -1), strict=True)]
        arrows = [(c, r) for r, c in zip(*np.nonzero(self.g == 1), strict=True)]
        return [(int(a), int(b)) for a, b in tails + arrows]

    def apply_meek_rules(self, ambiguous: Set[tuple[int, int, int]] = frozenset()) -> None:
        """``Meek.meek``: R1, R2, R3 swept over lists fixed before the first sweep, until no
        edge changes. R1 does not fire through an ambiguous triple, nor R3 through an
        ambiguous triple j — i — k (pcalg's rule for CPC and MPC)."""
        adjacency = self._adjacency_list()
        adjacent = set(adjacency)
        by_first: dict[int, list[tuple[int, int]]] = {}
        for pair in adjacency:
            by_first.setdefault(pair[0], []).append(pair)
        unshielded, triangles = [], []
        for a, b in adjacency:
            for _, c in by_first.get(b, ()):
                if c == a:
                    continue
                if self.g[a, c] == 0:
                    unshielded.append((a, b, c))
                if (a, c) in adjacent:
                    triangles.append((a, b, c))
        by_ends: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
        for triangle in triangles:
            by_ends.setdefault((triangle[0], triangle[2]), []).append(triangle)
        kites = [(i, j, k, tip) for i, j, tip in triangles for _, k, _ in by_ends[(i, tip)]
                 if j < k and self.g[j, k] == 0]

        changed = True
        while changed:
            changed = False
            for i, j, k in unshielded:
                if (i, j, k) in ambiguous:
                    continue
                if self.directed(i, j) and self.undirected(j, k):
                    if self._reaches(k, j):
                        continue
                    self._orient(j, k)
                    changed = True
            for i, j, k in triangles:
                if self.directed(i, j) and self.directed(j, k) and self.undirected(i, k):
                    if self._reaches(k, i):
                        continue
                    self._orient(i, k)
                    changed = True
            for i, j, k, tip in kites:
                if (j, i, k) in ambiguous:
                    continue
                if (self.undirected(i, j) and self.undirected(i, k) and self.directed(j, tip)
                        and self.directed(k, tip) and self.undirected(i, tip)):
                    if self._reaches(tip, i):
                        continue
                    self._orient(i, tip)
                    changed = True

    def pdag(self) -> np.ndarray:
        """Boolean PDAG: ``[i, j]`` when the edge i–j has a tail at i (i → j or i — j)."""
        return self.g == -1
