"""Whatever a policy sends, the environment answers with an observation in its space: hostile
action objects, control characters, masked RL actions, a ``TimeLimit`` around the env, and a
test salt that must not leak through the spec, errors or rewards (issue 18, items 5-8)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from heuresis_env.env import core
from heuresis_env.env.core import HeuresisEnv
from heuresis_env.env.text_view import observation_text
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import TEST_SALT_ENV
from heuresis_env.generation.salts import new_salt
from heuresis_env.registration import env_id, register_envs
from heuresis_env.trace_files import read_trace

register_envs()
SMALL = {"d": 4, "n": 100, "indices": [0]}


class RaisingRepr:
    def __repr__(self):
        raise ValueError("no repr for you")

    __str__ = __repr__


class RaisingEquality(str):
    def __eq__(self, other):
        raise RuntimeError("no comparison")

    __hash__ = str.__hash__


class RaisingMapping(dict):
    def items(self):
        raise RuntimeError("no items")

    def keys(self):
        raise RuntimeError("no keys")


class RaisingInt(np.int64):
    def __int__(self):
        raise RuntimeError("no int")


def nested(depth: int, leaf=None):
    value = {"tool": "submit"} if leaf is None else leaf
    for _ in range(depth):
        value = {"x": value}
    return value


def deep_list(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def self_referencing():
    value: list = []
    value.append(value)
    return value


HOSTILE_ACTIONS = {
    "nested 1,000 deep": lambda: nested(1_000),
    "nested 100,000 deep": lambda: nested(100_000),
    "list nested 100,000 deep": lambda: deep_list(100_000),
    "raising repr": RaisingRepr,
    "raising repr inside args": lambda: {"tool": "ci_test", "args": {"x": RaisingRepr()}},
    "raising repr as the tool": lambda: {"tool": RaisingRepr(), "args": {}},
    "self-referencing list": self_referencing,
    "self-referencing args": lambda: {"tool": "set_graph", "args": {"edges": self_referencing()}},
    "key whose comparison raises": lambda: {RaisingEquality("tool"): "submit"},
    "mapping whose items raise": lambda: RaisingMapping(tool="submit"),
    "numpy integer whose int raises": lambda: RaisingInt(3),
    "object array": lambda: np.array([RaisingRepr()], dtype=object),
    "bytes that are not UTF-8": lambda: b"\xff\xfe{",
    "a generator": lambda: (i for i in range(3)),
    "None": lambda: None,
    "a huge integer": lambda: 10 ** 400,
    "a float nan": lambda: float("nan"),
    "control characters in a key": lambda: {"tool": "ci_test", "args": {"x\x00\x07": 1}},
}


@pytest.mark.parametrize("interface", ["text", "rl"])
@pytest.mark.parametrize("traced", [False, True], ids=["no trace", "trace"])
def test_any_action_object_yields_an_error_observation(interface, traced, tmp_path):
    env = gym.make(env_id("lg"), interface=interface, **SMALL,
                   trace_path=str(tmp_path) if traced else None)
    observation, _ = env.reset(seed=0)
    base = env.unwrapped
    for number, (name, build) in enumerate(HOSTILE_ACTIONS.items(), start=1):
        before = base.working_graph
        observation, reward, terminated, truncated, info = env.step(build())
        assert info["error"], name
        assert not terminated and not truncated, name
        assert env.observation_space.contains(observation), name
        assert base.steps_used == number, name
        assert base.working_graph == before, name
    # the episode goes on normally, and the trace (if any) reads back
    if interface == "rl":
        submit = base.rl_actions[-1].index
        *_, terminated, truncated, info = env.step(submit)
    else:
        *_, terminated, truncated, info = env.step({"tool": "submit"})
    assert terminated and "scores" in info
    if traced:
        trace = read_trace(base.trace_file)
        assert len(trace.steps) == len(HOSTILE_ACTIONS) + 1
        json.dumps(trace.steps)  # every stored action is plain JSON
    env.close()


def test_control_characters_are_escaped_in_every_observation_text():
    text = observation_text("bell\x07 nul\x00 escape\x1b[31m line\u2028sep é \U0001f600")
    assert text == ("bell\\x07 nul\\x00 escape\\x1b[31m line\\u2028sep \\xe9 \\U0001f600")
    env = gym.make(env_id("lg"), **SMALL)
    env.reset(seed=0)
    for action in ({"tool": "ci_test", "args": {"x\x00\x07": 1}},
                   '{"tool": "ci_test", "args": {"y\\u0000\\u0007": 1}}'):
        observation, *_ = env.step(action)
        assert env.observation_space.contains(observation)
        assert "\\x00\\x07" in observation["last_error"]
        assert "\x00" not in observation["text"] + observation["last_error"]


def test_rl_step_and_mask_agree_on_every_action():
    """Each action the mask rules out is an error step that changes nothing; each it allows
    runs. Checked for every action index over a random walk (cpdag target: cycle masks)."""
    env = gym.make(env_id("lg"), interface="rl", target="cpdag", **SMALL)
    env.reset(seed=0)
    base = env.unwrapped
    rng = np.random.default_rng(0)
    n_actions = env.action_space.n
    checked = {True: 0, False: 0}
    for _ in range(60):
        mask = base.action_masks()
        action = int(rng.integers(n_actions - 1))  # never submit
        before = base.working_graph
        steps = base.steps_used
        _, _, terminated, truncated, info = env.step(action)
        assert base.steps_used == steps + 1
        if mask[action]:
            assert "error" not in info, (action, info)
        else:
            assert "masked out" in info["error"], (action, info)
            assert base.working_graph == before
        checked[bool(mask[action])] += 1
        if terminated or truncated:
            env.reset(seed=0)
    assert checked[True] > 5 and checked[False] > 5
    # the case of the issue: a repeated test is masked, and refused
    env.reset(seed=0)
    test = next(a.index for a in base.rl_actions if a.operation == "test")
    assert "error" not in env.step(test)[4]
    assert not base.action_masks()[test]
    assert "already tested" in env.step(test)[4]["error"]


def test_max_episode_steps_is_the_step_budget_and_the_end_is_scored():
    env = gym.make(env_id("lg"), max_episode_steps=3, **SMALL)
    observation, _ = env.reset(seed=0)
    assert float(observation["budget_left"][0]) == 3
    for _ in range(3):
        observation, reward, terminated, truncated, info = env.step({"tool": "list_graphs"})
    assert truncated and not terminated
    assert info["termination_reason"] == "step_budget"
    assert set(info["scores"]) >= {"f1", "shd"}
    assert "budget: 3 steps" in env.unwrapped.task_statement().lower()
    # a larger limit than max_steps leaves the env's own budget in charge
    env = gym.make(env_id("lg"), max_episode_steps=50, max_steps=2, **SMALL)
    env.reset(seed=0)
    env.step({"tool": "list_graphs"})
    *_, truncated, info = env.step({"tool": "list_graphs"})
    assert truncated and info["termination_reason"] == "step_budget"
    # the same wrapper applied by hand, on the RL view
    env = gym.wrappers.TimeLimit(gym.make(env_id("lg"), interface="rl", **SMALL), 2)
    env.reset(seed=0)
    env.step(0)
    *_, truncated, info = env.step(1)
    assert truncated and info["termination_reason"] == "step_budget"


def test_the_salt_stays_out_of_the_spec_and_errors(monkeypatch):
    secret = new_salt()
    env = gym.make(env_id("lg"), split="test", salt=secret, **SMALL)
    assert secret not in repr(env.spec) and secret not in env.spec.to_json()
    assert env.spec.kwargs["salt"].startswith(core.SEALED_SALT_PREFIX)
    assert secret not in repr(env) and secret not in str(env.unwrapped.config())
    # an unknown argument is refused without printing the other arguments (the salt)
    with pytest.raises(HeuresisError) as refused:
        gym.make(env_id("lg"), split="test", salt=secret, max_episod_steps=3, **SMALL)
    assert secret not in str(refused.value) and "max_steps" in str(refused.value)
    # the spec rebuilds the sealed environment only where the salt is known
    monkeypatch.delenv(TEST_SALT_ENV, raising=False)
    with pytest.raises(HeuresisError, match=TEST_SALT_ENV) as refused:
        gym.make(env.spec)
    assert secret not in str(refused.value)
    monkeypatch.setenv(TEST_SALT_ENV, secret)
    rebuilt = gym.make(env.spec)
    assert rebuilt.reset(seed=0)[1]["sha256"] == env.reset(seed=0)[1]["sha256"]


def test_shaped_reward_is_refused_on_a_sealed_test_split(monkeypatch):
    with pytest.raises(HeuresisError, match="shaped"):
        HeuresisEnv(split="test", salt=new_salt(), reward="shaped", **SMALL)
    monkeypatch.setenv(TEST_SALT_ENV, new_salt())
    with pytest.raises(HeuresisError, match="shaped"):
        HeuresisEnv(split="test", reward="shaped", **SMALL)
    HeuresisEnv(split="dev", reward="shaped", **SMALL).close()  # dev stays trainable
    monkeypatch.delenv(TEST_SALT_ENV)
    HeuresisEnv(split="test", reward="shaped", **SMALL).close()  # unsealed test: public
