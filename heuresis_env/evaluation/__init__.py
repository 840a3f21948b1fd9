"""Benchmark runs: one policy on many episodes under identical budgets, resumable, on local
processes or Ray. See ``docs/evaluation.md`` and :func:`evaluate`.

The names below load on first use, so a reader of run directories (the reports, the viewer)
that needs only :mod:`.run_format` does not import the environment.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name → the module of this package that defines it
_EXPORTS = {
    "environment_kwargs": "episode", "make_environment": "episode",
    "EpisodeRunner": "episode", "EpisodeTask": "episode", "RunSpec": "episode",
    "worker_name": "episode",
    "POLICY_ENTRY_POINT_GROUP": "policies", "REFERENCE_ENTRY_POINT_GROUP": "policies",
    "make_policy": "policies", "make_reference": "policies",
    "registered_policies": "policies", "registered_references": "policies",
    "resolve_policy_factory": "policies", "PolicyProxy": "policy_process",
    "episode_id": "run_format", "load_run": "run_format",
    "episode_file_stem": "run_format", "episode_seed": "run_format",
    "question_episode_id": "run_format", "salt_digest": "run_store",
    "RunDirectory": "run_format", "run_salt": "run_format",
    "RunStore": "run_store", "config_differences": "run_store",
    "package_versions": "run_store", "build_config": "run_store", "code_version": "run_store",
    "evaluate": "runner", "evaluate_many": "runner",
    "RUN_ARGUMENTS": "request", "RunRequest": "request",
    "FamilySummary": "summary", "RunSummary": "summary", "connect_ray": "ray_backend",
}

__all__ = [
    "POLICY_ENTRY_POINT_GROUP", "REFERENCE_ENTRY_POINT_GROUP", "RUN_ARGUMENTS", "EpisodeRunner",
    "EpisodeSettings", "EpisodeTask", "FamilySummary", "PolicyProxy", "RunDirectory", "RunRequest", "RunSpec",
    "RunStore",
    "RunSummary", "build_config", "code_version", "config_differences", "connect_ray", "environment_kwargs",
    "episode_file_stem", "episode_id", "episode_seed", "evaluate", "evaluate_many",
    "load_run", "make_environment", "make_policy", "make_reference", "package_versions",
    "question_episode_id", "registered_policies", "registered_references",
    "resolve_policy_factory", "run_salt", "salt_digest", "worker_name",
]

if TYPE_CHECKING:
    from heuresis_env.evaluation.episode import (
        EpisodeRunner,
        EpisodeTask,
        RunSpec,
        environment_kwargs,
        make_environment,
        worker_name,
    )
    from heuresis_env.evaluation.policies import (
        POLICY_ENTRY_POINT_GROUP,
        REFERENCE_ENTRY_POINT_GROUP,
        make_policy,
        make_reference,
        registered_policies,
        registered_references,
        resolve_policy_factory,
    )
    from heuresis_env.evaluation.policy_process import PolicyProxy
    from heuresis_env.evaluation.ray_backend import connect_ray
    from heuresis_env.evaluation.request import RUN_ARGUMENTS, RunRequest
    from heuresis_env.evaluation.run_format import (
        RunDirectory,
        episode_file_stem,
        episode_id,
        episode_seed,
        load_run,
        question_episode_id,
        run_salt,
    )
    from heuresis_env.evaluation.run_store import (
        RunStore,
        build_config,
        code_version,
        config_differences,
        package_versions,
    )
    from heuresis_env.evaluation.runner import evaluate, evaluate_many
    from heuresis_env.evaluation.summary import FamilySummary, RunSummary
    from heuresis_env.generation.salts import salt_digest
    from heuresis_env.policy import EpisodeSettings


def __getattr__(name: str) -> Any:
    if name == "EpisodeSettings":
        module = importlib.import_module("heuresis_env.policy")
    elif name in _EXPORTS:
        module = importlib.import_module(f"heuresis_env.evaluation.{_EXPORTS[name]}")
    else:
        raise AttributeError(f"module 'heuresis_env.evaluation' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
