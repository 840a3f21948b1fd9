"""The text view of the Heuresis environment: ids, API conformance, episodes, budgets,
rewards, bad actions, the hidden record, rendering."""

from __future__ import annotations

import json
import time
import types

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heuresis_env.env.core import HeuresisEnv
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import Instance, InstanceKey, generate_instance
from heuresis_env.generation.record import HiddenRecord
from heuresis_env.generation.scm import SCM
from heuresis_env.graphs import Graph
from heuresis_env.metrics import score_graph
from heuresis_env.registration import (
    REGISTERED_FAMILIES,
    REGISTERED_STRUCTURES,
    env_id,
    register_envs,
)

register_envs()
SMALL = {"d": 5, "n": 200, "indices": [0]}


def make(family: str = "lg", **kwargs) -> gym.Env:
    return gym.make(env_id(family), **{**SMALL, **kwargs})


def true_dag(family: str, index: int = 0, d: int = 5, n: int = 200) -> Graph:
    return generate_instance(InstanceKey(family, "dev", index, d=d, n=n)).record.dag


@pytest.mark.parametrize("family", REGISTERED_FAMILIES)
def test_check_env_on_every_registered_id(family):
    env = make(family)
    check_env(env.unwrapped)
    env.close()


def test_registration_uses_string_entry_points():
    ids = register_envs()
    assert ids == [f"Heuresis-{f}-v0" for f in (*REGISTERED_FAMILIES, *REGISTERED_STRUCTURES,
                                                "sachs", "dataset")] + [
        f"Heuresis-qa-{f}-v0" for f in REGISTERED_FAMILIES] + [
        f"Heuresis-{f}-int-v0" for f in REGISTERED_FAMILIES]
    for name in ids:
        assert gym.registry[name].entry_point == "heuresis_env.env.core:HeuresisEnv"


def test_default_env_shows_a_newcomer_the_task_and_the_tools():
    env = gym.make("Heuresis-wild-v0")
    observation, info = env.reset(seed=0)
    text = observation["text"]
    assert text.startswith("TASK: recover the causal graph")
    assert "600 rows and 10 columns" in text
    for tool in ("ci_test", "run_algorithm", "add_edge", "submit", "run_code"):
        assert f"{tool}(" in text
    assert "deletion_log" not in text  # guided only
    assert "wild" not in text  # the family is never told
    assert observation in env.observation_space
    assert info["instance_index"] in range(100)
    env.close()


def test_the_action_forms_step_accepts_agree_with_the_space_and_the_quick_start():
    """The text view's space is ``Text`` (a JSON action); ``step`` also takes the same dict,
    as the README's Quick start passes it, with identical results; a sampled string of the
    space, as ``check_env``-style code draws, is a malformed action: an error observation,
    a step spent, never a crash (issue 42)."""
    observations = {}
    for form in ("dict", "json"):
        env = make()
        env.reset(seed=0)
        action = {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "method": "fisherz"}}
        assert json.dumps(action) in env.action_space
        observations[form], _, _, _, info = env.step(action if form == "dict"
                                                     else json.dumps(action))
        assert info["error"] is None and info["tool"] == "ci_test"
        env.close()
    assert observations["dict"]["text"] == observations["json"]["text"]
    env = make(max_steps=3)
    env.reset(seed=0)
    env.action_space.seed(0)
    sampled = env.action_space.sample()
    observation, _, terminated, truncated, info = env.step(sampled)
    assert info["error"] and observation["last_error"] and not (terminated or truncated)
    assert observation["budget_left"][0] == 2
    env.close()


def test_invalid_constructor_arguments_name_the_choices():
    for kwargs, message in (({"family": "lgg"}, "Did you mean 'lg'"),
                            ({"target": "pag"}, "cpdag"), ({"toolbox": "tiny"}, "minimal"),
                            ({"reward": "auc"}, "shaped"), ({"interface": "gui"}, "rl"),
                            ({"max_steps": 0}, "max_steps"), ({"max_seconds": -1}, "positive"),
                            ({"split": "train"}, "dev"), ({"indices": [200]}, "0..99")):
        with pytest.raises(HeuresisError, match=message):
            HeuresisEnv(**{"family": "lg", **kwargs})


def test_reset_options_pick_the_instance_and_are_validated():
    env = make("lg", indices=None)
    _, info = env.reset(seed=0, options={"index": 7})
    assert info["instance_index"] == 7
    assert env.unwrapped.instance_sha256 == generate_instance(
        InstanceKey("lg", "dev", 7, d=5, n=200)).sha256
    with pytest.raises(HeuresisError, match="only option"):
        env.reset(options={"instance": 3})
    with pytest.raises(HeuresisError, match="0..99"):
        env.reset(options={"index": 100})
    drawn = {make("lg", indices=[3, 4]).reset(seed=s)[1]["instance_index"] for s in range(12)}
    assert drawn == {3, 4}


