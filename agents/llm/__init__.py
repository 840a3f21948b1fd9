"""The language-model policy: chat backends, prompts, action and edge-list parsing, a loopback
chat server for tests and keyless runs.

``make_llm_policy(...)`` (entry point ``llm``) builds the policy from plain options;
``make_heuristic_llm_policy()`` (``llm-heuristic``) wires it to a local deterministic model.
See ``docs/llm.md``.
"""

from agents.llm.backends import (
    AnthropicBackend,
    BackendError,
    ChatBackend,
    ChatReply,
    OpenAIChatBackend,
    ReplayBackend,
    RetrySchedule,
    ToolCall,
)
from agents.llm.parsing import EdgeListError, extract_action, parse_edge_list
from agents.llm.policy import LLMPolicy, make_heuristic_llm_policy, make_llm_policy
from agents.llm.prices import PriceTable

__all__ = [
    "AnthropicBackend", "BackendError", "ChatBackend", "ChatReply", "EdgeListError",
    "LLMPolicy", "OpenAIChatBackend", "PriceTable", "ReplayBackend", "RetrySchedule",
    "ToolCall", "extract_action", "make_heuristic_llm_policy", "make_llm_policy",
    "parse_edge_list",
]
