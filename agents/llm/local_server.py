"""A real model behind the loopback chat server: :class:`LocalModelResponder` answers the
requests of :class:`~agents.llm.server.ChatServer` with :class:`~agents.llm.local_models.
LocalModel`, so the OpenAI- and Anthropic-compatible API the heuristic stand-in speaks is
served by real inference on CPU (``heuresis llm-server --model smollm2-135m``, the ``llm``
policy's ``backend=local``).

What a request asks for, and what the server does with it:

- **the conversation**: rendered by the model's chat template; tool results become user turns
  (``Observation: ...``) and earlier tool calls the JSON actions they were, since these models
  have no tool-calling format of their own;
- **tools** (native function calling): their names, descriptions and argument schemas are
  listed in the system prompt with the instruction to answer with one JSON object
  ``{"tool": NAME, "args": {...}}``; a reply holding such an object for an offered tool is
  returned as a tool call (the text before it as the message's content);
- ``response_format`` ``json_schema`` (or ``json_object``), and ``tool_choice: "required"``:
  **constrained decoding** — every token outside the schema is masked;
- ``max_tokens`` / ``max_completion_tokens``: the reply's budget (``finish_reason: "length"``
  when it cuts the reply); a prompt plus budget over the model's context is refused with 400,
  as the hosted services do;
- ``temperature`` (0 or absent: greedy) and ``seed``;
- **usage**: prompt and completion tokens by the model's tokenizer, and the prompt tokens whose
  keys and values were reused from an earlier request (``cached_tokens``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from agents.llm.local_models import LocalModel
from agents.llm.parsing import action_schema, find_json_action
from agents.llm.server import ChatRequest, ChatServer, ScriptedReply, http_error
from heuresis_env.errors import HeuresisError

__all__ = ["DEFAULT_MAX_TOKENS", "LocalModelResponder", "ServerProcess", "local_chat_server",
           "tools_prompt"]

#: the reply budget of a request that names none
DEFAULT_MAX_TOKENS = 512
#: a tool's description is cut to its first sentence in the prompt (small contexts)
_DESCRIPTION_CHARACTERS = 160


def tools_prompt(tools: Sequence[Mapping[str, Any]]) -> str:
    """The offered tools as the model reads them: one line each, its arguments' schema."""
    lines = ["Tools. Take one action by replying with one JSON object "
             '{"tool": NAME, "args": {...}} and nothing after it:']
    for tool in tools:
        function = tool.get("function", tool)
        description = str(function.get("description") or "").split(". ")[0]
        parameters = function.get("parameters") or function.get("input_schema") or {}
        arguments = {name: _brief(schema) for name, schema in
                     (parameters.get("properties") or {}).items()}
        lines.append(f"- {function.get('name')}: {description[:_DESCRIPTION_CHARACTERS]}; "
                     f"args {json.dumps(arguments, separators=(',', ':'))}")
    return "\n".join(lines)


def _brief(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type") or ("enum" if "enum" in schema else "any")
    if "enum" in schema:
        return "|".join(str(v) for v in schema["enum"])
    if kind == "array":
        return f"[{_brief(schema.get('items') or {})}]"
    return str(kind if not isinstance(kind, list) else "|".join(map(str, kind)))


class LocalModelResponder:
    """Answers a :class:`~agents.llm.server.ChatRequest` with a local model (module
    docstring). ``model`` is a :class:`LocalModel` or a callable that loads one (called once,
    on the first request, e.g. to start serving while the weights load)."""

    def __init__(self, model: LocalModel | Any):
        self._model = model if isinstance(model, LocalModel) else None
        self._load = None if isinstance(model, LocalModel) else model
        self._loading = threading.Lock()

    @property
    def model(self) -> LocalModel:
        with self._loading:
            if self._model is None:
                self._model = self._load()
        return self._model

    def __call__(self, request: ChatRequest) -> ScriptedReply:
        model = self.model
        body = request.body
        tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
        messages = _conversation(request.messages, tools)
        prompt = model.render(messages)
        budget = int(request.max_tokens or DEFAULT_MAX_TOKENS)
        if len(prompt) + budget > model.spec.context:
            return http_error(400, f"this model's context is {model.spec.context} tokens; the "
                                   f"messages are {len(prompt)} tokens and max_tokens "
                                   f"{budget}: shorten the conversation or the budget")
        schema = _requested_schema(body, tools)
        generation = model.generate(
            prompt, budget, schema=schema, temperature=float(body.get("temperature") or 0.0),
            seed=int(body.get("seed") or 0), cancelled=request.disconnected)
        text: str | None = generation.text
        calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
        if tools and text:
            action, _ = find_json_action(text)
            offered = {t.get("function", t).get("name") for t in tools}
            if action is not None and action.get("tool") in offered:
                calls = ((str(action["tool"]), action.get("args") or {}),)
                starts = [i for i in (text.find("```"), text.find("{")) if i >= 0]
                text = text[:min(starts)].strip() or None if starts else None
        finish = "length" if generation.finish_reason in ("length", "time") else None
        return ScriptedReply(text=text, tool_calls=calls,
                             usage=(generation.prompt_tokens, generation.completion_tokens),
                             finish_reason=finish, cached_tokens=generation.cached_tokens)


def _requested_schema(body: Mapping[str, Any], tools: Sequence[Mapping[str, Any]]
                      ) -> dict[str, Any] | None:
    """The schema a request constrains its reply to, if any (module docstring)."""
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping):
        if response_format.get("type") == "json_schema":
            wrapper = response_format.get("json_schema") or {}
            schema = wrapper.get("schema") if isinstance(wrapper, Mapping) else None
            if isinstance(schema, Mapping):
                return dict(schema)
        if response_format.get("type") == "json_object":
            return {"type": "object"}
    if tools and body.get("tool_choice") == "required":
        return action_schema(tools)
    return None


