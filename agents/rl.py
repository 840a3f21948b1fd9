"""Trained repair policies on the RL view: train with (Maskable)PPO, evaluate, save, load.

A repair policy starts from PC-KCI's output (the guided condition) and edits it one discrete
action at a time (add, remove, orient, test, submit; ``heuresis_env.env.rl_view``). :func:`train`
learns one on the development instances of a family with sb3-contrib's ``MaskablePPO``
(invalid actions masked through ``action_masks()``) or plain ``PPO`` (the observation
flattened to one ``Box``; an invalid action is then an error step that costs a step and
changes nothing), evaluates it against the guided start on held-out test instances with a
paired bootstrap, and writes ``model.zip``, ``policy.json``, ``report.json`` and a learning
curve. :func:`load` returns an :class:`RLPolicy`, a :class:`~heuresis_env.policy.Policy` like
any other (it runs through :func:`~heuresis_env.policy.run_episode` and the evaluation
runner; entry point ``rl`` with ``path=``).

The default network (``architecture="pairwise"``) shares one encoder across the unordered
pairs: every pair's features (its adjacency marks, the seven evidence features with their
availability, −log10 of its p-values, the degrees of its two nodes, the edge count and the
budget) pass through the same MLP, a second layer mixes in the mean embedding of each end node
and of the whole graph, and a shared linear head gives the pair's add, remove, two
orientation and test logits (submit and the value read the pooled embedding), so the decision
rule is learnt once for all pairs (``architecture="mlp"``, SB3's default
``MultiInputPolicy``/``MlpPolicy``, is kept for comparison).

Training pays the change in adjacency F1 of every edit (``reward="shaped"``). On ``wild`` a
randomly initialised PPO policy settles on submitting the seed unchanged (nearly every random
edit lowers F1), so by default training first tries every single edit from each development
instance's start state, fits the pair encoder to those rewards and starts the policy from
"make the edit with the highest positive predicted gain, else submit" (:func:`probe_edits`,
:func:`warm_start`); PPO then fine-tunes. During training submit is a pass
(:class:`SubmitAsPass`) and the policy neither orients under ``target="none"`` nor undoes its
own edits (:class:`RepairActionMask`); ``docs/rl.md`` gives the evidence for each choice.

Randomness: our own draws come from explicit generators; stable-baselines3 seeds torch and
its own minibatch shuffling from ``seed`` (it uses NumPy's global generator internally).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv
from torch import nn

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.evaluation import environment_kwargs as runner_environment_kwargs
from heuresis_env.evaluation import make_environment
from heuresis_env.evidence import EVIDENCE_VERSION, FEATURE_NAMES
from heuresis_env.policy import EpisodeResult, EpisodeSettings, Policy, run_episode
from heuresis_env.env.toolbox.graph_tools import ACYCLIC_TARGETS
from heuresis_env.env import RL_OPERATIONS, rl_action_table

__all__ = [
    "ALGORITHMS",
    "ARCHITECTURES",
    "ActionMasker",
    "EditProbes",
    "EntropySchedule",
    "LearningCurveCallback",
    "ObservationLayout",
    "PairwiseExtractor",
    "PairwiseMaskablePolicy",
    "PairwisePolicy",
    "RLPolicy",
    "RepairActionMask",
    "StepCost",
    "SubmitAsPass",
    "SubmitStartPolicy",
    "TrainingReport",
    "evaluate_policy",
    "load",
    "make_training_env",
    "plot_learning_curve",
    "policy_config",
    "probe_edits",
    "save",
    "train",
    "uses_orientations",
    "warm_evidence",
    "warm_start",
]

#: training algorithms: sb3-contrib's MaskablePPO, or SB3's PPO on the flattened observation
ALGORITHMS = ("maskable_ppo", "ppo")
#: policy networks: one encoder shared by all pairs, or SB3's default MLP on the flat input
ARCHITECTURES = ("pairwise", "mlp")
MODEL_FILE = "model.zip"
CONFIG_FILE = "policy.json"
#: the repair policy shipped with the package (trained by ``heuresis train`` on ``wild``; its
#: ``report.json`` records how) — what :func:`load` returns without a path
SHIPPED_MODEL_DIR = Path(__file__).resolve().parent / "data" / "rl_repair_wild"
REPORT_FILE = "report.json"
CURVE_FILE = "learning_curve.png"
#: evidence columns holding p-values; the network also reads −log10 p of these
P_VALUE_COLUMNS = tuple(FEATURE_NAMES.index(name) for name in
                        ("fisherz_deletion_p", "kci_p_at_deleting_set", "kci_deletion_p"))
#: RL-view observation keys in the order ``gymnasium.spaces.flatten`` concatenates them
OBSERVATION_KEYS = ("adjacency", "budget_left", "evidence", "evidence_available")
#: per-pair outputs of the pairwise head, in this order
PAIR_OUTPUTS = ("add", "remove", "orient_forward", "orient_backward", "test")
#: PPO settings used unless ``train(hyperparameters=...)`` overrides them
DEFAULT_HYPERPARAMETERS: dict[str, Any] = {
    "learning_rate": 1e-4, "n_steps": 256, "batch_size": 256, "n_epochs": 4,
    "gamma": 0.9, "gae_lambda": 0.9, "clip_range": 0.2, "ent_coef": 0.002,
    "ent_coef_final": 0.0, "vf_coef": 0.5, "max_grad_norm": 0.5,
}
#: PPO settings for training from a random policy (``warm_start_edits=False``): a strong
#: entropy bonus at first, since nearly every random edit lowers F1
SCRATCH_HYPERPARAMETERS: dict[str, Any] = {
    **DEFAULT_HYPERPARAMETERS, "learning_rate": 5e-4, "ent_coef": 0.05, "ent_coef_final": 0.005,
}


# ---- observation layout and masks --------------------------------------------------------------

@dataclass(frozen=True)
class ObservationLayout:
    """Where each part of an RL-view observation lies, for the Dict or the flattened Box."""

    d: int
    n_features: int = len(FEATURE_NAMES)

    @property
    def n_pairs(self) -> int:
        return self.d * (self.d - 1) // 2

    @property
    def sizes(self) -> dict[str, int]:
        """Sizes in the order ``gymnasium.spaces.flatten`` concatenates them (sorted keys)."""
        pair_values = self.n_pairs * self.n_features
        sizes = (self.d * self.d, 1, pair_values, pair_values)
        return dict(zip(OBSERVATION_KEYS, sizes))

    @property
    def flat_size(self) -> int:
        return sum(self.sizes.values())

    @classmethod
    def from_space(cls, space: spaces.Space) -> ObservationLayout:
        """The layout of an RL-view observation space (a ``Dict`` or its flattened ``Box``)."""
        n_features = len(FEATURE_NAMES)
        if isinstance(space, spaces.Dict):
            if "adjacency" not in space.spaces:
                raise HeuresisError(f"not an RL-view observation space: keys "
                                    f"{sorted(space.spaces)}; expected adjacency, budget_left, "
                                    "evidence, evidence_available")
            d = math.isqrt(int(np.prod(space["adjacency"].shape)))
            layout = cls(d, n_features)
            if int(np.prod(space["evidence"].shape)) != layout.sizes["evidence"]:
                raise HeuresisError("the observation's evidence does not hold "
                                    f"{n_features} features per pair of {d} variables")
            return layout
        if isinstance(space, spaces.Box) and len(space.shape) == 1:
            for d in range(2, 200):
                layout = cls(d, n_features)
                if layout.flat_size == space.shape[0]:
                    return layout
                if layout.flat_size > space.shape[0]:
                    break
        raise HeuresisError(f"cannot read an RL-view layout from {space}; expected the RL "
                            "view's Dict space or its flattened Box")

    def split(self, observation: Any) -> dict[str, Any]:
        """The named parts of an observation batch (a dict of tensors or a flat tensor)."""
        if isinstance(observation, dict):
            return observation
        parts, start = {}, 0
        for key, size in self.sizes.items():
            parts[key] = observation[..., start:start + size]
            start += size
        return parts


class ActionMasker:
    """The RL view's action mask, recomputed from an observation and the pairs already tested.

    It reproduces ``env.unwrapped.action_masks()`` (add between non-adjacent variables,
    remove and orient on edges, no orientation closing a directed cycle under the cpdag and
    dag targets, each pair tested once, submit always), so a policy driven only by
    observations — as the evaluation runner drives it — respects the same masks.
    ``orient=False`` also masks every orientation (see :func:`uses_orientations`).
    """

    def __init__(self, d: int, target: str = "none", orient: bool = True):
        from heuresis_env.env.toolbox.state import TARGETS

        if target not in TARGETS:
            raise UnknownNameError("target", target, TARGETS)
        self.d, self.target, self.orient = d, target, bool(orient)
        table = rl_action_table(d)
        self.n_actions = len(table)
        operations = np.array([a.operation for a in table])
        self.slices = {}
        for operation in RL_OPERATIONS:
            rows = np.flatnonzero(operations == operation)
            self.slices[operation] = slice(int(rows[0]), int(rows[-1]) + 1)
        pairs = table[self.slices["add"]]
        self.pair_i = np.array([a.i for a in pairs], dtype=np.int64)
        self.pair_j = np.array([a.j for a in pairs], dtype=np.int64)
        self.pair_row = np.full((d, d), -1, dtype=np.int64)
        self.pair_row[self.pair_i, self.pair_j] = np.arange(len(pairs))
        self.pair_row[self.pair_j, self.pair_i] = np.arange(len(pairs))
        orient = table[self.slices["orient"]]
        self.orient_i = np.array([a.i for a in orient], dtype=np.int64)
        self.orient_j = np.array([a.j for a in orient], dtype=np.int64)
        self.test_start = self.slices["test"].start

    def __call__(self, adjacency: np.ndarray, tested: np.ndarray) -> np.ndarray:
        """Mask for the observation's ``adjacency`` (d·d, 0/1) and a bool per pair tested."""
        d = self.d
        tails = np.asarray(adjacency).reshape(d, d) != 0  # [a, b]: tail at a on the a–b edge
        present = tails | tails.T
        directed = tails & ~tails.T  # a → b
        mask = np.empty(self.n_actions, dtype=bool)
        adjacent = present[self.pair_i, self.pair_j]
        mask[self.slices["add"]] = ~adjacent
        mask[self.slices["remove"]] = adjacent
        a, b = self.orient_i, self.orient_j
        valid = present[a, b] & ~directed[a, b]
        if self.target in ACYCLIC_TARGETS and directed.any():
            reach = directed.astype(np.float64)
            for _ in range(max(1, (d - 1).bit_length())):
                reach = np.minimum(reach + reach @ reach, 1.0)
            via_other = directed.astype(np.float64) @ reach
            # reversing b → a closes a cycle iff another path b → c ⇝ a exists; orienting an
            # undirected a – b closes one iff b ⇝ a already
            closes = np.where(directed[b, a], via_other[b, a], reach[b, a]) > 0
            valid &= ~closes
        mask[self.slices["orient"]] = valid & self.orient
        mask[self.slices["test"]] = ~np.asarray(tested, dtype=bool)
        mask[self.slices["submit"]] = True
        return mask

    def without_edits(self, mask: np.ndarray, edited: np.ndarray) -> np.ndarray:
        """``mask`` with add and remove refused for the pairs marked in ``edited``."""
        mask = mask.copy()
        mask[self.slices["add"]] &= ~edited
        mask[self.slices["remove"]] &= ~edited
        return mask

    def operation(self, action: int) -> tuple[str, int]:
        """(operation, pair row or −1) of an action index."""
        for name, part in self.slices.items():
            if part.start <= action < part.stop:
                if name == "orient":
                    k = action - part.start
                    return name, int(self.pair_row[self.orient_i[k], self.orient_j[k]])
                if name == "submit":
                    return name, -1
                return name, action - part.start
        raise HeuresisError(f"action {action} is out of range 0..{self.n_actions - 1}")


