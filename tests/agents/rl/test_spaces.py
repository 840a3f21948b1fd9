"""The observation layout and the action mask recomputed from observations
(agents.rl.spaces): equal to the environment's masks, cycles masked, Dict and Box alike."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from agents.rl import ActionMasker, ObservationLayout
from heuresis_env.env import rl_action_table
from heuresis_env.errors import HeuresisError
from tests.agents.rl.rl_fixtures import TINY, rl_env


@pytest.mark.parametrize("target", ["none", "cpdag", "dag"])
def test_masks_from_observations_equal_the_environment_masks(target):
    env = rl_env(target)
    masker = ActionMasker(TINY["d"], target)
    rng = np.random.default_rng(0)
    for episode in range(2):
        observation, _ = env.reset(seed=episode)
        tested = np.zeros(masker.pair_i.size, dtype=bool)
        for _ in range(50):
            expected = env.unwrapped.action_masks()
            assert np.array_equal(masker(observation["adjacency"], tested), expected)
            action = int(rng.choice(np.flatnonzero(expected[:-1])))
            operation, row = masker.operation(action)
            if operation == "test":
                tested[row] = True
            observation, _, terminated, truncated, info = env.step(action)
            assert "error" not in info
            if terminated or truncated:
                break


def test_directed_cycles_are_masked_under_the_dag_target():
    masker = ActionMasker(3, "dag")
    adjacency = np.zeros((3, 3), dtype=np.int8)
    adjacency[0, 1] = 1  # X1 → X2
    adjacency[1, 2] = 1  # X2 → X3
    adjacency[0, 2] = adjacency[2, 0] = 1  # X1 — X3
    mask = masker(adjacency.reshape(-1), np.zeros(3, dtype=bool))
    orient = {(a.i, a.j): a.index for a in rl_action_table(3) if a.operation == "orient"}
    assert not mask[orient[(2, 0)]]  # X3 → X1 would close X1 → X2 → X3 → X1
    assert mask[orient[(0, 2)]]
    assert mask[orient[(1, 0)]]  # reversing to X2 → X1 closes no cycle (X1 — X3 is undirected)
    assert not mask[orient[(0, 1)]]  # already X1 → X2
    assert ActionMasker(3, "none")(adjacency.reshape(-1), np.zeros(3, bool))[orient[(2, 0)]]


def test_layout_reads_the_dict_and_the_flattened_box_alike():
    env = rl_env()
    flat = gym.wrappers.FlattenObservation(rl_env())
    dict_layout = ObservationLayout.from_space(env.observation_space)
    box_layout = ObservationLayout.from_space(flat.observation_space)
    assert dict_layout == box_layout and dict_layout.d == TINY["d"]
    observation, _ = env.reset(seed=0)
    flattened = gym.spaces.flatten(env.observation_space, observation)
    parts = box_layout.split(flattened)
    for key, value in observation.items():
        assert np.array_equal(parts[key], np.asarray(value, dtype=parts[key].dtype))
    with pytest.raises(HeuresisError, match="RL-view"):
        ObservationLayout.from_space(gym.spaces.Box(0, 1, (7,)))
