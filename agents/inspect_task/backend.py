"""The language-model policy's chat backend over an inspect_ai model: any inspect provider
(OpenAI, Anthropic, Google, Mistral, vLLM, Ollama, ``mockllm/model`` …) behind
:class:`~agents.llm.backends.ChatBackend`.

The policy (:class:`~agents.llm.policy.LLMPolicy`) is synchronous and runs, with the
environment, in a worker thread of inspect's event loop (the solver starts it with
``anyio.to_thread.run_sync``); each :meth:`InspectChatBackend.complete` hands the call back to
the loop with ``anyio.from_thread.run``, so the model call is inspect's own — its retries, its
rate limits, its model events in the log. The conversation crosses as inspect messages
(:func:`inspect_messages`), the tools as the registry's JSON schemas wrapped as inspect tool
definitions (:func:`inspect_tools`), the reply comes back as a
:class:`~agents.llm.messages.ChatReply`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.from_thread
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentReasoning,
    GenerateConfig,
    Model,
    ModelOutput,
)
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolInfo, ToolParams

from agents.llm import (
    FATAL_STATUSES,
    BackendError,
    ChatReply,
    DeadlineExceeded,
    ToolCall,
    split_reasoning,
)
from heuresis_env.errors import HeuresisError

__all__ = ["PROVIDER_CONTENT_TYPE", "InspectChatBackend", "chat_reply", "inspect_messages",
           "inspect_tools"]

#: the ``provider_content`` block that carries inspect's own assistant message, so that it is
#: sent back verbatim (reasoning blocks, signatures, provider ids)
PROVIDER_CONTENT_TYPE = "inspect_message"
_RAW_ARGUMENTS = re.compile(r"arguments:\n\n(.*)\n\nError details:", re.S)


def inspect_tools(schemas: Sequence[dict[str, Any]]) -> list[ToolInfo]:
    """The registry's function-calling schemas (``tool_schemas(..., style="openai")``) as
    inspect tool definitions: same names, descriptions and parameters. inspect's schema model
    keeps the fields it knows — types, descriptions, defaults, enums, patterns, lengths and
    bounds — and drops the rest (``maxItems``, ``maxProperties``, ``propertyNames``, exclusive
    bounds, a ``null`` default); the environment still enforces every limit when the call
    runs."""
    tools = []
    for schema in schemas:
        function = schema.get("function", schema)
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        tools.append(ToolInfo(name=function["name"], description=function.get("description", ""),
                              parameters=ToolParams.model_validate(parameters)))
    return tools


def _text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else str(content)


def _inspect_call(call: dict[str, Any]) -> InspectToolCall:
    function = call.get("function") or {}
    raw = function.get("arguments")
    parse_error = None
    arguments: dict[str, Any] = {}
    if isinstance(raw, dict):
        arguments = raw
    elif raw:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            parse_error = f"Error parsing the following tool call arguments:\n\n{raw}\n\n" \
                          f"Error details: {exc}"
        else:
            arguments = value if isinstance(value, dict) else {"value": value}
    return InspectToolCall(id=str(call.get("id")), function=str(function.get("name") or ""),
                           arguments=arguments, parse_error=parse_error)


def inspect_messages(messages: Sequence[dict[str, Any]]) -> list[ChatMessage]:
    """The policy's conversation (OpenAI's chat shape) as inspect messages. An assistant
    message that came from an inspect model is restored verbatim from its
    ``provider_content``; a tool result names the function of the call it answers."""
    out: list[ChatMessage] = []
    functions: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "system":
            out.append(ChatMessageSystem(content=_text(message.get("content"))))
        elif role == "user":
            out.append(ChatMessageUser(content=_text(message.get("content"))))
        elif role == "assistant":
            blocks = message.get("provider_content") or []
            if (len(blocks) == 1 and isinstance(blocks[0], dict)
                    and blocks[0].get("type") == PROVIDER_CONTENT_TYPE):
                assistant = ChatMessageAssistant.model_validate(blocks[0]["message"])
            else:
                calls = [_inspect_call(call) for call in message.get("tool_calls") or []]
                assistant = ChatMessageAssistant(content=_text(message.get("content")),
                                                 tool_calls=calls or None)
            for call in assistant.tool_calls or []:
                functions[call.id] = call.function
            out.append(assistant)
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            out.append(ChatMessageTool(content=_text(message.get("content")),
                                       tool_call_id=call_id, function=functions.get(call_id)))
        else:
            raise HeuresisError(f"a message with role {role!r} cannot be sent to an inspect "
                                "model (system, user, assistant or tool)")
    return out


def _arguments_text(call: InspectToolCall) -> str:
    """A tool call's arguments as the model wrote them: JSON, or — when inspect could not
    parse them — the raw text its parse error quotes (so the environment refuses it as
    malformed JSON, a step, as it would from any other client)."""
    if call.parse_error is None:
        return json.dumps(call.arguments)
    found = _RAW_ARGUMENTS.search(call.parse_error)
    return found.group(1) if found else call.parse_error


def chat_reply(output: ModelOutput, seconds: float = 0.0) -> ChatReply:
    """An inspect model output as the policy's reply (text, reasoning, tool calls, usage)."""
    if not output.choices:
        raise BackendError(f"the model returned no reply ({output.error or 'no choices'})")
    message = output.message
    reasoning_parts = []
    if isinstance(message.content, list):
        reasoning_parts = [block.reasoning for block in message.content
                           if isinstance(block, ContentReasoning) and block.reasoning]
    text, tagged = split_reasoning(message.text or "")
    calls = [ToolCall(call.id, call.function, _arguments_text(call))
             for call in message.tool_calls or []]
    usage: dict[str, int] = {}
    if output.usage is not None:
        usage = {"prompt": int(output.usage.input_tokens or 0),
                 "completion": int(output.usage.output_tokens or 0)}
        if output.usage.input_tokens_cache_read:
            usage["cached_prompt"] = int(output.usage.input_tokens_cache_read)
        if output.usage.reasoning_tokens:
            usage["reasoning"] = int(output.usage.reasoning_tokens)
    return ChatReply(
        text=text, tool_calls=calls,
        reasoning="\n".join(part for part in (*reasoning_parts, tagged) if part),
        usage=usage, model=output.model or "", finish_reason=output.stop_reason,
        seconds=seconds,
        provider_content=[{"type": PROVIDER_CONTENT_TYPE,
                           "message": message.model_dump(mode="json", exclude_none=True)}])


