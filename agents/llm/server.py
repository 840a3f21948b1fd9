"""A real chat server on 127.0.0.1 for tests and examples: scripted replies, or a heuristic model.

:class:`ChatServer` runs the standard library's ``http.server`` in a thread on a free loopback
port and speaks two protocols: OpenAI's ``POST /v1/chat/completions`` (and ``GET /v1/models``)
and Anthropic's ``POST /v1/messages``. The official SDKs talk to it as to the real services,
so tests exercise the exact client code a benchmark run uses.

Replies come from a **script** (:class:`ScriptedReply` items served in order: well-formed tool
calls, malformed JSON, prose with an embedded action, HTTP errors with ``Retry-After``,
delays past the client's time-out) or from a **responder** called with each request — such as
:class:`~agents.llm.heuristic_model.HeuristicModel`, a deterministic stand-in for a language model that plays a reasonable
strategy (PC-KCI, PC-Fisher-z, kernel CI tests on the pairs they disagree on, submit), so an
LLM-shaped policy runs end to end with no key and no network.

Like the real services, the server refuses malformed conversations with HTTP 400 (a tool call
left unanswered, a tool result with no call, Anthropic's role alternation), so a bookkeeping
bug in a client fails loudly in tests.
"""

from __future__ import annotations

import json
import math
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from heuresis_env.errors import HeuresisError

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
MODELS_PATH = "/v1/models"
#: the heuristic model's name (priced at zero in prices.json)
HEURISTIC_MODEL_NAME = "heuresis-heuristic"


# ---- scripted replies -------------------------------------------------------------------------

@dataclass(frozen=True)
class ScriptedReply:
    """One reply of the server: text and/or tool calls, or an HTTP error; optionally late.

    ``tool_calls`` are (name, arguments) pairs; arguments given as a string are sent as they
    are (so malformed JSON reaches the client). ``usage`` = (prompt, completion) tokens; by
    default the server counts about four characters a token (a real model's responder,
    :mod:`agents.llm.local_server`, gives its tokenizer's counts, the cached prompt tokens and
    the finish reason).
    """

    text: str | None = None
    tool_calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    reasoning: str | None = None
    status: int = 200
    error: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    usage: tuple[int, int] | None = None
    #: why the reply ended ("stop", "length", ...; default: "tool_calls" or "stop")
    finish_reason: str | None = None
    #: prompt tokens served from a cache (reported as OpenAI's ``cached_tokens``)
    cached_tokens: int = 0


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, *,
              text: str | None = None, reasoning: str | None = None) -> ScriptedReply:
    """A reply calling one tool (``arguments`` as a dict, or a raw string)."""
    return ScriptedReply(text=text, tool_calls=((name, {} if arguments is None else arguments),),
                         reasoning=reasoning)


def text_reply(text: str, *, reasoning: str | None = None) -> ScriptedReply:
    """A plain-text reply."""
    return ScriptedReply(text=text, reasoning=reasoning)


def http_error(status: int, message: str | None = None,
               retry_after: float | None = None) -> ScriptedReply:
    """An HTTP error response (429 with ``Retry-After``, 500, 503, ...)."""
    return ScriptedReply(status=status, error=message or HTTPStatus(status).phrase,
                         retry_after=retry_after)


def delayed(seconds: float, reply: ScriptedReply) -> ScriptedReply:
    """The same reply, sent only after ``seconds`` (to outlast a client's time-out)."""
    return replace(reply, delay=float(seconds))


# ---- requests as a responder sees them ------------------------------------------------------

@dataclass
class ChatRequest:
    """A request normalized across both protocols: our message format, offered tool names."""

    api: str
    model: str
    messages: list[dict[str, Any]]
    tools: list[str]
    max_tokens: int | None
    body: dict[str, Any]
    #: True once the client has closed its connection (gave up waiting): a responder that
    #: computes for long stops then, as a real server does
    disconnected: Callable[[], bool] = lambda: False


