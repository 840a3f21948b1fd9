"""The repair table: what each column means on a known instance, caching, the tool, the RL
view's layout 2 and the expected-F1 decision rule of the supervised reference."""

from __future__ import annotations

import itertools
import math

import gymnasium as gym
import numpy as np
import pytest

from heuresis_env.discovery import cached_run_algorithm, make_ci_test
from heuresis_env.env import LAYOUT_KEYS, RL_OBSERVATION_LAYOUT
from heuresis_env.evidence import (
    DEFAULT_ALGORITHMS,
    REPAIR_FEATURE_NAMES,
    REPAIR_FEATURES,
    clear_memory,
    guided_start,
    repair_evidence,
)
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.registration import env_id, register_envs
from heuresis_env.seeding import int31_seed

register_envs()
SMALL = {"d": 5, "n": 200, "indices": [0]}


@pytest.fixture(scope="module")
def case():
    instance = generate_instance(InstanceKey("wild", "dev", 0, d=5, n=200))
    table = repair_evidence(instance.X, instance.names, instance.sha256)
    return instance, table


def test_every_column_means_what_the_docstring_says(case):
    instance, table = case
    names, data = instance.names, instance.X
    seed = guided_start(data, names, instance.sha256)
    skeleton = seed.graph.skeleton()
    column = {name: k for k, name in enumerate(names)}
    assert table.values.shape == (10, len(REPAIR_FEATURE_NAMES))
    assert np.array_equal(table.column("kept"), skeleton[table.pairs[:, 0], table.pairs[:, 1]])
    kci, fisherz = make_ci_test("kci", data), make_ci_test("fisherz", data)
    for deletion in seed.deletion_log:
        row = table.pair_index(column[deletion.x], column[deletion.y])
        reference = tuple(sorted(column[v] for v in deletion.conditioning_set))
        assert table.reference_sets[row] == reference
        assert table.column("set_size")[row] == deletion.level
        assert table.column("kci_p")[row] == pytest.approx(deletion.p_value)
        # PC tested every subset before the deleting set, each with p ≤ α
        assert table.column("kci_p_subsets_max")[row] == pytest.approx(deletion.p_value)
        i, j = sorted((column[deletion.x], column[deletion.y]))
        subsets = [s for k in range(len(reference) + 1)
                   for s in itertools.combinations(reference, k)]
        assert table.column("kci_p_subsets_min")[row] == pytest.approx(
            min(kci.p_value(i, j, s) for s in subsets))
        assert table.column("kci_p_empty")[row] == pytest.approx(kci.p_value(i, j, ()))
        assert table.column("fisherz_p")[row] == pytest.approx(fisherz.p_value(i, j, reference))
    kept_rows = np.flatnonzero(table.column("kept") == 1)
    assert kept_rows.size and np.all(table.column("kci_p")[kept_rows] <= seed.alpha)
    for algorithm in DEFAULT_ALGORITHMS:
        result = cached_run_algorithm(algorithm, data, names, instance.sha256, {}, None,
                                      int31_seed(instance.sha256))
        adjacency = result.full_graph(names).skeleton()[table.pairs[:, 0], table.pairs[:, 1]]
        assert np.array_equal(table.column(f"keeps_{algorithm.replace('-', '_')}"), adjacency)
    assert np.all(np.isnan(table.column("keeps_notears_mlp")))  # not run by default
    assert np.all(np.isnan(table.column("pc_kci_bootstrap")))   # bootstraps = 0
    finite = ~np.isnan(table.values)
    p_columns = [k for k, feature in enumerate(REPAIR_FEATURES) if feature.scale == "p"]
    assert np.all((table.values[:, p_columns][finite[:, p_columns]] >= 0)
                  & (table.values[:, p_columns][finite[:, p_columns]] <= 1))


def test_the_table_is_computed_once_and_read_back_from_disk(case):
    instance, table = case
    clear_memory()
    again = repair_evidence(instance.X, instance.names, instance.sha256)
    assert again is not table
    assert np.array_equal(again.values, table.values, equal_nan=True)
    assert again.seconds == table.seconds  # the stored computation, not a new one


def test_the_tool_shows_the_table_in_the_guided_condition_only(case):
    instance, table = case
    env = gym.make(env_id("wild"), guided=True, **SMALL)
    env.reset(seed=0)
    observation, _, _, _, info = env.step({"tool": "repair_evidence", "args": {"which": "kept"}})
    rows = info["data"]["rows"]
    assert rows and all(row["kept"] == 1 for row in rows)
    assert len(rows) == int(table.column("kept").sum())
    assert "kci_p" in observation["text"] and observation["text"].isascii()
    unguided = gym.make(env_id("wild"), guided=False, **SMALL)
    unguided.reset(seed=0)
    _, _, _, _, info = unguided.step({"tool": "repair_evidence", "args": {}})
    assert "guided" in info["error"]


def test_rl_layout_2_carries_the_repair_table_when_guided(case):
    instance, table = case
    assert RL_OBSERVATION_LAYOUT == 2 and set(LAYOUT_KEYS[1]) < set(LAYOUT_KEYS[2])
    env = gym.make(env_id("wild"), guided=True, interface="rl", **SMALL)
    observation, _ = env.reset(seed=0)
    views = env.unwrapped.unflatten_observation(observation) if hasattr(
        env.unwrapped, "unflatten_observation") else None
    values, available = table.observation()
    assert np.allclose(observation["repair"], values.reshape(-1))
    assert np.array_equal(observation["repair_available"], available.reshape(-1))
    assert env.observation_space.contains(observation)
    assert views is not None and views["repair"].shape == (10, len(REPAIR_FEATURE_NAMES))
    unguided = gym.make(env_id("wild"), guided=False, interface="rl", **SMALL)
    observation, _ = unguided.reset(seed=0)
    assert not observation["repair_available"].any() and not observation["repair"].any()


def test_expected_f1_selection_is_the_best_subset_and_uses_the_half_f1_threshold():
    from agents.learned_repair import expected_f1_selection

    rng = np.random.default_rng(0)
    for _ in range(30):
        q = rng.uniform(size=int(rng.integers(1, 9))) ** rng.uniform(0.3, 3)
        selected, f1_star, threshold = expected_f1_selection(q)
        total = q.sum()
        best = max(2 * q[list(s)].sum() / (len(s) + total)
                   for k in range(1, q.size + 1) for s in itertools.combinations(range(q.size), k))
        assert f1_star == pytest.approx(best)
        assert threshold == pytest.approx(f1_star / 2)
        assert np.all(q[selected] >= threshold - 1e-12)
        assert not np.any(q[~selected] > threshold + 1e-12)
    assert not expected_f1_selection(np.zeros(4))[0].any()
    assert math.isclose(expected_f1_selection([1.0, 1.0, 0.0])[1], 1.0)
