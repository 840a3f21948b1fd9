"""The PC algorithm with a deletion log: every removed edge keeps its test, set and p-value.

causal-learn's PC keeps neither p-values nor the single set that deleted an edge (its stable
variant stores the union of every separating set found at the deleting level), so Heuresis
runs its own PC; its skeleton equals causal-learn's ``pc`` skeleton with the same test and α
(the tests check it). The deletion log is what the guided condition exposes to an agent and
what the hidden record labels right or wrong.

**Enumeration** (as causal-learn's ``skeleton_discovery``): at level ℓ = 0, 1, … while some
node has at least ℓ + 1 neighbours, for x = 0 … d−1, for each neighbour y of x in index
order, for each S ⊆ adj(x) \\ {y} with |S| = ℓ in ``itertools.combinations`` order, test
x ⟂ y | S; the first S with p > α deletes x — y. Each unordered pair can thus be tested from
both ends (S drawn from x's or from y's neighbours).

- ``variant="stable"``: adjacency sets are frozen at the start of each level, so the skeleton
  does not depend on the column order (the logged sets still can). A pair deleted earlier in the level is not tested again.
- ``variant="original"``: deletions act at once; x's neighbour list is read when x's turn
  starts, exactly as causal-learn's ``stable=False``, so S may still contain a neighbour x
  lost earlier in the same turn.

**Orientation** (:mod:`heuresis_env.discovery.pc_orientation`): every unshielded triple
x — m — y is decided by the ``orientation`` rule, colliders are oriented, then Meek's rules
give a CPDAG. The default ``"union"`` repeats causal-learn's ``pc()`` with its defaults
(``uc_rule=0``, ``uc_priority=2``): m is a non-collider when it is in any separating set
found for (x, y) at the deleting level — in the stable variant causal-learn tests every set
of that level from both ends, so those sets are tested here too. The output equals
causal-learn's except where causal-learn's closes a directed cycle (ours never does).
``"single"`` uses only the deleting set (Heuresis's earlier rule); ``"conservative"`` (CPC)
and ``"majority"`` (MPC) test every subset of the endpoints' adjacencies and mark ambiguous
triples. With an exact oracle every rule gives the true CPDAG. ``PCResult.triples`` records
each decision and the sets behind it.

**Subsets**: PC runs on the columns it is given. To work on a subset of variables, select
the columns and pass their names: ``pc(X[:, idx], names=[all_names[i] for i in idx])``.
"""

from __future__ import annotations

import itertools
import numbers
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from heuresis_env.discovery.citests.base import CITest, make_ci_test
from heuresis_env.discovery.pc_orientation import (
    DEFAULT_ORIENTATION,
    ORIENTATION_RULES,
    TripleDecision,
    orient,
)
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import Graph, pdag_to_graph

PC_VARIANTS = ("stable", "original")


@dataclass(frozen=True)
class Deletion:
    """One edge deletion: x — y removed because x ⟂ y | conditioning_set was not rejected.

    ``x`` is the variable whose neighbours supplied the conditioning set; ``order`` counts
    deletions from 0 in the order PC made them; ``level`` is |conditioning_set|.
    """

    order: int
    x: str
    y: str
    conditioning_set: tuple[str, ...]
    level: int
    statistic: float
    p_value: float
    test: str

    @property
    def pair(self) -> frozenset[str]:
        return frozenset((self.x, self.y))

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["conditioning_set"] = list(self.conditioning_set)
        return record

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Deletion:
        return cls(
            order=int(record["order"]), x=str(record["x"]), y=str(record["y"]),
            conditioning_set=tuple(str(v) for v in record["conditioning_set"]),
            level=int(record["level"]), statistic=float(record["statistic"]),
            p_value=float(record["p_value"]), test=str(record["test"]),
        )