def uses_orientations(target: str) -> bool:
    """Whether a repair policy orients edges: not under ``target="none"``, where adjacency F1
    ignores directions and an orientation would only spend a step."""
    return target != "none"


class RepairActionMask(gym.Wrapper):
    """Narrows the environment's ``action_masks()`` to a repair policy's actions, for
    MaskablePPO during training: no orientations unless the target scores them, and no edit
    of a pair already edited in the episode (a repair never undoes itself, so a policy
    cannot cycle adding and removing the same edge until the budget runs out).
    """

    def __init__(self, env: gym.Env, orient: bool):
        super().__init__(env)
        self.orient = bool(orient)
        self._masker = ActionMasker(env.unwrapped.d, orient=orient)
        table = env.unwrapped.rl_actions
        self._allowed = np.array([orient or a.operation != "orient" for a in table])
        self._edited = np.zeros(self._masker.pair_i.size, dtype=bool)

    def reset(self, **kwargs):
        self._edited[:] = False
        return self.env.reset(**kwargs)

    def step(self, action):
        result = self.env.step(action)
        index = int(np.asarray(action).reshape(()))
        if not result[4].get("error") and 0 <= index < self._masker.n_actions:
            operation, row = self._masker.operation(index)
            if operation in ("add", "remove"):
                self._edited[row] = True
        return result

    def action_masks(self) -> np.ndarray:
        mask = self.env.unwrapped.action_masks() & self._allowed
        return self._masker.without_edits(mask, self._edited)