def test_scripted_episode_is_deterministic():
    script = [
        '{"tool": "describe_data"}',
        {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "method": "kci"}},
        {"tool": "stability", "args": {"n_boot": 3}},
        {"tool": "orientation_probe", "args": {"x": "X1", "y": "X3"}},
        {"tool": "run_algorithm", "args": {"name": "pc-fisherz", "save_as": "pc"}},
        {"tool": "load_graph", "args": {"name": "pc"}},
        {"tool": "add_edge", "args": {"x": "X1", "y": "X5", "directed": False}},
        "not json",
        {"tool": "submit"},
    ]

    def run() -> tuple[list, dict, np.ndarray]:
        env = make("anm")
        observation, _ = env.reset(seed=11)
        texts = [observation["text"]]
        for action in script:
            observation, reward, terminated, truncated, info = env.step(action)
            texts.append((observation["text"], observation["last_error"], reward))
        env.close()
        return texts, info, observation["working_graph"]

    first, second = run(), run()
    assert first[0] == second[0]
    assert first[1]["scores"] == second[1]["scores"]
    assert np.array_equal(first[2], second[2])


def _walk(root: object, limit: int = 200_000) -> list:
    """Every object reachable from ``root`` through attributes and containers (closures,
    functions, modules and classes are not entered)."""
    seen, out, stack = set(), [], [root]
    while stack and len(out) < limit:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        out.append(obj)
        if isinstance(obj, str | bytes | int | float | bool | type | types.FunctionType
                      | types.ModuleType | types.BuiltinFunctionType | np.ndarray):
            continue
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
        else:
            if hasattr(obj, "__dict__"):
                stack.extend(vars(obj).values())
            for cls in type(obj).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    if hasattr(obj, slot):
                        stack.append(getattr(obj, slot))
    return out


@pytest.mark.parametrize("guided, interface", [(False, "text"), (True, "text"),
                                               (False, "rl")])
def test_hidden_record_is_not_reachable_through_attributes(guided, interface):
    env = make("hetero", guided=guided, interface=interface, reward="shaped")
    env.reset(seed=0)
    if interface == "text":
        actions = [{"tool": "describe_data"},
                   {"tool": "run_algorithm", "args": {"name": "pc-fisherz", "save_as": "a"}},
                   {"tool": "ci_test", "args": {"x": "X1", "y": "X2"}}]
    else:
        actions = [30, 31, 0]  # test two pairs, add one edge
    for action in actions:
        env.step(action)
    dag = true_dag("hetero")
    truth = [dag.directed_adjacency(), dag.marks]
    for obj in _walk(env):
        assert not isinstance(obj, HiddenRecord | Instance | SCM), type(obj)
        if isinstance(obj, Graph) and obj.d == dag.d and not guided:
            assert obj != dag
        if isinstance(obj, np.ndarray) and obj.shape == truth[0].shape and not guided:
            assert not any(np.array_equal(obj, t) for t in truth if obj.any())
    info = env.step({"tool": "show_graph"} if interface == "text" else 1)[4]
    assert "scores" not in info
    env.close()


def test_truncation_at_the_step_budget_scores_the_working_graph():
    env = make("lg", max_steps=3)
    env.reset(seed=0)
    env.step({"tool": "add_edge", "args": {"x": "X1", "y": "X2"}})
    _, reward, terminated, truncated, info = env.step(
        {"tool": "add_edge", "args": {"x": "X2", "y": "X3"}})
    assert not terminated and not truncated and reward == 0.0 and "scores" not in info
    observation, reward, terminated, truncated, info = env.step({"tool": "describe_data"})
    assert truncated and not terminated
    assert info["termination_reason"] == "step_budget" and not info["submitted"]
    working = Graph.from_edges(env.unwrapped.names, [("X1", "X2"), ("X2", "X3")])
    expected = score_graph(working, true_dag("lg"))
    assert info["scores"]["f1"] == pytest.approx(expected["f1"])
    assert info["scores"]["shd"] == expected["shd"]
    assert reward == pytest.approx(expected["f1"])
    assert observation["budget_left"][0] == 0
    with pytest.raises(HeuresisError, match="episode is over"):
        env.step({"tool": "submit"})


