"""The messages a chat model sends back, in one shape for every backend: a reply
(:class:`ChatReply`) with its native tool calls (:class:`ToolCall`). The backends produce them,
the parser reads them and the policy records them."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChatReply", "ToolCall"]


@dataclass(frozen=True)
class ToolCall:
    """One native tool call: its id, the tool's name and the arguments as the model wrote them
    (a JSON text, possibly malformed)."""

    id: str
    name: str
    arguments: str

    def to_message(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class ChatReply:
    """A model's answer to one request.

    ``usage`` holds ``prompt`` and ``completion`` tokens as the API reported them (plus
    ``cached_prompt`` and ``reasoning`` when reported); ``reasoning`` is the model's separate
    reasoning channel (``reasoning_content``, thinking blocks, ``<think>`` tags), empty when
    there is none; ``provider_content`` keeps the provider's own content blocks when they must
    be sent back verbatim (Anthropic's signed thinking blocks).
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    raw: Any = None
    model: str = ""
    finish_reason: str | None = None
    api_retries: int = 0
    seconds: float = 0.0
    retry_errors: list[str] = field(default_factory=list)
    provider_content: list[dict[str, Any]] | None = None

    def assistant_message(self) -> dict[str, Any]:
        """The reply as the conversation's next assistant message."""
        content = self.text if (self.text or not self.tool_calls) else None
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message() for call in self.tool_calls]
        if self.provider_content is not None:
            message["provider_content"] = copy.deepcopy(self.provider_content)
        return message

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record of the reply (for transcripts)."""
        return {"text": self.text, "tool_calls": [call.to_message() for call in self.tool_calls],
                "reasoning": self.reasoning, "usage": dict(self.usage), "model": self.model,
                "finish_reason": self.finish_reason, "api_retries": self.api_retries,
                "seconds": self.seconds, "retry_errors": list(self.retry_errors),
                "raw": self.raw}