# ---- the pairwise network ----------------------------------------------------------------------

def _mlp(sizes: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for k in range(len(sizes) - 1):
        layers += [nn.Linear(sizes[k], sizes[k + 1]), nn.ReLU()]
    return nn.Sequential(*layers)


class PairwiseExtractor(BaseFeaturesExtractor):
    """Per-pair embeddings from one encoder shared by all pairs, then node and graph context.

    Output: the (pairs × hidden) embeddings flattened, followed by their mean (hidden).
    """

    N_PAIR_INPUTS = 2 + 2 * len(FEATURE_NAMES) + len(P_VALUE_COLUMNS) + 4

    def __init__(self, observation_space: spaces.Space, hidden: int = 64):
        layout = ObservationLayout.from_space(observation_space)
        super().__init__(observation_space, features_dim=layout.n_pairs * hidden + hidden)
        self.layout, self.hidden = layout, hidden
        pairs = np.array([(i, j) for i in range(layout.d) for j in range(i + 1, layout.d)],
                         dtype=np.int64).reshape(-1, 2)
        self.register_buffer("pair_i", torch.as_tensor(pairs[:, 0]), persistent=False)
        self.register_buffer("pair_j", torch.as_tensor(pairs[:, 1]), persistent=False)
        self.register_buffer("p_columns", torch.as_tensor(P_VALUE_COLUMNS), persistent=False)
        self.encoder = _mlp([self.N_PAIR_INPUTS, hidden, hidden])
        self.mixer = _mlp([4 * hidden, hidden, hidden])

    def node_mean(self, pair_values: torch.Tensor) -> torch.Tensor:
        """(batch, d, hidden): each node's mean over the pairs it belongs to."""
        batch, _, width = pair_values.shape
        nodes = pair_values.new_zeros(batch, self.layout.d, width)
        nodes.index_add_(1, self.pair_i, pair_values)
        nodes.index_add_(1, self.pair_j, pair_values)
        return nodes / max(self.layout.d - 1, 1)

    def forward(self, observations: Any) -> torch.Tensor:
        layout = self.layout
        parts = layout.split(observations)
        adjacency = parts["adjacency"].float()
        batch = adjacency.shape[0]
        adjacency = adjacency.reshape(batch, layout.d, layout.d)
        i, j = self.pair_i, self.pair_j
        tail_i, tail_j = adjacency[:, i, j], adjacency[:, j, i]
        present = torch.maximum(tail_i, tail_j)
        degree = self.node_mean(present.unsqueeze(-1)).squeeze(-1)  # fraction of possible
        evidence = parts["evidence"].float().reshape(batch, layout.n_pairs, layout.n_features)
        available = parts["evidence_available"].float().reshape(batch, layout.n_pairs,
                                                                 layout.n_features)
        p_values = evidence[..., self.p_columns].clamp(1e-12, 1.0)
        log_p = -torch.log10(p_values) / 12.0 * available[..., self.p_columns]
        n_edges = present.mean(dim=1, keepdim=True).expand(-1, layout.n_pairs)
        budget = parts["budget_left"].float().reshape(batch, 1).expand(-1, layout.n_pairs)
        inputs = torch.cat([tail_i.unsqueeze(-1), tail_j.unsqueeze(-1), evidence, available,
                            log_p, degree[:, i].unsqueeze(-1), degree[:, j].unsqueeze(-1),
                            n_edges.unsqueeze(-1), budget.unsqueeze(-1)], dim=-1)
        encoded = self.encoder(inputs)
        nodes = self.node_mean(encoded)
        graph = encoded.mean(dim=1, keepdim=True).expand(-1, layout.n_pairs, -1)
        mixed = self.mixer(torch.cat([encoded, nodes[:, i] + nodes[:, j],
                                      nodes[:, i] * nodes[:, j], graph], dim=-1))
        return torch.cat([mixed.reshape(batch, -1), mixed.mean(dim=1)], dim=1)


class PairwiseLatent(nn.Module):
    """The ``mlp_extractor`` of the pairwise policy: the actor reads the pair embeddings
    unchanged, the critic an MLP of their mean."""

    def __init__(self, layout: ObservationLayout, hidden: int):
        super().__init__()
        self.latent_dim_pi = layout.n_pairs * hidden + hidden
        self.latent_dim_vf = hidden
        self.hidden = hidden
        self.critic = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh())

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return features

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.critic(features[:, -self.hidden:])