@dataclass
class PCResult:
    """PC's output: the CPDAG, its skeleton, and the evidence behind every missing edge.

    ``n_tests`` counts the distinct CI tests the skeleton phase asked for ({x, y} unordered,
    S as a set); ``n_test_calls`` also counts a test repeated from the other end of a pair
    (served from the test's cache); ``n_orientation_tests`` counts the further distinct tests
    the orientation rule asked for. ``triples`` holds the rule's decision on every unshielded
    triple. ``runtime`` is wall-clock seconds, CI tests included. ``ci_test`` names the test
    that ran (``"kci"`` or the approximation for ``ci_test="kci-auto"``).
    """

    graph: Graph
    skeleton: Graph
    deletion_log: list[Deletion]
    separating_sets: dict[frozenset[str], tuple[str, ...]]
    n_tests: int
    ci_test: str
    alpha: float
    variant: str
    runtime: float
    n_test_calls: int = 0
    max_depth: int | None = None
    names: tuple[str, ...] = field(default=())
    orientation: str = DEFAULT_ORIENTATION
    triples: list[TripleDecision] = field(default_factory=list)
    n_orientation_tests: int = 0

    @property
    def colliders(self) -> list[TripleDecision]:
        """The triples the rule called colliders (``applied`` says which were oriented)."""
        return [t for t in self.triples if t.decision == "collider"]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (separating sets as ``[[x, y], [S...]]`` pairs in sorted order)."""
        return {
            "graph": self.graph.to_dict(),
            "skeleton": self.skeleton.to_dict(),
            "deletion_log": [d.to_dict() for d in self.deletion_log],
            "separating_sets": sorted([sorted(pair), list(s)]
                                      for pair, s in self.separating_sets.items()),
            "n_tests": self.n_tests,
            "n_test_calls": self.n_test_calls,
            "ci_test": self.ci_test,
            "alpha": self.alpha,
            "variant": self.variant,
            "max_depth": self.max_depth,
            "runtime": self.runtime,
            "names": list(self.names),
            "orientation": self.orientation,
            "triples": [t.to_dict() for t in self.triples],
            "n_orientation_tests": self.n_orientation_tests,
        }


def validate_names(names: Sequence[str] | None, d: int) -> tuple[str, ...]:
    """Column names for d columns (X1..Xd when None): a sequence of d unique strings."""
    if names is None:
        return tuple(f"X{i + 1}" for i in range(d))
    if isinstance(names, str):
        raise HeuresisError("names must be a sequence of column names, not one string")
    names = tuple(str(n) for n in names)
    if len(names) != d:
        raise HeuresisError(f"names has {len(names)} entries but the data has {d} columns")
    if len(set(names)) != d:
        duplicates = sorted({n for n in names if names.count(n) > 1})
        raise HeuresisError(f"names must be unique; repeated: {duplicates}")
    return names


def _resolve_ci_test(data: np.ndarray | None, ci_test: str | CITest,
                     ci_params: dict[str, Any] | None) -> CITest:
    if isinstance(ci_test, CITest):
        if ci_params:
            raise HeuresisError(
                "ci_params only apply when ci_test is a name; this CI test is already built"
            )
        if data is not None:
            array = np.asarray(data, dtype=np.float64)
            if array.shape != ci_test.data.shape or not np.array_equal(array, ci_test.data):
                raise HeuresisError(
                    "the CI test is bound to different data than the data passed to pc(); "
                    "pass data=None to use the test's own data"
                )
        return ci_test
    if not isinstance(ci_test, str):
        raise HeuresisError(
            f"ci_test must be a CI test name or a CITest instance, got {type(ci_test).__name__}"
        )
    if data is None:
        raise HeuresisError("pc() needs data unless ci_test is a CITest instance")
    return make_ci_test(ci_test, data, **(ci_params or {}))


def pc(data: np.ndarray | None, names: Sequence[str] | None = None,
       ci_test: str | CITest = "fisherz", alpha: float = 0.05, variant: str = "stable",
       max_depth: int | None = None, ci_params: dict[str, Any] | None = None,
       orientation: str = DEFAULT_ORIENTATION) -> PCResult:
    """Run PC on ``data`` (n × d) and return the CPDAG with its deletion log.

    ``ci_test`` is a registered test name (built on ``data`` with ``ci_params``) or a built
    :class:`CITest` (then ``data`` may be None). ``names`` defaults to X1..Xd. ``max_depth``
    caps |S| (levels 0..max_depth). ``orientation`` is one of
    :data:`~heuresis_env.discovery.pc_orientation.ORIENTATION_RULES`. See the module
    docstring for the enumeration order and the rules.
    """
    start = time.perf_counter()
    _check_arguments(variant, orientation, alpha, max_depth)
    tester = _resolve_ci_test(data, ci_test, ci_params)
    d = tester.d
    names = validate_names(names, d)
    alpha = float(alpha)
    max_depth = None if max_depth is None else int(max_depth)
    search = _search_skeleton(tester, names, alpha, max_depth, stable=variant == "stable")
    deletion_log, tested = search.deletion_log, search.tested

    skeleton_matrix = np.array(search.adjacent, dtype=bool).reshape(d, d)
    column = {name: i for i, name in enumerate(names)}
    deleting_sets = {frozenset((column[r.x], column[r.y])):
                     (column[r.x], tuple(column[v] for v in r.conditioning_set))
                     for r in deletion_log}
    oriented = orient(skeleton_matrix, deleting_sets, names, tester, alpha, orientation,
                      variant, max_depth)
    graph = pdag_to_graph(oriented.pdag, names)
    skeleton = pdag_to_graph(skeleton_matrix, names)
    separating_sets = {
        frozenset(names[a] for a in pair): tuple(names[v] for v in s)
        for pair, s in search.separating_sets_index.items()
    }
    return PCResult(
        graph=graph, skeleton=skeleton, deletion_log=deletion_log,
        separating_sets=separating_sets, n_tests=len(tested), ci_test=tester.method,
        alpha=alpha, variant=variant, runtime=time.perf_counter() - start,
        n_test_calls=search.n_test_calls, max_depth=max_depth, names=names,
        orientation=orientation,
        triples=list(oriented.triples), n_orientation_tests=len(oriented.tests_asked - tested),
    )


def _check_arguments(variant: str, orientation: str, alpha: float,
                     max_depth: int | None) -> None:
    if variant not in PC_VARIANTS:
        raise UnknownNameError("PC variant", variant, PC_VARIANTS)
    if orientation not in ORIENTATION_RULES:
        raise UnknownNameError("orientation rule", orientation, ORIENTATION_RULES)
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
        raise HeuresisError(f"alpha must be a number in the open interval (0, 1), got {alpha!r}")
    if max_depth is not None and (isinstance(max_depth, bool)
                                  or not isinstance(max_depth, numbers.Integral) or max_depth < 0):
        raise HeuresisError(f"max_depth must be None or an integer ≥ 0, got {max_depth!r}")


@dataclass
class _SkeletonSearch:
    """What PC's adjacency search leaves: the adjacency, the deletion log, each deleted
    pair's set, the distinct tests asked and the number of test calls."""

    adjacent: list[list[bool]]
    deletion_log: list[Deletion]
    separating_sets_index: dict[frozenset[int], tuple[int, ...]]
    tested: set[tuple[int, int, tuple[int, ...]]]
    n_test_calls: int


