"""A run request: one run's arguments, built once, validated once, passed down unchanged.

:class:`RunRequest` is what :func:`~heuresis_env.evaluation.runner.evaluate` and
:func:`~heuresis_env.evaluation.runner.evaluate_many` run: the policy and its options, the
episodes (families, split, count, repeats, size, task), the settings every policy shares
(:class:`~heuresis_env.policy.EpisodeSettings`), the sealed salt, the policy's isolation and
network, and the run directory. ``heuresis evaluate``, ``heuresis demo`` and the Python API
build one from their arguments; the runner lays it out (families resolved, episodes listed,
config written) without reading anything else. A new run option is a field here, its check
in :meth:`RunRequest.__post_init__`, and the code that uses it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from heuresis_env.budgets import DEFAULT_EXPERIMENT_ROWS
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.evaluation.policies import check_policy_name
from heuresis_env.evaluation.policy_process import ISOLATION_LEVELS
from heuresis_env.generation.instances import SPLIT_SIZES
from heuresis_env.generation.salts import SaltArgument, SealedSalt, sealing_salt
from heuresis_env.isolation.endpoint_proxy import parse_endpoint
from heuresis_env.policy import EpisodeSettings
from heuresis_env.questions import NAME_MODES
from heuresis_env.registration import TASKS, interventional_family

PROMPT_LEVELS = (1, 2, 3, 4)
#: the most repeats of an instance a run takes (a larger number is a typo, and would build
#: its whole list of episodes before the first one runs)
MAX_REPEATS = 1000


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``low..high`` (a bool is not an int); else an error naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        bound = f"in {low}..{high}" if high is not None else f"≥ {low}"
        raise HeuresisError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


def check_settings(settings: EpisodeSettings | Mapping[str, Any] | None) -> EpisodeSettings:
    """The settings every policy of a run shares, checked (a mapping of their fields, or
    None for the defaults)."""
    if settings is None:
        return EpisodeSettings()
    if isinstance(settings, Mapping):
        known = {f.name for f in fields(EpisodeSettings)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise HeuresisError(f"unknown episode settings {unknown}; known: {sorted(known)}")
        settings = EpisodeSettings(**settings)
    if not isinstance(settings, EpisodeSettings):
        raise HeuresisError(f"settings must be an EpisodeSettings, got {type(settings).__name__}")
    check_int("max_steps", settings.max_steps, 1)
    if settings.max_seconds is not None and (
            isinstance(settings.max_seconds, bool)
            or not isinstance(settings.max_seconds, int | float) or not settings.max_seconds > 0):
        raise HeuresisError(f"max_seconds must be a positive number, got "
                            f"{settings.max_seconds!r}")
    check_int("token_budget_per_turn", settings.token_budget_per_turn, 1)
    if settings.prompt_level not in PROMPT_LEVELS:
        raise HeuresisError(f"prompt_level must be one of {list(PROMPT_LEVELS)}, got "
                            f"{settings.prompt_level!r}")
    check_int("experiments", settings.experiments, 0)
    if settings.max_seconds is not None:
        settings = replace(settings, max_seconds=float(settings.max_seconds))
    return settings


def interventional_families(families: str | tuple[str, ...], settings: EpisodeSettings
                            ) -> tuple[str | tuple[str, ...], EpisodeSettings]:
    """``wild-int``, ``all-int``: the families without the suffix, and the settings with the
    default experiment budget when none was given (``docs/experiments.md``). A run has one
    budget, so interventional and observational names do not mix."""
    names = [families] if isinstance(families, str) else list(families)
    split = [interventional_family(name) for name in names]
    marked = {flag for _, flag in split}
    if marked == {True, False}:
        raise HeuresisError("a run has one experiment budget: give every family with -int "
                            "or none (and --experiments ROWS for any family)")
    if True in marked and not settings.experiments:
        settings = replace(settings, experiments=DEFAULT_EXPERIMENT_ROWS)
    plain = [name for name, _ in split]
    return (plain[0] if isinstance(families, str) else tuple(plain)), settings


def check_policy_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Options must be JSON values: config.json records them and workers rebuild the policy."""
    options = dict(options or {})
    try:
        json.dumps(options, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise HeuresisError(f"policy options must be JSON values (numbers, strings, lists, "
                            f"dicts), since config.json records them: {exc}") from None
    return options


@dataclass(frozen=True)
class RunRequest:
    """One run of a policy (see the module docstring); every field is checked when the request
    is made, the salt taken as ``salt=...`` or ``$HEURESIS_TEST_SALT`` (test split)."""

    policy_spec: str
    families: str | tuple[str, ...] = "all"
    split: str = "dev"
    #: instances (or questions) of each family; None: the whole split
    count: int | None = None
    settings: EpisodeSettings = field(default_factory=EpisodeSettings)
    repeats: int = 1
    out_dir: str | os.PathLike = "runs/run"
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    #: run over a run directory whose config differs
    force: bool = False
    d: int | None = None  # None: each family's own size (a structure's d, a table's d and n)
    n: int | None = None
    salt: SaltArgument = field(default=None, repr=False)
    task: str = "graph"
    name_mode: str = "anonymous"
    #: CSV tables to play: ``{"path", "graph", "anonymize", "standardize", "name"}``
    datasets: tuple[Mapping[str, Any], ...] = ()
    policy_isolation: str = "auto"
    #: the endpoints a confined policy may reach: ``"HOST:PORT"`` items, or True for its
    #: ``base_url`` option's
    policy_network: bool | tuple[str, ...] = False

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        if self.split not in SPLIT_SIZES:
            raise UnknownNameError("split", self.split, SPLIT_SIZES)
        if not isinstance(self.families, str):
            put("families", tuple(self.families))
        put("repeats", check_int("repeats", self.repeats, 1, MAX_REPEATS))
        if self.count is not None:
            put("count", check_int("count", self.count, 1))
        put("settings", check_settings(self.settings))
        families, settings = interventional_families(self.families, self.settings)
        put("families", families)
        put("settings", settings)
        put("policy_options", check_policy_options(self.policy_options))
        if self.task not in TASKS:
            raise UnknownNameError("task", self.task, TASKS)
        if self.name_mode not in NAME_MODES:
            raise UnknownNameError("name mode", self.name_mode, NAME_MODES)
        put("salt", sealing_salt(self.split, self.salt))
        check_policy_name(self.policy_spec)
        if self.policy_isolation not in ("auto", *ISOLATION_LEVELS):
            raise UnknownNameError("policy isolation", self.policy_isolation,
                                   ("auto", *ISOLATION_LEVELS))
        put("datasets", tuple(dict(t) for t in self.datasets))
        if not isinstance(self.policy_network, bool):
            put("policy_network", tuple(parse_endpoint(item) for item in self.policy_network))
        put("force", bool(self.force))

    @property
    def sealed_salt(self) -> SealedSalt | None:
        """The checked salt (None: a public split)."""
        return self.salt if isinstance(self.salt, SealedSalt) else None

    @classmethod
    def from_arguments(cls, arguments: RunRequest | Mapping[str, Any]) -> RunRequest:
        """A request from a mapping of its fields (a request is returned as it is): unknown
        names are refused naming the known ones."""
        if isinstance(arguments, RunRequest):
            return arguments
        unknown = sorted(set(arguments) - set(RUN_ARGUMENTS))
        if unknown:
            raise HeuresisError(f"unknown run arguments {unknown}; a run takes "
                                f"{list(RUN_ARGUMENTS)} (workers, backend, address and "
                                "progress are the job's)")
        missing = [name for name in ("policy_spec", "out_dir") if name not in arguments]
        if missing:
            raise HeuresisError(f"a run needs {' and '.join(missing)}")
        return cls(**{name: value for name, value in arguments.items()
                      if not (name == "settings" and value is None)})


#: the fields of a run request (the arguments of ``evaluate`` that describe one run; the
#: others — workers, backend, address, progress — describe the job)
RUN_ARGUMENTS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunRequest))

__all__ = ["MAX_REPEATS", "PROMPT_LEVELS", "RUN_ARGUMENTS", "RunRequest", "check_int", "check_policy_options",
           "check_settings"]