class PairActionHead(nn.Module):
    """One linear head shared by all pairs (add, remove, two orientations, test) plus submit,
    gathered into the RL view's action order."""

    def __init__(self, layout: ObservationLayout, hidden: int):
        super().__init__()
        self.layout, self.hidden = layout, hidden
        self.pair_logits = nn.Linear(hidden, len(PAIR_OUTPUTS))
        self.submit_logit = nn.Linear(hidden, 1)
        masker = ActionMasker(layout.d)
        outputs = len(PAIR_OUTPUTS)
        order = np.empty(masker.n_actions, dtype=np.int64)
        rows = np.arange(layout.n_pairs)
        order[masker.slices["add"]] = rows * outputs + PAIR_OUTPUTS.index("add")
        order[masker.slices["remove"]] = rows * outputs + PAIR_OUTPUTS.index("remove")
        order[masker.slices["test"]] = rows * outputs + PAIR_OUTPUTS.index("test")
        a, b = masker.orient_i, masker.orient_j
        forward = np.where(a < b, PAIR_OUTPUTS.index("orient_forward"),
                           PAIR_OUTPUTS.index("orient_backward"))
        order[masker.slices["orient"]] = masker.pair_row[a, b] * outputs + forward
        order[masker.slices["submit"]] = layout.n_pairs * outputs
        self.register_buffer("order", torch.as_tensor(order), persistent=False)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        batch = latent.shape[0]
        pairs = latent[:, :-self.hidden].reshape(batch, self.layout.n_pairs, self.hidden)
        logits = torch.cat([self.pair_logits(pairs).reshape(batch, -1),
                            self.submit_logit(latent[:, -self.hidden:])], dim=1)
        return logits[:, self.order]


class _PairwiseBuild:
    """Replaces the actor-critic's MLP and linear action head by the pairwise modules."""

    def _build_mlp_extractor(self) -> None:
        extractor = self.features_extractor
        self.mlp_extractor = PairwiseLatent(extractor.layout, extractor.hidden)

    def _build(self, lr_schedule) -> None:
        if not self.share_features_extractor:
            raise HeuresisError("the pairwise policy shares its encoder between actor and "
                                "critic; do not pass share_features_extractor=False")
        self._build_mlp_extractor()
        extractor = self.features_extractor
        self.action_net = PairActionHead(extractor.layout, extractor.hidden)
        self.value_net = nn.Linear(self.mlp_extractor.latent_dim_vf, 1)
        if self.ortho_init:
            gains = {self.features_extractor: np.sqrt(2), self.mlp_extractor: np.sqrt(2),
                     self.action_net: 0.01, self.value_net: 1.0}
            for module, gain in gains.items():
                module.apply(partial(self.init_weights, gain=gain))
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1),
                                              **self.optimizer_kwargs)


class PairwiseMaskablePolicy(_PairwiseBuild, MaskableActorCriticPolicy):
    """MaskablePPO's actor-critic with the pairwise network."""

    def __init__(self, observation_space, action_space, lr_schedule, hidden: int = 64,
                 **kwargs):
        kwargs.setdefault("features_extractor_class", PairwiseExtractor)
        kwargs.setdefault("features_extractor_kwargs", {"hidden": hidden})
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)


class PairwisePolicy(_PairwiseBuild, ActorCriticPolicy):
    """PPO's actor-critic with the pairwise network (on the flattened observation)."""

    def __init__(self, observation_space, action_space, lr_schedule, hidden: int = 64,
                 **kwargs):
        kwargs.setdefault("features_extractor_class", PairwiseExtractor)
        kwargs.setdefault("features_extractor_kwargs", {"hidden": hidden})
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)


# ---- environments ------------------------------------------------------------------------------

class StepCost(gym.RewardWrapper):
    """Subtract a constant from every step's reward, so that submitting beats idling."""

    def __init__(self, env: gym.Env, cost: float):
        super().__init__(env)
        self.cost = float(cost)

    def reward(self, reward: float) -> float:
        return float(reward) - self.cost


