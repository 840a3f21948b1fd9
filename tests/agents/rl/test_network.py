"""The pairwise network (agents.rl.network): each pair's outputs land at its actions, and one
encoder serves every pair."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from agents.rl import ActionMasker, ObservationLayout, PairActionHead, PairwiseExtractor
from heuresis_env.env import rl_action_table
from heuresis_env.registration import env_id
from tests.agents.rl.rl_fixtures import rl_env


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
