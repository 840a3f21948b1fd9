"""The one tool registry: every tool's name, typed arguments, result, and RL action template.

A :class:`Tool` is defined once and serves three consumers:

- the text view, which parses a JSON action ``{"tool": NAME, "args": {...}}`` into the tool's
  pydantic argument model (:func:`parse_action`) and runs it;
- language-model harnesses, which read the JSON schemas :func:`tool_schemas` exports for
  function calling (the same pydantic models, so validation and schema cannot drift apart);
- the RL view, whose discrete action table
  (:func:`heuresis_env.env.rl_view.rl_action_table`) is derived from the tools that declare
  an :class:`RLSpec` (pair × {add, remove, orient, test} + submit).

Parsing never raises anything but :class:`ActionError`, whose message says what was wrong and
how to write the action instead; the environment turns it into an error observation.
"""

from __future__ import annotations

import functools
import json
import re
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.registration import TASKS

if TYPE_CHECKING:
    from heuresis_env.env.toolbox.state import EpisodeState

#: the longest action (a JSON string, or a dict once serialized) the parser accepts
MAX_ACTION_CHARS = 16_384
#: the longest variable name an argument may carry
MAX_NAME_CHARS = 64
#: the most entries any list argument may carry (variables, edges, evidence ids)
MAX_LIST_ITEMS = 512

#: toolboxes: every tool, the minimal one (no code, stability or orientation probes), and the
#: code-only arm (``run_code`` and the tool that ends the episode)
TOOLBOXES = ("full", "minimal", "code")
#: the operations of the RL view's discrete action table, in table order
RL_OPERATIONS = ("add", "remove", "orient", "test", "submit")
#: operations appended to the table only when a tool offering them is offered: ``intervene``,
#: with an experiment budget (so the observational table stays as it was)
RL_EXPERIMENT_OPERATIONS = ("intervene",)
#: how an RL operation ranges over variables: unordered pairs i < j, ordered pairs i ≠ j, single
#: variables, or once
RL_PAIR_KINDS = ("unordered", "ordered", "variable", "none")
#: tool categories, in the order the reference and the task statement list them
CATEGORIES = (
    "data",        # variable level: describe the data, (conditional) independence tests
    "experiment",  # experiments on the hidden model, under a budget of rows
    "algorithm",   # graph level: reference algorithms, stability, orientation, deletion log
    "code",        # sandboxed Python over the data
    "graph edit",  # edit the working graph, submit it
    "memory",      # named graphs
    "query",       # edge level: direct cause, collider, confounder on a graph
    "effect",      # effect level: average treatment effects
    "answer",      # question episodes: answer the question
)


class ActionError(HeuresisError):
    """An action the environment cannot run: bad JSON, an unknown tool, bad arguments."""


# ---- argument models ------------------------------------------------------------------------

def _single_to_list(value: Any) -> Any:
    """Accept one name where a list of names is expected ("X3" means ["X3"])."""
    return [value] if isinstance(value, str) else value


VariableName = Annotated[
    str, Field(min_length=1, max_length=MAX_NAME_CHARS, description="a column name, e.g. X3")
]
VariableList = Annotated[
    list[VariableName],
    BeforeValidator(_single_to_list),
    Field(max_length=MAX_LIST_ITEMS),
]
EvidenceIds = Annotated[
    list[Annotated[int, Field(ge=0)]],
    Field(max_length=64, description=(
        "step numbers of the earlier tool calls that justify this edit (recorded in the trace; "
        "default: the calls since the last edit of this pair)")),
]
ParamValue = int | float | str | bool | None
Params = Annotated[dict[Annotated[str, Field(max_length=64)], ParamValue], Field(max_length=32)]


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoArgs(ToolArgs):
    """A tool without arguments."""


class EditArgs(ToolArgs):
    """Base of the graph edits; each declares ``evidence: EvidenceIds`` as its last field
    (declared there rather than here so that it comes last in signatures and schemas)."""