class SubmitAsPass(gym.Wrapper):
    """During training, turns ``submit`` into a pass: a step that changes nothing (sent to the
    environment as an out-of-range action, which the RL view answers with an error step), so
    every training episode runs its whole step budget.

    Early in training most edits lower F1, and a policy that may end the episode learns to
    submit at once before it has found the few edits that pay — after which it samples one
    decision per episode and stops learning. With submit as a pass, every step of the budget
    samples a decision. A policy that passes in some state would pass there again (only the
    budget changes), so submitting in that state at evaluation is the same behaviour.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._submit = int(env.unwrapped.rl_actions[-1].index)
        self._pass = int(env.unwrapped.action_space.n)  # out of range: an error step

    def step(self, action):
        if int(np.asarray(action).reshape(())) == self._submit:
            action = self._pass
        return self.env.step(action)


def _check_choice(kind: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise UnknownNameError(kind, value, choices)


def _check_positive(name: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise HeuresisError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


def environment_kwargs(settings: EpisodeSettings, split: str, d: int, n: int,
                       **extra: Any) -> dict[str, Any]:
    """Keyword arguments of an RL-view environment under the shared settings (the runner's,
    plus ``extra``: reward, indices, salt)."""
    return {**runner_environment_kwargs(settings, split, d, n, "rl"), **extra}


def _training_env_factory(family: str, kwargs: dict[str, Any], flatten: bool,
                          step_cost: float, submit_as_pass: bool) -> Callable[[], gym.Env]:
    def build() -> gym.Env:
        env: gym.Env = Monitor(make_environment(family, kwargs))
        env = RepairActionMask(env, uses_orientations(kwargs["target"]))
        if submit_as_pass:
            env = SubmitAsPass(env)
        if step_cost:
            env = StepCost(env, step_cost)
        if flatten:
            env = gym.wrappers.FlattenObservation(env)
        return env

    return build


def make_training_env(family: str, settings: EpisodeSettings, indices: Sequence[int], d: int,
                      n: int, n_envs: int = 1, flatten: bool = False, step_cost: float = 0.0,
                      seed: int = 0, vectorization: str = "dummy", split: str = "dev",
                      submit_as_pass: bool = True) -> VecEnv:
    """Vectorized RL-view environments with the shaped reward over ``indices`` of ``split``.

    Each copy is ``Monitor``-wrapped (episode returns, that is F1 gains, for the learning
    curve), its mask narrowed to the repair actions (:class:`RepairActionMask`), submit made
    a pass (:class:`SubmitAsPass`, unless ``submit_as_pass=False``), optionally charged
    ``step_cost`` per step, and flattened to one ``Box`` (for PPO).
    """
    _check_choice("vectorization", vectorization, ("dummy", "subproc"))
    kwargs = environment_kwargs(settings, split, d, n, reward="shaped",
                                indices=list(indices))
    factories = [_training_env_factory(family, kwargs, flatten, step_cost, submit_as_pass)
                 for _ in range(_check_positive("n_envs", n_envs))]
    if vectorization == "subproc" and n_envs > 1:
        env = SubprocVecEnv(factories, start_method="fork")
    else:
        env = DummyVecEnv(factories)
    env.seed(seed)
    return env


# ---- evidence --------------------------------------------------------------------------------

def _warm_one(job: tuple) -> tuple[str, int, float]:
    from heuresis_env.evidence import EvidenceProvider
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    family, split, index, d, n, salt = job
    started = time.perf_counter()
    instance = generate_instance(InstanceKey(family, split, index, d=d, n=n), salt)
    EvidenceProvider(instance.X, instance.names, instance.sha256).warm()
    return split, index, time.perf_counter() - started


def warm_evidence(family: str, splits: dict[str, Iterable[int]], d: int, n: int,
                  workers: int = 1, salt: str | None = None,
                  progress: Callable[[str, int, float], None] | None = None) -> float:
    """Compute (or load) the guided start and pair evidence of every instance named, so that
    training and evaluation start warm; ``workers`` processes share the work. Returns seconds.

    ``splits`` maps a split name to instance indices, e.g. ``{"dev": range(40)}``.
    """
    workers = _check_positive("workers", workers)
    jobs = [(family, split, int(index), d, n, salt if split == "test" else None)
            for split, indices in splits.items() for index in indices]
    started = time.perf_counter()
    if workers == 1 or len(jobs) <= 1:
        results: Iterable = map(_warm_one, jobs)
        for result in results:
            if progress is not None:
                progress(*result)
    else:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=context) as pool:
            for result in pool.map(_warm_one, jobs):
                if progress is not None:
                    progress(*result)
    return time.perf_counter() - started


# ---- policies ----------------------------------------------------------------------------------

class SubmitStartPolicy(Policy):
    """Submits at once: in the guided condition its score is the guided start's (PC-KCI's)."""

    name = "guided-start"
    interface = "rl"

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        d = math.isqrt(int(np.asarray(observation["adjacency"]).size))
        return int(rl_action_table(d)[-1].index)


class RLPolicy(Policy):
    """A trained (Maskable)PPO model acting on the RL view, masks applied.

    It sees only what the runner gives a policy (observation and info) and recomputes the
    environment's action mask from the observation and the pairs it has tested
    (:class:`ActionMasker`), so it never takes an invalid action, under either algorithm; as
    in training it does not orient under ``target="none"`` and never undoes its own edit.
    ``deterministic`` picks the most probable valid action; otherwise actions are drawn from
    the masked distribution with a generator seeded by ``seed`` (reset per episode).
    """

    interface = "rl"

    def __init__(self, model: Any, config: dict[str, Any], deterministic: bool = True,
                 seed: int = 0, name: str = "rl"):
        self.model = model
        self.config = dict(config)
        self.name = name
        self.d = int(config["d"])
        self.flatten = bool(config["flatten"])
        self.deterministic = bool(deterministic)
        self.seed = int(seed)
        self.settings = EpisodeSettings(max_steps=int(config.get("max_steps", 50)),
                                        guided=bool(config.get("guided", True)),
                                        target=str(config.get("target", "none")))
        self._masker = ActionMasker(self.d, self.settings.target,
                                    uses_orientations(self.settings.target))
        self._tested = np.zeros(self._masker.pair_i.size, dtype=bool)
        self._edited = np.zeros(self._masker.pair_i.size, dtype=bool)
        self._counts: dict[str, int] = {}
        self._episode = 0
        self._rng = np.random.default_rng(self.seed)

    def configure(self, settings: EpisodeSettings) -> None:
        super().configure(settings)
        self._masker = ActionMasker(self.d, settings.target, uses_orientations(settings.target))

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        size = int(np.asarray(observation["adjacency"]).size)
        if size != self.d * self.d:
            raise HeuresisError(f"this RL policy was trained on d = {self.d} variables; the "
                                f"episode has d = {math.isqrt(size)}")
        self._tested = np.zeros(self._masker.pair_i.size, dtype=bool)
        self._edited = np.zeros(self._masker.pair_i.size, dtype=bool)
        self._counts = {operation: 0 for operation in RL_OPERATIONS}
        self._rng = np.random.default_rng([self.seed, self._episode])
        self._episode += 1

    def action_masks(self, observation: dict[str, Any]) -> np.ndarray:
        """The actions this policy may take now: the environment's ``action_masks()``
        (recomputed from the observation), without orientations under ``target="none"`` and
        without undoing an edit made earlier in the episode (as in training)."""
        return self._masker.without_edits(self._masker(observation["adjacency"], self._tested),
                                          self._edited)

    def action_probabilities(self, observation: dict[str, Any]) -> np.ndarray:
        """The model's action distribution restricted to the valid actions."""
        model_input = observation
        if self.flatten:
            model_input = np.concatenate([np.asarray(observation[key], dtype=np.float32)
                                          .reshape(-1) for key in OBSERVATION_KEYS])
        policy = self.model.policy
        policy.set_training_mode(False)
        tensor, _ = policy.obs_to_tensor(model_input)
        with torch.no_grad():
            logits = policy.get_distribution(tensor).distribution.logits[0].cpu().numpy()
        mask = self.action_masks(observation)
        logits = np.where(mask, logits.astype(np.float64), -np.inf)
        logits -= logits.max()
        weights = np.exp(logits)
        return weights / weights.sum()

    def act(self, observation: Any, info: dict[str, Any]) -> int:
        if not self._counts:
            self.reset(observation, info)
        probabilities = self.action_probabilities(observation)
        if self.deterministic:
            action = int(np.argmax(probabilities))
        else:
            action = int(self._rng.choice(probabilities.size, p=probabilities))
        operation, row = self._masker.operation(action)
        if operation == "test":
            self._tested[row] = True
        elif operation in ("add", "remove"):
            self._edited[row] = True
        self._counts[operation] += 1
        return action

    def usage(self) -> dict[str, Any]:
        return {"actions": dict(self._counts)}


