"""Chat backends behind one protocol: OpenAI-compatible servers, Anthropic, and a replay.

The policy speaks one message format — OpenAI's chat-completions shape (``system``, ``user``,
``assistant`` with ``tool_calls``, ``tool`` with ``tool_call_id``) — and every backend turns
it into its API's request and the API's response into a :class:`ChatReply`.

Retries run through tenacity, not the SDKs' own loop (their ``max_retries`` is 0, so the
caller's deadline bounds every attempt and every wait): a rate limit (429), a server error
(5xx, 408, 409), a time-out or a lost connection is retried with exponential back-off and
jitter, honouring ``Retry-After``, up to ``max_retries`` times and never past the caller's
deadline. Each reply carries the number of retries it took (``api_retries``), so the
policy can report them; they never cost the agent a step.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agents.llm.connection import resolve_connection
from agents.llm.messages import ChatReply, ToolCall
from agents.llm.parsing import split_reasoning
from heuresis_env.errors import HeuresisError, UnknownNameError

#: HTTP statuses worth retrying (OpenAI's and Anthropic's SDKs retry the same ones)
RETRYABLE_STATUSES = frozenset({408, 409, 429})
#: statuses that mean the configuration is wrong (key, permissions, model name): never retried,
#: and the policy re-raises them instead of ending the episode quietly
FATAL_STATUSES = frozenset({401, 403, 404})


class BackendError(RuntimeError):
    """A model call that failed for good: a non-retryable error, or retries exhausted.

    ``fatal`` marks configuration errors (bad key, no such model) that will fail every call.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1,
                 retries: int = 0, fatal: bool = False, retry_errors: Sequence[str] = ()):
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        self.retries = retries
        self.fatal = fatal
        self.retry_errors = list(retry_errors)


class DeadlineExceeded(BackendError):
    """The caller's deadline passed before a reply arrived (no further attempt was made)."""


@runtime_checkable
class ChatBackend(Protocol):
    """What the policy needs from a chat API."""

    #: the backend's kind ("openai", "anthropic", "replay")
    kind: str
    #: the model asked for
    model: str

    def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
                 max_tokens: int, *, deadline: float | None = None) -> ChatReply:
        """One model call. ``tools`` are OpenAI-style function schemas (None: no tools);
        ``deadline`` is a ``time.monotonic()`` time after which no attempt starts."""
        ...

    def close(self) -> None:
        """Release the client."""
        ...


# ---- retries --------------------------------------------------------------------------------