def _status(exc: BaseException) -> int | None:
    for name in ("status_code", "status"):
        value = getattr(exc, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


class InspectChatBackend:
    """A :class:`~agents.llm.backends.ChatBackend` over an inspect model, called from a worker
    thread of inspect's event loop (see the module docstring).

    The per-turn token budget is each call's ``max_tokens`` (a ``GenerateConfig`` that takes
    precedence over the eval's); retries are inspect's (its ``--max-retries``, ``--timeout``),
    so a reply reports none; ``deadline`` cancels a call that would run past the policy's
    wall-time reserve (:class:`~agents.llm.backends.DeadlineExceeded`). An error that will
    fail every call — 401, 403, 404 — is fatal, as in the SDK backends.
    """

    kind = "inspect"

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise HeuresisError(f"InspectChatBackend needs an inspect_ai Model, got "
                                f"{type(model).__name__}")
        self.inspect_model = model
        self.model = str(model)

    def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
                 max_tokens: int, *, deadline: float | None = None) -> ChatReply:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise HeuresisError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        timeout = None if deadline is None else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            raise DeadlineExceeded("the wall-time deadline passed before the model call")
        request = inspect_messages(messages)
        infos = inspect_tools(tools or [])
        config = GenerateConfig(max_tokens=max_tokens)

        async def generate() -> ModelOutput:
            with anyio.fail_after(timeout):
                return await self.inspect_model.generate(request, tools=infos, config=config)

        started = time.monotonic()
        try:
            output = anyio.from_thread.run(generate)
        except TimeoutError:
            raise DeadlineExceeded(f"no reply within the {timeout:.1f} s left before the "
                                   "wall-time reserve") from None
        except Exception as exc:  # noqa: BLE001 - a failed call is the policy's to handle
            status = _status(exc)
            raise BackendError(f"{type(exc).__name__}: {exc}"[:2000], status=status,
                               fatal=status in FATAL_STATUSES) from exc
        return chat_reply(output, seconds=time.monotonic() - started)

    def close(self) -> None:
        """Nothing to release: the model belongs to inspect's eval."""