# ---- tools and results ----------------------------------------------------------------------

@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: text for the agent, structured data, and an error if it failed.

    ``submitted`` is set only by ``submit``. A result with ``error`` leaves the working graph
    as it was (the environment restores it).
    """

    text: str
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    submitted: bool = False

    @classmethod
    def failure(cls, message: str, data: dict[str, Any] | None = None) -> ToolResult:
        return cls(text=f"Error: {message}", data=data or {}, error=message)


@dataclass(frozen=True)
class RLSpec:
    """How a tool appears in the RL view's discrete action table.

    ``make_args(state, i, j)`` gives the text-view arguments of the action on pair (i, j) (on
    variable i, j = −1, for a ``"variable"`` operation), so
    an RL action is always the same as one text-view tool call. ``apply(state, i, j)`` is the
    allocation-free index kernel the RL view runs instead of parsing those arguments (it
    returns an error message or None); operations without ``apply`` (test, submit) are served
    by the RL view from the cached evidence or end the episode.
    """

    operation: str
    pairs: str
    make_args: Callable[[EpisodeState, int, int], dict[str, Any]]
    apply: Callable[[EpisodeState, int, int], str | None] | None = None

    def __post_init__(self) -> None:
        if self.operation not in (*RL_OPERATIONS, *RL_EXPERIMENT_OPERATIONS):
            raise UnknownNameError("RL operation", self.operation,
                                   (*RL_OPERATIONS, *RL_EXPERIMENT_OPERATIONS))
        if self.pairs not in RL_PAIR_KINDS:
            raise UnknownNameError("RL pair kind", self.pairs, RL_PAIR_KINDS)


@dataclass(frozen=True)
class Tool:
    """One tool: name, description, argument model, run function, and where it is offered.

    ``minimal`` tools are part of the minimal toolbox (the full toolbox has every tool);
    ``guided_only`` tools exist only in the guided condition; ``edits_graph`` tools may change
    the working graph (the trace links them to evidence); ``random`` tools draw from a
    generator derived from the instance seed and the call number; ``writes_memory`` tools
    store a graph in the episode's graph memory (replacing one of the same name), so they are
    not read-only though they leave the working graph alone. ``tasks`` are the episode
    tasks that offer the tool; ``ends_episode`` marks the tool that ends one (``submit``,
    ``answer``), which every toolbox has. ``experiments_only`` tools exist only in an episode
    with an experiment budget (``experiments=ROWS``, the ``-int`` ids); a tool whose
    arguments grow there (which rows to read) names that model ``experiment_args``, a
    subclass of ``args_model``, so an observational episode's tools are exactly as before.
    """

    name: str
    description: str
    args_model: type[ToolArgs]
    run: Callable[[EpisodeState, Any], ToolResult]
    category: str
    minimal: bool = True
    guided_only: bool = False
    edits_graph: bool = False
    writes_memory: bool = False
    random: bool = False
    rl: RLSpec | None = None
    tasks: tuple[str, ...] = TASKS
    ends_episode: bool = False
    experiments_only: bool = False
    experiment_args: type[ToolArgs] | None = None

    def __post_init__(self) -> None:
        bad_tasks = [t for t in self.tasks if t not in TASKS]
        if bad_tasks or not self.tasks:
            raise UnknownNameError("task", (bad_tasks or [""])[0], TASKS)
        if not self.name.isidentifier():
            raise HeuresisError(f"tool name {self.name!r} must be an identifier")
        if self.category not in CATEGORIES:
            raise UnknownNameError("tool category", self.category, CATEGORIES)
        if not (isinstance(self.args_model, type) and issubclass(self.args_model, ToolArgs)):
            raise HeuresisError(f"tool {self.name!r}: args_model must subclass ToolArgs")
        if self.experiment_args is not None and not (
                isinstance(self.experiment_args, type)
                and issubclass(self.experiment_args, self.args_model)):
            raise HeuresisError(f"tool {self.name!r}: experiment_args must subclass args_model")

    def arguments(self, experiments: bool = False) -> type[ToolArgs]:
        """The argument model of an episode without (or, ``experiments``, with) an experiment
        budget."""
        return self.experiment_args if experiments and self.experiment_args else self.args_model

    @property
    def summary(self) -> str:
        """The description's first sentence (one line in the task statement)."""
        return _summary(self.description)

    def parameters_schema(self, experiments: bool = False) -> dict[str, Any]:
        """The JSON schema of the arguments (pydantic's, without the noise of titles)."""
        return _strip_titles(self.arguments(experiments).model_json_schema())

    def signature(self, experiments: bool = False) -> str:
        """``name(arg, arg=default, ...)`` as a newcomer reads it."""
        return _signature(self.name, self.arguments(experiments))

    def unavailable_reason(self, toolbox: str, guided: bool, task: str = "graph",
                           experiments: bool = False) -> str | None:
        """Why the tool is not offered in this configuration, or None when it is."""
        if self.experiments_only and not experiments:
            return (f"{self.name} is available only with an experiment budget (the -int ids, "
                    "or experiments=ROWS)")
        if task not in self.tasks:
            where = " and ".join(_TASK_EPISODES[t] for t in self.tasks)
            return f"{self.name} is offered only in {where}"
        if self.guided_only and not guided:
            return f"{self.name} is available only in the guided condition (guided=True)"
        if toolbox == "minimal" and not self.minimal:
            return f"{self.name} is not in the minimal toolbox (toolbox='full' has it)"
        if toolbox == "code" and not (self.category == "code" or self.ends_episode):
            return (f"{self.name} is not in the code toolbox, which has only run_code and the "
                    "tool that ends the episode")
        return None


