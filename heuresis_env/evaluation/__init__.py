"""Benchmark runs: one policy on many episodes under identical budgets, resumable, on local
processes or Ray. See ``docs/evaluation.md`` and :func:`evaluate`."""

from heuresis_env.evaluation.episode import environment_kwargs, make_environment
from heuresis_env.evaluation.policies import (
    POLICY_ENTRY_POINT_GROUP,
    make_policy,
    registered_policies,
    resolve_policy_factory,
)
from heuresis_env.evaluation.run_format import episode_id, load_run
from heuresis_env.evaluation.run_store import RunStore, config_differences
from heuresis_env.evaluation.runner import evaluate
from heuresis_env.evaluation.summary import FamilySummary, RunSummary
from heuresis_env.policy import EpisodeSettings

__all__ = ["POLICY_ENTRY_POINT_GROUP", "EpisodeSettings", "FamilySummary", "RunStore",
           "RunSummary", "config_differences", "environment_kwargs", "episode_id", "evaluate",
           "load_run", "make_environment", "make_policy", "registered_policies",
           "resolve_policy_factory"]