def policy_config(algo: str, architecture: str, family: str, d: int, n: int,
                  settings: EpisodeSettings, **extra: Any) -> dict[str, Any]:
    """What :func:`load` needs beside the model: algorithm, sizes, condition, layout."""
    _check_choice("RL algorithm", algo, ALGORITHMS)
    _check_choice("architecture", architecture, ARCHITECTURES)
    return {"algo": algo, "architecture": architecture, "family": family, "d": int(d),
            "n": int(n), "guided": settings.guided, "target": settings.target,
            "max_steps": settings.max_steps, "flatten": algo == "ppo",
            "feature_names": list(FEATURE_NAMES), "evidence_version": EVIDENCE_VERSION,
            **extra}


def save(model: Any, config: dict[str, Any], out_dir: str | os.PathLike) -> Path:
    """Write ``model.zip`` and ``policy.json`` (the config :func:`load` reads) into out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out / MODEL_FILE))
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2), encoding="utf-8")
    return out


def _algorithm_class(algo: str) -> type:
    _check_choice("RL algorithm", algo, ALGORITHMS)
    return MaskablePPO if algo == "maskable_ppo" else PPO


def load(path: str | os.PathLike | None = None, deterministic: bool = True, seed: int = 0,
         device: str = "cpu") -> RLPolicy:
    """A trained policy from a training directory (or its ``model.zip``); the ``rl`` factory.

    Without ``path``, the policy shipped in ``agents/data/rl_repair_wild``
    (:data:`SHIPPED_MODEL_DIR`)."""
    path = Path(SHIPPED_MODEL_DIR if path is None else path)
    directory = path.parent if path.suffix == ".zip" else path
    model_file = path if path.suffix == ".zip" else path / MODEL_FILE
    config_file = directory / CONFIG_FILE
    if not model_file.is_file():
        raise HeuresisError(f"no trained model at {model_file}; give the directory that "
                            f"`heuresis train --out DIR` wrote (it holds {MODEL_FILE} and "
                            f"{CONFIG_FILE})")
    if not config_file.is_file():
        raise HeuresisError(f"{config_file} is missing; it records how the model was trained "
                            "(algorithm, d, observation layout) and is written beside "
                            f"{MODEL_FILE} by agents.rl.train")
    config = json.loads(config_file.read_text(encoding="utf-8"))
    if config.get("feature_names") != list(FEATURE_NAMES):
        raise HeuresisError(f"the model at {directory} was trained on the evidence features "
                            f"{config.get('feature_names')}; this version of the RL view has "
                            f"{list(FEATURE_NAMES)}; retrain it")
    model = _algorithm_class(config["algo"]).load(str(model_file), device=device)
    return RLPolicy(model, config, deterministic=deterministic, seed=seed)


# ---- warm start from one-step edits -----------------------------------------------------------

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
    and the inverse edit (2p steps); 3p environment steps in all.
    """
    from dataclasses import replace

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
    from stable_baselines3.common.preprocessing import preprocess_obs

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


# ---- evaluation --------------------------------------------------------------------------------

def evaluate_policy(policy: Policy, family: str, split: str, indices: Iterable[int],
                    settings: EpisodeSettings, d: int, n: int,
                    salt: str | None = None) -> list[EpisodeResult]:
    """Run ``policy`` once on each instance of ``split`` named by ``indices``."""
    policy.configure(settings)
    env = make_environment(family, environment_kwargs(settings, split, d, n, salt=salt))
    try:
        return [run_episode(env, policy, seed=int(index), options={"index": int(index)})
                for index in indices]
    finally:
        env.close()


def _means(results: Sequence[EpisodeResult]) -> dict[str, float]:
    keys = ("f1", "precision", "recall", "shd", "nshd", "n_edges")
    out = {key: float(np.nanmean([r.scores.get(key, np.nan) for r in results]))
           for key in keys}
    out["truncated"] = float(np.mean([r.truncated for r in results]))
    out["steps"] = float(np.mean([r.steps for r in results]))
    return out


# ---- learning curve ----------------------------------------------------------------------------

class EntropySchedule(BaseCallback):
    """Decays the entropy bonus linearly from ``start`` to ``final`` over the training run.

    Early on, most edits lower F1, and without a strong bonus the policy settles on
    submitting at once before it has learnt which edits pay; later the bonus fades so that
    the policy can commit to the edits it has found.
    """

    def __init__(self, start: float, final: float, total_steps: int):
        super().__init__()
        self.start, self.final, self.total_steps = float(start), float(final), int(total_steps)

    def _on_step(self) -> bool:
        progress = min(self.num_timesteps / max(self.total_steps, 1), 1.0)
        self.model.ent_coef = self.start + (self.final - self.start) * progress
        return True


class LearningCurveCallback(BaseCallback):
    """Records every finished training episode: time step, F1 gain (the shaped return), final
    F1 and length."""

    def __init__(self):
        super().__init__()
        self.episodes: list[dict[str, float]] = []

    def _on_step(self) -> bool:
        for done, info in zip(self.locals["dones"], self.locals["infos"]):
            if not done or "episode" not in info:
                continue
            scores = info.get("scores", {})
            self.episodes.append({"timestep": float(self.num_timesteps),
                                  "f1_gain": float(info["episode"]["r"]),
                                  "f1": float(scores.get("f1", np.nan)),
                                  "length": float(info["episode"]["l"])})
        return True


def binned_curve(episodes: Sequence[dict[str, float]], bins: int = 20) -> list[dict[str, float]]:
    """Mean F1 gain, F1 and length of training episodes in ``bins`` equal time-step windows."""
    if not episodes:
        return []
    steps = np.array([e["timestep"] for e in episodes])
    edges = np.linspace(0.0, steps.max(), bins + 1)
    out = []
    for low, high in zip(edges[:-1], edges[1:]):
        inside = [e for e, s in zip(episodes, steps) if low < s <= high or (low == 0 and s == 0)]
        if inside:
            out.append({"timestep": float(high), "episodes": len(inside),
                        "f1_gain": float(np.mean([e["f1_gain"] for e in inside])),
                        "f1": float(np.mean([e["f1"] for e in inside])),
                        "length": float(np.mean([e["length"] for e in inside]))})
    return out


