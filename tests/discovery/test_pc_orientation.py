"""PC's orientation rules on hand-built cases where they disagree, with an exact oracle, and
through the algorithm registry.

The hand-built cases use a table oracle: x ⟂ y | S holds exactly for the listed (pair, S),
so the separating sets each rule sees are known and every rule's decision can be derived by
hand (worked out in each test's docstring).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from heuresis_env.discovery.algorithms import run_algorithm
from heuresis_env.discovery.citests.base import CITest
from heuresis_env.discovery.pc import PCResult, pc
from heuresis_env.discovery.pc_orientation import (
    ORIENTATION_RULES,
    TripleDecision,
    unshielded_triples,
)
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import Graph, has_directed_cycle

from .test_pc import random_dag, sample_scm


class TableOracle(CITest):
    """x ⟂ y | S (p = 1) exactly for the listed pairs and sets; every other test p = 0."""

    name = "table"

    def __init__(self, data: np.ndarray, *, independent: list[tuple[str, str, tuple[str, ...]]],
                 names: list[str]):
        super().__init__(data)
        column = {name: i for i, name in enumerate(names)}
        self.table = {(frozenset((column[x], column[y])), frozenset(column[v] for v in s))
                      for x, y, s in independent}

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        independent = (frozenset((x, y)), frozenset(s)) in self.table
        return (0.0, 1.0) if independent else (1.0, 0.0)


def run_table(names: list[str], independent, rule: str, variant: str = "stable") -> PCResult:
    data = np.random.default_rng(0).standard_normal((8, len(names)))
    oracle = TableOracle(data, independent=independent, names=names)
    return pc(None, names=names, ci_test=oracle, variant=variant, orientation=rule)


def expected_graph(names: list[str], directed=(), undirected=()) -> Graph:
    graph = Graph(names)
    for u, v in directed:
        graph.add_directed(u, v)
    for u, v in undirected:
        graph.add_undirected(u, v)
    return graph


def decisions(result: PCResult) -> dict[str, str]:
    return {f"{t.x}-{t.middle}-{t.y}": t.decision for t in result.triples}


# ---- case 1: the deleting set versus the union of the level's sets ----------------------------

CASE_1 = (["A", "B", "Z", "M"], [("A", "B", ("Z",)), ("A", "B", ("M",))])


@pytest.mark.parametrize("rule", ORIENTATION_RULES)
def test_case_1_single_set_against_the_union(rule):
    """A ⟂ B | Z and A ⟂ B | M only: the skeleton is complete but for A — B, deleted at level 1
    from A's end by {Z} (Z precedes M). ``single`` sees {Z}: A — Z — B is a non-collider and
    A — M — B a collider, then R3 (Z — A, Z — B, A → M ← B, Z — M) orients Z → M. ``union``
    also finds {M} at level 1 (from both ends): both triples are non-colliders. CPC and MPC
    see {Z}, {M} from each end: each middle is in 2 of the 4 sets, so both triples are
    ambiguous (exactly half for MPC) and nothing is oriented."""
    names, independent = CASE_1
    for variant in ("stable", "original"):
        result = run_table(names, independent, rule, variant)
        assert result.deletion_log[0].conditioning_set == ("Z",)
        if rule == "single" or (rule == "union" and variant == "original"):
            # the original variant stops at the first set, as causal-learn's stable=False
            assert decisions(result) == {"A-Z-B": "non-collider", "A-M-B": "collider"}
            assert result.graph == expected_graph(
                names, directed=[("A", "M"), ("B", "M"), ("Z", "M")],
                undirected=[("A", "Z"), ("B", "Z")]), (rule, variant)
        elif rule == "union":
            assert decisions(result) == {"A-Z-B": "non-collider", "A-M-B": "non-collider"}
            sets = {t.middle: t.separating_sets for t in result.triples}
            assert sets["M"] == (("Z",), ("M",), ("Z",), ("M",))
            assert result.triples[0].found_from == ("A", "A", "B", "B")
            assert result.graph == expected_graph(
                names, undirected=[("A", "Z"), ("A", "M"), ("B", "Z"), ("B", "M"), ("Z", "M")])
        else:
            assert decisions(result) == {"A-Z-B": "ambiguous", "A-M-B": "ambiguous"}
            assert all(t.with_middle == 2 and len(t.separating_sets) == 4
                       for t in result.triples)
            assert result.graph == expected_graph(
                names, undirected=[("A", "Z"), ("A", "M"), ("B", "Z"), ("B", "M"), ("Z", "M")])


# ---- case 2: the conservative rule against the majority rule ----------------------------------

CASE_2 = (["A", "B", "M", "Z", "W"],
          [("A", "B", ("M",)), ("A", "B", ("Z",)), ("A", "B", ("W",)), ("A", "B", ("Z", "W"))])


def test_case_2_conservative_against_majority():
    """A ⟂ B given {M}, {Z}, {W} or {Z, W}: A — B is deleted at level 1 by {M}; every other
    pair stays adjacent. The level-1 sets are {M}, {Z}, {W}, so ``union`` calls all three
    triples non-colliders; ``single`` sees only {M}: colliders at Z and W. The subsets of
    adj(A) = adj(B) = {M, Z, W} that separate are {M}, {Z}, {W}, {Z, W} — 8 sets counting
    both ends. M is in 2 of 8: MPC orients A → M ← B; Z and W are in 4 of 8: ambiguous. CPC
    finds every middle in some but not all sets: three ambiguous triples, nothing oriented.
    Under MPC, R3 would orient Z → M and W → M through the kites Z — A, Z — B, A → M ← B, but
    A — Z — B and A — W — B are ambiguous, so it must not."""
    names, independent = CASE_2
    results = {rule: run_table(names, independent, rule) for rule in ORIENTATION_RULES}
    assert decisions(results["union"]) == {"A-M-B": "non-collider", "A-Z-B": "non-collider",
                                           "A-W-B": "non-collider"}
    assert decisions(results["single"]) == {"A-M-B": "non-collider", "A-Z-B": "collider",
                                            "A-W-B": "collider"}
    assert decisions(results["majority"]) == {"A-M-B": "collider", "A-Z-B": "ambiguous",
                                              "A-W-B": "ambiguous"}
    assert decisions(results["conservative"]) == {"A-M-B": "ambiguous", "A-Z-B": "ambiguous",
                                                  "A-W-B": "ambiguous"}
    counts = {t.middle: (t.with_middle, len(t.separating_sets))
              for t in results["majority"].triples}
    assert counts == {"M": (2, 8), "Z": (4, 8), "W": (4, 8)}

    complete = [("A", "M"), ("A", "Z"), ("A", "W"), ("B", "M"), ("B", "Z"), ("B", "W"),
                ("M", "Z"), ("M", "W"), ("Z", "W")]
    assert results["union"].graph == expected_graph(names, undirected=complete)
    assert results["conservative"].graph == expected_graph(names, undirected=complete)
    assert results["majority"].graph == expected_graph(
        names, directed=[("A", "M"), ("B", "M")],
        undirected=[e for e in complete if e not in (("A", "M"), ("B", "M"))])
    # single: A → Z ← B and A → W ← B; R3 on the kite M — A, M — B, A → Z ← B, M — Z gives
    # M → Z, and likewise M → W; Z — W stays undirected (both orientations are consistent)
    assert results["single"].graph == expected_graph(
        names, directed=[("A", "Z"), ("B", "Z"), ("A", "W"), ("B", "W"), ("M", "Z"),
                         ("M", "W")],
        undirected=[("A", "M"), ("B", "M"), ("Z", "W")])


# ---- case 3: an ambiguous triple blocks Meek's rule 1 -----------------------------------------

CASE_3 = (["A", "B", "M", "Y"],
          [("A", "B", ()), ("A", "Y", ()), ("A", "Y", ("M",)), ("B", "Y", ()), ("B", "Y", ("M",))])


@pytest.mark.parametrize("rule", ORIENTATION_RULES)
def test_case_3_ambiguous_triples_are_not_used_by_rule_1(rule):
    """A ⟂ B, A ⟂ Y | ∅ and | M, B ⟂ Y | ∅ and | M: the skeleton is the star A — M, B — M,
    Y — M, every pair deleted at level 0 by ∅. ``union`` and ``single`` call all three
    triples colliders: A → M, B → M, Y → M. For CPC and MPC, A — M — B is separated by ∅
    only (from both ends): a collider; A — M — Y and B — M — Y are separated by ∅ and by {M}:
    ambiguous. R1 on A → M — Y would orient M → Y, but the triple is ambiguous, so Y — M
    stays undirected."""
    names, independent = CASE_3
    result = run_table(names, independent, rule)
    if rule in ("union", "single"):
        assert set(decisions(result).values()) == {"collider"}
        assert result.graph == expected_graph(names, directed=[("A", "M"), ("B", "M"),
                                                               ("Y", "M")])
        # the third collider conflicts with none: every arrowhead points into M
        assert all(t.applied for t in result.triples)
    else:
        assert decisions(result) == {"A-M-B": "collider", "A-M-Y": "ambiguous",
                                     "B-M-Y": "ambiguous"}
        assert result.graph == expected_graph(names, directed=[("A", "M"), ("B", "M")],
                                              undirected=[("M", "Y")])


def test_conflicting_colliders_keep_the_first_and_are_recorded():
    """X1 ⟂ X3 | ∅ and X2 ⟂ X4 | ∅ on the chain-shaped skeleton X1 — X2 — X3 — X4 (plus the
    kept adjacencies): the triples X1 — X2 — X3 and X2 — X3 — X4 are both colliders and
    disagree on X2 — X3. causal-learn's ``uc_priority=2`` visits X1 — X2 — X3 first (middle
    X2) and skips X2 — X3 — X4, whose edge X3 — X2 then points out of X3."""
    names = ["X1", "X2", "X3", "X4"]
    independent = [("X1", "X3", ()), ("X2", "X4", ()), ("X1", "X4", ())]
    result = run_table(names, independent, "union")
    applied = {f"{t.x}-{t.middle}-{t.y}": (t.decision, t.applied) for t in result.triples}
    assert applied == {"X1-X2-X3": ("collider", True), "X2-X3-X4": ("collider", False)}
    assert result.graph == expected_graph(names, directed=[("X1", "X2"), ("X3", "X2")],
                                          undirected=[("X3", "X4")])
    assert [t.middle for t in result.colliders] == ["X2", "X3"]


# ---- consistency on data (the exact oracle: test_pc.py) ---------------------------------------------------

def test_neighbourhood_rules_are_consistent_on_data():
    """On finite data: a CPC collider (middle in no separating set) is an MPC collider and a
    CPC non-collider an MPC non-collider; the two rules see the same sets; both give acyclic
    PDAGs; and CPC leaves at least as many edges undirected as MPC calls ambiguous."""
    rng = np.random.default_rng(4)
    ambiguous_seen = 0
    for index in range(12):
        d = int(rng.integers(6, 10))
        adjacency = random_dag(rng, d, expected_degree=3.0)
        data = sample_scm(rng, adjacency, int(rng.integers(100, 400)), nonlinear=index % 2 == 1)
        conservative = pc(data, orientation="conservative")
        majority = pc(data, orientation="majority")
        assert [(t.x, t.middle, t.y) for t in conservative.triples] == [
            (t.x, t.middle, t.y) for t in majority.triples]
        for c, m in zip(conservative.triples, majority.triples, strict=True):
            assert c.separating_sets == m.separating_sets
            if c.decision != "ambiguous":
                assert m.decision == c.decision
            ambiguous_seen += c.decision == "ambiguous"
            assert c.decision == "collider" or not c.applied
        for result in (conservative, majority):
            assert not has_directed_cycle(result.graph.directed_adjacency())
            assert result.n_orientation_tests > 0
    assert ambiguous_seen > 0


def test_unshielded_triples_in_causal_learn_order():
    skeleton = np.zeros((5, 5), dtype=bool)
    for a, b in [(0, 2), (1, 2), (2, 3), (3, 4), (0, 1)]:
        skeleton[a, b] = skeleton[b, a] = True
    # middle 2: (0, 3), (1, 3) [0 — 1 adjacent]; middle 3: (2, 4)
    assert unshielded_triples(skeleton) == [(0, 2, 3), (1, 2, 3), (2, 3, 4)]


# ---- interfaces: registry, records, bad input -------------------------------------------------

def test_orientation_through_run_algorithm_and_json():
    rng = np.random.default_rng(3)
    data = sample_scm(rng, random_dag(rng, 7, expected_degree=3.0), 300)
    names = [f"V{i}" for i in range(7)]
    for rule in ORIENTATION_RULES:
        result = run_algorithm("pc-fisherz", data, names, params={"orientation": rule})
        assert result.ok and result.params["orientation"] == rule
        direct = pc(data, names, orientation=rule)
        assert result.graph == direct.graph
        record = json.loads(json.dumps(result.to_dict()))["extras"]["orientation"]
        assert record["rule"] == rule
        assert [TripleDecision.from_dict(t) for t in record["triples"]] == direct.triples
    assert run_algorithm("pc-fisherz", data, names).params["orientation"] == "union"
    with pytest.raises(HeuresisError, match="parameter 'orientation' of algorithm 'pc-kci'"):
        run_algorithm("pc-kci", data, names, params={"orientation": "cpc"})
    with pytest.raises(UnknownNameError, match="Known orientation rules: conservative, "
                                               "majority, single, union"):
        pc(data, orientation="cpc")
    serialized = json.loads(json.dumps(pc(data, orientation="majority").to_dict()))
    assert serialized["orientation"] == "majority"
    assert {t["decision"] for t in serialized["triples"]} <= {"collider", "non-collider",
                                                              "ambiguous"}
