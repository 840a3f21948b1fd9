"""An episode's configuration: built once from keywords, validated once, passed down unchanged.

:class:`EpisodeConfig` is what a :class:`~heuresis_env.env.core.HeuresisEnv` plays: the
instance source (family or table, split, size, the instances or questions ``reset`` draws
from, the sealed salt), the task and its condition (graph or question episodes, guided start,
stated target, reward), the budgets, the toolbox, the view (text or RL) and the trace. Every
front door builds one — ``gym.make(id, **keywords)`` and ``HeuresisEnv(**keywords)``
through :meth:`EpisodeConfig.from_keywords`, the evaluation runner, the MCP server and the
Inspect task from their own settings — and the environment reads it as it is. A new option
is a field here, its check in :meth:`EpisodeConfig.__post_init__`, and the code that uses it.

Constructing an ``EpisodeConfig`` directly checks every field the same way; its ``salt`` is
then the checked :class:`~heuresis_env.generation.salts.SealedSalt` or None (explicit: the
``$HEURESIS_TEST_SALT`` default is read by :meth:`~EpisodeConfig.from_keywords` only).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heuresis_env.budgets import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STEPS
from heuresis_env.env.arguments import (
    check_choices,
    check_experiments,
    check_indices,
    check_int,
    check_size,
    check_unknown_arguments,
    register_table,
)
from heuresis_env.env.episode_end import check_max_seconds
from heuresis_env.env.rl_view import RL_EVIDENCE_MODES
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.instances import Instance, InstanceKey, get_source
from heuresis_env.generation.salts import SealedSalt, sealing_salt

#: the render modes of the environment (``HeuresisEnv.metadata["render_modes"]``)
RENDER_MODES = ("ansi", "rgb_array", "human")
#: keywords that describe a table given as ``data`` (``Heuresis-dataset-v0``); they build
#: the config's ``table`` and are not fields
TABLE_KEYWORDS = ("data", "names", "graph", "anonymize", "standardize", "dataset_name")


@dataclass(frozen=True)
class EpisodeConfig:
    """What an environment plays, checked once (see the module docstring).

    ``d``, ``n`` and ``graph_model`` hold the sizes the instances have (a family's default,
    a structure's d, a table's own) and ``indices`` the instances ``reset`` draws from, once
    the config is made.
    """

    # -- the instance source
    family: str = "lg"
    split: str = "dev"
    d: int | None = None
    n: int | None = None
    graph_model: str | None = None
    indices: tuple[int, ...] | None = None
    #: the checked salt sealing the test split, or None (public)
    salt: SealedSalt | None = field(default=None, repr=False)
    #: a table played as the family's only instance (``Heuresis-dataset-v0``)
    table: Instance | None = field(default=None, repr=False, compare=False)
    # -- the task and its condition
    task: str = "graph"
    name_mode: str = "anonymous"
    questions: tuple[int, ...] | None = None
    guided: bool = False
    target: str = "none"
    reward: str = "f1"
    # -- budgets and toolbox
    max_steps: int = DEFAULT_MAX_STEPS
    max_seconds: float | None = DEFAULT_MAX_SECONDS
    toolbox: str = "full"
    #: the experiment budget in rows (0: the observational benchmark; docs/experiments.md)
    experiments: int = 0
    # -- the view
    interface: str = "text"
    rl_text: bool = False
    rl_evidence: str = "auto"
    # -- the trace
    trace_path: Path | None = None
    #: False: a trace's end record holds no scores (a sealed MCP session's trace folder may
    #: be within the client's reach; ``heuresis score`` scores it later)
    trace_scores: bool = True

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        check_choices(self.family, self.split, self.target, self.toolbox, self.reward,
                      self.interface, None, RENDER_MODES, self.guided, self.task,
                      self.name_mode, self.questions)
        put("guided", bool(self.guided))
        put("max_steps", check_int("max_steps", self.max_steps, 1))
        put("max_seconds", check_max_seconds(self.max_seconds))
        check_size(self.d, self.n)
        # the family's size fills what is left out (a fixed structure's d, a table's d and n)
        first = InstanceKey(self.family, self.split, 0, d=self.d, n=self.n,
                            graph_model=self.graph_model)
        put("d", first.size[0])
        put("n", first.size[1])
        put("graph_model", first.size[2])
        put("indices", check_indices(self.indices, self.family, self.split))
        put("experiments", check_experiments(
            self.experiments, self.family, self.task,
            self.table is None and get_source(self.family) is None))
        if self.questions is not None:
            put("questions", tuple(self.questions))
        put("trace_path", None if self.trace_path is None else Path(self.trace_path))
        put("trace_scores", bool(self.trace_scores))
        put("rl_text", bool(self.rl_text))
        if self.rl_evidence not in ("auto", *RL_EVIDENCE_MODES):
            raise UnknownNameError("RL evidence mode", self.rl_evidence,
                                   ("auto", *RL_EVIDENCE_MODES))
        if self.salt is not None and not isinstance(self.salt, SealedSalt):
            raise HeuresisError("an EpisodeConfig's salt is a checked SealedSalt (made by "
                                "heuresis_env.generation.salts.sealing_salt) or None; "
                                "keywords take a string: EpisodeConfig.from_keywords(salt=...)")
        if self.split != "test" and self.salt is not None:
            put("salt", None)  # a salt seals the test split only
        if self.salt is not None and self.reward == "shaped":
            raise HeuresisError(
                "reward='shaped' pays the change in F1 of every edit, so it reveals the true "
                "skeleton one edit at a time; it is refused on a sealed test split. Train on "
                "the dev split, or use reward='f1'")

    @classmethod
    def from_keywords(cls, family: str | None = "lg", **keywords: Any) -> EpisodeConfig:
        """The config of ``gym.make(id, **keywords)``: unknown names refused naming the known
        ones, a table given as ``data`` registered, the salt taken as ``salt=...`` or
        ``$HEURESIS_TEST_SALT`` (test split) and checked, every field checked."""
        check_unknown_arguments(list(set(keywords) - set(KEYWORDS)), ("family", *KEYWORDS))
        keywords.pop("render_mode", None)  # the environment's own (Gymnasium's convention)
        table_keywords = {name: keywords.pop(name) for name in TABLE_KEYWORDS
                          if name in keywords}
        table = None
        if table_keywords.get("data") is not None or family is None:
            family, table = register_table(
                family, table_keywords.get("data"), table_keywords.get("names"),
                table_keywords.get("graph"), bool(table_keywords.get("anonymize", False)),
                table_keywords.get("standardize", True),
                table_keywords.get("dataset_name", "dataset"))
        split = keywords.get("split", "dev")
        keywords["salt"] = sealing_salt(split, keywords.get("salt")) if isinstance(
            split, str) else None
        for name in ("indices", "questions"):
            if keywords.get(name) is not None:
                keywords[name] = _sequence(name, keywords[name])
        return cls(family=family, table=table, **keywords)

    def replace(self, **changes: Any) -> EpisodeConfig:
        """This config with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    @property
    def size(self) -> tuple[int, int, str]:
        """``(d, n, graph_model)`` of the instances played (filled in when made)."""
        assert self.d is not None and self.n is not None and self.graph_model is not None
        return self.d, self.n, self.graph_model

    @property
    def rl_evidence_mode(self) -> str:
        """The RL view's evidence mode: ``rl_evidence``, with auto resolved — eager when guided
        (the shipped repair policies were trained on its whole first observation, and its
        reset runs PC-KCI anyway), lazy unguided."""
        if self.rl_evidence != "auto":
            return self.rl_evidence
        return "eager" if self.guided else "lazy"

    def keywords(self) -> dict[str, Any]:
        """The keyword arguments that rebuild an environment of this config (the salt and a
        table's data excluded), as ``HeuresisEnv.config()`` reports them."""
        return {"family": self.family, "split": self.split, "guided": self.guided,
                "max_steps": self.max_steps, "max_seconds": self.max_seconds,
                "target": self.target, "toolbox": self.toolbox, "reward": self.reward,
                "d": self.d, "n": self.n, "graph_model": self.graph_model,
                "interface": self.interface,
                **({} if self.interface != "rl" else {"rl_evidence": self.rl_evidence}),
                **({} if self.task == "graph" else {"task": self.task,
                                                    "name_mode": self.name_mode}),
                **({"experiments": self.experiments} if self.experiments else {})}


def _sequence(name: str, value: Any) -> Any:
    """A list of ids as a tuple (a string or a mapping is left to the checks to refuse)."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return tuple(value)
    if isinstance(value, Mapping) or isinstance(value, str | bytes):
        raise HeuresisError(f"{name} must be a list of integers, got {value!r}")
    try:
        return tuple(value)
    except TypeError:
        raise HeuresisError(f"{name} must be a list of integers, got {value!r}") from None


#: every keyword ``HeuresisEnv`` and ``gym.make`` take besides ``family`` (any other is
#: refused, naming these): the config's fields, the table's keywords and ``render_mode``
KEYWORDS: tuple[str, ...] = (
    *(f.name for f in dataclasses.fields(EpisodeConfig) if f.name not in ("family", "table")),
    *TABLE_KEYWORDS, "render_mode")

__all__ = ["KEYWORDS", "RENDER_MODES", "TABLE_KEYWORDS", "EpisodeConfig"]
