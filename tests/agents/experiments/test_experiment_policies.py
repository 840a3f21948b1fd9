"""The experiment policies (issue 44): the orientation rule on known graphs, random-int,
active-int and rl-int on real episodes, the simulator's rewards, a run and its report."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from agents.experiments import (
    Orientation,
    active_int_policy,
    most_unresolved,
    node_features,
    random_int_policy,
)
from agents.experiments.rl import DEFAULT_RL_INT_DIR, ExperimentSimulator, load_rl_int
from heuresis_env.evaluation import evaluate
from heuresis_env.graphs import EdgeMark, Graph
from heuresis_env.metrics import shd
from heuresis_env.policy import EpisodeSettings, run_episode
from heuresis_env.registration import register_envs
from heuresis_env.reports import build_report, load_runs

register_envs()
NAMES = ("X1", "X2", "X3", "X4")


def _star() -> Graph:
    """X1 - X2, X1 - X3, X1 - X4 undirected; X2 - X3 none."""
    return Graph.from_edges(NAMES, [("X1", "X2"), ("X1", "X3"), ("X1", "X4")], directed=False)


def test_an_experiment_orients_its_targets_edges_from_the_responses():
    orientation = Orientation(_star())
    assert most_unresolved(orientation) == 0  # the hub has the most unresolved edges
    orientation.record(0, {1: True, 2: False, 3: True})
    graph = orientation.graph()
    assert graph.marks[0, 1] == EdgeMark.ARROW and graph.marks[1, 0] == EdgeMark.TAIL
    assert graph.marks[2, 0] == EdgeMark.ARROW and graph.marks[0, 2] == EdgeMark.TAIL
    assert most_unresolved(orientation) is None  # every edge decided
    features = node_features(orientation)
    assert features.shape == (4, 6) and features[0, 3] == 1.0 and features[0, 0] == 0.0


def _episodes(policy, family="lg", count=4, **kwargs):
    results = []
    for index in range(count):
        env = gym.make(f"Heuresis-{family}-int-v0", d=6, n=300, disable_env_checker=True,
                       **kwargs)
        results.append(run_episode(env, policy, seed=0, options={"index": index}))
        env.close()
    return results


def test_active_int_orients_pc_kcis_graph_and_lowers_its_shd():
    policy = active_int_policy()
    results = _episodes(policy)
    assert all(r.error is None and r.termination_reason == "submitted" for r in results)
    # the same instances' PC-KCI graphs, as the policy started from them
    starts = []
    for index in range(4):
        env = gym.make("Heuresis-lg-int-v0", d=6, n=300, disable_env_checker=True)
        env.reset(seed=0, options={"index": index})
        *_, info = env.step({"tool": "run_algorithm", "args": {"name": "pc-kci"}})
        graph = Graph.from_dict(info["data"]["graph"])
        truth = env.unwrapped._truth["reveal"]()
        starts.append(shd(graph, truth))
        env.close()
    assert np.mean([r.scores["shd"] for r in results]) < np.mean(starts)


def test_random_int_spends_the_budget_then_submits_gies():
    policy = random_int_policy(seed=3)
    (result,) = _episodes(policy, count=1, experiments=300)
    assert result.error is None
    assert len(policy.transcript()) == 3 and result.steps == 3 + 3  # gies, load, submit
    orient = random_int_policy(finish="orient")
    (result,) = _episodes(orient, count=1, experiments=300)
    assert result.error is None and len(orient.transcript()) == 3


def test_a_policy_says_when_an_experiment_was_refused():
    policy = active_int_policy(rows=400)  # 400 rows each: the second does not fit
    results = _episodes(policy, count=1, experiments=500)
    assert results[0].error is None  # it never asks for more than the budget has
    assert len(policy.transcript()) <= 1


def test_the_simulators_rewards_add_up_to_the_shd_drop():
    start = _star()
    truth = Graph.from_edges(NAMES, [("X1", "X2"), ("X3", "X1"), ("X1", "X4")])
    record = {"names": list(NAMES), "start": start.to_dict(), "dag": truth.to_dict(),
              "responded": [[False, True, False, True], [False] * 4, [True, False, False, False],
                            [False] * 4]}
    env = ExperimentSimulator([record], experiments=2, experiment_cost=0.01)
    _, _ = env.reset(options={"index": 0})
    assert env.start_shd == shd(start, truth) == 3
    total = 0.0
    _, reward, done, _, info = env.step(0)
    total += reward
    assert not done and info["shd"] == 0
    _, reward, done, _, info = env.step(4)  # stop
    total += reward
    assert done and total == pytest.approx(0.3 - 0.01)
    assert env.action_masks().all()


@pytest.mark.skipif(not (DEFAULT_RL_INT_DIR / "model.json").exists(),
                    reason="the shipped rl-int model is not built (heuresis train-int)")
def test_the_shipped_rl_int_model_plays_an_episode():
    policy = load_rl_int()
    env = gym.make("Heuresis-wild-int-v0", disable_env_checker=True)
    result = run_episode(env, policy, seed=0, options={"index": 0})
    assert result.error is None and result.termination_reason == "submitted"
    assert 1 <= len(policy.transcript()) <= 5
    with pytest.raises(Exception, match="trained at d = 10"):
        run_episode(gym.make("Heuresis-wild-int-v0", d=5, n=200, disable_env_checker=True),
                    policy, seed=0)


def test_a_run_with_experiments_and_its_report(tmp_path):
    settings = EpisodeSettings(max_steps=20, max_seconds=None)
    for policy, families, budget in (("active-int", "lg-int", 0), ("active-int", "lg", 200),
                                     ("pc-kci", "lg", 0)):
        evaluate(policy, families=[families], split="dev", count=2, d=5, n=200,
                 settings=EpisodeSettings(**{**settings.to_dict(), "experiments": budget}),
                 out_dir=tmp_path / f"{policy}-{families}-{budget}", progress=False)
    loaded = load_runs(sorted(tmp_path.iterdir()))
    budgets = sorted(int(a.settings.get("experiments") or 0) for a in loaded.arms)
    assert budgets == [0, 200, 500]
    summary = build_report(sorted(p for p in tmp_path.iterdir()), tmp_path / "report")
    text = (tmp_path / "report" / "report.md").read_text()
    assert "## Experiments: F1 and SHD against rows spent" in text
    assert (tmp_path / "report" / "figures" / "figure_experiments.png").exists()
    assert summary is not None


def test_language_model_and_mcp_clients_get_intervene_from_the_registry():
    """No special code: the wrapper's schemas and the MCP server's tool list come from the
    registry, with the experiment budget as part of the configuration."""
    from agents.llm import make_heuristic_llm_policy
    from heuresis_env.mcp.server import EpisodeServer

    policy = make_heuristic_llm_policy()
    try:
        env = gym.make("Heuresis-lg-int-v0", d=5, n=200, disable_env_checker=True)
        policy.configure(EpisodeSettings(experiments=500))
        observation, info = env.reset(seed=0)
        policy.reset(observation, info)
        assert "intervene" in policy._tool_names
        policy.configure(EpisodeSettings())
        plain = gym.make("Heuresis-lg-v0", d=5, n=200, disable_env_checker=True)
        observation, info = plain.reset(seed=0)
        policy.reset(observation, info)
        assert "intervene" not in policy._tool_names
    finally:
        policy.close()
    server = EpisodeServer(family="lg", d=5, n=200, experiments=200)
    tools = {t["name"]: t for t in server.tools()}
    assert tools["intervene"]["annotations"]["read_only_hint"] is False
    assert tools["intervene"]["annotations"]["idempotent_hint"] is False
    assert "data" in tools["ci_test"]["input_schema"]["properties"]
    assert "intervene" not in {t["name"] for t in EpisodeServer(family="lg", d=5,
                                                                 n=200).tools()}
