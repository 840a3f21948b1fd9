"""Policies for episodes with an experiment budget (issue 44, ``docs/experiments.md``):
``random-int``, ``active-int`` and ``rl-int``; the shared orientation logic
(:mod:`~agents.experiments.orienting`) and the RL policy's simulator and training
(:mod:`~agents.experiments.rl`, loaded on first use: it needs torch)."""

from agents.experiments.orienting import (
    NODE_FEATURES,
    Orientation,
    edge_list,
    most_unresolved,
    node_features,
    responses,
)
from agents.experiments.policies import (
    ActiveIntPolicy,
    ExperimentPolicy,
    RandomIntPolicy,
    active_int_policy,
    random_int_policy,
)

__all__ = ["NODE_FEATURES", "ActiveIntPolicy", "ExperimentPolicy", "Orientation",
           "RandomIntPolicy", "active_int_policy", "edge_list", "most_unresolved",
           "node_features", "random_int_policy", "responses"]