@functools.cache
def _summary(description: str) -> str:
    first = re.split(r"(?<=[A-Za-z0-9)\]])\. ", description.strip())[0].strip()
    return first if first.endswith((".", "?", "!")) else first + "."


@functools.cache
def _signature(name: str, args_model: type[ToolArgs]) -> str:
    """A tool's signature, once per (name, argument model): pydantic reads the default
    factories' signatures through ``inspect`` on every call, about 0.6 ms a tool, and the
    task statement of every reset lists 20 tools."""
    parts = []
    for arg_name, info in args_model.model_fields.items():
        if info.is_required():
            parts.append(arg_name)
        else:
            default = info.get_default(call_default_factory=True)
            parts.append(f"{arg_name}={json.dumps(default)}")
    return f"{name}({', '.join(parts)})"


_TASK_EPISODES = {"graph": "graph-recovery episodes (task='graph')",
                  "qa": "question episodes (task='qa')"}


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


#: name → tool, in registration order (the order of the reference and the task statement)
TOOLS: dict[str, Tool] = {}


def register_tool(tool: Tool, *, replace: bool = False) -> Tool:
    """Add a tool to the registry; a second tool of the same name needs ``replace=True``."""
    if not isinstance(tool, Tool):
        raise HeuresisError(f"register_tool takes a Tool, got {type(tool).__name__}")
    if tool.name in TOOLS and not replace:
        raise HeuresisError(f"a tool named {tool.name!r} is already registered; "
                            "pass replace=True to replace it")
    TOOLS[tool.name] = tool
    return tool


def get_tool(name: str) -> Tool:
    try:
        return TOOLS[name]
    except KeyError:
        raise UnknownNameError("tool", name, TOOLS) from None


def check_configuration(toolbox: str, guided: bool, task: str = "graph") -> None:
    if toolbox not in TOOLBOXES:
        raise UnknownNameError("toolbox", toolbox, TOOLBOXES)
    if not isinstance(guided, bool | np.bool_):
        raise HeuresisError(f"guided must be True or False, got {guided!r}")
    if task not in TASKS:
        raise UnknownNameError("task", task, TASKS)