def _conversation(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
                  ) -> list[dict[str, str]]:
    """The request's messages as plain chat turns (module docstring)."""
    turns: list[dict[str, str]] = []
    listing = tools_prompt(tools) if tools else None
    for message in messages:
        role, content = message.get("role"), str(message.get("content") or "")
        if role == "assistant":
            actions = []
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = function.get("arguments")
                actions.append(json.dumps({"tool": function.get("name"), "args": arguments}))
            turns.append({"role": "assistant",
                          "content": "\n".join(part for part in (content, *actions) if part)})
        elif role == "tool":
            turns.append({"role": "user", "content": f"Observation:\n{content}"})
        elif role == "system":
            turns.append({"role": "system", "content": content})
        else:
            turns.append({"role": "user", "content": content})
    if listing is not None:
        if turns and turns[0]["role"] == "system":
            turns[0]["content"] += "\n\n" + listing
        else:
            turns.insert(0, {"role": "system", "content": listing})
    return turns


def local_chat_server(model: str, *, model_dir: str | None = None, threads: int | None = None,
                      port: int = 0, cache_slots: int = 3, max_batch: int = 32) -> ChatServer:
    """A loopback chat server answering with the local model ``model`` (loaded before it
    returns, so the first request pays nothing for it). Concurrent requests are decoded as
    one batch (up to ``max_batch``); ``cache_slots`` conversations keep their key/value
    cache for the next turn."""
    engine = LocalModel(model, model_dir, threads=threads, cache_slots=cache_slots,
                        max_batch=max_batch)
    server = ChatServer(responder=LocalModelResponder(engine), model=engine.name, port=port)
    server.on_close.append(engine.close)
    return server


class ServerProcess:
    """``heuresis llm-server --model NAME`` in a process of its own (the comparison's shared
    server: every episode worker's policy talks to it, so the model is loaded once and
    concurrent episodes are decoded as one batch). :attr:`url` is its OpenAI base URL once
    it serves; :meth:`close` stops it."""

    def __init__(self, model: str, *, model_dir: str | None = None, port: int = 0,
                 threads: int = 1, cache_slots: int = 3, max_batch: int = 32,
                 timeout: float = 600.0):
        import os
        import re
        import subprocess
        import sys

        command = [sys.executable, "-m", "heuresis_env.cli", "llm-server", "--model", model,
                   "--port", str(port), "--threads", str(threads),
                   "--cache-slots", str(cache_slots), "--max-batch", str(max_batch)]
        if model_dir is not None:
            command += ["--model-dir", str(model_dir)]
        self.model = model
        # tensors of a megabyte or more are returned to the system when freed: the batch's
        # buffers are rebuilt often, and glibc's heap would otherwise keep gigabytes
        environment = {"MALLOC_MMAP_THRESHOLD_": str(1 << 20), **os.environ}
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True,
                                        env=environment)
        self.url: str = ""
        found = threading.Event()
        lines: list[str] = []

        def read() -> None:  # the announcement, then drain the pipe so the server never blocks
            assert self.process.stdout is not None
            for line in self.process.stdout:
                lines.append(line)
                match = re.search(r"HEURESIS_LLM_BASE_URL=(\S+)", line)
                if match and not found.is_set():
                    self.url = match.group(1)
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(timeout) or not self.url:
            self.close()
            raise HeuresisError(f"heuresis llm-server --model {model} did not start (exit "
                                f"code {self.process.poll()}): {''.join(lines)[-500:]}")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except Exception:  # noqa: BLE001 - it would not stop: end it
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