@dataclass
class RecordedRequest:
    """A request as it arrived, and the status the server answered."""

    api: str
    path: str
    body: Any
    headers: dict[str, str]
    received: float
    status: int = 0
    usage: tuple[int, int] | None = None


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and part.get("type") in ("text", None))
    return str(content)


def _normalize_openai(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = []
    for message in body.get("messages", []):
        item = {"role": message.get("role"), "content": _text_of(message.get("content"))}
        if message.get("tool_calls"):
            item["tool_calls"] = message["tool_calls"]
        if message.get("tool_call_id"):
            item["tool_call_id"] = message["tool_call_id"]
        messages.append(item)
    return messages


def _normalize_anthropic(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": _text_of(system)})
    for message in body.get("messages", []):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if message.get("role") == "assistant":
            texts, calls = [], []
            for block in blocks:
                if block.get("type") == "text":
                    texts.append(block.get("text", ""))
                elif block.get("type") == "tool_use":
                    calls.append({"id": block.get("id"), "type": "function", "function": {
                        "name": block.get("name"), "arguments": json.dumps(block.get("input"))}})
            item: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
            if calls:
                item["tool_calls"] = calls
            messages.append(item)
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                messages.append({"role": "tool", "tool_call_id": block.get("tool_use_id"),
                                 "content": _text_of(block.get("content"))})
            elif block.get("type") == "text":
                messages.append({"role": "user", "content": block.get("text", "")})
    return messages


def _openai_problem(body: Any) -> str | None:
    """What the real chat-completions API would refuse in this request, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "the request needs a 'model'"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list"
    for key in ("max_tokens", "max_completion_tokens"):
        if key in body and (not isinstance(body[key], int) or body[key] < 1):
            return f"'{key}' must be a positive integer"
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or "name" not in tool.get("function", {}):
            return "every tool must be {'type': 'function', 'function': {'name': ...}}"
    expected: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool", "developer"):
            return f"messages[{index}]: unknown role {role!r}"
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in expected:
                return (f"messages[{index}]: messages with role 'tool' must be a response to a "
                        f"preceding message with 'tool_calls' (no call {call_id!r})")
            expected.discard(call_id)
            continue
        if expected:
            return (f"messages[{index}]: an assistant message with 'tool_calls' must be "
                    f"followed by tool messages responding to each 'tool_call_id' "
                    f"(missing: {sorted(expected)})")
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if message.get("content") is None and not calls:
                return f"messages[{index}]: an assistant message needs content or tool_calls"
            expected = {call.get("id") for call in calls}
        elif not isinstance(message.get("content"), str | list):
            return f"messages[{index}]: content must be a string or a list of parts"
    if expected:
        return f"the last assistant message's tool calls {sorted(expected)} have no responses"
    return None


def _anthropic_problem(body: Any) -> str | None:
    """What the real messages API would refuse in this request, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "model: field required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: field required (a positive integer)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: the first message must use the 'user' role"
    uses_tools = False
    pending: set[str] = set()
    previous = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{index}.role: must be 'user' or 'assistant'"
        if role == previous:
            return f"messages.{index}: roles must alternate between 'user' and 'assistant'"
        previous = role
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            return f"messages.{index}: content must be a non-empty string or list of blocks"
        answered = set()
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and not block.get("text"):
                return f"messages.{index}: text content blocks must be non-empty"
            if kind == "tool_use":
                uses_tools = True
                if role != "assistant":
                    return f"messages.{index}: tool_use blocks belong to assistant messages"
            if kind == "tool_result":
                uses_tools = True
                if block.get("tool_use_id") not in pending:
                    return (f"messages.{index}: unexpected tool_use_id "
                            f"{block.get('tool_use_id')!r} in tool_result blocks")
                answered.add(block["tool_use_id"])
        if role == "user" and pending - answered:
            return (f"messages.{index}: tool_use ids were found without tool_result blocks "
                    f"immediately after: {sorted(pending - answered)}")
        pending = ({b.get("id") for b in blocks if b.get("type") == "tool_use"}
                   if role == "assistant" else set())
    if uses_tools and not body.get("tools"):
        return "requests that include tool_use or tool_result blocks must define tools"
    return None


def _approximate_tokens(*texts: str) -> int:
    return max(1, math.ceil(sum(len(t) for t in texts) / 4))


# ---- the server ----------------------------------------------------------------------------

class _QuietServer(ThreadingHTTPServer):
    """The HTTP server, with a client that hangs up mid-request not reported as an error: a
    policy whose time is up closes its connection (the generation then stops), which is
    normal; socketserver would print a traceback for each on stderr."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class ChatServer:
    """A loopback chat server (OpenAI ``/v1/chat/completions``, Anthropic ``/v1/messages``).

    ``url`` is the OpenAI-style base URL (``http://127.0.0.1:PORT/v1``), ``root_url`` the
    Anthropic one. Replies come from the script, then from ``responder`` when the script is
    empty; with neither, the server answers 400 "no reply left". ``requests`` records every
    request; use it as a context manager or call :meth:`close`. ``port`` 0 (default) takes a
    free port; ``heuresis llm-server --port P`` serves :class:`~agents.llm.heuristic_model.HeuristicModel` on a fixed one.
    """

    def __init__(self, script: Iterable[ScriptedReply] = (), *,
                 responder: Callable[[ChatRequest], ScriptedReply] | None = None,
                 model: str = "scripted", validate: bool = True, port: int = 0):
        self.model = model
        self.responder = responder
        self.validate = validate
        self.requests: list[RecordedRequest] = []
        self._script: deque[ScriptedReply] = deque(script)
        self._lock = threading.Lock()
        #: called when the server closes (what it owns: a local model's decoder thread)
        self.on_close: list[Callable[[], Any]] = []
        self._stopping = threading.Event()
        self._counter = 0
        handler = type("ChatHandler", (_ChatHandler,), {"chat_server": self})
        try:  # port 0: a free port chosen by the system
            self._httpd = _QuietServer(("127.0.0.1", int(port)), handler)
        except OSError as exc:
            raise HeuresisError(f"the chat server cannot listen on 127.0.0.1:{port} "
                                f"({exc.strerror or exc}); choose another port") from None
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True,
                                        name="heuresis-chat-server")
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.root_url}/v1"

    def add(self, *replies: ScriptedReply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def served_usage(self) -> tuple[int, int]:
        """Total (prompt, completion) tokens the server reported in successful replies."""
        with self._lock:
            used = [r.usage for r in self.requests if r.usage is not None]
        return sum(u[0] for u in used), sum(u[1] for u in used)

    def close(self) -> None:
        """Stop serving (wakes delayed replies so no thread lingers)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
        for release in self.on_close:
            release()

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # ---- request handling (called from the handler threads) ------------------------------------
    def _next_reply(self, request: ChatRequest) -> ScriptedReply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(request)
        return http_error(400, "the scripted server has no reply left")

    def _handle(self, api: str, path: str, body: Any, headers: dict[str, str],
                disconnected: Callable[[], bool] | None = None
                ) -> tuple[int, dict[str, str], dict[str, Any]]:
        record = RecordedRequest(api, path, body, headers, time.monotonic())
        with self._lock:
            self.requests.append(record)
            self._counter += 1
            number = self._counter
        problem = None
        if self.validate:
            problem = _openai_problem(body) if api == "openai" else _anthropic_problem(body)
        if problem is not None:
            record.status = 400
            return 400, {}, _error_body(api, 400, problem)
        normalized = (_normalize_openai(body) if api == "openai" else _normalize_anthropic(body))
        tools = [t.get("function", t).get("name") for t in body.get("tools") or []]
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        request = ChatRequest(api, body.get("model", ""), normalized, tools, max_tokens, body)
        if disconnected is not None:
            request.disconnected = disconnected
        try:
            reply = self._next_reply(request)
        except Exception as exc:  # noqa: BLE001 - a responder bug is a 500, as on a real server
            record.status = 500
            return 500, {}, _error_body(api, 500, f"responder failed: {type(exc).__name__}: "
                                                  f"{exc}")
        if reply.delay > 0 and self._stopping.wait(reply.delay):
            record.status = 503
            return 503, {}, _error_body(api, 503, "the server is shutting down")
        if reply.status != 200:
            record.status = reply.status
            extra = {} if reply.retry_after is None else {"retry-after": f"{reply.retry_after:g}"}
            return reply.status, extra, _error_body(api, reply.status, reply.error or "error")
        calls = [(name, args if isinstance(args, str) else json.dumps(args))
                 for name, args in reply.tool_calls]
        usage = reply.usage or (
            _approximate_tokens(json.dumps(body.get("messages", [])), json.dumps(body.get(
                "tools", [])), json.dumps(body.get("system", ""))),
            _approximate_tokens(reply.text or "", reply.reasoning or "",
                                *(name + args for name, args in calls)))
        record.status, record.usage = 200, usage
        model = body.get("model") or self.model
        if api == "openai":
            return 200, {}, _openai_body(number, model, reply, calls, usage)
        return 200, {}, _anthropic_body(number, model, reply, calls, usage)


def _error_body(api: str, status: int, message: str) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
             429: "rate_limit_error", 500: "api_error", 503: "api_error", 529: "overloaded_error"}
    kind = kinds.get(status, "api_error")
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": str(status)}}


def _openai_body(number: int, model: str, reply: ScriptedReply, calls: list[tuple[str, str]],
                 usage: tuple[int, int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant",
                               "content": reply.text if (reply.text or not calls) else None}
    if reply.text is None and not calls:
        message["content"] = ""
    if calls:
        message["tool_calls"] = [{"id": f"call_{number}_{k}", "type": "function",
                                  "function": {"name": name, "arguments": arguments}}
                                 for k, (name, arguments) in enumerate(calls)]
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    return {"id": f"chatcmpl-{number}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason":
                                         reply.finish_reason or ("tool_calls" if calls
                                                                 else "stop")}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                      "total_tokens": usage[0] + usage[1],
                      **({"prompt_tokens_details": {"cached_tokens": reply.cached_tokens}}
                         if reply.cached_tokens else {})}}


def _anthropic_body(number: int, model: str, reply: ScriptedReply, calls: list[tuple[str, str]],
                    usage: tuple[int, int]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning:
        content.append({"type": "thinking", "thinking": reply.reasoning,
                        "signature": f"scripted-signature-{number}"})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for k, (name, arguments) in enumerate(calls):
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError:
            value = {"unparsed_arguments": arguments}
        content.append({"type": "tool_use", "id": f"toolu_{number}_{k}", "name": name,
                        "input": value if isinstance(value, dict) else {"value": value}})
    return {"id": f"msg_{number}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": ("max_tokens" if reply.finish_reason == "length"
                                                else "tool_use" if calls else "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0] - reply.cached_tokens, "output_tokens": usage[1],
                      **({"cache_read_input_tokens": reply.cached_tokens}
                         if reply.cached_tokens else {})}}


class _ChatHandler(BaseHTTPRequestHandler):
    chat_server: ChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        """No logging to stderr."""

    def _send(self, status: int, headers: dict[str, str], payload: Any) -> None:
        data = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            pass  # the client gave up (time-out) before the reply: as a real server sees it

    def _client_gone(self) -> bool:
        """True when the client closed the connection (its end reads as end-of-file)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.rstrip("/") == MODELS_PATH:
            server = self.chat_server
            self._send(200, {}, {"object": "list", "data": [
                {"id": server.model, "object": "model", "owned_by": "heuresis"}]})
        else:
            self._send(404, {}, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0].rstrip("/")
        api = {OPENAI_PATH: "openai", ANTHROPIC_PATH: "anthropic"}.get(path)
        if api is None:
            self._send(404, {}, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw.decode("utf-8") or "null")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self._send(400, {}, _error_body(api, 400, f"the body is not JSON: {exc}"))
            return
        status, headers, payload = self.chat_server._handle(
            api, path, body, dict(self.headers.items()), self._client_gone)
        self._send(status, headers, payload)