def test_truncation_at_the_wall_time():
    env = make("lg", max_seconds=0.05)
    env.reset(seed=0)
    time.sleep(0.06)
    _, _, terminated, truncated, info = env.step({"tool": "show_graph"})
    assert truncated and not terminated
    assert info["termination_reason"] == "wall_time"
    assert info["scores"]["n_edges"] == 0


def test_submit_terminates_with_the_f1_reward():
    env = make("mixed")
    env.reset(seed=0)
    env.step({"tool": "set_graph", "args": {"edges": ["X1 --> X2", "X3 --- X4"]}})
    _, reward, terminated, truncated, info = env.step('{"tool": "submit", "args": {}}')
    assert terminated and not truncated and info["submitted"]
    expected = score_graph(env.unwrapped.working_graph, true_dag("mixed"))
    assert reward == pytest.approx(expected["f1"]) == pytest.approx(info["scores"]["f1"])
    assert set(info["scores"]) == {"f1", "precision", "recall", "shd", "nshd", "shd_cpdag",
                                   "n_edges", "orientation"}


def test_shaped_rewards_sum_to_the_change_in_f1():
    env = make("wild", reward="shaped")
    env.reset(seed=0)
    names = env.unwrapped.names
    total = 0.0
    for u, v in [("X1", "X2"), ("X1", "X3"), ("X2", "X4"), ("X3", "X5"), ("X4", "X5")]:
        total += env.step({"tool": "add_edge", "args": {"x": u, "y": v}})[1]
    total += env.step({"tool": "describe_data"})[1]  # a tool call: no reward
    total += env.step({"tool": "remove_edge", "args": {"x": "X1", "y": "X3"}})[1]
    _, reward, _, _, info = env.step({"tool": "submit"})
    total += reward
    empty = score_graph(Graph(names), true_dag("wild"))["f1"]
    assert total == pytest.approx(info["scores"]["f1"] - empty)


BAD_ACTIONS = {
    "malformed JSON": ('{"tool": "add_edge", "args": {', "not valid JSON"),
    "unknown tool": ({"tool": "add_egde", "args": {}}, "Known tools: add_edge"),
    "bad arguments": ({"tool": "add_edge", "args": {"x": "X1"}}, "y: Field required"),
    "unknown variable": ({"tool": "add_edge", "args": {"x": "X1", "y": "X6"}},
                         "unknown variable 'X6'"),
    "self-loop": ({"tool": "add_edge", "args": {"x": "X3", "y": "X3"}}, "self-loop"),
    "duplicate edge": ({"tool": "add_edge", "args": {"x": "X2", "y": "X1"}}, "duplicate edge"),
    "directed cycle": ({"tool": "add_edge", "args": {"x": "X3", "y": "X1"}}, "directed cycle"),
    "cycle by set_graph": ({"tool": "set_graph", "args": {
        "edges": ["X1 --> X2", "X2 --> X3", "X3 --> X1"]}}, "directed cycle"),
    "duplicate pair in set_graph": ({"tool": "set_graph", "args": {
        "edges": ["X1 --> X2", "X2 --- X1"]}}, "duplicate edge"),
    "deletion_log unguided": ({"tool": "deletion_log"}, "guided condition"),
    "huge argument": ({"tool": "run_code", "args": {"code": "x" * 50_000}}, "limit is 16384"),
    "huge string": ("{" * 40_000, "limit is 16384"),
    "not an action": (3.5, "JSON string or a dict"),
    "no edge to orient": ({"tool": "orient_edge", "args": {"x": "X4", "y": "X5"}}, "no edge"),
}


@pytest.mark.parametrize("name", sorted(BAD_ACTIONS))
def test_bad_actions_give_an_error_observation_and_cost_a_step(name):
    action, message = BAD_ACTIONS[name]
    env = make("lg", target="dag")
    env.reset(seed=0)
    env.step({"tool": "set_graph", "args": {"edges": ["X1 --> X2", "X2 --> X3"]}})
    before = env.unwrapped.working_graph
    observation, reward, terminated, truncated, info = env.step(action)
    assert message in observation["last_error"], observation["last_error"]
    assert observation["text"].startswith("Error:")
    assert info["error"] and reward == 0.0 and not terminated and not truncated
    assert env.unwrapped.steps_used == 2
    assert observation["budget_left"][0] == env.unwrapped.max_steps - 2
    assert env.unwrapped.working_graph == before
    assert observation in env.observation_space


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(action=st.text(max_size=300) | st.dictionaries(
    st.sampled_from(["tool", "args"]) | st.text(max_size=5),
    st.text(max_size=10) | st.dictionaries(st.sampled_from(["x", "y", "edges", "name"]),
                                           st.text(max_size=5) | st.lists(st.text(max_size=9),
                                                                          max_size=3)),
    max_size=3))