def available_tools(toolbox: str = "full", guided: bool = False,
                    task: str = "graph", experiments: bool = False) -> list[Tool]:
    """The tools offered in one configuration (``experiments``: an experiment budget),
    grouped by category in registry order."""
    check_configuration(toolbox, guided, task)
    offered = [t for t in TOOLS.values()
               if t.unavailable_reason(toolbox, bool(guided), task, bool(experiments)) is None]
    return sorted(offered, key=lambda t: CATEGORIES.index(t.category))


def tool_schemas(toolbox: str = "full", guided: bool = False,
                 style: str = "openai", task: str = "graph",
                 experiments: bool = False) -> list[dict[str, Any]]:
    """Function-calling schemas of the offered tools.

    ``style="openai"``: ``{"type": "function", "function": {name, description, parameters}}``;
    ``style="anthropic"``: ``{name, description, input_schema}``.
    """
    styles = ("openai", "anthropic")
    if style not in styles:
        raise UnknownNameError("schema style", style, styles)
    out = []
    for tool in available_tools(toolbox, guided, task, experiments):
        parameters = tool.parameters_schema(experiments)
        if style == "openai":
            out.append({"type": "function", "function": {
                "name": tool.name, "description": tool.description, "parameters": parameters}})
        else:
            out.append({"name": tool.name, "description": tool.description,
                        "input_schema": parameters})
    return out


# ---- parsing actions --------------------------------------------------------------------------

@dataclass(frozen=True)
class ParsedAction:
    """A validated action: the tool, its argument model, and the arguments as JSON."""

    tool: Tool
    args: ToolArgs
    arguments: dict[str, Any]


_ACTION_FORM = 'write an action as {"tool": NAME, "args": {...}}'

_DESCRIBER = reprlib.Repr()
(_DESCRIBER.maxlevel, _DESCRIBER.maxdict, _DESCRIBER.maxlist, _DESCRIBER.maxtuple,
 _DESCRIBER.maxset, _DESCRIBER.maxstring, _DESCRIBER.maxother, _DESCRIBER.maxlong) = (
    4, 8, 8, 8, 8, 120, 120, 60)


def describe_object(value: Any, limit: int = 300) -> str:
    """A short description of any object, for an error message or a trace: it never raises,
    whatever the object (a raising ``__repr__``, deep or self-referencing nesting, a huge
    container) — so a hostile action can only ever become an error observation."""
    try:
        text = _DESCRIBER.repr(value)
    except Exception:  # noqa: BLE001 - reprlib falls back per leaf, but guard the rest too
        try:
            text = f"<a {type(value).__name__} object that cannot be shown>"
        except Exception:  # noqa: BLE001
            text = "<an object that cannot be shown>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` of an exception whose ``str`` may itself raise."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001
        message = "<the message cannot be shown>"
    return f"{type(exc).__name__}: {message}"[:1000]