@dataclass(frozen=True)
class RetrySchedule:
    """Exponential back-off with jitter: attempt k waits ``base · 2^k`` seconds (at most
    ``max_delay``), scaled by a uniform factor in [1 − jitter, 1]; a ``Retry-After`` from the
    server raises the wait to what it asks (capped at ``max_delay``)."""

    max_retries: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) \
                or self.max_retries < 0:
            raise HeuresisError(f"max_retries must be an integer ≥ 0, got {self.max_retries!r}")
        for name in ("base_delay", "max_delay"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise HeuresisError(f"{name} must be a finite number ≥ 0, got {value!r}")
        if not 0 <= self.jitter <= 1:
            raise HeuresisError(f"jitter must be in [0, 1], got {self.jitter!r}")

    def delay(self, retry: int, rng: np.random.Generator, retry_after: float | None = None
              ) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        wait = min(self.max_delay, self.base_delay * 2.0 ** retry)
        wait *= 1.0 - self.jitter * float(rng.random())
        if retry_after is not None and retry_after > wait:
            wait = min(self.max_delay, retry_after)
        return wait


@dataclass(frozen=True)
class Failure:
    """How one failed attempt is classified: retry it or not, the HTTP status, Retry-After."""

    retryable: bool
    message: str
    status: int | None = None
    retry_after: float | None = None
    fatal: bool = False


def call_with_retries(attempt: Callable[[float | None], Any],
                      classify: Callable[[BaseException], Failure | None],
                      schedule: RetrySchedule, rng: np.random.Generator, *,
                      deadline: float | None = None, timeout: float | None = None,
                      sleep: Callable[[float], None] = time.sleep,
                      clock: Callable[[], float] = time.monotonic) -> tuple[Any, int, list[str]]:
    """Run ``attempt(timeout)`` until it succeeds; returns (result, retries, retry messages).

    The loop is tenacity's (``Retrying``: stop after ``max_retries + 1`` attempts, wait by
    ``schedule``, ``sleep`` injectable). ``classify`` turns an exception into a
    :class:`Failure` (None: not an API error, re-raised as it is); only a retryable failure is
    retried. Each attempt's time-out is cut to the time left before ``deadline``; no attempt
    or wait runs past it (:class:`DeadlineExceeded`).
    """
    import tenacity

    errors: list[str] = []
    # id of an exception → (the exception, kept alive so no other takes its id, and how it is
    # classified): tenacity asks about one failure in several places
    failures: dict[int, tuple[BaseException, Failure | None]] = {}

    def failure_of(exc: BaseException) -> Failure | None:
        if isinstance(exc, BackendError):  # ours (the deadline): never an API error to retry
            return None
        if id(exc) not in failures:
            failures[id(exc)] = (exc, classify(exc))
        return failures[id(exc)][1]

    def retryable(exc: BaseException) -> bool:
        failure = failure_of(exc)
        if failure is None or not failure.retryable:
            return False
        errors.append(failure.message)
        return True

    def one_attempt() -> Any:
        per_attempt = timeout
        if deadline is not None:
            left = deadline - clock()
            if left <= 0:
                raise DeadlineExceeded(
                    "the deadline passed before the model answered"
                    + (f" (after {len(errors)} retries: {errors[-1]})" if errors else ""),
                    attempts=len(errors), retries=len(errors), retry_errors=errors)
            per_attempt = left if per_attempt is None else min(per_attempt, left)
        return attempt(per_attempt)

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        failure = failure_of(exc) if exc is not None else None
        retries = state.attempt_number - 1
        seconds = schedule.delay(retries, rng, None if failure is None else failure.retry_after)
        if deadline is not None and clock() + seconds >= deadline:
            raise DeadlineExceeded(
                f"the deadline leaves no time to retry after: {errors[-1]}",
                status=None if failure is None else failure.status,
                attempts=retries + 1, retries=retries, retry_errors=errors) from exc
        return seconds

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(retryable),
        stop=tenacity.stop_after_attempt(schedule.max_retries + 1),
        wait=wait, sleep=sleep, reraise=True)
    try:
        result = retrying(one_attempt)
    except BackendError:
        raise
    except BaseException as exc:  # noqa: BLE001 - classified below, re-raised otherwise
        failure = failure_of(exc)
        if failure is None:
            raise
        raise _failed(failure, retrying.statistics.get("attempt_number", 1) - 1,
                      errors) from exc
    return result, retrying.statistics.get("attempt_number", 1) - 1, errors


def _failed(failure: Failure, retries: int, errors: list[str]) -> BackendError:
    """The error of a call that failed for good: a failure not to retry, or the last of
    ``retries`` retries."""
    if not failure.retryable:
        return BackendError(failure.message, status=failure.status, attempts=retries + 1,
                            retries=retries, fatal=failure.fatal, retry_errors=errors)
    return BackendError(f"gave up after {retries + 1} attempts; last error: {failure.message}",
                        status=failure.status, attempts=retries + 1, retries=retries,
                        retry_errors=errors)


def _retry_after_seconds(headers: Any) -> float | None:
    """The server's requested wait (``retry-after-ms`` or ``retry-after`` in seconds)."""
    if headers is None:
        return None
    for key, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except (TypeError, ValueError):
            continue  # an HTTP date: fall back to the back-off schedule
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _classify_sdk_error(exc: BaseException, module: Any) -> Failure | None:
    """Classify an exception of the ``openai`` or ``anthropic`` SDK (same class names)."""
    if isinstance(exc, module.APITimeoutError):
        return Failure(True, f"time-out: {exc}")
    if isinstance(exc, module.APIConnectionError):
        return Failure(True, f"connection error: {exc}")
    if isinstance(exc, module.APIStatusError):
        status = int(exc.status_code)
        message = f"HTTP {status}: {exc}"
        retryable = status in RETRYABLE_STATUSES or status >= 500
        return Failure(retryable, message, status,
                       _retry_after_seconds(getattr(exc.response, "headers", None)),
                       fatal=status in FATAL_STATUSES)
    if isinstance(exc, module.APIError):
        return Failure(False, f"API error: {exc}")
    return None


