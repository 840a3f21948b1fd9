"""The paper's router (agents.routers.paper): the restore step, the dCor − |r| screen, bad
arguments, and the router as a policy.

The issue's test is ``test_restore_step_never_fires_on_the_full_sample``: on the full sample
the KCI branch's restore step never restores a pair, so the router returns PC-KCI's graph on
the instances it routes there and PC-Fisher-z's on the others.
"""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import heuresis_env  # noqa: F401  (registers the environments)
from agents.routers import (
    PaperRouterPolicy,
    alternative_conditioning_sets,
    paper_router,
    restore_deletions,
)
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.pc import Deletion, PCResult, pc
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.graphs import Graph
from heuresis_env.metrics import score_graph
from heuresis_env.policy import run_episode
from tests.agents.routers.router_data import (
    PARABOLA_NAMES,
    ROUTED,
    D,
    N,
    parabola_data,
    small_instance,
)


def test_alternative_conditioning_sets_family():
    graph = Graph(["A", "B", "C", "D", "E"])
    graph.add_undirected("A", "C")
    graph.add_undirected("A", "D")
    graph.add_undirected("B", "E")
    # A — B deleted at {C}: subsets of adj(A) \ {B} = {C, D} then of adj(B) \ {A} = {E}, size ≤ 2
    assert alternative_conditioning_sets(graph, "A", "B", ("C",), 2) == [
        (), ("D",), ("C", "D"), ("E",)]
    assert alternative_conditioning_sets(graph, "A", "B", (), 1) == [("C",), ("D",), ("E",)]


def test_restore_step_restores_only_where_dependence_survives():
    """Hand-built PC result (X1 — X2 and X2 — X3 deleted marginally, X1 — X3 kept): KCI on the
    data rejects both deletions; X2 — X3 is separated by the alternative set {X1}, X1 — X2 is not."""
    data = parabola_data()
    names = PARABOLA_NAMES
    skeleton = Graph(names[:3])
    skeleton.add_undirected("X1", "X3")
    log = [Deletion(0, "X1", "X2", (), 0, 0.1, 0.4, "fisherz"),
           Deletion(1, "X2", "X3", (), 0, 0.1, 0.5, "fisherz")]
    result = PCResult(graph=skeleton, skeleton=skeleton, deletion_log=log,
                      separating_sets={frozenset(("X1", "X2")): (), frozenset(("X2", "X3")): ()},
                      n_tests=0, ci_test="fisherz", alpha=0.05, variant="stable", runtime=0.0,
                      names=names[:3])
    attempts = restore_deletions(result, make_ci_test("kci", data[:, :3]), alpha=0.05)
    by_pair = {(a.x, a.y): a for a in attempts}
    first, second = by_pair[("X1", "X2")], by_pair[("X2", "X3")]
    assert first.holm_rejected and second.holm_rejected
    assert first.alternatives_tested == (("X3",),) and first.separating_set is None
    assert first.restored
    assert second.alternatives_tested == (("X1",),) and second.separating_set == ("X1",)
    assert second.separating_p_value > 0.05 and not second.restored
    with pytest.raises(HeuresisError, match="columns"):
        restore_deletions(result, make_ci_test("kci", data), alpha=0.05)


def test_restore_step_never_fires_on_the_full_sample():
    """The issue's test: over several families and both branches, the restore step re-tests
    every PC-KCI deletion and restores none, so the router is PC-KCI or PC-Fisher-z exactly."""
    branches = set()
    for family, index in ROUTED:
        instance = small_instance(family, index)
        decision = paper_router(instance.X, instance.names)
        branches.add(decision.branch)
        fisherz = pc(instance.X, instance.names, "fisherz")
        assert decision.n_deleted == len(fisherz.deletion_log)
        assert decision.flagged_fraction == pytest.approx(
            sum(g.gap >= 0.15 for g in decision.gaps) / len(decision.gaps))
        # the restore step runs on the KCI branch, forced with tau = 0 on the other instances
        forced = decision if decision.branch == "pc-kci" else paper_router(
            instance.X, instance.names, tau=0.0)
        kci = pc(instance.X, instance.names, "kci")
        assert forced.branch == "pc-kci"
        assert forced.restores_attempted == len(kci.deletion_log) > 0
        assert forced.restores_accepted == 0
        for attempt, deletion in zip(forced.restore_attempts, kci.deletion_log, strict=True):
            assert attempt.p_value == deletion.p_value > 0.05
            assert not attempt.holm_rejected and attempt.alternatives_tested == ()
        assert forced.graph == kci.graph
        expected = kci.graph if decision.branch == "pc-kci" else fisherz.graph
        assert decision.graph == expected
    assert branches == {"pc-fisherz", "pc-kci"}


