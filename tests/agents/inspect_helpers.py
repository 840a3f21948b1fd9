"""What the inspect tests play: one action script, as a Heuresis policy for ``heuresis evaluate``
(``tests.agents.inspect_helpers:script_policy``; the test module makes the same script the
replies of inspect's ``mockllm/model``), so both paths take the same actions. No inspect import
here: the policy process imports this module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heuresis_env.policy import Policy

#: a graph episode's actions: evidence, edits (one refused: an unknown tool), the graph memory,
#: a submission with an edge list
GRAPH_SCRIPT: list[dict[str, Any]] = [
    {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "method": "fisherz"}},
    {"tool": "run_algorithm", "args": {"name": "pc-fisherz", "save_as": "pc"}},
    {"tool": "load_graph", "args": {"name": "pc"}},
    {"tool": "no_such_tool", "args": {}},
    {"tool": "add_edge", "args": {"x": "X1", "y": "X6", "directed": False}},
    {"tool": "remove_edge", "args": {"x": "X2", "y": "X3"}},
    {"tool": "submit", "args": {}},
]
#: a question episode's actions
QUESTION_SCRIPT: list[dict[str, Any]] = [
    {"tool": "describe_data", "args": {}},
    {"tool": "answer", "args": {"answer": "yes"}},
]


class ScriptPolicy(Policy):
    """Play ``actions`` in order (then submit the working graph)."""

    name = "script"

    def __init__(self, actions: Sequence[dict[str, Any]]):
        self.actions = [dict(a) for a in actions]

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.position = 0

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        action = (self.actions[self.position] if self.position < len(self.actions)
                  else {"tool": "submit", "args": {}})
        self.position += 1
        return action


def script_policy(actions: Sequence[dict[str, Any]]) -> ScriptPolicy:
    """The factory ``heuresis evaluate`` builds (``policy_options={"actions": [...]}``)."""
    return ScriptPolicy(actions)
