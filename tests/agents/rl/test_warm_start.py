"""The warm start (agents.rl.warm_starting): probed rewards are each single edit's F1 change, and
the fitted policy acts on them."""

from __future__ import annotations

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

from agents.rl import (
    ALGORITHMS,
    REWARD_SCALE,
    ActionMasker,
    PairwiseMaskablePolicy,
    PairwisePolicy,
    RLPolicy,
    SubmitStartPolicy,
    evaluate_policy,
    make_training_env,
    policy_config,
    probe_edits,
    warm_start,
)
from heuresis_env.evidence import guided_start
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.metrics import adjacency_f1
from tests.agents.rl.rl_fixtures import SETTINGS, TINY


def test_probed_rewards_are_the_f1_change_of_each_single_edit():
    probes = probe_edits("wild", SETTINGS, [0, 1], **TINY)
    assert probes.steps == 2 * 3 * 10 and probes.rewards.shape == (2, 10)
    masker = ActionMasker(TINY["d"])
    for row, index in enumerate(probes.indices):
        instance = generate_instance(InstanceKey("wild", "dev", index, **TINY))
        guided = guided_start(instance.X, instance.names, instance.sha256).graph.skeleton()
        truth = instance.record.dag.skeleton()
        before = adjacency_f1(guided_start(instance.X, instance.names, instance.sha256).graph,
                              instance.record.dag)
        n_true, n_guided = truth.sum() // 2, guided.sum() // 2
        true_positives = (guided & truth).sum() // 2
        for k, (i, j) in enumerate(zip(masker.pair_i, masker.pair_j)):
            step = -1 if guided[i, j] else 1
            after_tp = true_positives + step * truth[i, j]
            after = 2 * after_tp / (n_guided + step + n_true)
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
    start_results = evaluate_policy(SubmitStartPolicy(), "wild", "dev", indices, SETTINGS, **TINY)
    results = evaluate_policy(policy, "wild", "dev", indices, SETTINGS, **TINY)
    gains = [r.scores["f1"] - s.scores["f1"] for r, s in zip(results, start_results)]
    assert np.mean(gains) >= 0.0, gains  # on the instances it was fitted to
    assert all(r.termination_reason == "submitted" for r in results)
    edits = sum(r.usage["actions"]["add"] + r.usage["actions"]["remove"] for r in results)
    best_single = probes.rewards.max(axis=1)
    assert edits >= int((best_single > 0.05).sum() > 0)