def plain_values(value: Any, depth: int = 0) -> Any:
    """NumPy scalars and arrays to Python values, so a Python agent may pass them."""
    if depth > 32:
        raise ActionError("the action is nested too deeply (more than 32 levels)")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        if value.size > MAX_LIST_ITEMS:
            raise ActionError(f"an array argument has {value.size} entries; "
                              f"the limit is {MAX_LIST_ITEMS}")
        return value.tolist()
    if isinstance(value, Mapping):
        return {k: plain_values(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_values(v, depth + 1) for v in value]
    return value


def _decode(action: Any) -> dict[str, Any]:
    """The action as a dict (from a JSON string or a mapping), size-checked."""
    if isinstance(action, bytes):
        try:
            action = action.decode("utf-8")
        except UnicodeDecodeError:
            raise ActionError(f"the action is not UTF-8 text; {_ACTION_FORM}") from None
    if isinstance(action, str):
        if len(action) > MAX_ACTION_CHARS:
            raise ActionError(f"the action is {len(action)} characters long; the limit is "
                              f"{MAX_ACTION_CHARS}. Split the work into smaller calls")
        text = action.strip()
        if text.startswith("```"):  # a fenced code block, as language models like to write
            text = text.strip("`").strip()
            if text.startswith("json"):
                text = text[4:]
        if not text:
            raise ActionError(f"the action is empty; {_ACTION_FORM}")
        try:
            action = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ActionError(f"the action is not valid JSON ({exc.msg} at line {exc.lineno} "
                              f"column {exc.colno}); {_ACTION_FORM}") from None
        except RecursionError:
            raise ActionError("the action is nested too deeply to parse") from None
    elif isinstance(action, Mapping):
        action = plain_values(action)
        try:
            size = len(json.dumps(action, allow_nan=True))
        except (TypeError, ValueError) as exc:
            raise ActionError(f"the action must hold only JSON values (strings, numbers, "
                              f"lists, dicts): {exc}") from None
        except RecursionError:
            raise ActionError("the action is nested too deeply to serialize") from None
        if size > MAX_ACTION_CHARS:
            raise ActionError(f"the action is {size} characters long as JSON; the limit is "
                              f"{MAX_ACTION_CHARS}. Split the work into smaller calls")
    else:
        raise ActionError(f"an action is a JSON string or a dict, got {type(action).__name__}; "
                          f"{_ACTION_FORM}")
    if not isinstance(action, dict):
        raise ActionError(f"the action must be a JSON object, got a {type(action).__name__}; "
                          f"{_ACTION_FORM}")
    return action


def _describe_validation(tool: Tool, exc: ValidationError, experiments: bool = False) -> str:
    problems = []
    for error in exc.errors()[:5]:
        location = ".".join(str(p) for p in error["loc"]) or "args"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unexpected argument"
        problems.append(f"{location}: {message}")
    more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
    return (f"bad arguments for {tool.name}: {'; '.join(problems)}{more}. "
            f"Usage: {tool.signature(experiments)}")


def _offered(toolbox: str, guided: bool, task: str, experiments: bool = False) -> list[str]:
    """The offered tools' names, for an error message (built only when one is needed)."""
    return [t.name for t in available_tools(toolbox, guided, task, experiments)]


def parse_action(action: Any, toolbox: str = "full", guided: bool = False,
                 task: str = "graph", experiments: bool = False) -> ParsedAction:
    """Validate an action against the registry; raises :class:`ActionError` and nothing else."""
    try:
        decoded = _decode(action)
        extra = sorted(str(k) for k in decoded if k not in ("tool", "args"))
        if extra:
            raise ActionError(f"unexpected key(s) {extra} in the action; {_ACTION_FORM}")
        name = decoded.get("tool")
        if not isinstance(name, str):
            raise ActionError(f"the action needs a string 'tool'; {_ACTION_FORM}")
        check_configuration(toolbox, guided, task)
        tool = TOOLS.get(name)
        if tool is None:
            raise ActionError(str(UnknownNameError("tool", name[:MAX_NAME_CHARS],
                                                   _offered(toolbox, guided, task,
                                                            experiments))))
        reason = tool.unavailable_reason(toolbox, bool(guided), task, bool(experiments))
        if reason is not None:
            raise ActionError(f"{reason}. Tools: "
                              f"{', '.join(_offered(toolbox, guided, task, experiments))}")
        args = decoded.get("args", {})
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ActionError(f"'args' must be a JSON object, got a {type(args).__name__}. "
                              f"Usage: {tool.signature(experiments)}")
        try:
            model = tool.arguments(experiments).model_validate(args)
        except ValidationError as exc:
            raise ActionError(_describe_validation(tool, exc, experiments)) from None
        return ParsedAction(tool, model, model.model_dump(mode="json"))
    except ActionError:
        raise
    except HeuresisError as exc:
        raise ActionError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the parser never raises anything else
        raise ActionError(f"the action could not be read ({describe_exception(exc)}); "
                          f"{_ACTION_FORM}") from None