def plot_learning_curve(curve: Sequence[dict[str, float]], path: str | os.PathLike,
                        title: str = "", test_gain: Any = None) -> Path:
    """Draw the binned training F1 gain (and the test gain's interval, if given) as a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.0), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    if curve:
        steps = [c["timestep"] for c in curve]
        axes.plot(steps, [c["f1_gain"] for c in curve], marker="o", ms=3,
                  label="training episodes: F1 − seed F1")
    axes.axhline(0.0, color="0.5", lw=0.8)
    if test_gain is not None:
        x = curve[-1]["timestep"] if curve else 0.0
        axes.errorbar([x], [test_gain.mean], yerr=[[test_gain.mean - test_gain.low],
                                                   [test_gain.high - test_gain.mean]],
                      fmt="s", color="C3", capsize=4, label="test: paired 95% interval")
    axes.set_xlabel("environment steps")
    axes.set_ylabel("adjacency F1 gain over the guided start")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8, loc="lower right")
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path)
    return path


# ---- training ----------------------------------------------------------------------------------

@dataclass
class TrainingReport:
    """What :func:`train` did and measured; ``to_dict`` is the JSON report."""

    family: str
    algo: str
    architecture: str
    steps: int
    seed: int
    n_envs: int
    dev_indices: list[int]
    test_indices: list[int]
    d: int
    n: int
    settings: dict[str, Any]
    step_cost: float
    hyperparameters: dict[str, Any]
    evidence_seconds: float
    training_seconds: float
    training_cpu_seconds: float
    evaluation_seconds: float
    policy_f1: list[float]
    start_f1: list[float]
    policy_means: dict[str, float]
    seed_means: dict[str, float]
    f1_difference: dict[str, Any]
    policy_actions: dict[str, float]
    learning_curve: list[dict[str, float]]
    warm_start: dict[str, Any]
    out_dir: str
    files: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def policy_mean_f1(self) -> float:
        return self.policy_means["f1"]

    @property
    def start_mean_f1(self) -> float:
        return self.seed_means["f1"]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        diff = self.f1_difference
        return (f"{self.family} test (n={len(self.test_indices)}): F1 policy "
                f"{self.policy_mean_f1:.3f} vs guided start (PC-KCI) {self.start_mean_f1:.3f}; "
                f"difference {diff['mean']:+.3f} [{diff['low']:+.3f}, {diff['high']:+.3f}] "
                f"(paired 95% bootstrap); trained {self.steps} steps in "
                f"{self.training_seconds:.0f} s wall, {self.training_cpu_seconds:.0f} s CPU "
                f"({self.algo}, {self.architecture})")


def _versions() -> dict[str, str]:
    import sb3_contrib
    import stable_baselines3

    from heuresis_env.version import __version__

    return {"heuresis": __version__, "stable_baselines3": stable_baselines3.__version__,
            "sb3_contrib": sb3_contrib.__version__, "torch": torch.__version__,
            "evidence_version": str(EVIDENCE_VERSION)}


def _indices(name: str, value: int | Sequence[int], split: str) -> list[int]:
    from heuresis_env.generation.instances import SPLIT_SIZES

    size = SPLIT_SIZES[split]
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        if not 1 <= value <= size:
            raise HeuresisError(f"{name} must be in 1..{size} (the {split} split), got {value}")
        return list(range(int(value)))
    chosen = [int(v) for v in value]
    if not chosen or any(not 0 <= v < size for v in chosen):
        raise HeuresisError(f"{name} must be non-empty indices in 0..{size - 1}, got {chosen}")
    return chosen


def train(family: str = "wild", algo: str = "maskable_ppo", steps: int = 20_000,
          out_dir: str | os.PathLike = "runs/rl", seed: int = 0, n_envs: int = 2,
          dev_count: int | Sequence[int] = 100, test_count: int | Sequence[int] = 32,
          d: int = 10, n: int = 600, max_steps: int = 50, target: str = "none",
          architecture: str = "pairwise", hidden: int = 64, step_cost: float = 0.0,
          hyperparameters: dict[str, Any] | None = None, workers: int = 1,
          torch_threads: int | None = 1, vectorization: str = "dummy",
          n_resamples: int = 10_000, salt: str | None = None,
          warm_start_edits: bool | None = None, freeze_encoder: bool | None = None,
          warm_start_options: dict[str, Any] | None = None,
          progress: Callable[[str], None] | None = None) -> TrainingReport:
    """Train a repair policy on ``dev_count`` development instances of ``family`` (guided:
    starting from PC-KCI's output) and evaluate it against that seed on ``test_count`` test
    instances; writes model, config, report and learning curve into ``out_dir``.

    ``dev_count``/``test_count`` are a count (the first instances) or explicit indices. The
    evidence of every instance is computed first (``workers`` processes), so the training
    time excludes it. ``max_steps`` is the episode budget for training and evaluation.

    ``warm_start_edits`` (default: on for the pairwise architecture) first tries every single
    edit from each development instance's start state (:func:`probe_edits`, 3p steps per
    instance, counted in the report) and fits the policy to those rewards
    (:func:`warm_start`); PPO then trains ``steps`` more steps. Without it PPO starts from
    a random policy, which on ``wild`` settles on submitting the seed unchanged.
    """
    _check_choice("RL algorithm", algo, ALGORITHMS)
    _check_choice("architecture", architecture, ARCHITECTURES)
    steps = _check_positive("steps", steps)
    n_envs = _check_positive("n_envs", n_envs)
    max_steps = _check_positive("max_steps", max_steps)
    hidden = _check_positive("hidden", hidden)
    if not (isinstance(step_cost, int | float) and 0 <= step_cost < 1):
        raise HeuresisError(f"step_cost must be a number in [0, 1), got {step_cost!r}")
    if warm_start_edits is None:
        warm_start_edits = architecture == "pairwise"
    if warm_start_edits and architecture != "pairwise":
        raise HeuresisError("warm_start_edits needs architecture='pairwise' (the warm start "
                            "writes the shared pair head)")
    dev = _indices("dev_count", dev_count, "dev")
    test = _indices("test_count", test_count, "test")
    settings = EpisodeSettings(max_steps=max_steps, max_seconds=None, guided=True,
                               target=target)
    params = dict(DEFAULT_HYPERPARAMETERS if warm_start_edits else SCRATCH_HYPERPARAMETERS)
    unknown = sorted(set(hyperparameters or {}) - set(params))
    if unknown:
        raise HeuresisError(f"unknown hyperparameter(s) {unknown}; known: {sorted(params)}")
    params.update(hyperparameters or {})
    params["batch_size"] = min(int(params["batch_size"]), int(params["n_steps"]) * n_envs)
    say = progress or (lambda message: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if torch_threads is not None:
        torch.set_num_threads(_check_positive("torch_threads", torch_threads))

    say(f"evidence for {len(dev)} dev and {len(test)} test instances of {family} "
        f"(d={d}, n={n})")
    evidence_seconds = warm_evidence(family, {"dev": dev, "test": test}, d, n, workers,
                                     salt=salt)

    flatten = algo == "ppo"
    env = make_training_env(family, settings, dev, d, n, n_envs=n_envs, flatten=flatten,
                            step_cost=step_cost, seed=seed, vectorization=vectorization)
    if architecture == "pairwise":
        policy: Any = PairwiseMaskablePolicy if algo == "maskable_ppo" else PairwisePolicy
        policy_kwargs: dict[str, Any] = {"hidden": hidden}
    else:
        policy = "MultiInputPolicy" if algo == "maskable_ppo" else "MlpPolicy"
        policy_kwargs = {"net_arch": [hidden, hidden]}
    ppo_params = {k: v for k, v in params.items() if k != "ent_coef_final"}
    model = _algorithm_class(algo)(policy, env, seed=seed, device="cpu", verbose=0,
                                   policy_kwargs=policy_kwargs, **ppo_params)
    warm: dict[str, Any] = {"used": bool(warm_start_edits), "steps": 0, "seconds": 0.0}
    warm_policy_results: list[EpisodeResult] = []
    config = policy_config(algo, architecture, family, d, n, settings, hidden=hidden,
                           steps=steps, seed=seed, warm_start=bool(warm_start_edits))
    if warm_start_edits:
        say(f"warm start: every one-step edit on {len(dev)} dev instances")
        probes = probe_edits(family, settings, dev, d, n)
        started = time.perf_counter()
        fit = warm_start(model.policy, probes, flatten, seed=seed,
                         **(warm_start_options or {}))
        warm.update(fit, steps=probes.steps,
                    seconds=probes.seconds + time.perf_counter() - started)
        warm_policy_results = evaluate_policy(RLPolicy(model, config, seed=seed), family,
                                              "test", test, settings, d, n, salt)
    if freeze_encoder is None:
        freeze_encoder = bool(warm_start_edits)
    if freeze_encoder:
        for parameter in model.policy.features_extractor.parameters():
            parameter.requires_grad_(False)
    warm["freeze_encoder"] = bool(freeze_encoder)
    callback = LearningCurveCallback()
    schedule = EntropySchedule(params["ent_coef"], params["ent_coef_final"], steps)
    say(f"training {algo} ({architecture}) for {steps} steps on {n_envs} environment(s)")
    started, cpu_started = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps, callback=[callback, schedule])
    training_seconds = time.perf_counter() - started
    training_cpu_seconds = time.process_time() - cpu_started
    env.close()

    save(model, config, out)

    say(f"evaluating on {len(test)} test instances")
    started = time.perf_counter()
    rl_policy = RLPolicy(model, config, deterministic=True, seed=seed)
    policy_results = evaluate_policy(rl_policy, family, "test", test, settings, d, n, salt)
    seed_results = evaluate_policy(SubmitStartPolicy(), family, "test", test, settings, d, n,
                                   salt)
    evaluation_seconds = time.perf_counter() - started
    from heuresis_env.metrics import paired_bootstrap

    policy_f1 = [float(r.scores["f1"]) for r in policy_results]
    start_f1 = [float(r.scores["f1"]) for r in seed_results]
    difference = paired_bootstrap(policy_f1, start_f1, n_resamples=n_resamples, seed=seed)
    actions = {operation: float(np.mean([r.usage["actions"].get(operation, 0)
                                         for r in policy_results]))
               for operation in RL_OPERATIONS}
    curve = binned_curve(callback.episodes)
    report = TrainingReport(
        family=family, algo=algo, architecture=architecture, steps=steps, seed=seed,
        n_envs=n_envs, dev_indices=dev, test_indices=test, d=d, n=n,
        settings=settings.to_dict(), step_cost=float(step_cost), hyperparameters=params,
        evidence_seconds=evidence_seconds, training_seconds=training_seconds,
        training_cpu_seconds=training_cpu_seconds, evaluation_seconds=evaluation_seconds, policy_f1=policy_f1, start_f1=start_f1,
        policy_means=_means(policy_results), seed_means=_means(seed_results),
        f1_difference=asdict(difference), policy_actions=actions, learning_curve=curve,
        warm_start=warm, out_dir=str(out), versions=_versions())
    if warm_policy_results:
        warm_f1 = [float(r.scores["f1"]) for r in warm_policy_results]
        report.warm_start["test_means"] = _means(warm_policy_results)
        report.warm_start["f1_difference"] = asdict(paired_bootstrap(
            warm_f1, start_f1, n_resamples=n_resamples, seed=seed))
    plot_learning_curve(curve, out / CURVE_FILE, test_gain=difference,
                        title=f"{algo} ({architecture}) on {family}, d={d}, n={n}: "
                              f"test ΔF1 {difference.mean:+.3f}")
    report.files = {"model": str(out / MODEL_FILE), "config": str(out / CONFIG_FILE),
                    "report": str(out / REPORT_FILE), "learning_curve": str(out / CURVE_FILE)}
    (out / REPORT_FILE).write_text(json.dumps(report.to_dict(), indent=2), encoding="utf-8")
    return report