def test_fuzzed_actions_never_raise(action):
    env = HeuresisEnv("lg", d=5, n=200, indices=[0], max_steps=5)
    env.reset(seed=0)
    before = env.working_graph
    observation, _, terminated, truncated, info = env.step(action)
    assert observation in env.observation_space
    assert env.steps_used == 1
    if info.get("error"):
        assert env.working_graph == before


def test_guided_episode_starts_from_pc_kci_with_its_deletion_log():
    from heuresis_env.discovery.pc import pc

    env = make("anm", guided=True)
    observation, _ = env.reset(seed=0)
    assert "deletion_log()" in observation["text"] and "PC algorithm" in observation["text"]
    instance = generate_instance(InstanceKey("anm", "dev", 0, d=5, n=200))
    expected = pc(instance.X, instance.names, ci_test="kci", alpha=0.05)
    assert env.unwrapped.working_graph == expected.graph
    assert np.array_equal(observation["working_graph"], expected.graph.marks)
    observation, _, _, _, info = env.step({"tool": "deletion_log"})
    deletions = info["data"]["deletions"]
    assert [(x["x"], x["y"], x["p_value"]) for x in deletions] == [
        (x.x, x.y, x.p_value) for x in expected.deletion_log]
    for deletion in expected.deletion_log:
        assert f"{deletion.x} - {deletion.y}" in observation["text"]


def test_minimal_toolbox_refuses_the_full_toolbox_tools():
    env = make("lg", toolbox="minimal")
    observation, _ = env.reset(seed=0)
    assert "run_code(" not in observation["text"] and "stability(" not in observation["text"]
    observation, *_ = env.step({"tool": "run_code", "args": {"code": "print(1)"}})
    assert "minimal toolbox" in observation["last_error"]
    assert len(env.unwrapped.tool_schemas()) == 17


def test_rendering_ansi_and_rgb():
    env = make("lg", render_mode="ansi")
    env.reset(seed=0)
    env.step({"tool": "add_edge", "args": {"x": "X1", "y": "X2"}})
    text = env.render()
    assert "X1 --> X2" in text and "Last output" in text
    env.step({"tool": "submit"})
    assert "Episode over (submitted)" in env.render()
    env = make("lg", render_mode="rgb_array")
    env.reset(seed=0)
    during = env.render()
    assert during.dtype == np.uint8 and during.ndim == 3 and during.shape[2] == 3
    env.step({"tool": "submit"})
    after = env.render()
    assert after.shape[0] == during.shape[0] and after.shape[1] == 2 * during.shape[1]


def test_human_rendering_prints_each_step_without_a_window(capsys):
    """render_mode="human" is the terminal: gym.make needs no pygame, reset and every step
    print the working graph and the last output, and render() returns None."""
    env = make("lg", render_mode="human")
    env.reset(seed=0)
    assert "step 0 of" in capsys.readouterr().out
    env.step({"tool": "add_edge", "args": {"x": "X1", "y": "X2"}})
    printed = capsys.readouterr().out
    assert "step 1 of" in printed and "X1 --> X2" in printed and "Last output" in printed
    assert env.render() is None
    env.step({"tool": "submit"})
    assert "Episode over (submitted)" in capsys.readouterr().out
    rl = make("lg", render_mode="human", interface="rl")
    rl.reset(seed=0)
    rl.step(0)
    assert "Added X1 --- X2" in capsys.readouterr().out


def test_text_observations_stay_in_the_space():
    env = make("lg")
    env.reset(seed=0)
    observation, *_ = env.step({"tool": "set_graph", "args": {"edges": ["X1 ⟶ X2"]}})
    assert observation in env.observation_space
    assert "\\u27f6" in observation["last_error"]


def test_async_vector_env_runs_episodes():
    envs = gym.make_vec(env_id("lg"), num_envs=2, vectorization_mode="async",
                        vector_kwargs={"shared_memory": False}, **SMALL)
    observations, _ = envs.reset(seed=0)
    assert observations["working_graph"].shape == (2, 5, 5)
    assert all(text.startswith("TASK") for text in observations["text"])
    actions = [json.dumps({"tool": "add_edge", "args": {"x": "X1", "y": "X2"}}),
               json.dumps({"tool": "submit"})]
    observations, rewards, terminated, truncated, infos = envs.step(actions)
    assert list(terminated) == [False, True]
    assert observations["working_graph"][0, 0, 1] == 2
    envs.close()
