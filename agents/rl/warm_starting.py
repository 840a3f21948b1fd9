"""The warm start from one-step edits: try every single edit from each development instance's
start state (:func:`probe_edits`), fit the pair encoder to those rewards and start the policy
from "make the edit with the highest positive predicted gain, else submit" (:func:`warm_start`);
PPO then fine-tunes. Without it a randomly initialised PPO policy on ``wild`` settles on
submitting the guided start unchanged, since nearly every random edit lowers F1."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.preprocessing import preprocess_obs
from torch import nn

from agents.rl.envs import environment_kwargs
from agents.rl.network import PAIR_OUTPUTS, PairActionHead
from agents.rl.spaces import OBSERVATION_KEYS, ActionMasker
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import make_environment
from heuresis_env.generation import expand_families
from heuresis_env.policy import EpisodeSettings

__all__ = ["REWARD_SCALE", "EditProbes", "probe_edits", "warm_start"]

#: one-step F1 changes are multiplied by this before the value regression (±0.05 → ±1)
REWARD_SCALE = 20.0


@dataclass
class EditProbes:
    """The shaped reward of every one-step edit from each training instance's start state.

    ``observations[k]`` holds instance k's start observation and the same state with every
    pair tested (the KCI feature revealed); ``rewards[k, row]`` is the change in adjacency F1
    from adding pair ``row`` (when absent) or removing it (when present). Collected through
    the environment's reward alone, like every other training signal.
    """

    indices: list[int]
    observations: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]
    rewards: np.ndarray
    steps: int
    seconds: float


def probe_edits(family: str, settings: EpisodeSettings, indices: Sequence[int], d: int, n: int,
                split: str = "dev") -> EditProbes:
    """Try every single edit from the start state of each instance (then undo it).

    Per instance: reset, test every pair (p steps), then for every pair its add or remove
    and the inverse edit (2p steps); 3p environment steps in all. A group of families
    (``all``) probes ``indices`` of each family in turn.
    """
    families = expand_families(family)
    if len(families) > 1:
        parts = [probe_edits(name, settings, indices, d, n, split) for name in families]
        return EditProbes([i for part in parts for i in part.indices],
                          [o for part in parts for o in part.observations],
                          np.concatenate([part.rewards for part in parts]),
                          sum(part.steps for part in parts), sum(part.seconds for part in parts))
    masker = ActionMasker(d)
    n_pairs = masker.pair_i.size
    add0, remove0 = masker.slices["add"].start, masker.slices["remove"].start
    probe_settings = replace(settings, max_steps=3 * n_pairs + 2, max_seconds=None)
    env = make_environment(family, environment_kwargs(probe_settings, split, d, n, reward="shaped",
                                               indices=list(indices)))
    started = time.perf_counter()
    observations, rewards, steps = [], np.zeros((len(indices), n_pairs)), 0

    def step(action: int) -> tuple[dict, float]:
        observation, reward, _, _, info = env.step(action)
        if info.get("error"):
            raise HeuresisError(f"probe action {action} was refused: {info['error']}")
        return observation, reward

    try:
        for row, index in enumerate(indices):
            start, _ = env.reset(seed=int(index), options={"index": int(index)})
            tested = start
            for k in range(n_pairs):
                tested, _ = step(masker.test_start + k)
            mask = env.unwrapped.action_masks()
            for k in range(n_pairs):
                edit, undo = ((add0 + k, remove0 + k) if mask[add0 + k]
                              else (remove0 + k, add0 + k))
                rewards[row, k] = step(edit)[1]
                step(undo)
            observations.append((start, tested))
            steps += 3 * n_pairs
    finally:
        env.close()
    return EditProbes(list(map(int, indices)), observations, rewards, steps,
                      time.perf_counter() - started)


def _observation_batch(policy: Any, observations: Sequence[dict], flatten: bool) -> Any:
    if flatten:
        stacked: Any = np.stack([np.concatenate([np.asarray(o[k], dtype=np.float32).reshape(-1)
                                                 for k in OBSERVATION_KEYS])
                                 for o in observations])
    else:
        stacked = {k: np.stack([np.asarray(o[k]) for o in observations])
                   for k in observations[0]}
    tensor, _ = policy.obs_to_tensor(stacked)
    return preprocess_obs(tensor, policy.observation_space)


def warm_start(policy: Any, probes: EditProbes, flatten: bool, epochs: int = 400,
               learning_rate: float = 1e-3, sharpness: float = 10.0, test_logit: float = -2.0,
               validation_fraction: float = 0.2, seed: int = 0) -> dict[str, float]:
    """Fit the pairwise encoder to the one-step edit rewards, then set the action head so
    that the policy starts as "make the edit with the highest predicted gain, if positive".

    A linear "edit value" read-out of each pair embedding is regressed on REWARD_SCALE × the
    probed reward (mean squared error; the instances are split into fit and validation parts
    and the epoch with the lowest validation error is kept). The head then scores add and
    remove of a pair as ``sharpness`` × its predicted value, submit as 0, a test as
    ``test_logit`` and orientations far below. PPO fine-tunes from there. Returns the fit's
    training and validation errors.
    """
    extractor = policy.features_extractor
    head = policy.action_net
    if not isinstance(head, PairActionHead):
        raise HeuresisError("the warm start needs the pairwise architecture "
                            "(architecture='pairwise')")
    hidden, n_pairs = extractor.hidden, extractor.layout.n_pairs
    generator = torch.Generator().manual_seed(int(seed))
    order = np.random.default_rng(seed).permutation(len(probes.indices))
    n_validation = int(round(validation_fraction * len(order))) if len(order) >= 5 else 0
    parts = {"validation": order[:n_validation], "fit": order[n_validation:]}
    batches = {}
    for name, rows in parts.items():
        if len(rows) == 0:
            continue
        observations = [o for r in rows for o in probes.observations[r]]
        targets = np.repeat(probes.rewards[rows] * REWARD_SCALE, 2, axis=0)
        batches[name] = (_observation_batch(policy, observations, flatten),
                         torch.as_tensor(targets, dtype=torch.float32))
    read_out = nn.Linear(hidden, 1)
    with torch.no_grad():
        nn.init.normal_(read_out.weight, std=0.01, generator=generator)
        read_out.bias.zero_()
    parameters = list(extractor.parameters()) + list(read_out.parameters())
    optimizer = torch.optim.Adam(parameters, lr=learning_rate, weight_decay=1e-4)

    def loss_of(name: str) -> torch.Tensor:
        observations, targets = batches[name]
        embeddings = extractor(observations)[:, :-hidden].reshape(-1, n_pairs, hidden)
        return ((read_out(embeddings).squeeze(-1) - targets) ** 2).mean()

    best = (math.inf, None)
    extractor.train()
    for _ in range(int(epochs)):
        optimizer.zero_grad()
        loss = loss_of("fit")
        loss.backward()
        optimizer.step()
        if "validation" in batches:
            with torch.no_grad():
                validation = float(loss_of("validation"))
            if validation < best[0]:
                best = (validation, ({k: v.clone() for k, v in extractor.state_dict().items()},
                                     {k: v.clone() for k, v in read_out.state_dict().items()}))
    if best[1] is not None:
        extractor.load_state_dict(best[1][0])
        read_out.load_state_dict(best[1][1])
    with torch.no_grad():
        fit_error = float(loss_of("fit"))
        weight, bias = read_out.weight[0], read_out.bias[0]
        head.pair_logits.weight.zero_()
        head.pair_logits.bias.fill_(-10.0)
        for output in ("add", "remove"):
            row = PAIR_OUTPUTS.index(output)
            head.pair_logits.weight[row] = sharpness * weight
            head.pair_logits.bias[row] = sharpness * bias
        head.pair_logits.bias[PAIR_OUTPUTS.index("test")] = test_logit
        head.submit_logit.weight.zero_()
        head.submit_logit.bias.zero_()
    return {"fit_mse": fit_error, "validation_mse": best[0], "epochs": int(epochs),
            "sharpness": float(sharpness), "test_logit": float(test_logit)}
