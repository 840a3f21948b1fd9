"""The scripted routers: the paper's router (spec section 3) and the scratchpad routers.

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
    BanditScratchpadRouter,
    PaperRouterPolicy,
    ScratchpadRouter,
    alternative_conditioning_sets,
    holm_adjusted_p_values,
    holm_rejections,
    paper_router,
    restore_deletions,
)
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.citests.base import data_sha256
from heuresis_env.discovery.pc import Deletion, PCResult, pc
from heuresis_env.env.toolbox import ActionError, EpisodeState, ToolResult, parse_action
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.graphs import Graph
from heuresis_env.metrics import score_graph
from heuresis_env.policy import EpisodeSettings, run_episode

D, N = 5, 200
#: small instances where PC-KCI is quick: lg, hetero and gauntlet/2 route to PC-Fisher-z,
#: wild/0 and wild/4 to PC-KCI (checked below, so a generator change cannot hide a branch)
ROUTED = [("lg", 1), ("lg", 3), ("hetero", 0), ("gauntlet", 2), ("wild", 0), ("wild", 4)]


def small_instance(family: str, index: int, d: int = D, n: int = N):
    return generate_instance(InstanceKey(family, "dev", index, d=d, n=n))


# ---- Holm ---------------------------------------------------------------------------------------

def test_holm_hand_case():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → running max 0.06
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(holm_adjusted_p_values(p), [0.03, 0.06, 0.06, 0.02])
    assert holm_rejections(p, 0.05).tolist() == [True, False, False, True]
    # step-down beats Bonferroni: 0.02·2 = 0.04 rejects, then 0.03·1 = 0.03 < running max 0.04
    np.testing.assert_allclose(holm_adjusted_p_values([0.03, 0.02]), [0.04, 0.04])
    assert holm_rejections([0.03, 0.02], 0.05).tolist() == [True, True]
    assert holm_rejections([0.03, 0.02], 0.01).tolist() == [False, False]
    assert holm_adjusted_p_values([]).size == 0
    assert holm_adjusted_p_values([0.6, 0.7]).tolist() == [1.0, 1.0]


def test_holm_rejects_bad_input():
    with pytest.raises(HeuresisError, match=r"\[0, 1\]"):
        holm_adjusted_p_values([0.1, 1.5])
    with pytest.raises(HeuresisError, match="alpha"):
        holm_rejections([0.1], alpha=1.2)


# ---- the restore step -------------------------------------------------------------------------------

def test_alternative_conditioning_sets_family():
    graph = Graph(["A", "B", "C", "D", "E"])
    graph.add_undirected("A", "C")
    graph.add_undirected("A", "D")
    graph.add_undirected("B", "E")
    # A — B deleted at {C}: subsets of adj(A) \ {B} = {C, D} then of adj(B) \ {A} = {E}, size ≤ 2
    assert alternative_conditioning_sets(graph, "A", "B", ("C",), 2) == [
        (), ("D",), ("C", "D"), ("E",)]
    assert alternative_conditioning_sets(graph, "A", "B", (), 1) == [("C",), ("D",), ("E",)]


def parabola_data(n: int = 400, seed: int = 0) -> np.ndarray:
    """X1 → X2 = X1² + noise, X1 → X3 linear, X4 independent; columns standardized.

    Fisher-z finds X1 — X2 and X2 — X3 independent (no correlation); X2 ⟂ X3 | X1 holds.
    """
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = x1**2 + 0.3 * rng.normal(size=n)
    x3 = x1 + 0.5 * rng.normal(size=n)
    x4 = rng.normal(size=n)
    data = np.column_stack([x1, x2, x3, x4])
    return (data - data.mean(axis=0)) / data.std(axis=0)


PARABOLA_NAMES = ("X1", "X2", "X3", "X4")


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


# ---- the paper's router -----------------------------------------------------------------------------

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


# ---- scratchpad routers ------------------------------------------------------------------------------

def drive_on_data(policy, data: np.ndarray, names, max_steps: int = 40):
    """Run a text policy on a hand-made dataset with the real toolbox.

    The environment draws its instances from the family generators; a dataset with a known
    answer is run here through the same tools, parsed and executed as the environment does
    (rejected actions cost a step and leave the graph unchanged).
    """
    state = EpisodeState(data, names, data_sha256(data))
    info = {"data": data.copy(), "names": list(names), "guided": False,
            "sha256": data_sha256(data)}

    def observation(left: int) -> dict:
        return {"text": "", "working_graph": state.working_graph.marks.copy(),
                "budget_left": np.array([left], dtype=np.float32), "last_error": ""}

    policy.reset(observation(max_steps), info)
    for step in range(1, max_steps + 1):
        state.call_number = step
        action = policy.act(observation(max_steps - step + 1), info)
        before = state.working_graph.copy()
        try:
            parsed = parse_action(action, "full", False)
            result = parsed.tool.run(state, parsed.args)
        except (ActionError, HeuresisError) as exc:
            parsed, result = None, ToolResult.failure(str(exc))
        if result.error is not None:
            state.working_graph = before
        info = {"step": step, "tool": None if parsed is None else parsed.tool.name,
                "error": result.error, "data": dict(result.data)}
        if result.submitted:
            return state.working_graph, step
    return state.working_graph, max_steps


@pytest.mark.parametrize("policy_class", [ScratchpadRouter, BanditScratchpadRouter])
def test_scratchpad_restores_the_nonlinear_edge_and_not_the_separated_pair(policy_class):
    data = parabola_data()
    names = PARABOLA_NAMES
    fisherz = make_ci_test("fisherz", data)
    kci = make_ci_test("kci", data)
    assert fisherz.test(0, 1).p_value > 0.05 and kci.test(0, 1).p_value < 0.05  # the premise
    policy = policy_class()
    graph, steps = drive_on_data(policy, data, names)
    assert steps < 40
    assert graph.adjacent("X1", "X2")  # restored
    assert graph.adjacent("X1", "X3")  # PC-Fisher-z's edge, kept
    assert not graph.adjacent("X2", "X3")  # X2 ⟂ X3 | X1: a true non-edge
    assert not any(graph.adjacent("X4", v) for v in names[:3])

    ledger = policy.ledger
    parabola = ledger.hypothesis("X1", "X2")
    assert parabola.claim == "no_edge" and parabola.decision == "restore"
    first = ledger.surprises[parabola.surprises[0]]
    assert first.kind == "nonlinear_dependence"
    earlier = ledger.evidence[first.earlier[0]]
    assert (earlier.method, earlier.outcome, earlier.source) == (
        "fisherz", "independent", "run_algorithm")
    assert ledger.evidence[first.reversing].outcome == "dependent"
    assert first.proposed is not None  # the surprise proposed the next test
    kci_verdicts = [ledger.evidence[k] for k in parabola.evidence
                    if ledger.evidence[k].method == "kci"]
    assert kci_verdicts and all(e.outcome == "dependent" for e in kci_verdicts)
    assert all(ledger.evidence[k].step is not None for k in parabola.decision_evidence)

    separated = ledger.hypothesis("X2", "X3")
    assert separated.decision is None and separated.status == "supported"
    kinds = [ledger.surprises[k].kind for k in separated.surprises]
    assert kinds == ["nonlinear_dependence", "vanishing_dependence"]
    vanishing = ledger.surprises[separated.surprises[1]]
    assert ledger.evidence[vanishing.reversing].conditioning_set == ("X1",)
    confirm = [ledger.evidence[k] for k in separated.evidence
               if ledger.evidence[k].purpose == "dcor_confirm"]
    assert confirm and confirm[0].outcome == "independent"

    record = policy.transcript()[0]
    assert record["kind"] == "scratchpad_ledger"
    json.dumps(record)


def test_bandit_is_deterministic_given_the_seed_and_stays_in_budget():
    env = gym.make("Heuresis-wild-v0", d=D, n=N, max_steps=12)
    runs = []
    for _ in range(2):
        policy = BanditScratchpadRouter(seed=7)
        result = run_episode(env, policy, seed=0, options={"index": 4})
        assert result.termination_reason == "submitted" and result.steps <= 12
        runs.append((result.scores, policy.transcript()))
    assert runs[0] == runs[1]
    planner = runs[0][1][0]["planner"]
    assert sum(planner["pulls"].values()) == len(planner["history"]) > 0
    thompson = BanditScratchpadRouter(strategy="thompson", seed=7)
    result = run_episode(env, thompson, seed=0, options={"index": 4})
    assert result.termination_reason == "submitted" and result.steps <= 12


@pytest.mark.parametrize("max_steps", [1, 2, 5])
def test_scratchpad_submits_within_tiny_budgets(max_steps):
    env = gym.make("Heuresis-lg-v0", d=D, n=N, max_steps=max_steps)
    result = run_episode(env, ScratchpadRouter(), seed=0, options={"index": 1})
    assert result.termination_reason == "submitted" and result.steps <= max_steps


def test_guided_scratchpad_reads_the_deletion_log():
    env = gym.make("Heuresis-wild-v0", d=D, n=N, guided=True, max_steps=30)
    policy = ScratchpadRouter()
    policy.configure(EpisodeSettings(max_steps=30, guided=True))
    result = run_episode(env, policy, seed=0, options={"index": 0})
    assert result.termination_reason == "submitted"
    ledger = policy.ledger
    from_log = [e for e in ledger.evidence if e.source == "deletion_log"]
    seed_deletions = pc(small_instance("wild", 0).X, small_instance("wild", 0).names, "kci")
    assert len(from_log) == len(seed_deletions.deletion_log)
    assert all(e.method == "kci" and e.outcome == "independent" for e in from_log)
    actions = [a["tool"] for a in policy.transcript()[0]["actions"]]
    assert actions[:2] == ["run_algorithm", "deletion_log"]
    assert Graph.from_dict(result.final_graph) == policy.final_graph()


def test_scratchpad_options_are_checked():
    with pytest.raises(UnknownNameError, match="ucb1"):
        BanditScratchpadRouter(strategy="epsilon")
    with pytest.raises(HeuresisError, match="max_sets_per_pair"):
        ScratchpadRouter(max_sets_per_pair=0)
    with pytest.raises(HeuresisError, match="before reset"):
        ScratchpadRouter().act({}, {})


@pytest.mark.slow
def test_restore_step_never_fires_at_the_default_size():
    """The same on a default-size wild instance (d = 10, n = 600) routed to PC-KCI."""
    instance = generate_instance(InstanceKey("wild", "dev", 0))
    decision = paper_router(instance.X, instance.names, tau=0.0)
    assert decision.restores_attempted > 0 and decision.restores_accepted == 0
    assert decision.graph == decision.kci_graph
