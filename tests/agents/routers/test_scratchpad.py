"""The scratchpad routers (agents.routers.scratchpad, and the bandit variant through the same
base): the nonlinear edge restored and the separated pair kept apart on a dataset with a known
answer, tiny budgets, the guided deletion log, option checks."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import heuresis_env  # noqa: F401  (registers the environments)
from agents.routers import BanditScratchpadRouter, ScratchpadRouter
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.pc import pc
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import Graph
from heuresis_env.policy import EpisodeSettings, run_episode
from tests.agents.routers.router_data import (
    PARABOLA_NAMES,
    D,
    N,
    drive_on_data,
    parabola_data,
    small_instance,
)


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
    kci_deletions = pc(small_instance("wild", 0).X, small_instance("wild", 0).names, "kci")
    assert len(from_log) == len(kci_deletions.deletion_log)
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


def test_the_scratchpad_prior_is_read_back_from_its_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path / "policy-cache"))
    data, names = parabola_data(), PARABOLA_NAMES
    first = ScratchpadRouter()
    first_graph, _ = drive_on_data(first, data, names)
    entries = list((tmp_path / "policy-cache" / "routers").rglob("*.npz"))
    assert len(entries) == 1  # one prior: this data under these settings
    again = ScratchpadRouter()
    again_graph, _ = drive_on_data(again, data, names)
    assert again._prior["deleted"] == first._prior["deleted"]
    assert again._prior["gaps"] == first._prior["gaps"]
    assert again._prior["graph"] == first._prior["graph"]
    assert again_graph == first_graph
    assert again._compute_prior() == again._prior  # what was read back is what is computed
    # other settings or other data: another entry
    drive_on_data(ScratchpadRouter(alpha=0.01), data, names)
    drive_on_data(ScratchpadRouter(), data[::-1].copy(), names)
    assert len(list((tmp_path / "policy-cache" / "routers").rglob("*.npz"))) == 3
