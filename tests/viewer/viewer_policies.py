"""A policy whose trace exercises every part of the viewer: tool calls, an edit citing its
evidence explicitly, one citing it implicitly, a removal, a rejected action, a submit.
Run by the viewer tests as ``tests.viewer.viewer_policies:EvidencePolicy``."""

from __future__ import annotations

from typing import Any

from heuresis_env.policy import Policy

ACTIONS: list[Any] = [
    {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "method": "fisherz"}},          # 1
    {"tool": "ci_test", "args": {"x": "X2", "y": "X3", "method": "fisherz"}},          # 2
    {"tool": "add_edge", "args": {"x": "X1", "y": "X2", "evidence": [1]}},             # 3
    {"tool": "add_edge", "args": {"x": "X2", "y": "X3", "directed": False}},           # 4
    {"tool": "describe_data", "args": {}},                                             # 5
    {"tool": "remove_edge", "args": {"x": "X2", "y": "X3"}},                           # 6
    '{"tool": "add_edge", "args": {"x": "X1"',                                         # 7 rejected
    {"tool": "add_edge", "args": {"x": "X3", "y": "X4", "directed": True}},            # 8
    {"tool": "submit", "args": {}},                                                    # 9
]


class EvidencePolicy(Policy):
    """Plays :data:`ACTIONS` in order (the same graph on every instance)."""

    name = "evidence"

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.step = 0

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        self.step += 1
        return ACTIONS[self.step - 1]
