"""The environment: an episode of editing a working graph against a hidden causal graph.

The third stage of the data flow (instance → evidence → **environment** → policy → run →
report). :class:`HeuresisEnv` (:mod:`.core`) is the Gymnasium environment: it plays an
:class:`EpisodeConfig` (:mod:`.config`, built once from its keywords, checked with
:mod:`.arguments`), a reset starts an episode through :mod:`.episode_start`,
:mod:`.episode_end` says when it ends, and its first text is the task statement
(:mod:`.statement`). The hidden truth stays with the referee (:mod:`.referee`); every action is
a tool of the one registry (:mod:`.toolbox`), seen as text/JSON (:mod:`.text_view`) or as the
RL view's discrete actions (:mod:`.rl_view`); agent code runs in the sandbox (:mod:`.sandbox`);
every episode can leave a trace (:mod:`.traces`) that :func:`replay_trace` re-runs;
:mod:`.render` renders an episode as text or draws its graphs.
"""

from heuresis_env.env.arguments import INTERFACES, REWARDS, SPLITS
from heuresis_env.env.config import EpisodeConfig
from heuresis_env.env.core import HeuresisEnv
from heuresis_env.env.episode_end import TERMINATION_REASONS
from heuresis_env.env.referee import PublicInstance, open_instance
from heuresis_env.env.render import draw_graphs
from heuresis_env.env.replay import ReplayReport, replay_trace
from heuresis_env.env.rl_view import (
    LAYOUT_KEYS,
    RL_OBSERVATION_LAYOUT,
    RLAction,
    RLInterface,
    RLOutcome,
    rl_action_table,
)
from heuresis_env.env.sandbox import Sandbox, SandboxLimits, SandboxResult, run_code
from heuresis_env.env.text_view import MAX_OBSERVATION_CHARS, observation_text
from heuresis_env.env.toolbox import (
    MAX_ACTION_CHARS,
    RL_OPERATIONS,
    TARGETS,
    TOOLBOXES,
    ActionError,
    EpisodeState,
    Regimes,
    Tool,
    ToolResult,
    available_tools,
    get_tool,
    parse_action,
    register_tool,
    tool_schemas,
)
from heuresis_env.env.toolbox.graph_tools import ACYCLIC_TARGETS
from heuresis_env.env.toolbox.registry import MAX_LIST_ITEMS
from heuresis_env.env.traces import EvidenceLinker
from heuresis_env.trace_files import Trace, read_trace

__all__ = [
    "ACYCLIC_TARGETS", "INTERFACES", "LAYOUT_KEYS", "MAX_ACTION_CHARS", "MAX_LIST_ITEMS",
    "MAX_OBSERVATION_CHARS", "REWARDS", "RL_OBSERVATION_LAYOUT", "RL_OPERATIONS", "SPLITS", "TARGETS",
    "TERMINATION_REASONS", "TOOLBOXES", "ActionError", "EpisodeConfig", "EpisodeState", "EvidenceLinker",
    "HeuresisEnv", "PublicInstance", "Regimes", "RLAction", "RLInterface", "RLOutcome", "ReplayReport",
    "Sandbox", "SandboxLimits", "SandboxResult", "Tool", "ToolResult", "Trace",
    "available_tools", "draw_graphs", "get_tool", "observation_text", "open_instance",
    "parse_action", "read_trace", "register_tool", "replay_trace", "rl_action_table",
    "run_code", "tool_schemas",
]