def _search_skeleton(tester: CITest, names: Sequence[str], alpha: float,
                     max_depth: int | None, stable: bool) -> _SkeletonSearch:
    """The adjacency search, level by level (the module docstring's enumeration order)."""
    d = tester.d
    adjacent = [[x != y for y in range(d)] for x in range(d)]
    degree = [d - 1] * d
    deletion_log: list[Deletion] = []
    separating_sets_index: dict[frozenset[int], tuple[int, ...]] = {}
    tested: set[tuple[int, int, tuple[int, ...]]] = set()
    n_test_calls = 0

    level = 0
    while max(degree, default=0) > level and (max_depth is None or level <= max_depth):
        if stable:
            frozen_neighbors = [[y for y in range(d) if adjacent[x][y]] for x in range(d)]
        for x in range(d):
            if stable:
                neighbors_x = frozen_neighbors[x]
            else:
                neighbors_x = [y for y in range(d) if adjacent[x][y]]
            if len(neighbors_x) - 1 < level:
                continue
            for y in neighbors_x:
                if not adjacent[x][y]:  # deleted earlier in this level
                    continue
                candidates = [v for v in neighbors_x if v != y]
                for conditioning_set in itertools.combinations(candidates, level):
                    result = tester.test(x, y, conditioning_set)
                    n_test_calls += 1
                    tested.add((result.x, result.y, result.conditioning_set))
                    if result.p_value > alpha:
                        adjacent[x][y] = adjacent[y][x] = False
                        degree[x] -= 1
                        degree[y] -= 1
                        separating_sets_index[frozenset((x, y))] = conditioning_set
                        deletion_log.append(Deletion(
                            order=len(deletion_log), x=names[x], y=names[y],
                            conditioning_set=tuple(names[v] for v in conditioning_set),
                            level=level, statistic=result.statistic, p_value=result.p_value,
                            test=result.method,
                        ))
                        break
        level += 1
    return _SkeletonSearch(adjacent, deletion_log, separating_sets_index, tested, n_test_calls)


def label_deletions(deletion_log: Iterable[Deletion], true_dag: Graph) -> list[str]:
    """Label each deletion "right" (the pair is a true non-edge) or "wrong" (a true edge).

    Only adjacency matters, so ``true_dag`` may be the DAG or its CPDAG. Every name in the
    log must be a variable of ``true_dag`` (an unknown name raises, listing the known ones).
    """
    if not isinstance(true_dag, Graph):
        raise HeuresisError(
            f"true_dag must be a heuresis_env.graphs.Graph, got {type(true_dag).__name__}"
        )
    skeleton = true_dag.skeleton()
    labels = []
    for deletion in deletion_log:
        i, j = true_dag.index(deletion.x), true_dag.index(deletion.y)
        labels.append("wrong" if skeleton[i, j] else "right")
    return labels


def wrong_deletions(deletion_log: Iterable[Deletion], true_dag: Graph) -> list[Deletion]:
    """The deletions that removed a true edge (those :func:`label_deletions` calls "wrong")."""
    log = list(deletion_log)
    return [d for d, label in zip(log, label_deletions(log, true_dag)) if label == "wrong"]
