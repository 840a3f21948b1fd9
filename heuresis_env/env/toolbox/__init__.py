"""The toolbox: one registry of tools shared by the text view, function-calling schemas and
the RL view's action table (:func:`heuresis_env.env.rl_view.rl_action_table`).

Importing this package registers the built-in tools (their heavy dependencies load only when
a tool runs). ``python -m heuresis_env.env.toolbox.reference`` prints the toolbox reference.
"""

from heuresis_env.env.toolbox import (  # noqa: F401  (registration order = reference order)
    algorithm_tools,
    answer_tool,
    code_tool,
    data_tools,
    effect_tools,
    experiment_tools,
    graph_tools,
)
from heuresis_env.env.toolbox.regimes import Regime, Regimes
from heuresis_env.env.toolbox.registry import (
    MAX_ACTION_CHARS,
    RL_OPERATIONS,
    TASKS,
    TOOLBOXES,
    TOOLS,
    ActionError,
    EditArgs,
    NoArgs,
    ParsedAction,
    RLSpec,
    Tool,
    ToolArgs,
    ToolResult,
    available_tools,
    get_tool,
    parse_action,
    register_tool,
    tool_schemas,
)
from heuresis_env.env.toolbox.state import TARGETS, EpisodeState

__all__ = [
    "MAX_ACTION_CHARS",
    "RL_OPERATIONS",
    "TARGETS",
    "TASKS",
    "TOOLBOXES",
    "TOOLS",
    "ActionError",
    "EditArgs",
    "EpisodeState",
    "NoArgs",
    "ParsedAction",
    "Regime",
    "Regimes",
    "RLSpec",
    "Tool",
    "ToolArgs",
    "ToolResult",
    "available_tools",
    "get_tool",
    "parse_action",
    "register_tool",
    "tool_schemas",
]
