"""Episodes with an experiment budget (issue 44): the intervene tool, the regimes every data
tool reads, budgets, sealing, the -int ids in both views, replay."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from heuresis_env.discovery.algorithms import Interventions, run_algorithm
from heuresis_env.env.core import HeuresisEnv
from heuresis_env.env.replay import replay_trace
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.experiments import draw_experiment, experiment_seed, make_laboratory
from heuresis_env.generation.instances import Instance, InstanceKey
from heuresis_env.generation.record import HiddenRecord
from heuresis_env.generation.scm import SCM, NodeMechanism, calibrate_scm
from heuresis_env.registration import REGISTERED_FAMILIES, env_id, register_envs
from tests.env.test_env import _walk

register_envs()
SALT = "df4eccb213758c8b8ed4d606b0c0ba87131bbb830acbb05a02e00dc1d2721d0f"


def make(**kwargs) -> gym.Env:
    kwargs = {"d": 5, "n": 200, **kwargs}
    return gym.make("Heuresis-lg-int-v0", disable_env_checker=True, **kwargs)


def intervene(target: str, value: float | None = None, n: int = 100) -> dict:
    args = {"target": target, "n": n} if value is None else {"target": target, "value": value,
                                                              "n": n}
    return {"tool": "intervene", "args": args}


def test_the_observational_benchmark_is_unchanged():
    plain = HeuresisEnv("lg", d=5, n=200)
    zero = HeuresisEnv("lg", d=5, n=200, experiments=0)
    assert plain.tool_schemas() == zero.tool_schemas()
    assert "intervene" not in [s["function"]["name"] for s in plain.tool_schemas()]
    assert "experiments" not in plain.config()
    plain.reset(seed=0)
    observation, _, _, _, info = plain.step(intervene("X1"))
    assert "experiment budget" in info["error"] and "-int" in info["error"]
    observation, _, _, _, info = plain.step(
        {"tool": "run_algorithm", "args": {"name": "gies"}})
    assert "reads experiments" in info["error"]
    assert "data" not in plain.tool_schemas()[1]["function"]["parameters"]["properties"]


def test_intervene_adds_a_regime_and_reports_what_responds():
    env = make()
    observation, info = env.reset(seed=0, options={"index": 2})
    assert info["experiment_rows"] == 500
    assert "Experiment budget: 500 rows" in observation["text"]
    observation, _, _, _, info = env.step(intervene("X2"))
    assert info["error"] is None, info["error"]
    data = info["data"]
    assert data["regime"] == 1 and data["rows_used"] == 100 and data["rows_left"] == 400
    assert set(data["columns"]) == {f"X{i}" for i in range(1, 6)}
    assert data["columns"]["X2"]["set"]
    assert env.unwrapped.experiment_rows_used == 100
    _, _, _, _, info = env.step(intervene("X3", value=1.5, n=50))
    assert info["data"]["columns"]["X3"]["mean"] == 1.5
    _, _, _, _, info = env.step({"tool": "ci_test", "args": {"x": "X1", "y": "X4"}})
    assert info["data"]["n_rows"] == 350 and info["data"]["data_rows"] == "pooled"
    assert "regime" in env.unwrapped._last_text
    _, _, _, _, info = env.step({"tool": "ci_test", "args": {"x": "X3", "y": "X4", "data": 2}})
    assert "held fixed in regime 2" in info["error"]
    _, _, _, _, info = env.step({"tool": "ci_test", "args": {"x": "X1", "y": "X4",
                                                             "data": "observational"}})
    assert info["data"]["n_rows"] == 200
    for name in ("gies", "jci-pc"):
        _, _, _, _, info = env.step({"tool": "run_algorithm", "args": {"name": name}})
        assert info["error"] is None, info["error"]
        assert "every regime (2 experiment(s), 350 rows)" in env.unwrapped._last_text
    *_, info = env.step({"tool": "submit"})
    assert info["experiment_rows_used"] == 150


def test_budgets_refuse_overspending_with_a_clear_observation():
    env = make(experiments=150)
    env.reset(seed=0)
    env.step(intervene("X1", n=100))
    marks = env.unwrapped.working_graph.marks.copy()
    observation, reward, terminated, truncated, info = env.step(intervene("X2", n=100))
    assert observation["text"].startswith("Error:")
    assert "asks for 100 rows" in info["error"] and "50 of 150 left" in info["error"]
    assert not terminated and not truncated and reward == 0.0
    assert env.unwrapped.steps_used == 2  # the refused call cost a step ...
    assert env.unwrapped.experiment_rows_used == 100  # ... and drew nothing
    assert np.array_equal(env.unwrapped.working_graph.marks, marks)
    _, _, _, _, info = env.step(intervene("X2", n=50))
    assert info["error"] is None and info["data"]["rows_left"] == 0
    _, _, _, _, info = env.step(intervene("X3", n=10))
    assert "0 of 150 left" in info["error"] and "or submit" in info["error"]


def test_bad_experiment_budgets_and_tables_are_refused():
    with pytest.raises(HeuresisError, match="experiments must be an integer"):
        HeuresisEnv("lg", experiments=-1)
    with pytest.raises(HeuresisError, match="data table"):
        HeuresisEnv("sachs", experiments=100)
    with pytest.raises(HeuresisError, match="graph episodes"):
        HeuresisEnv("lg", task="qa", experiments=100)


def test_sealed_experiments_differ_from_public_ones_and_stay_on_the_referee_side():
    rows = {}
    for salt in (None, SALT):
        env = make(split="test", salt=salt)
        env.reset(seed=0, options={"index": 0})
        env.step(intervene("X1"))
        regimes = env.unwrapped._episode.regimes
        rows[salt] = regimes.block(1).rows.copy()
        if salt is not None:
            env.step({"tool": "run_algorithm", "args": {"name": "gies"}})
            for obj in _walk(env):  # no SCM, record or instance in reach
                assert not isinstance(obj, HiddenRecord | Instance | SCM), type(obj)
            for obj in _walk(env.unwrapped._episode):  # what the tools see: rows, no salt
                assert not (isinstance(obj, str) and SALT in obj)
        env.close()
    assert rows[None].tobytes() != rows[SALT].tobytes()


@pytest.mark.parametrize("family", REGISTERED_FAMILIES)
@pytest.mark.parametrize("interface", ["text", "rl"])
def test_check_env_passes_on_every_interventional_id(family, interface):
    env = gym.make(env_id(family, experiments=True), interface=interface, d=4, n=100,
                   disable_env_checker=True)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_rl_view_offers_masked_intervention_actions():
    env = make(interface="rl", experiments=250)
    observation, _ = env.reset(seed=0)
    table = env.unwrapped.rl_actions
    actions = [a for a in table if a.operation == "intervene"]
    assert [a.i for a in actions] == list(range(5)) and len(table) == 5 * 10 + 1 + 5
    assert observation["experiment_budget_left"][0] == 1.0
    assert not observation["shift_available"].any()
    mask = env.unwrapped.action_masks()
    assert mask[[a.index for a in actions]].all()
    for expected_left in (0.6, 0.2):
        observation, _, _, _, info = env.step(actions[0].index)
        assert "error" not in info
        assert observation["experiment_budget_left"][0] == pytest.approx(expected_left)
    shift = env.unwrapped.unflatten_observation(observation)["shift_available"]
    assert shift[0, 1:].all() and not shift[1:].any()
    mask = env.unwrapped.action_masks()
    assert not mask[[a.index for a in actions]].any()  # 50 rows left, an action draws 100
    _, _, _, _, info = env.step(actions[1].index)
    assert "masked out" in info["error"] and "50 of 250 left" in info["error"]


def test_observational_rl_view_is_unchanged():
    plain = HeuresisEnv("lg", interface="rl", d=5, n=200)
    assert len(plain.rl_actions) == 5 * 10 + 1
    assert "shift" not in plain.observation_space.spaces


@pytest.mark.parametrize("interface", ["text", "rl"])
def test_an_episode_with_experiments_replays_exactly(tmp_path, interface):
    env = make(interface=interface, trace_path=str(tmp_path))
    env.reset(seed=4)
    if interface == "text":
        actions = [intervene("X1"), intervene("X3", value=-1.0, n=60),
                   {"tool": "run_algorithm", "args": {"name": "gies", "save_as": "g"}},
                   {"tool": "load_graph", "args": {"name": "g"}}, {"tool": "submit"}]
    else:
        intervene_actions = [a.index for a in env.unwrapped.rl_actions
                             if a.operation == "intervene"]
        actions = [intervene_actions[0], intervene_actions[2], 0, 1, 40,
                   env.unwrapped.rl_actions[-6].index]  # ... then submit
    for action in actions:
        *_, info = env.step(action)
    trace = env.unwrapped.trace_file
    env.close()
    report = replay_trace(trace)
    assert report.ok and not report.output_mismatches, report.summary()


def test_sample_rows_reads_the_regimes_when_asked():
    env = make()
    env.reset(seed=0)
    env.step(intervene("X2", n=40))
    *_, info = env.step({"tool": "sample_rows", "args": {"count": 1000}})
    assert len(info["data"]["rows"]) == 200 and "regimes" not in info["data"]  # the default
    *_, info = env.step({"tool": "sample_rows", "args": {"count": 1000, "data": "pooled"}})
    assert len(info["data"]["rows"]) == 240 and sorted(set(info["data"]["regimes"])) == [0, 1]
    *_, info = env.step({"tool": "sample_rows", "args": {"count": 1000, "data": 1}})
    assert len(info["data"]["rows"]) == 40


def test_run_code_sees_every_row_and_the_regimes():
    env = make()
    env.reset(seed=0)
    env.step(intervene("X2", n=40))
    _, _, _, _, info = env.step({"tool": "run_code", "args": {"code": (
        "print(X.shape, np.bincount(regimes).tolist(), experiments[0]['target'])")}})
    assert info["error"] is None, info["error"]
    assert "(240, 5) [200, 40] X2" in env.unwrapped._last_text
    env.step(intervene("X4", n=30))  # a new experiment: the sandbox reopens with its rows
    env.step({"tool": "run_code", "args": {"code": "print(X.shape)"}})
    assert "(270, 5)" in env.unwrapped._last_text
    env.close()


# ---- the interventional algorithms on a known graph ----------------------------------------

def _chain() -> SCM:
    """X1 → X2 → X3, linear-Gaussian: observationally all three are one equivalence class."""
    names = ("X1", "X2", "X3")
    adjacency = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]], dtype=bool)
    mechanisms = (NodeMechanism("root_gaussian", (), {"noise_scale": 1.0}),
                  NodeMechanism("linear", ("X1",), {"weights": [1.0], "noise_scale": 1.0}),
                  NodeMechanism("linear", ("X2",), {"weights": [1.0], "noise_scale": 1.0}))
    scm, _ = calibrate_scm(SCM(names, adjacency, mechanisms), 2000, np.random.default_rng(0))
    return scm


@pytest.mark.parametrize("algorithm, value", [("gies", None), ("gies", 2.0), ("jci-pc", 2.0)])
def test_an_experiment_on_the_middle_of_a_chain_orients_it(algorithm, value):
    """(jci-pc with Fisher-z sees a context variable only through a shift of the mean, so a
    randomized experiment, which keeps every mean, needs its KCI: docs/experiments.md.)"""
    scm = _chain()
    key = InstanceKey("lg", "dev", 0, d=3)
    observational = scm.sample(2000, np.random.default_rng(1))
    experiment = draw_experiment(scm, experiment_seed(key, 1), 1, value, 1000)
    rows = np.vstack([observational, experiment])
    labels = np.repeat([0, 1], [2000, 1000])
    alone = run_algorithm(algorithm, observational, scm.names,
                          interventions=Interventions(np.zeros(2000, dtype=np.int64), ((),)))
    assert alone.ok and alone.graph.n_edges() == 2
    assert not alone.graph.is_dag()  # no experiment: the chain's edges stay undirected
    result = run_algorithm(algorithm, rows, scm.names,
                           interventions=Interventions(labels, ((), (1,))))
    assert result.ok, result.error
    assert result.graph.to_text().splitlines() == ["X1 --> X2", "X2 --> X3"]


def test_laboratory_is_none_for_a_table():
    from heuresis_env.generation.datasets import dataset_instance

    table = dataset_instance(np.random.default_rng(0).normal(size=(50, 3)), ["a", "b", "c"],
                             None, name="t")
    assert make_laboratory(table, None) is None
