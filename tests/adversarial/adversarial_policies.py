"""Policies written as an adversary would, each used by one test of the adversarial suite
(run in their own process by ``heuresis evaluate`` as ``tests.adversarial.adversarial_policies:
NAME``). None of them writes anywhere but where it is told by its options (a pytest tmp_path)
or attempts the creation of a *new*, uniquely named file to prove it cannot."""

from __future__ import annotations

from typing import Any

from heuresis_env.policy import Policy

SCRIPT_BREAKER = "<!--<script></script>\u2028&amp;"


class MalformedTranscript(Policy):
    """Submits one edge; reports a transcript of wrong types and notes that would break a page
    embedding them raw (route 7), and usage with negative tokens and cost (route 9)."""

    name = "malformed-transcript"

    def __init__(self, label: str = ""):
        self.label = label  # shown by the viewer among the run's options

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.done = False

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if not self.done:
            self.done = True
            return {"tool": "add_edge", "args": {"x": "X1", "y": "X2", "directed": False}}
        return {"tool": "submit", "args": {}}

    def transcript(self) -> Any:
        return [{"event": "model_call", "reply": "lots", "cost_usd": "free"},
                {"event": "model_call", "reply": {"usage": {"prompt": "many"}}},
                {"event": "action", "step": "two"},
                {"event": "message", "message": 5, "content": {"a": SCRIPT_BREAKER}}]

    def notes(self) -> list[str]:
        return [SCRIPT_BREAKER]

    def usage(self) -> dict[str, Any]:
        return {"prompt_tokens": -1000, "completion_tokens": -5, "cost_usd": -3.5,
                "api_retries": -2}
