"""The language-model policy: chat backends, prompts, action and edge-list parsing, a loopback
chat server for tests and keyless runs.

``make_llm_policy(...)`` (entry point ``llm``) builds the policy from plain options;
``make_heuristic_llm_policy()`` (``llm-heuristic``) wires it to a local deterministic model.
Modules, in the order a reply flows: :mod:`~agents.llm.connection` (which service, key and
base URL), :mod:`~agents.llm.backends` (one protocol over the APIs, retries),
:mod:`~agents.llm.messages` (the reply shape every backend returns),
:mod:`~agents.llm.parsing` (the action and the final edge list in a reply),
:mod:`~agents.llm.prompts`, :mod:`~agents.llm.prices`, :mod:`~agents.llm.policy` (the ReAct
loop) and :mod:`~agents.llm.server` (the loopback chat server). See ``docs/llm.md``.
"""

from agents.llm.backends import (
    FATAL_STATUSES,
    AnthropicBackend,
    BackendError,
    ChatBackend,
    DeadlineExceeded,
    OpenAIChatBackend,
    ReplayBackend,
    RetrySchedule,
)
from agents.llm.connection import Connection, resolve_connection
from agents.llm.heuristic_model import HeuristicModel
from agents.llm.messages import ChatReply, ToolCall
from agents.llm.parsing import (
    EdgeListError,
    ExtractedAction,
    extract_action,
    parse_edge_list,
    split_reasoning,
)
from agents.llm.policy import LLMPolicy, PendingCall, make_heuristic_llm_policy, make_llm_policy
from agents.llm.prices import PriceTable
from agents.llm.prompts import FINAL_NOT_RUN_MESSAGE, check_prompt_level, check_target
from agents.llm.server import (
    HEURISTIC_MODEL_NAME,
    ChatRequest,
    ChatServer,
    ScriptedReply,
    text_reply,
)

__all__ = [
    "FATAL_STATUSES", "FINAL_NOT_RUN_MESSAGE", "HEURISTIC_MODEL_NAME", "AnthropicBackend",
    "BackendError", "ChatBackend", "ChatReply", "ChatRequest", "ChatServer", "Connection",
    "DeadlineExceeded", "EdgeListError", "ExtractedAction", "HeuristicModel", "LLMPolicy",
    "OpenAIChatBackend", "PendingCall", "PriceTable", "ReplayBackend", "RetrySchedule",
    "ScriptedReply", "ToolCall", "check_prompt_level", "check_target", "extract_action",
    "make_heuristic_llm_policy", "make_llm_policy", "parse_edge_list", "resolve_connection",
    "split_reasoning", "text_reply",
]
