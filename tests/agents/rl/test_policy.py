"""Repair policies (agents.rl.policy): save and load round-trip identically, a loaded policy
stays within the masks under run_episode, the guided start scores PC-KCI's output, and the
shipped models load from their no-pickle files (model.npz + model.json)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from agents.rl import (
    ALGORITHMS,
    FLAT_KEYS,
    MODEL_FILE,
    OBSERVATION_KEYS,
    SHIPPED_MODEL_DIR,
    SHIPPED_MODELS,
    PairwiseMaskablePolicy,
    RLPolicy,
    SubmitStartPolicy,
    evaluate_policy,
    load,
    save,
)
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import guided_start
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.metrics import adjacency_f1
from heuresis_env.policy import EpisodeSettings, run_episode
from heuresis_env.registration import env_id
from tests.agents.rl.rl_fixtures import SETTINGS, TINY, MaskAudit, rl_env, tiny_model


@pytest.mark.parametrize("architecture", ["pairwise", "mlp"])
@pytest.mark.parametrize("algo", ALGORITHMS)
def test_learns_64_steps_and_round_trips_identically(algo, architecture, tmp_path):
    model, config = tiny_model(algo, architecture)
    save(model, config, tmp_path)
    fresh = RLPolicy(model, config)
    loaded = load(tmp_path)
    assert loaded.flatten == (algo == "ppo")
    env = rl_env()
    for episode in range(2):
        observation, info = env.reset(seed=episode)
        fresh.reset(observation, info)
        loaded.reset(observation, info)
        for _ in range(10):
            p_fresh = fresh.action_probabilities(observation)
            p_loaded = loaded.action_probabilities(observation)
            assert np.array_equal(p_fresh, p_loaded)
            assert np.all(p_fresh[~env.unwrapped.action_masks()] == 0)
            action = fresh.act(observation, info)
            assert loaded.act(observation, info) == action
            observation, _, terminated, truncated, info = env.step(action)
            assert "error" not in info
            if terminated or truncated:
                break


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_loaded_policy_runs_through_run_episode_within_the_masks(algo, tmp_path):
    model, config = tiny_model(algo)
    save(model, config, tmp_path)
    policy = load(tmp_path / MODEL_FILE)
    policy.configure(EpisodeSettings(max_steps=25, guided=True, target="dag"))
    audit = MaskAudit(rl_env("dag", max_steps=25))
    result = run_episode(audit, policy, seed=0, options={"index": 1})
    assert audit.violations == []
    assert result.steps == len(audit.actions) <= 25
    assert 0.0 <= result.scores["f1"] <= 1.0
    assert sum(result.usage["actions"].values()) == result.steps
    sampled = load(tmp_path, deterministic=False, seed=3)
    sampled.configure(EpisodeSettings(max_steps=25, guided=True))
    audit = MaskAudit(rl_env(max_steps=25))
    run_episode(audit, sampled, seed=0, options={"index": 0})
    assert audit.violations == []


class _Recording:
    """Wraps a policy and records its actions."""

    def __init__(self, policy):
        self.policy, self.actions = policy, []

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def act(self, observation, info):
        action = self.policy.act(observation, info)
        self.actions.append(action)
        return action


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_a_rerun_reads_the_models_logits_back_without_loading_it(algo, tmp_path, monkeypatch):
    """The logits are a deterministic function of the model file and its input: the policy
    keeps them in its disk cache, and a second policy on the same episodes replays the same
    actions from it, bit for bit, without loading the model; another model file has its own
    entries."""
    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path / "cache"))
    model, config = tiny_model(algo)
    save(model, config, tmp_path / "model")
    settings = EpisodeSettings(max_steps=25, guided=True, target="dag")
    first = _Recording(load(tmp_path / "model"))
    first.configure(settings)
    results = [run_episode(rl_env("dag", max_steps=25), first, seed=0, options={"index": i})
               for i in (0, 1)]
    assert first.policy._logits  # kept on disk as the episodes ran
    observation = rl_env("dag", max_steps=25).reset(seed=0, options={"index": 0})[0]
    cached = first.policy.model_logits(observation)
    first.policy._logits.clear()  # recomputed by the model: the same bits
    np.testing.assert_array_equal(first.policy.model_logits(observation), cached)

    second = _Recording(load(tmp_path / "model"))
    second.configure(settings)
    again = [run_episode(rl_env("dag", max_steps=25), second, seed=0, options={"index": i})
             for i in (0, 1)]
    assert second.policy._model is None  # every input was cached: the model never loaded
    assert second.actions == first.actions
    assert [r.scores for r in again] == [r.scores for r in results]

    other, other_config = tiny_model(algo, seed=1)
    save(other, other_config, tmp_path / "other")
    third = load(tmp_path / "other")
    third.configure(settings)
    assert third._logits == {} and third._model is not None  # cold: loaded at configure


def test_submit_start_policy_scores_pc_kci_output():
    results = evaluate_policy(SubmitStartPolicy(), "wild", "test", [0, 1], SETTINGS, **TINY)
    for index, result in enumerate(results):
        instance = generate_instance(InstanceKey("wild", "test", index, **TINY))
        start_graph = guided_start(instance.X, instance.names, instance.sha256).graph
        assert result.scores["f1"] == pytest.approx(adjacency_f1(start_graph, instance.record.dag))
        assert result.steps == 1 and result.finished


def test_a_saved_model_is_plain_arrays_and_a_description_and_rebuilds_the_class(tmp_path):
    """``save`` writes no pickle: model.npz holds plain arrays (read with allow_pickle=False)
    and model.json names the policy class of the algorithm and architecture; the shipped
    layout-1 model rebuilds the pairwise class from code."""
    model, config = tiny_model("maskable_ppo")
    save(model, config, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json", MODEL_FILE,
                                                          "policy.json"]
    with np.load(tmp_path / MODEL_FILE, allow_pickle=False) as archive:
        assert set(archive.files) == set(model.policy.state_dict())
    described = json.loads((tmp_path / "model.json").read_text())
    assert described["policy_class"] == "agents.rl.network:PairwiseMaskablePolicy"
    policy = load(model="wild-layout1")
    assert type(policy.model.policy) is PairwiseMaskablePolicy
    assert policy.d == 10 and policy.config["architecture"] == "pairwise"


def test_a_layout_1_model_acts_on_a_layout_2_observation():
    """The first shipped model predates the repair table (layout 1): it reads the keys it knows."""
    policy = load(model="wild-layout1")
    assert policy.layout == 1 and set(OBSERVATION_KEYS) - set(FLAT_KEYS[1]) == {
        "repair", "repair_available"}
    env = gym.make(env_id("wild"), interface="rl", guided=True, d=10, n=200, indices=[0])
    observation, info = env.reset(seed=0)
    assert "repair" in observation
    policy.reset(observation, info)
    probabilities = policy.action_probabilities(observation)
    assert probabilities.sum() == pytest.approx(1.0)
    assert np.all(probabilities[~env.unwrapped.action_masks()] == 0)


@pytest.mark.parametrize(("change", "message"), [
    ({"observation_layout": 99}, "observation layout 99"),
    ({"repair_feature_names": ["gone"]}, "repair features"),
])
def test_a_model_of_an_unknown_layout_is_refused_by_name(change, message, tmp_path):
    model, config = tiny_model("maskable_ppo")
    save(model, {**config, **change}, tmp_path)
    with pytest.raises(HeuresisError, match=message):
        load(tmp_path)


def test_the_shipped_all_family_model_is_the_default_and_reads_the_repair_table():
    policy = load()
    assert SHIPPED_MODEL_DIR == SHIPPED_MODELS["all"]
    assert policy.layout == 2 and policy.config["family"] == "all"
    assert policy.model.policy.features_extractor.reads_repair
    env = gym.make(env_id("lg"), interface="rl", guided=True, d=10, n=200, indices=[0])
    observation, info = env.reset(seed=0)
    policy.reset(observation, info)
    probabilities = policy.action_probabilities(observation)
    assert np.all(probabilities[~env.unwrapped.action_masks()] == 0)
    changed = {**observation, "repair": np.zeros_like(observation["repair"])}
    assert not np.allclose(policy.action_probabilities(changed), probabilities)


@pytest.mark.parametrize("family", ["lg", "anm", "hetero", "wild", "mixed", "gauntlet"])
def test_each_family_has_a_shipped_layout_2_model_trained_on_it(family):
    policy = load(model=family)
    assert policy.layout == 2 and policy.config["family"] == family and policy.d == 10
    report = json.loads((SHIPPED_MODELS[family] / "report.json").read_text())
    assert report["family"] == family and report["n"] == 600
    assert len(report["dev_indices"]) == 10  # the frozen design: dev instances 0-9


def test_a_shipped_model_name_must_exist_and_exclude_a_path(tmp_path):
    with pytest.raises(HeuresisError, match="'everything'.*all"):
        load(model="everything")
    with pytest.raises(HeuresisError, match="not both"):
        load(tmp_path, model="lg")


def test_building_the_policy_reads_its_size_without_torch_and_configure_loads_the_model(tmp_path):
    """``heuresis demo`` builds each policy to read the size it was trained for: for ``rl`` that
    costs no torch import; the model loads at ``configure`` (the run's start), so a model that
    cannot load fails there, not in an episode."""
    import subprocess
    import sys

    probe = ("import sys; from heuresis_env.evaluation.policies import make_policy; "
             "p = make_policy('rl', {}); print(p.d, 'torch' in sys.modules)")
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               timeout=300)
    assert completed.stdout.split() == ["10", "False"], completed.stderr[-2000:]
    model, config = tiny_model("maskable_ppo")
    save(model, config, tmp_path)
    (tmp_path / MODEL_FILE).write_bytes(b"not an archive of arrays")
    policy = load(tmp_path)  # the config alone is read here
    assert policy.d == config["d"]
    with pytest.raises(HeuresisError, match="SHA-256"):
        policy.configure(SETTINGS)


def test_the_package_exports_exactly_the_names_it_loads_lazily():
    import agents.rl as package

    assert sorted(package.__all__) == sorted(package._EXPORTS)
    for name in package.__all__:  # each resolves to its module's object, functions included
        assert getattr(package, name) is getattr(
            __import__(f"agents.rl.{package._EXPORTS[name]}", fromlist=[name]), name)


def test_a_guided_model_run_unguided_says_so():
    """The shipped models edit PC-KCI's output: run unguided they start from the empty graph
    and score far lower, a note the run's summary prints (``Policy.notes``)."""
    policy = load()
    policy.configure(EpisodeSettings(guided=True))
    assert policy.notes() == []
    policy.configure(EpisodeSettings(guided=False))
    (note,) = policy.notes()
    assert "trained in the guided condition" in note and "--guided" in note
