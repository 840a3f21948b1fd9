"""Training environments (agents.rl.envs): PPO's flattened observation with invalid actions
as error steps, submit as a pass, no orientations, no undone edits."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from agents.rl import ActionMasker, FamilyMix, ObservationLayout, StepCost, make_training_env
from tests.agents.rl.rl_fixtures import SETTINGS, TINY, rl_env


def test_ppo_trains_through_the_flattening_wrapper_where_invalid_actions_are_error_steps():
    env = make_training_env("wild", SETTINGS, [0], n_envs=1, flatten=True, **TINY)
    assert isinstance(env.observation_space, gym.spaces.Box)
    single = env.envs[0]
    observation, _ = single.reset(seed=0)
    assert observation.shape == (ObservationLayout(TINY["d"]).flat_size,)
    mask = single.get_wrapper_attr("action_masks")()
    invalid = int(np.flatnonzero(~mask)[0])
    before = single.unwrapped.working_graph
    _, reward, terminated, _, info = single.step(invalid)
    assert info["error"] and not terminated
    assert reward == 0.0  # an error step changes no edge, and no step cost was asked for
    assert single.unwrapped.working_graph == before and single.unwrapped.steps_used == 1
    charged = StepCost(rl_env(), 0.01)
    charged.reset(seed=0)
    assert charged.step(charged.action_space.n - 2)[1] == pytest.approx(-0.01)  # a test


def test_training_env_passes_instead_of_submitting_and_drops_orientations():
    env = make_training_env("wild", SETTINGS, [0], n_envs=1, **TINY)
    single = env.envs[0]
    single.reset(seed=0)
    masker = ActionMasker(TINY["d"])
    mask = single.get_wrapper_attr("action_masks")()
    assert not mask[masker.slices["orient"]].any()  # adjacency F1 ignores directions
    assert np.array_equal(mask[masker.slices["add"]],
                          single.unwrapped.action_masks()[masker.slices["add"]])
    submit = single.action_space.n - 1
    before = single.unwrapped.working_graph
    for step in range(1, SETTINGS.max_steps + 1):
        _, reward, terminated, truncated, info = single.step(submit)
        assert not terminated and reward == 0.0
        assert single.unwrapped.working_graph == before
        assert truncated == (step == SETTINGS.max_steps)
    assert info["termination_reason"] == "step_budget" and "scores" in info
    assert info["episode"]["r"] == 0.0 and info["episode"]["l"] == SETTINGS.max_steps


def test_repair_mask_never_undoes_an_edit():
    env = make_training_env("wild", SETTINGS, [0], n_envs=1, **TINY)
    single = env.envs[0]
    single.reset(seed=0)
    masker = ActionMasker(TINY["d"])
    mask = single.get_wrapper_attr("action_masks")()
    add = int(np.flatnonzero(mask[masker.slices["add"]])[0])
    single.step(masker.slices["add"].start + add)
    mask = single.get_wrapper_attr("action_masks")()
    assert single.unwrapped.action_masks()[masker.slices["remove"].start + add]
    assert not mask[masker.slices["remove"].start + add]  # the env allows it, the repair not
    single.reset(seed=1)
    assert single.get_wrapper_attr("action_masks")()[masker.slices["add"]].any()


def test_family_mix_plays_every_family_once_per_round_with_one_action_mask():
    env = make_training_env("lg,wild", SETTINGS, [0, 1], n_envs=1, seed=3, **TINY)
    mix = env.envs[0].unwrapped
    assert isinstance(mix, FamilyMix) and mix.families == ["lg", "wild"]
    env.reset()
    seen = [mix.family]
    for _ in range(3):
        mix.reset()
        seen.append(mix.family)
        assert np.array_equal(env.env_method("action_masks")[0],
                              mix.envs[mix.family].get_wrapper_attr("action_masks")())
    assert sorted(seen[:2]) == sorted(seen[2:]) == ["lg", "wild"]


def test_subprocess_vectorization_starts_its_workers_the_projects_way():
    """SubprocVecEnv's workers start by heuresis_env.threads.start_method (fork only where
    can_fork says it is safe) and play the same first observation as the in-process copies."""
    subproc = make_training_env("wild", SETTINGS, [0], n_envs=2, vectorization="subproc",
                                flatten=True, **TINY)
    dummy = make_training_env("wild", SETTINGS, [0], n_envs=2, flatten=True, **TINY)
    try:
        assert np.array_equal(subproc.reset(), dummy.reset())
    finally:
        subproc.close()
        dummy.close()