def _check_max_tokens(max_tokens: int) -> int:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int | np.integer) \
            or max_tokens < 1:
        raise HeuresisError(f"max_tokens must be an integer ≥ 1, got {max_tokens!r}")
    return int(max_tokens)


def _check_timeout(timeout: float | None) -> float | None:
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not timeout > 0):
        raise HeuresisError(f"timeout must be a positive number of seconds or None, "
                            f"got {timeout!r}")
    return None if timeout is None else float(timeout)


def _usage_number(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


# ---- OpenAI-compatible chat completions --------------------------------------------------------

def _openai_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Our messages in the chat-completions shape (local keys such as reasoning dropped)."""
    out = []
    for message in messages:
        role = message["role"]
        item: dict[str, Any] = {"role": role, "content": message.get("content")}
        if role == "assistant" and message.get("tool_calls"):
            item["tool_calls"] = copy.deepcopy(message["tool_calls"])
        if role == "tool":
            item["tool_call_id"] = message["tool_call_id"]
        if item["content"] is None and role != "assistant":
            item["content"] = ""
        out.append(item)
    return out


class _SDKBackend:
    """What the two SDK backends share: one SDK call with retries and back-off, timed.

    Subclasses set ``schedule``, ``timeout``, ``_rng``, ``_sleep`` and implement ``_reply``.
    """

    def _call(self, create: Callable[..., Any], request: dict[str, Any],
              deadline: float | None, sdk: Any) -> ChatReply:
        def attempt(timeout: float | None):
            return create(**request, timeout=timeout)

        started = time.monotonic()
        response, retries, errors = call_with_retries(
            attempt, lambda exc: _classify_sdk_error(exc, sdk), self.schedule, self._rng,
            deadline=deadline, timeout=self.timeout, sleep=self._sleep)
        reply = self._reply(response)
        reply.api_retries, reply.retry_errors = retries, errors
        reply.seconds = time.monotonic() - started
        return reply


class OpenAIChatBackend(_SDKBackend):
    """Any chat-completions server through the official ``openai`` SDK: OpenAI itself, or vLLM,
    Ollama, llama.cpp's server, LM Studio… through ``base_url``. Native tool calling.

    ``max_tokens_parameter``: OpenAI's own API wants ``max_completion_tokens`` (reasoning
    models refuse ``max_tokens``); most other servers read ``max_tokens``. The default picks
    the first without a ``base_url`` and the second with one. ``environment_proxy=False``
    ignores ``$HTTP(S)_PROXY`` (for a server in this very process).
    """

    kind = "openai"
    #: ``complete`` takes ``response_format`` (structured output)
    response_formats = True

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 timeout: float | None = 120.0, max_retries: int = 5, *,
                 retry: RetrySchedule | None = None, temperature: float | None = None,
                 max_tokens_parameter: str | None = None,
                 extra_body: dict[str, Any] | None = None, seed: int | None = None,
                 sleep: Callable[[float], None] = time.sleep, environment_proxy: bool = True):
        import openai

        if not isinstance(model, str) or not model.strip():
            raise HeuresisError(f"model must be a non-empty model name, got {model!r}")
        connection = resolve_connection(self.kind, base_url, api_key)
        parameters = ("max_tokens", "max_completion_tokens")
        if max_tokens_parameter is None:
            max_tokens_parameter = ("max_completion_tokens" if connection.base_url is None
                                    else "max_tokens")
        if max_tokens_parameter not in parameters:
            raise UnknownNameError("max-tokens parameter", max_tokens_parameter, parameters)
        self.model = model
        self.base_url = connection.base_url
        self.timeout = _check_timeout(timeout)
        self.schedule = retry if retry is not None else RetrySchedule(max_retries=max_retries)
        self.temperature = temperature
        self.max_tokens_parameter = max_tokens_parameter
        self.extra_body = dict(extra_body or {})
        self._rng = np.random.default_rng(seed)
        self._sleep = sleep
        self._openai = openai
        # a server of this very process (the heuristic stand-in, a local model) is reached
        # directly, never through $HTTP(S)_PROXY: a proxy — the endpoint proxy of a confined
        # policy, a user's own — lives outside the process and cannot reach its loopback
        http_client = None if environment_proxy else openai.DefaultHttpxClient(trust_env=False)
        self.client = openai.OpenAI(api_key=connection.api_key, base_url=connection.base_url,
                                    timeout=self.timeout, max_retries=0,
                                    http_client=http_client)

    def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
                 max_tokens: int, *, deadline: float | None = None,
                 response_format: dict[str, Any] | None = None) -> ChatReply:
        """One call; ``response_format`` asks for structured output (a JSON schema)."""
        request: dict[str, Any] = {"model": self.model, "messages": _openai_messages(messages),
                                   self.max_tokens_parameter: _check_max_tokens(max_tokens)}
        if tools:
            request["tools"] = list(tools)
        if response_format is not None:
            request["response_format"] = response_format
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.extra_body:
            request["extra_body"] = self.extra_body

        return self._call(self.client.chat.completions.create, request, deadline, self._openai)

    def _reply(self, response: Any) -> ChatReply:
        raw = response.model_dump(mode="json", exclude_unset=True)
        if not response.choices:
            raise BackendError(f"the server returned no choices: {json.dumps(raw)[:500]}")
        choice = response.choices[0]
        message = choice.message
        extra = message.model_extra or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning") or ""
        if not isinstance(reasoning, str):
            reasoning = json.dumps(reasoning)
        text, tagged = split_reasoning(message.content or "")
        reasoning = "\n".join(part for part in (reasoning, tagged) if part)
        calls = []
        for index, call in enumerate(message.tool_calls or []):
            function = getattr(call, "function", None)
            if function is None:  # a custom (non-function) tool call: not ours
                continue
            arguments = function.arguments
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            calls.append(ToolCall(call.id or f"call_{index}", function.name or "", arguments))
        usage: dict[str, int] = {}
        if response.usage is not None:
            usage = {"prompt": _usage_number(response.usage.prompt_tokens),
                     "completion": _usage_number(response.usage.completion_tokens)}
            prompt_details = getattr(response.usage, "prompt_tokens_details", None)
            if prompt_details is not None and getattr(prompt_details, "cached_tokens", None):
                usage["cached_prompt"] = _usage_number(prompt_details.cached_tokens)
            completion_details = getattr(response.usage, "completion_tokens_details", None)
            if completion_details is not None and getattr(completion_details,
                                                          "reasoning_tokens", None):
                usage["reasoning"] = _usage_number(completion_details.reasoning_tokens)
        return ChatReply(text=text, tool_calls=calls, reasoning=reasoning, usage=usage, raw=raw,
                         model=response.model or self.model, finish_reason=choice.finish_reason)

    def close(self) -> None:
        self.client.close()


# ---- Anthropic messages ------------------------------------------------------------------------

_ANTHROPIC_BLOCK_KEYS = {"text": ("type", "text"), "thinking": ("type", "thinking", "signature"),
                         "redacted_thinking": ("type", "data"),
                         "tool_use": ("type", "id", "name", "input")}


def _known_block_keys(block: dict[str, Any]) -> dict[str, Any]:
    """A content block with only the keys the API accepts back (unknown block types: all)."""
    keys = _ANTHROPIC_BLOCK_KEYS.get(block.get("type"))
    return {k: v for k, v in block.items() if keys is None or k in keys}


def anthropic_tools(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style function schemas as Anthropic tool definitions."""
    out = []
    for tool in tools:
        function = tool.get("function", tool)
        out.append({"name": function["name"], "description": function.get("description", ""),
                    "input_schema": function.get("parameters")
                    or function.get("input_schema") or {"type": "object", "properties": {}}})
    return out


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {"unparsed_arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def anthropic_messages(messages: Sequence[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Our messages as Anthropic's (system text, messages): tool results become ``tool_result``
    blocks of a user turn, and consecutive turns of one role are merged, as the API requires."""
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        role, content = message["role"], message.get("content")
        if role == "system":
            if content:
                system_parts.append(str(content))
        elif role == "user":
            push("user", [{"type": "text", "text": str(content)}] if content else [])
        elif role == "tool":
            push("user", [{"type": "tool_result", "tool_use_id": message["tool_call_id"],
                           "content": str(content) if content else "(no output)"}])
        elif role == "assistant":
            if message.get("provider_content") is not None:
                blocks = [_known_block_keys(block) for block in message["provider_content"]]
            else:
                blocks = [{"type": "text", "text": str(content)}] if content else []
                for call in message.get("tool_calls") or []:
                    function = call["function"]
                    blocks.append({"type": "tool_use", "id": call["id"],
                                   "name": function["name"],
                                   "input": _tool_input(function.get("arguments") or "")})
            push("assistant", blocks)
        else:
            raise HeuresisError(f"unknown message role {role!r}; roles: system, user, "
                                "assistant, tool")
    return "\n\n".join(system_parts), out


class AnthropicBackend(_SDKBackend):
    """Anthropic's messages API through the ``anthropic`` SDK, with native tool use.

    ``thinking_budget`` turns on extended thinking with that many tokens (it must be below the
    per-turn token budget); thinking blocks are recorded as reasoning and sent back verbatim.
    """

    kind = "anthropic"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 timeout: float | None = 120.0, max_retries: int = 5, *,
                 retry: RetrySchedule | None = None, temperature: float | None = None,
                 thinking_budget: int | None = None, seed: int | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        import anthropic

        if not isinstance(model, str) or not model.strip():
            raise HeuresisError(f"model must be a non-empty model name, got {model!r}")
        if thinking_budget is not None and (isinstance(thinking_budget, bool) or not isinstance(
                thinking_budget, int) or thinking_budget < 1024):
            raise HeuresisError(f"thinking_budget must be an integer ≥ 1024 (Anthropic's "
                                f"minimum) or None, got {thinking_budget!r}")
        connection = resolve_connection(self.kind, base_url, api_key)
        self.model = model
        self.base_url = connection.base_url
        self.timeout = _check_timeout(timeout)
        self.schedule = retry if retry is not None else RetrySchedule(max_retries=max_retries)
        self.temperature = temperature
        self.thinking_budget = thinking_budget
        self._rng = np.random.default_rng(seed)
        self._sleep = sleep
        self._anthropic = anthropic
        self.client = anthropic.Anthropic(api_key=connection.api_key,
                                          base_url=connection.base_url, timeout=self.timeout,
                                          max_retries=0)

    def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
                 max_tokens: int, *, deadline: float | None = None) -> ChatReply:
        system, converted = anthropic_messages(messages)
        request: dict[str, Any] = {"model": self.model, "messages": converted,
                                   "max_tokens": _check_max_tokens(max_tokens)}
        if system:
            request["system"] = system
        if tools:
            request["tools"] = anthropic_tools(tools)
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.thinking_budget is not None:
            if self.thinking_budget >= request["max_tokens"]:
                raise HeuresisError(f"thinking_budget ({self.thinking_budget}) must be below "
                                    f"the per-turn token budget ({request['max_tokens']})")
            request["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}

        return self._call(self.client.messages.create, request, deadline, self._anthropic)

    def _reply(self, response: Any) -> ChatReply:
        raw = response.model_dump(mode="json", exclude_none=True)
        texts, reasoning, calls, blocks = [], [], [], []
        for block in raw.get("content", []):
            kind = block.get("type")
            blocks.append(_known_block_keys(block))
            if kind == "text":
                texts.append(block.get("text", ""))
            elif kind == "thinking":
                reasoning.append(block.get("thinking", ""))
            elif kind == "redacted_thinking":
                reasoning.append("[redacted thinking]")
            elif kind == "tool_use":
                calls.append(ToolCall(block["id"], block["name"],
                                      json.dumps(block.get("input", {}))))
        usage_raw = raw.get("usage") or {}
        prompt = (_usage_number(usage_raw.get("input_tokens"))
                  + _usage_number(usage_raw.get("cache_read_input_tokens"))
                  + _usage_number(usage_raw.get("cache_creation_input_tokens")))
        usage = {"prompt": prompt, "completion": _usage_number(usage_raw.get("output_tokens"))}
        if usage_raw.get("cache_read_input_tokens"):
            usage["cached_prompt"] = _usage_number(usage_raw["cache_read_input_tokens"])
        text, tagged = split_reasoning("\n".join(t for t in texts if t))
        if tagged:
            reasoning.append(tagged)
        return ChatReply(text=text, tool_calls=calls, reasoning="\n".join(reasoning),
                         usage=usage, raw=raw, model=raw.get("model") or self.model,
                         finish_reason=raw.get("stop_reason"), provider_content=blocks)

    def close(self) -> None:
        self.client.close()


# ---- replay -----------------------------------------------------------------------------------

def _as_reply(item: ChatReply | dict[str, Any] | str) -> ChatReply:
    if isinstance(item, ChatReply):
        return copy.deepcopy(item)
    if isinstance(item, str):
        return ChatReply(text=item)
    if isinstance(item, dict):
        calls = []
        for index, call in enumerate(item.get("tool_calls") or []):
            if isinstance(call, ToolCall):
                calls.append(call)
                continue
            function = call.get("function", call)
            arguments = function.get("arguments", function.get("args", {}))
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            calls.append(ToolCall(call.get("id") or f"call_{index}", function["name"],
                                  arguments))
        return ChatReply(text=item.get("text") or "", tool_calls=calls,
                         reasoning=item.get("reasoning") or "",
                         usage=dict(item.get("usage") or {}), raw=item.get("raw"),
                         model=item.get("model") or "", finish_reason=item.get("finish_reason"),
                         api_retries=int(item.get("api_retries") or 0))
    raise HeuresisError(f"a replayed reply is a ChatReply, a dict or a string, "
                        f"got {type(item).__name__}")


class ReplayBackend:
    """Serve recorded replies in order, for unit tests and for re-running a transcript.

    Items are :class:`ChatReply` objects, dicts in :meth:`ChatReply.to_dict` form, strings
    (a text reply) or exceptions (raised by that call, to test error handling). Every request
    is kept in ``requests``.
    """

    kind = "replay"

    def __init__(self, replies: Sequence[ChatReply | dict[str, Any] | str | BaseException],
                 model: str = "replay"):
        self.model = model
        self._replies = list(replies)
        self._position = 0
        self.requests: list[dict[str, Any]] = []

    @classmethod
    def from_transcript(cls, transcript: Sequence[dict[str, Any]],
                        model: str | None = None) -> ReplayBackend:
        """The replies of a transcript of :class:`~agents.llm.policy.LLMPolicy`, in order;
        a failed call is replayed as the same failure, so the policy takes the same path."""
        replies: list[Any] = []
        for event in transcript:
            if event.get("event") == "model_call" and event.get("reply") is not None:
                replies.append(event["reply"])
            elif event.get("event") == "model_call_failed":
                kind = (DeadlineExceeded if event.get("error_type") == "DeadlineExceeded"
                        else BackendError)
                replies.append(kind(str(event.get("error", "")), status=event.get("status"),
                                    attempts=int(event.get("attempts") or 1),
                                    fatal=bool(event.get("fatal"))))
        recorded = next((e.get("model") for e in transcript if e.get("event") == "episode"),
                        None)
        return cls(replies, model=model or recorded or "replay")

    @property
    def remaining(self) -> int:
        return len(self._replies) - self._position

    def complete(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
                 max_tokens: int, *, deadline: float | None = None) -> ChatReply:
        self.requests.append({"messages": copy.deepcopy(list(messages)),
                              "tools": None if tools is None else list(tools),
                              "max_tokens": _check_max_tokens(max_tokens), "deadline": deadline})
        if self._position >= len(self._replies):
            raise BackendError(f"the replay has no reply left (it served {len(self._replies)})")
        item = self._replies[self._position]
        self._position += 1
        if isinstance(item, BaseException):
            raise item
        reply = _as_reply(item)
        reply.model = reply.model or self.model
        return reply

    def close(self) -> None:
        """Nothing to release."""
