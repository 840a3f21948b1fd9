"""The pairwise policy network: one encoder shared by all unordered pairs, node and graph
context mixed in, and one linear head per pair output (add, remove, two orientations, test),
so the decision rule is learnt once for all pairs.

Every pair's features (its adjacency marks, the seven evidence features with their
availability, −log10 of its p-values, the degrees of its two nodes, the edge count and the
budget; under observation layout 2 also its row of the repair table with its availability
and −log10 of the table's p-values)
pass through the same MLP; a second layer mixes in the mean embedding of each end node
and of the whole graph; submit and the value read the pooled embedding.

A saved model names its policy class only through (algorithm, architecture), and
:mod:`agents.rl.model_files` rebuilds the class below from code before loading the weights
(no pickle).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from agents.rl.spaces import ActionMasker, ObservationLayout
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import FEATURE_NAMES, REPAIR_FEATURES

__all__ = [
    "P_VALUE_COLUMNS",
    "PAIR_OUTPUTS",
    "REPAIR_P_VALUE_COLUMNS",
    "PairActionHead",
    "PairwiseExtractor",
    "PairwiseLatent",
    "PairwiseMaskablePolicy",
    "PairwisePolicy",
]

#: evidence columns holding p-values; the network also reads −log10 p of these
P_VALUE_COLUMNS = tuple(FEATURE_NAMES.index(name) for name in
                        ("fisherz_deletion_p", "kci_p_at_deleting_set", "kci_deletion_p"))
#: repair-table columns holding p-values; under layout 2 the network also reads −log10 p
REPAIR_P_VALUE_COLUMNS = tuple(k for k, feature in enumerate(REPAIR_FEATURES)
                               if feature.scale == "p")
#: per-pair outputs of the pairwise head, in this order
PAIR_OUTPUTS = ("add", "remove", "orient_forward", "orient_backward", "test")


def _mlp(sizes: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for k in range(len(sizes) - 1):
        layers += [nn.Linear(sizes[k], sizes[k + 1]), nn.ReLU()]
    return nn.Sequential(*layers)


class PairwiseExtractor(BaseFeaturesExtractor):
    """Per-pair embeddings from one encoder shared by all pairs, then node and graph context.

    Output: the (pairs × hidden) embeddings flattened, followed by their mean (hidden).
    """

    #: per-pair inputs under observation layout 1 (layout 2 adds two per repair feature and one
    #: per repair p-value)
    N_PAIR_INPUTS = 2 + 2 * len(FEATURE_NAMES) + len(P_VALUE_COLUMNS) + 4

    def __init__(self, observation_space: spaces.Space, hidden: int = 64):
        layout = ObservationLayout.from_space(observation_space)
        super().__init__(observation_space, features_dim=layout.n_pairs * hidden + hidden)
        self.layout, self.hidden = layout, hidden
        #: whether the encoder reads the repair table (a layout-1 model keeps its input size)
        self.reads_repair = layout.version >= 2
        n_inputs = self.N_PAIR_INPUTS + ((2 * layout.n_repair + len(REPAIR_P_VALUE_COLUMNS))
                                         if self.reads_repair else 0)
        pairs = np.array([(i, j) for i in range(layout.d) for j in range(i + 1, layout.d)],
                         dtype=np.int64).reshape(-1, 2)
        self.register_buffer("pair_i", torch.as_tensor(pairs[:, 0]), persistent=False)
        self.register_buffer("pair_j", torch.as_tensor(pairs[:, 1]), persistent=False)
        self.register_buffer("p_columns", torch.as_tensor(P_VALUE_COLUMNS), persistent=False)
        self.register_buffer("repair_p_columns", torch.as_tensor(REPAIR_P_VALUE_COLUMNS),
                             persistent=False)
        self.encoder = _mlp([n_inputs, hidden, hidden])
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
        columns = [tail_i.unsqueeze(-1), tail_j.unsqueeze(-1), evidence, available, log_p,
                   degree[:, i].unsqueeze(-1), degree[:, j].unsqueeze(-1),
                   n_edges.unsqueeze(-1), budget.unsqueeze(-1)]
        if self.reads_repair:
            shape = (batch, layout.n_pairs, layout.n_repair)
            repair = parts["repair"].float().reshape(shape)
            repair_available = parts["repair_available"].float().reshape(shape)
            repair_p = repair[..., self.repair_p_columns].clamp(1e-12, 1.0)
            columns += [repair, repair_available,
                        -torch.log10(repair_p) / 12.0 * repair_available[..., self.repair_p_columns]]
        inputs = torch.cat(columns, dim=-1)
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
