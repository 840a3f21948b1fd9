"""The RL view: API conformance (Gymnasium and stable-baselines3), masks, the action table's
equivalence with the text view, evidence features, rewards, caching, vector envs."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import heuresis_env.evidence.pairs as evidence_module
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.pc import pc
from heuresis_env.env import read_trace, replay_trace
from heuresis_env.env.toolbox.graph_tools import add_edge_at, orient_edge_at, remove_edge_at
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.evidence import FEATURE_NAMES, clear_memory, pair_evidence
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.graphs import Graph
from heuresis_env.metrics import score_graph
from heuresis_env.registration import REGISTERED_FAMILIES, env_id, register_envs

register_envs()
SMALL = {"d": 5, "n": 200, "indices": [0]}
KERNELS = {"add": lambda s, i, j: add_edge_at(s, i, j, False), "remove": remove_edge_at,
           "orient": orient_edge_at}


def make(family: str = "lg", **kwargs) -> gym.Env:
    return gym.make(env_id(family), interface="rl", **{**SMALL, **kwargs})


def instance(family: str = "lg"):
    return generate_instance(InstanceKey(family, "dev", 0, d=5, n=200))


def masked_random_action(env: gym.Env, rng: np.random.Generator, submit: bool = False) -> int:
    mask = env.unwrapped.action_masks().copy()
    if not submit:
        mask[-1] = False
    valid = np.flatnonzero(mask)
    return int(valid[rng.integers(valid.size)])


@pytest.mark.parametrize("family", REGISTERED_FAMILIES)
def test_check_env_on_every_registered_id(family):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = make(family)
    check_env(env.unwrapped)
    sb3_check_env(make(family, guided=True).unwrapped, warn=True)
    env.close()


def test_spaces_are_flat_box_and_multibinary():
    env = make("lg")
    for space in env.observation_space.spaces.values():
        assert isinstance(space, gym.spaces.Box | gym.spaces.MultiBinary)
        assert len(space.shape) == 1
    assert isinstance(env.action_space, gym.spaces.Discrete)
    assert env.action_space.n == 5 * 10 + 1
    observation, _ = env.reset(seed=0)
    views = env.unwrapped.unflatten_observation(observation)
    assert views["evidence"].shape == (10, len(FEATURE_NAMES))
    assert views["adjacency"].shape == (5, 5)


@pytest.mark.parametrize("target", ["none", "dag"])
def test_rl_actions_equal_their_text_view_tool_calls(target):
    budget = {"max_steps": 100}  # room for every action of the table
    rl_env = make("wild", target=target, guided=True, **budget)
    text_env = gym.make(env_id("wild"), target=target, guided=True, **SMALL, **budget)
    rl_env.reset(seed=0)
    text_env.reset(seed=0)
    table = rl_env.unwrapped.rl_actions
    tools = {t.name: t for t in rl_env.unwrapped.offered_tools}
    state = rl_env.unwrapped._state
    rng = np.random.default_rng(1)
    assert rl_env.unwrapped.working_graph == text_env.unwrapped.working_graph
    for _ in range(80):
        index = masked_random_action(rl_env, rng)
        entry = table[index]
        args = tools[entry.tool].rl.make_args(state, entry.i, entry.j)
        observation, _, _, _, info = rl_env.step(index)
        _, _, _, _, text_info = text_env.step({"tool": entry.tool, "args": args})
        assert text_info["error"] is None and "error" not in info
        assert rl_env.unwrapped.working_graph == text_env.unwrapped.working_graph
        if entry.operation == "test":
            row = state.evidence.pair_evidence().pair_index(entry.i, entry.j)
            views = rl_env.unwrapped.unflatten_observation(observation)
            column = FEATURE_NAMES.index("kci_p_at_deleting_set")
            assert views["evidence_available"][row, column] == 1
            assert views["evidence"][row, column] == pytest.approx(
                text_info["data"]["p_value"], abs=1e-6)


@pytest.mark.parametrize("target", ["none", "cpdag", "dag"])
def test_masks_are_exact_for_edits(target):
    env = make("mixed", target=target)
    env.reset(seed=0)
    unwrapped = env.unwrapped
    table = unwrapped.rl_actions
    rng = np.random.default_rng(2)
    for _ in range(40):
        mask = unwrapped.action_masks()
        for entry in table:
            if entry.operation not in KERNELS:
                continue
            trial = copy.copy(unwrapped._state)
            trial.working_graph = unwrapped._state.working_graph.copy()
            error = KERNELS[entry.operation](trial, entry.i, entry.j)
            assert (error is None) == bool(mask[entry.index]), (entry, error)
        env.step(masked_random_action(env, rng))
    assert unwrapped.action_masks()[-1]


def test_invalid_actions_cost_a_step_and_never_raise():
    env = make("lg", target="dag")
    env.reset(seed=0)
    unwrapped = env.unwrapped
    remove_first_pair = unwrapped.rl_actions[10].index  # remove (X1, X2): no edge yet
    for action in (remove_first_pair, 10_000, -1, "add", 2.5, np.array([1, 2])):
        before = unwrapped.working_graph
        steps = unwrapped.steps_used
        _, reward, terminated, truncated, info = env.step(action)
        assert info["error"] and reward == 0.0 and not terminated and not truncated
        assert unwrapped.steps_used == steps + 1
        assert unwrapped.working_graph == before


def test_evidence_features_match_their_definitions():
    env = make("anm", guided=True)
    observation, _ = env.reset(seed=0)
    views = env.unwrapped.unflatten_observation(observation)
    values, available = views["evidence"], views["evidence_available"]
    data = instance("anm").X
    fisherz = pc(data, None, ci_test="fisherz", alpha=0.05)
    kci_pc = pc(data, None, ci_test="kci", alpha=0.05)
    column = {name: k for k, name in enumerate(FEATURE_NAMES)}
    correlation = np.corrcoef(data, rowvar=False)
    evidence = pair_evidence(data, instance("anm").names, instance("anm").sha256)
    for row, (i, j) in enumerate(evidence.pairs.tolist()):
        assert values[row, column["abs_pearson_r"]] == pytest.approx(abs(correlation[i, j]),
                                                                    abs=1e-6)
        gap = values[row, column["distance_correlation"]] - values[row, column["dcor_gap"]]
        assert 0 <= gap <= 1  # the gap subtracts |r| on the subsample
        deleted = not fisherz.skeleton.adjacent(f"X{i + 1}", f"X{j + 1}")
        assert available[row, column["fisherz_deletion_p"]] == deleted
        if deleted:
            assert values[row, column["fisherz_deletion_p"]] > 0.05
        assert available[row, column["kci_deletion_p"]] == (
            not kci_pc.skeleton.adjacent(f"X{i + 1}", f"X{j + 1}"))
        assert available[row, column["kci_p_at_deleting_set"]] == 0  # not tested yet
        assert 0 <= values[row, column["stability"]] <= 1
        expected = make_ci_test("kci", data).test(i, j, evidence.kci_conditioning_sets[row])
        assert evidence.kci_p_at_deleting_set[row] == pytest.approx(expected.p_value)
    unguided = make("anm", guided=False)
    observation, _ = unguided.reset(seed=0)
    views = unguided.unwrapped.unflatten_observation(observation)
    assert not views["evidence_available"][:, column["kci_deletion_p"]].any()
    assert not views["adjacency"].any()


def test_stability_feature_tracks_true_edges_on_linear_gaussian_data():
    data = instance("lg")
    evidence = pair_evidence(data.X, data.names, data.sha256)
    truth = data.record.dag.skeleton()
    true_pairs = np.array([truth[i, j] for i, j in evidence.pairs.tolist()])
    assert evidence.stability[true_pairs].mean() > evidence.stability[~true_pairs].mean()


@pytest.mark.parametrize("reward", ["f1", "shaped"])
def test_rewards(reward):
    env = make("hetero", reward=reward, guided=True, max_steps=30)
    env.reset(seed=0)
    start = score_graph(env.unwrapped.working_graph, instance("hetero").record.dag)["f1"]
    rng = np.random.default_rng(3)
    total, done = 0.0, False
    while not done:
        _, r, terminated, truncated, info = env.step(masked_random_action(env, rng))
        total += r
        done = terminated or truncated
    final = score_graph(env.unwrapped.working_graph, instance("hetero").record.dag)["f1"]
    assert info["scores"]["f1"] == pytest.approx(final)
    expected = final if reward == "f1" else final - start
    assert total == pytest.approx(expected)


def test_evidence_is_read_from_disk_once_computed(monkeypatch):
    data = instance("gauntlet")
    first = pair_evidence(data.X, data.names, data.sha256)
    clear_memory()

    def recompute(*args, **kwargs):
        raise AssertionError("the evidence should come from the disk cache")

    monkeypatch.setattr(evidence_module, "compute_pair_evidence", recompute)
    again = pair_evidence(data.X, data.names, data.sha256)
    assert np.array_equal(again.feature_matrix(), first.feature_matrix(), equal_nan=True)


def test_async_vector_env_with_masks():
    envs = gym.make_vec(env_id("lg"), num_envs=2, vectorization_mode="async", interface="rl",
                        **SMALL)
    observations, _ = envs.reset(seed=0)
    assert observations["adjacency"].shape == (2, 25)
    rng = np.random.default_rng(0)
    for _ in range(20):
        masks = np.stack(envs.call("action_masks"))
        actions = [int(rng.choice(np.flatnonzero(m[:-1]))) for m in masks]
        observations, rewards, terminated, truncated, infos = envs.step(actions)
        assert observations["evidence"].shape == (2, 10 * len(FEATURE_NAMES))
    envs.close()


def test_rl_trace_replays(tmp_path):
    env = make("wild", trace_path=str(tmp_path), reward="shaped", target="dag")
    env.reset(seed=0)
    rng = np.random.default_rng(4)
    for _ in range(25):
        env.step(masked_random_action(env, rng))
    env.step(3000)  # out of range: an error step, replayed as one
    env.step(env.action_space.n - 1)  # submit
    path = env.unwrapped.trace_file
    report = replay_trace(path)
    assert report.ok, report.summary()
    assert report.output_mismatches == []
    # an RL step keeps the text a text-view agent would have read: a test's p-value
    steps = read_trace(path).steps
    tests = [s for s in steps if s["tool"] == "ci_test" and not s["error"]]
    assert tests and all("p-value" in s["output"] for s in tests)
    assert steps[-1]["output"].startswith("Submitted the working graph")


def test_maskable_ppo_learns_a_few_steps():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = make("lg", max_steps=20)
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=16,
                                    n_epochs=1, seed=0, device="cpu")
    model.learn(64)
    observation, _ = env.reset(seed=1)
    action, _ = model.predict(observation, action_masks=env.unwrapped.action_masks())
    assert env.unwrapped.action_masks()[int(action)]


def test_guided_start_is_pc_kci_with_plain_marks():
    env = make("lg", guided=True)
    env.reset(seed=0)
    data = instance("lg")
    expected = pc(data.X, data.names, ci_test="kci", alpha=0.05).graph
    working = env.unwrapped.working_graph
    assert np.array_equal(working.skeleton(), expected.skeleton())
    assert set(np.unique(working.marks)) <= {0, 1, 2}
    assert isinstance(working, Graph)


def test_state_has_no_hidden_record():
    state_fields = set(vars(EpisodeState(instance("lg").X, instance("lg").names,
                                         instance("lg").sha256)))
    assert not {"record", "dag", "scm", "true_graph"} & state_fields


def test_masks_reach_sb3_contrib_through_gym_makes_wrappers():
    """``gym.make`` wraps the environment, and Gymnasium's wrappers do not forward
    ``action_masks``: sb3-contrib reaches it through ``get_wrapper_attr`` (as its
    ``MaskablePPO`` does, single or vectorized), and users through ``env.unwrapped`` — the
    README says so (issue 42)."""
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.vec_env import DummyVecEnv

    env = make("lg")
    env.reset(seed=0)
    assert env is not env.unwrapped and not hasattr(env, "action_masks")
    assert is_masking_supported(env)
    np.testing.assert_array_equal(get_action_masks(env), env.unwrapped.action_masks())
    vec = DummyVecEnv([lambda: make("lg")])
    vec.reset()
    assert is_masking_supported(vec)
    np.testing.assert_array_equal(get_action_masks(vec)[0],
                                  vec.envs[0].unwrapped.action_masks())
    vec.close()
    env.close()
