"""Environments on real structures and data tables: BNLearn ids, Sachs, a user's table with and
without a graph, and anonymization that leaks no name into observations, traces or errors."""

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from heuresis_env.errors import HeuresisError
from heuresis_env.registration import DATASET_ID, env_id

SECRET = ("secret_dose", "hidden_marker", "masked_outcome", "covert_site")


def table(n=150, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = a + 0.5 * rng.normal(size=n)
    c = np.tanh(b) + 0.3 * rng.normal(size=n)
    d = rng.normal(size=n)
    return np.c_[a, b, c, d]


@pytest.mark.parametrize("name", ["bnlearn-asia", "sachs"])
def test_check_env_on_structure_and_data_ids(name):
    env = gym.make(env_id(name), max_steps=5)
    check_env(env.unwrapped)
    env.close()


def test_check_env_on_a_user_table():
    env = gym.make(DATASET_ID, data=table(), names=list(SECRET), max_steps=5)
    check_env(env.unwrapped)
    env.close()


def test_sachs_plays_and_is_scored_against_the_consensus_graph():
    env = gym.make(env_id("sachs"), max_steps=10)
    observation, info = env.reset(seed=0)
    assert info["names"] == [f"X{i}" for i in range(1, 12)] and env.unwrapped.d == 11
    assert info["data"].shape == (853, 11)
    assert "real (or user-supplied) data" in observation["text"]
    env.step(json.dumps({"tool": "run_algorithm", "args": {"name": "pc-fisherz",
                                                         "save_as": "pc"}}))
    _, reward, terminated, _, info = env.step(json.dumps({"tool": "load_graph",
                                                         "args": {"name": "pc"}}))
    _, reward, terminated, _, info = env.step('{"tool": "submit", "args": {}}')
    assert terminated and info["ground_truth"] is True
    assert 0 < info["scores"]["f1"] <= 1 and reward == info["scores"]["f1"]
    env.close()


def test_bnlearn_id_has_the_structures_size():
    env = gym.make(env_id("bnlearn-alarm"), max_steps=3)
    observation, info = env.reset(seed=1)
    assert env.unwrapped.d == 37 and info["data"].shape == (600, 37)
    assert info["instance"]["graph_model"] == "fixed"
    assert "37 columns named X1, X2" in observation["text"]
    with pytest.raises(HeuresisError, match="fixed structure of 37"):
        gym.make(env_id("bnlearn-alarm"), d=10)
    env.close()


def test_a_table_without_a_graph_runs_and_ends_unscored(tmp_path):
    env = gym.make(DATASET_ID, data=table(), names=list(SECRET), max_steps=4,
                   trace_path=str(tmp_path), render_mode="ansi")
    observation, info = env.reset(seed=0)
    assert "not scored" in observation["text"] and "keep the names" in observation["text"]
    env.step(json.dumps({"tool": "add_edge", "args": {"x": SECRET[0], "y": SECRET[1]}}))
    _, reward, terminated, truncated, info = env.step('{"tool": "submit", "args": {}}')
    assert terminated and reward == 0.0 and info["ground_truth"] is False
    assert info["scores"]["f1"] is None and info["scores"]["n_edges"] == 1
    assert "No ground truth" in env.render()
    header, *_, end = [json.loads(line) for line in
                       next(tmp_path.glob("*.jsonl")).read_text().splitlines()]
    assert end["scores"]["f1"] is None
    with pytest.raises(HeuresisError, match="shaped"):
        gym.make(DATASET_ID, data=table(), names=list(SECRET), reward="shaped").reset()
    env.close()


def test_a_table_with_a_graph_is_scored():
    env = gym.make(DATASET_ID, data=table(), names=list(SECRET), max_steps=4,
                   graph=[f"{SECRET[0]} --> {SECRET[1]}", f"{SECRET[1]} --> {SECRET[2]}"],
                   dataset_name="toy-scored")
    env.reset(seed=0)
    env.step(json.dumps({"tool": "set_graph", "args": {"edges": [
        f"{SECRET[0]} --> {SECRET[1]}", f"{SECRET[1]} --- {SECRET[2]}",
        f"{SECRET[2]} --- {SECRET[3]}"]}}))
    _, reward, _, _, info = env.step('{"tool": "submit", "args": {}}')
    assert info["scores"]["f1"] == pytest.approx(0.8) and reward == pytest.approx(0.8)
    env.close()


def test_bad_table_arguments_are_clear():
    with pytest.raises(HeuresisError, match="needs a table"):
        gym.make(DATASET_ID)
    with pytest.raises(HeuresisError, match="not both"):
        gym.make(env_id("lg"), data=table())
    bad = table()
    bad[3, 2] = np.nan
    with pytest.raises(HeuresisError, match=r"column\(s\) \['masked_outcome'\]"):
        gym.make(DATASET_ID, data=bad, names=list(SECRET))


def test_anonymization_leaks_no_name(tmp_path):
    """Observations, infos, errors, renders and traces of an anonymized table never show an
    original column name the agent did not type itself; guessing one gets an error that lists
    only X1..Xd."""
    guessed, never_typed = (SECRET[0], SECRET[3]), (SECRET[1], SECRET[2])
    env = gym.make(DATASET_ID, data=table(), names=list(SECRET), anonymize=True,
                   graph=[f"{SECRET[0]} --> {SECRET[1]}", f"{SECRET[1]} --> {SECRET[2]}"],
                   max_steps=12, trace_path=str(tmp_path), render_mode="ansi",
                   dataset_name="anon")
    observation, info = env.reset(seed=3)
    assert info["names"] == ["X1", "X2", "X3", "X4"]
    seen = [observation["text"], json.dumps({k: v for k, v in info.items() if k != "data"})]
    actions = [
        {"tool": "describe_data", "args": {}},
        {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "method": "fisherz"}},
        {"tool": "ci_test", "args": {"x": guessed[0], "y": "X2"}},
        {"tool": "add_edge", "args": {"x": guessed[1], "y": "X1"}},
        {"tool": "run_algorithm", "args": {"name": "pc-fisherz"}},
        {"tool": "estimate_effect", "args": {"treatment": "X1", "outcome": "X3"}},
        "not json at all",
        {"tool": "add_edge", "args": {"x": "X1", "y": "X2"}},
        {"tool": "submit", "args": {}},
    ]
    for action in actions:
        observation, _, terminated, _, info = env.step(
            action if isinstance(action, str) else json.dumps(action))
        seen += [observation["text"], observation["last_error"], env.render(),
                 json.dumps(info, default=str)]
        if isinstance(action, dict) and guessed[0] in json.dumps(action):
            assert "X1, X2, X3, X4" in observation["last_error"]
        if terminated:
            break
    seen.append("".join(path.read_text() for path in tmp_path.glob("*.jsonl")))
    everything = "\n".join(seen)
    for name in never_typed:
        assert name not in everything
    assert info["scores"]["f1"] is not None  # scored against the renamed graph
    env.close()


def test_what_needs_an_scm_says_why_a_table_has_none():
    """Question episodes answer from the hidden SCM; a data table has none, and says so."""
    with pytest.raises(HeuresisError, match="'sachs' is a data table, which has none"):
        gym.make(env_id("sachs"), task="qa")
    with pytest.raises(HeuresisError, match="need the structural causal model"):
        gym.make(DATASET_ID, data=table(), names=list(SECRET), task="qa")
