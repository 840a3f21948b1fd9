"""Benchmark runs: one policy on many episodes under identical budgets, resumable, on local
processes or Ray. See ``docs/evaluation.md`` and :func:`evaluate`."""

from heuresis_env.evaluation.policies import (
    POLICY_ENTRY_POINT_GROUP,
    make_policy,
    registered_policies,
    resolve_policy_factory,
)
from heuresis_env.evaluation.run_store import RunStore, config_differences, episode_id
from heuresis_env.evaluation.runner import EpisodeSettings, FamilySummary, RunSummary, evaluate

__all__ = ["POLICY_ENTRY_POINT_GROUP", "EpisodeSettings", "FamilySummary", "RunStore",
           "RunSummary", "config_differences", "episode_id", "evaluate", "make_policy",
           "registered_policies", "resolve_policy_factory"]
