"""RL repair policies (agents.rl): masks recomputed from observations, the pairwise network,
training with MaskablePPO and PPO on tiny budgets, save/load, run_episode, the CLI, and (slow)
the acceptance: a policy trained for minutes beats the guided start (PC-KCI) on wild."""

from __future__ import annotations

import argparse
import json

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

from agents import cli_train
from agents.rl import (
    ALGORITHMS,
    REWARD_SCALE,
    ActionMasker,
    ObservationLayout,
    PairActionHead,
    PairwiseExtractor,
    PairwiseMaskablePolicy,
    PairwisePolicy,
    RLPolicy,
    StepCost,
    SubmitStartPolicy,
    binned_curve,
    evaluate_policy,
    load,
    make_training_env,
    policy_config,
    probe_edits,
    save,
    train,
    warm_start,
)
from heuresis_env.env import rl_action_table
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.evidence import guided_start
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.metrics import adjacency_f1
from heuresis_env.policy import EpisodeSettings, run_episode
from heuresis_env.registration import env_id, register_envs

register_envs()
TINY = {"d": 5, "n": 200}
SETTINGS = EpisodeSettings(max_steps=12, max_seconds=None, guided=True)


def rl_env(target: str = "none", **kwargs) -> gym.Env:
    options = {"indices": [0, 1], "max_steps": 60, **TINY, **kwargs}
    return gym.make(env_id("wild"), interface="rl", guided=True, target=target, **options)