def test_restore_retest_is_recomputed_not_cached():
    """The re-test at the deleting set gives the logged p-value when recomputed from scratch."""
    instance = small_instance("wild", 0)
    decision = paper_router(instance.X, instance.names)
    fresh = make_ci_test("kci", instance.X, disk_cache=False)
    column = {name: k for k, name in enumerate(instance.names)}
    for attempt in decision.restore_attempts:
        result = fresh.test(column[attempt.x], column[attempt.y],
                            [column[v] for v in attempt.conditioning_set])
        assert result.p_value == pytest.approx(attempt.p_value, abs=1e-12)
    assert fresh.n_computed == len(decision.restore_attempts) > 0


def test_router_gap_uses_a_fixed_seeded_subsample():
    instance = small_instance("lg", 1, n=500)
    first = paper_router(instance.X, instance.names, seed=3)
    again = paper_router(instance.X, instance.names, seed=3)
    other = paper_router(instance.X, instance.names, seed=4)
    assert first.branch == "pc-fisherz" and first.subsample_rows == 300
    assert [g.gap for g in first.gaps] == [g.gap for g in again.gaps]
    assert [g.gap for g in first.gaps] != [g.gap for g in other.gaps]
    full = paper_router(instance.X, instance.names, subsample=1000)
    assert full.subsample_rows == 500
    rows = np.arange(500)
    for gap in full.gaps:
        i, j = instance.names.index(gap.x), instance.names.index(gap.y)
        r = abs(np.corrcoef(instance.X[rows, i], instance.X[rows, j])[0, 1])
        assert gap.abs_pearson_r == pytest.approx(r)
        assert gap.gap == pytest.approx(gap.distance_correlation - r)
    json.dumps(first.to_dict())


def test_router_without_restore_step():
    instance = small_instance("wild", 0)
    decision = paper_router(instance.X, instance.names, restore=False)
    assert decision.branch == "pc-kci" and decision.restore_attempts == []
    assert decision.graph == decision.kci_graph


@pytest.mark.parametrize("kwargs, message", [
    ({"alpha": 0.0}, "alpha"), ({"tau": 1.5}, "tau"), ({"subsample": 1}, "subsample"),
    ({"seed": -1}, "seed"), ({"gap_threshold": float("nan")}, "gap_threshold"),
    ({"restore": "yes"}, "restore"),
])
def test_paper_router_rejects_bad_arguments(kwargs, message):
    instance = small_instance("lg", 1)
    with pytest.raises(HeuresisError, match=message):
        paper_router(instance.X, instance.names, **kwargs)


def test_paper_router_rejects_mismatched_names():
    instance = small_instance("lg", 1)
    with pytest.raises(HeuresisError, match="names"):
        paper_router(instance.X, instance.names[:-1])


def test_router_policy_scores_as_paper_router():
    env = gym.make("Heuresis-wild-v0", d=D, n=N)
    instance = small_instance("wild", 0)
    decision = paper_router(instance.X, instance.names)
    expected = score_graph(decision.graph, instance.record.dag)
    policy = PaperRouterPolicy()
    result = run_episode(env, policy, seed=0, options={"index": 0})
    assert result.termination_reason == "submitted" and result.steps == 2
    assert result.scores["f1"] == pytest.approx(expected["f1"])
    assert result.scores["shd"] == expected["shd"]
    assert Graph.from_dict(result.final_graph) == decision.graph
    record = policy.transcript()[0]
    assert record["decision"]["branch"] == decision.branch == "pc-kci"
    assert record["branch_tool_graph_matches"] is True
    one_step = run_episode(env, PaperRouterPolicy(show_branch=False), seed=0,
                           options={"index": 0})
    assert one_step.steps == 1 and one_step.scores == result.scores


def test_the_router_policy_reads_its_decision_back_from_its_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path / "policy-cache"))
    env = gym.make("Heuresis-wild-v0", d=D, n=N)
    first = PaperRouterPolicy()
    run_episode(env, first, seed=0, options={"index": 0})
    assert len(list((tmp_path / "policy-cache" / "routers").rglob("*.npz"))) == 1
    again = PaperRouterPolicy()
    run_episode(env, again, seed=0, options={"index": 0})
    recorded = [p.transcript()[0]["decision"] for p in (first, again)]
    for decision in recorded:
        decision.pop("runtime_seconds")  # this reset's time: computed, then read back
    assert recorded[0] == recorded[1]
    instance = small_instance("wild", 0)
    assert again.decision.graph == paper_router(instance.X, instance.names).graph
    run_episode(env, PaperRouterPolicy(tau=0.9), seed=0, options={"index": 0})  # other options
    run_episode(env, PaperRouterPolicy(), seed=0, options={"index": 1})  # other data
    assert len(list((tmp_path / "policy-cache" / "routers").rglob("*.npz"))) == 3


@pytest.mark.slow
def test_restore_step_never_fires_at_the_default_size():
    """The same on a default-size wild instance (d = 10, n = 600) routed to PC-KCI."""
    instance = generate_instance(InstanceKey("wild", "dev", 0))
    decision = paper_router(instance.X, instance.names, tau=0.0)
    assert decision.restores_attempted > 0 and decision.restores_accepted == 0
    assert decision.graph == decision.kci_graph