class MaskAudit(gym.Wrapper):
    """Records every action the wrapped RL-view env refused or that its mask forbade."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.violations: list[int] = []
        self.actions: list[int] = []

    def step(self, action):
        if not self.env.unwrapped.action_masks()[int(action)]:
            self.violations.append(int(action))
        self.actions.append(int(action))
        observation, reward, terminated, truncated, info = self.env.step(action)
        if info.get("error"):
            self.violations.append(int(action))
        return observation, reward, terminated, truncated, info


def tiny_model(algo: str, architecture: str = "pairwise", seed: int = 0):
    env = make_training_env("wild", SETTINGS, [0, 1], n_envs=1, flatten=algo == "ppo",
                            step_cost=0.002, seed=seed, **TINY)
    if architecture == "pairwise":
        policy = PairwiseMaskablePolicy if algo == "maskable_ppo" else PairwisePolicy
        kwargs = {"hidden": 16}
    else:
        policy = "MultiInputPolicy" if algo == "maskable_ppo" else "MlpPolicy"
        kwargs = {"net_arch": [16]}
    cls = MaskablePPO if algo == "maskable_ppo" else PPO
    model = cls(policy, env, n_steps=32, batch_size=32, n_epochs=1, seed=seed, device="cpu",
                policy_kwargs=kwargs)
    model.learn(64)
    config = policy_config(algo, architecture, "wild", TINY["d"], TINY["n"], SETTINGS)
    return model, config


# ---- masks and layout ------------------------------------------------------------------------

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


def test_pairwise_head_puts_each_pair_output_at_its_action():
    layout = ObservationLayout(4)
    head = PairActionHead(layout, hidden=len(("add", "remove", "fwd", "back", "test")))
    with torch.no_grad():
        head.pair_logits.weight.copy_(torch.eye(5))
        head.pair_logits.bias.zero_()
        head.submit_logit.weight.zero_()
        head.submit_logit.bias.fill_(-7.0)
    # pair k's embedding is 100·k + (output index), so each logit names its pair and output
    embeddings = torch.tensor([[100.0 * k + o for o in range(5)]
                               for k in range(layout.n_pairs)])
    latent = torch.cat([embeddings.reshape(1, -1), torch.zeros(1, 5)], dim=1)
    logits = head(latent)[0].detach().numpy()
    masker = ActionMasker(4)
    outputs = {"add": 0, "remove": 1, "test": 4}
    for entry in rl_action_table(4):
        if entry.operation == "submit":
            assert logits[entry.index] == -7.0
            continue
        row = masker.pair_row[entry.i, entry.j]
        output = outputs.get(entry.operation, 2 if entry.i < entry.j else 3)
        assert logits[entry.index] == 100.0 * row + output, entry


def test_pairwise_extractor_shares_its_encoder_across_pairs():
    env = rl_env()
    extractor = PairwiseExtractor(env.observation_space, hidden=8)
    n_weights = sum(p.numel() for p in extractor.parameters())
    bigger = PairwiseExtractor(gym.make(env_id("wild"), interface="rl", d=9, n=200)
                               .observation_space, hidden=8)
    assert sum(p.numel() for p in bigger.parameters()) == n_weights  # independent of d
    observation, _ = env.reset(seed=0)
    batch = {k: torch.as_tensor(np.asarray(v, dtype=np.float32))[None] for k, v in
             observation.items()}
    features = extractor(batch)
    assert features.shape == (1, extractor.features_dim)
    assert torch.isfinite(features).all()


# ---- training on tiny budgets, save/load ------------------------------------------------------

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
    policy = load(tmp_path / "model.zip")
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


def test_probed_rewards_are_the_f1_change_of_each_single_edit():
    probes = probe_edits("wild", SETTINGS, [0, 1], **TINY)
    assert probes.steps == 2 * 3 * 10 and probes.rewards.shape == (2, 10)
    masker = ActionMasker(TINY["d"])
    for row, index in enumerate(probes.indices):
        instance = generate_instance(InstanceKey("wild", "dev", index, **TINY))
        seed = guided_start(instance.X, instance.names, instance.sha256).graph.skeleton()
        truth = instance.record.dag.skeleton()
        before = adjacency_f1(guided_start(instance.X, instance.names, instance.sha256).graph,
                              instance.record.dag)
        n_true, n_seed = truth.sum() // 2, seed.sum() // 2
        true_positives = (seed & truth).sum() // 2
        for k, (i, j) in enumerate(zip(masker.pair_i, masker.pair_j)):
            step = -1 if seed[i, j] else 1
            after_tp = true_positives + step * truth[i, j]
            after = 2 * after_tp / (n_seed + step + n_true)
            assert probes.rewards[row, k] == pytest.approx(after - before), (index, i, j)
        start, tested = probes.observations[row]
        assert np.array_equal(start["adjacency"], tested["adjacency"])
        assert tested["evidence_available"].sum() > start["evidence_available"].sum()


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_warm_start_fits_the_probed_rewards_and_acts_on_them(algo):
    indices = list(range(6))
    probes = probe_edits("wild", SETTINGS, indices, **TINY)
    flatten = algo == "ppo"
    env = make_training_env("wild", SETTINGS, indices, n_envs=1, flatten=flatten, **TINY)
    cls, policy_class = ((PPO, PairwisePolicy) if flatten
                         else (MaskablePPO, PairwiseMaskablePolicy))
    model = cls(policy_class, env, seed=0, device="cpu", policy_kwargs={"hidden": 32})
    targets = probes.rewards * REWARD_SCALE
    fit = warm_start(model.policy, probes, flatten=flatten, epochs=500,
                     validation_fraction=0.0)
    assert fit["fit_mse"] < 0.5 * np.mean((targets - targets.mean()) ** 2)
    config = policy_config(algo, "pairwise", "wild", TINY["d"], TINY["n"], SETTINGS)
    policy = RLPolicy(model, config)
    seed_results = evaluate_policy(SubmitStartPolicy(), "wild", "dev", indices, SETTINGS, **TINY)
    results = evaluate_policy(policy, "wild", "dev", indices, SETTINGS, **TINY)
    gains = [r.scores["f1"] - s.scores["f1"] for r, s in zip(results, seed_results)]
    assert np.mean(gains) >= 0.0, gains  # on the instances it was fitted to
    assert all(r.termination_reason == "submitted" for r in results)
    edits = sum(r.usage["actions"]["add"] + r.usage["actions"]["remove"] for r in results)
    best_single = probes.rewards.max(axis=1)
    assert edits >= int((best_single > 0.05).sum() > 0)


def test_submit_seed_policy_scores_pc_kci_output():
    results = evaluate_policy(SubmitStartPolicy(), "wild", "test", [0, 1], SETTINGS, **TINY)
    for index, result in enumerate(results):
        instance = generate_instance(InstanceKey("wild", "test", index, **TINY))
        seed = guided_start(instance.X, instance.names, instance.sha256).graph
        assert result.scores["f1"] == pytest.approx(adjacency_f1(seed, instance.record.dag))
        assert result.steps == 1 and result.finished


def test_bad_input_raises_clear_errors(tmp_path):
    with pytest.raises(UnknownNameError, match="maskable_ppo"):
        train(algo="dqn", out_dir=tmp_path)
    with pytest.raises(UnknownNameError, match="pairwise"):
        train(architecture="transformer", out_dir=tmp_path)
    with pytest.raises(HeuresisError, match="dev_count"):
        train(dev_count=0, out_dir=tmp_path)
    with pytest.raises(HeuresisError, match="unknown hyperparameter"):
        train(hyperparameters={"learning_rte": 1e-3}, out_dir=tmp_path)
    with pytest.raises(HeuresisError, match="no trained model"):
        load(tmp_path)
    model, config = tiny_model("maskable_ppo")
    save(model, config, tmp_path)
    policy = load(tmp_path)
    env = gym.make(env_id("wild"), interface="rl", guided=True, d=4, n=200, indices=[0])
    observation, info = env.reset(seed=0)
    with pytest.raises(HeuresisError, match="d = 5"):
        policy.reset(observation, info)


def test_binned_learning_curve():
    episodes = [{"timestep": float(t), "f1_gain": g, "f1": 0.5 + g, "length": 10.0}
                for t, g in [(10, 0.0), (20, 0.1), (60, 0.2), (100, 0.4)]]
    curve = binned_curve(episodes, bins=2)
    assert [c["timestep"] for c in curve] == [50.0, 100.0]
    assert curve[0]["f1_gain"] == pytest.approx(0.05) and curve[0]["episodes"] == 2
    assert curve[1]["f1_gain"] == pytest.approx(0.3)
    assert binned_curve([]) == []


def test_cli_trains_evaluates_and_writes_everything(tmp_path):
    parser = argparse.ArgumentParser()
    cli_train.add_arguments(parser)
    out = tmp_path / "run"
    args = parser.parse_args(["--family", "wild", "--algo", "maskable_ppo", "--steps", "64",
                              "--out", str(out), "--dev-count", "2", "--test-count", "2",
                              "--d", "5", "--n", "200", "--max-steps", "10",
                              "--resamples", "200", "--n-envs", "1"])
    assert cli_train.run(args) == 0
    for name in ("model.zip", "policy.json", "report.json", "learning_curve.png"):
        assert (out / name).is_file(), name
    report = json.loads((out / "report.json").read_text())
    assert report["test_indices"] == [0, 1] and len(report["policy_f1"]) == 2
    seed = evaluate_policy(SubmitStartPolicy(), "wild", "test", [0, 1],
                           EpisodeSettings(max_steps=10, max_seconds=None, guided=True), **TINY)
    assert report["start_f1"] == [r.scores["f1"] for r in seed]
    difference = np.mean(report["policy_f1"]) - np.mean(report["start_f1"])
    assert report["f1_difference"]["mean"] == pytest.approx(difference)
    policy = load(out)
    results = evaluate_policy(policy, "wild", "test", [0, 1],
                              EpisodeSettings(max_steps=10, max_seconds=None, guided=True),
                              **TINY)
    assert [r.scores["f1"] for r in results] == report["policy_f1"]


# ---- acceptance (slow) ----------------------------------------------------------------------------

#: the acceptance at CI size: d = 10 with n = 100 rows, where PC-KCI's instance evidence takes
#: well under a second per instance; benchmarks/bench_rl.py runs the default n = 600
ACCEPTANCE = {"steps": 20_000, "dev": 80, "test": 32, "d": 10, "n": 100}


@pytest.mark.slow
def test_trained_policy_beats_the_guided_start_on_wild(tmp_path):
    report = train("wild", "maskable_ppo", steps=ACCEPTANCE["steps"], out_dir=tmp_path,
                   seed=0, n_envs=2, dev_count=ACCEPTANCE["dev"], test_count=ACCEPTANCE["test"],
                   d=ACCEPTANCE["d"], n=ACCEPTANCE["n"], workers=2, n_resamples=10_000)
    print("\n" + report.summary())
    assert report.policy_mean_f1 > report.start_mean_f1, report.summary()
    assert report.policy_means["truncated"] == 0.0  # it submits
