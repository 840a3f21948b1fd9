"""The toolbox of one Heuresis episode as a Model Context Protocol server.

:class:`EpisodeServer` holds one :class:`~heuresis_env.env.HeuresisEnv` (text view) and turns
each tool call into one ``env.step``: the same parser, budgets, error observations and trace
as any other harness. The tools and their JSON schemas are the registry's
(:func:`heuresis_env.env.tool_schemas`) for the episode's toolbox and condition, plus
``reset`` (start the next episode); ``submit`` is a registry tool. Nothing from the hidden
record is offered: a call returns the observation text, the tool's structured data and, once
the episode is over, its scores — on a development split only. On a sealed test split the end
of an episode returns no score (``heuresis score`` reads the traces after the session) and an
instance played once cannot be played again, so tool calls cannot probe the truth.

:func:`mcp_server` wraps it in the official ``mcp`` SDK's low-level server;
:func:`serve_stdio` and :func:`serve_http` (streamable HTTP on 127.0.0.1, every request carrying a bearer token) run it. The SDK is an
optional dependency (``pip install -e '.[mcp]'``), imported only there. See docs/mcp.md.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.budgets import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STEPS
from heuresis_env.env import HeuresisEnv
from heuresis_env.errors import HeuresisError
from heuresis_env.files import json_safe
from heuresis_env.generation.salts import sealing_salt
from heuresis_env.version import __version__

HOST = "127.0.0.1"
SERVER_NAME = "heuresis"
#: the server's own tool (every other tool is the registry's)
RESET_TOOL = "reset"
RESET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "index": {"type": "integer", "minimum": 0,
                  "description": "instance index of the split (default: drawn from the seed)"},
        "seed": {"type": "integer", "minimum": 0,
                 "description": "seed of the draw and of the episode (default: the next one)"},
    },
    "additionalProperties": False,
}
RESET_DESCRIPTION = ("End the current episode (scored as it stands when it is still running) and "
                     "start the next one; returns the task statement. Arguments: an optional "
                     "instance index and seed.")
_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
#: the structured content of a step's result (every registry tool)
STEP_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "step": {"type": "integer", "description": "steps used so far in the episode"},
        "steps_left": {"type": "integer", "description": "steps left in the budget"},
        "tool": {**_NULLABLE_STRING, "description": "the tool that ran (null: not parsed)"},
        "error": {**_NULLABLE_STRING, "description": "why the action was rejected, or null"},
        "data": {"type": ["object", "null"], "description": "the tool's structured result"},
        "episode_over": {"type": "boolean"},
        "termination_reason": {**_NULLABLE_STRING,
                               "description": "once the episode is over: submitted, "
                                              "step_budget, wall_time, aborted"},
        "submitted": {"type": "boolean"},
        "scores": {"type": "object",
                   "additionalProperties": {"type": ["number", "integer", "string", "boolean",
                                                     "null"]},
                   "description": "once the episode is over: adjacency F1, precision, recall, "
                                  "SHD, …; a score that is undefined (the precision of an "
                                  "empty graph) is null"},
    },
    "required": ["step", "steps_left", "tool", "error", "data", "episode_over"],
}
#: the structured content of ``reset``'s result
RESET_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "episode": {"type": "integer", "description": "episodes started by this server"},
        "instance_index": {"type": "integer"},
        "split": {"type": "string"},
        "names": {"type": "array", "items": {"type": "string"},
                  "description": "the column names"},
        "guided": {"type": "boolean"},
        "max_steps": {"type": "integer"},
        "max_seconds": {"type": ["number", "null"]},
        "seed": {"type": "integer"},
    },
    "required": ["episode", "instance_index", "split", "names", "guided", "max_steps",
                 "max_seconds", "seed"],
}
#: words written otherwise in a tool's title
_TITLE_WORDS = {"ci": "CI"}


def tool_title(name: str) -> str:
    """A tool's display title: ``ci_test`` → ``CI test``, ``run_algorithm`` → ``Run algorithm``."""
    words = [_TITLE_WORDS.get(word, word) for word in name.split("_")]
    first = words[0] if words[0] in _TITLE_WORDS.values() else words[0].capitalize()
    return " ".join([first, *words[1:]])


def tool_annotations(tool: Any) -> dict[str, bool]:
    """MCP's behaviour hints of a registry tool: a tool that neither edits the working graph,
    writes the graph memory nor ends the episode is read-only (every call still spends a
    step); a graph edit, a write to the memory (which replaces a saved graph of the same name)
    or the end of the episode is destructive; a tool without random draws that neither edits
    the graph nor ends the episode has the same effect when called again with the same
    arguments (a save stores the same graph under the same name); nothing reaches outside
    the server. An experiment (``intervene``) spends its budget and adds new rows each call:
    neither read-only nor idempotent, and not destructive (nothing is replaced)."""
    changes = bool(tool.edits_graph or tool.ends_episode or tool.writes_memory)
    return {"read_only_hint": not (changes or tool.experiments_only),
            "destructive_hint": changes,
            "idempotent_hint": not (tool.edits_graph or tool.ends_episode or tool.random
                                    or tool.experiments_only),
            "open_world_hint": False}


@dataclass
class ToolReply:
    """One tool call's answer: the text a model reads, structured data, and whether the call
    was rejected (an MCP error result)."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)
    is_error: bool = False


class EpisodeServer:
    """One episode at a time of a fixed configuration, driven by tool calls (thread-safe: calls
    run one after another)."""

    def __init__(self, *, family: str = "wild", split: str = "dev", guided: bool = False,
                 toolbox: str = "full", target: str = "none",
                 max_steps: int = DEFAULT_MAX_STEPS,
                 max_seconds: float | None = DEFAULT_MAX_SECONDS, d: int = 10, n: int = 600,
                 trace_dir: str | Path | None = None, index: int | None = None,
                 seed: int = 0, salt: str | None = None, experiments: int = 0):
        #: a sealed test split: no scores leave the server (not even in its trace files), and
        #: no instance is played twice
        sealed = sealing_salt(split, salt)
        self.sealed = sealed is not None
        self.env = HeuresisEnv(family=family, split=split, guided=guided, toolbox=toolbox,
                               target=target, max_steps=max_steps, max_seconds=max_seconds,
                               d=d, n=n, interface="text",
                               trace_path=None if trace_dir is None else str(trace_dir),
                               salt=sealed or "", trace_scores=not self.sealed,
                               experiments=experiments)
        self.played: set[int] = set()
        self._lock = threading.Lock()
        self._next_seed = int(seed)
        self._over = True
        self.episodes = 0
        self.last_reply: ToolReply = self._reset(index, None)

    # ---- what is offered ----------------------------------------------------------------------
    def tools(self) -> list[dict[str, Any]]:
        """``name``, ``title``, ``description``, ``input_schema``, ``output_schema`` and
        ``annotations`` of every offered tool (the registry's, then ``reset``)."""
        offered = self.env.tool_schemas("anthropic")
        registry = {tool.name: tool for tool in self.env.offered_tools}
        described = [{**schema, "title": tool_title(schema["name"]),
                      "output_schema": STEP_OUTPUT_SCHEMA,
                      "annotations": tool_annotations(registry[schema["name"]])}
                     for schema in offered]
        return described + [{
            "name": RESET_TOOL, "title": "Reset: start the next episode",
            "description": RESET_DESCRIPTION, "input_schema": RESET_SCHEMA,
            "output_schema": RESET_OUTPUT_SCHEMA,
            "annotations": {"read_only_hint": False, "destructive_hint": True,
                            "idempotent_hint": False, "open_world_hint": False}}]

    @property
    def task_statement(self) -> str:
        return self.env.task_statement()

    @property
    def trace_file(self) -> Path | None:
        return self.env.trace_file

    # ---- calls -----------------------------------------------------------------------------------
    def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolReply:
        """Run one tool call: ``reset``, or one step of the episode."""
        with self._lock:
            if name == RESET_TOOL:
                return self._reset_call(arguments)
            if self._over:
                final = self.env.end_episode()
                shown = ("" if self.sealed else
                         f"; F1 = {final.get('scores', {}).get('f1', float('nan')):.3f}")
                return ToolReply(
                    f"Error: the episode is over ({final.get('termination_reason')}{shown}). "
                    f"Call {RESET_TOOL} to start the next episode.",
                    {"episode_over": True}, is_error=True)
            action = {"tool": name, "args": dict(arguments) if arguments is not None else {}}
            observation, _, terminated, truncated, info = self.env.step(action)
            self._over = bool(terminated or truncated)
            return self._reply(observation, info)

    def _reset_call(self, arguments: Mapping[str, Any] | None) -> ToolReply:
        arguments = dict(arguments or {})
        unknown = sorted(set(arguments) - set(RESET_SCHEMA["properties"]))
        problems = [f"unknown argument(s) {unknown}; {RESET_TOOL} takes index and seed"] \
            if unknown else []
        values: dict[str, int | None] = {}
        for key in ("index", "seed"):
            value = arguments.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                problems.append(f"{key} must be a non-negative integer, got {value!r}")
            values[key] = value
        if self.sealed and values["index"] is not None and values["index"] in self.played:
            problems.append(f"instance {values['index']} was already played in this session; "
                            "on a sealed test split an instance is played once")
        if problems:
            return ToolReply("Error: " + "; ".join(problems), {}, is_error=True)
        try:
            return self._reset(values["index"], values["seed"])
        except HeuresisError as exc:
            return ToolReply(f"Error: {exc}", {}, is_error=True)

    def _reset(self, index: int | None, seed: int | None) -> ToolReply:
        if not self._over:
            self.env.end_episode("aborted")
        if seed is None:
            seed, self._next_seed = self._next_seed, self._next_seed + 1
        options = {} if index is None else {"index": index}
        observation, info = self.env.reset(seed=seed, options=options)
        self.played.add(int(info["instance_index"]))
        self._over = False
        self.episodes += 1
        data = {"episode": self.episodes, "instance_index": info["instance_index"],
                "split": info["split"], "names": list(info["names"]),
                "guided": info["guided"], "max_steps": self.env.max_steps,
                "max_seconds": self.env.max_seconds, "seed": seed, "sealed": self.sealed}
        return ToolReply(f"[{self.sealing()}]\n{observation['text']}", data)

    def sealing(self) -> str:
        """What the session's instances are, said in the banner and every first observation
        (an MCP client may start the server without the salt, silently public)."""
        split = self.env.split
        if self.sealed:
            return f"{split} split, SEALED by a secret salt: no scores are returned"
        if split == "test":
            return ("test split, PUBLIC: $HEURESIS_TEST_SALT was not set, so these instances "
                    "can be regenerated by anyone and scores are returned; not for numbers "
                    "that compare policies")
        return f"{split} split, public (development): scores are returned"

    def _reply(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> ToolReply:
        steps_left = int(np.asarray(observation["budget_left"]).reshape(-1)[0])
        error = info.get("error")
        data: dict[str, Any] = {"step": self.env.steps_used, "steps_left": steps_left,
                                "tool": info.get("tool"), "error": error,
                                "data": json_safe(info.get("data"), null_non_finite=True),
                                "episode_over": self._over}
        lines = [str(observation["text"])]
        if self._over and self.sealed:
            data.update(termination_reason=info.get("termination_reason"),
                        submitted=bool(info.get("submitted")))
            lines.append(f"\nEpisode over ({info.get('termination_reason')}). Scores are not "
                         "shown on a sealed test split (`heuresis score` reads the traces after "
                         f"the session). Call {RESET_TOOL} to start the next episode.")
        elif self._over:
            scores = dict(info.get("scores") or {})
            data.update(termination_reason=info.get("termination_reason"),
                        submitted=bool(info.get("submitted")),
                        scores=json_safe(scores, null_non_finite=True))
            shown = ", ".join(f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}"
                              for k, v in scores.items())
            lines.append(f"\nEpisode over ({info.get('termination_reason')}): {shown}. Call "
                         f"{RESET_TOOL} to start the next episode.")
        else:
            lines.append(f"\n[step {self.env.steps_used} of {self.env.max_steps}; "
                         f"{steps_left} left]")
        return ToolReply("\n".join(lines), data, is_error=error is not None)

    def close(self) -> None:
        with self._lock:
            if not self._over:
                self.env.end_episode("aborted")
                self._over = True
            self.env.close()


# ---- the MCP SDK --------------------------------------------------------------------------------

def mcp_server(episodes: EpisodeServer):
    """The SDK's low-level server for ``episodes``: tools listed from the registry, each call
    one step run in a worker thread (a long tool call does not block the event loop)."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    tools = [types.Tool(name=t["name"], title=t["title"], description=t["description"],
                        input_schema=t["input_schema"], output_schema=t["output_schema"],
                        annotations=types.ToolAnnotations(title=t["title"], **t["annotations"]))
             for t in episodes.tools()]

    async def list_tools(ctx, params) -> types.ListToolsResult:  # noqa: ARG001 - SDK signature
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params) -> types.CallToolResult:  # noqa: ARG001 - SDK signature
        try:
            reply = await anyio.to_thread.run_sync(episodes.call, params.name, params.arguments)
        except Exception as exc:  # noqa: BLE001 - a failing call is an error result, the server lives
            reply = ToolReply(f"Error: {type(exc).__name__}: {exc}", {}, is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=reply.text)],
                                    structured_content=reply.data, is_error=reply.is_error)

    return Server(SERVER_NAME, version=__version__,
                  instructions=episodes.task_statement, on_list_tools=list_tools,
                  on_call_tool=call_tool,
                  get_tool_input_schema=lambda name: next(
                      (t.input_schema for t in tools if t.name == name), None))


def serve_stdio(episodes: EpisodeServer) -> None:
    """Serve over stdin/stdout until the client closes the pipe."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = mcp_server(episodes)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def check_token(token: str) -> str:
    """Refuse a fixed bearer token anyone could guess: fewer than 32 characters, fewer than 12
    distinct ones, or a repeated block (``new_token`` makes 43 random ones)."""
    period = next((p for p in range(1, len(token) // 2 + 1)
                   if all(token[i] == token[i % p] for i in range(p, len(token)))), len(token))
    if len(token) < 32 or len(set(token)) < 12 or period < len(token):
        raise HeuresisError("the MCP token ($HEURESIS_MCP_TOKEN) is guessable: a token is at "
                            "least 32 characters, at least 12 of them distinct, not a repeated "
                            "block; leave the variable unset for a fresh random token each "
                            "start, or set it to the output of python -c 'import secrets; "
                            "print(secrets.token_urlsafe(32))'")
    return token


def new_token() -> str:
    """A bearer token for the HTTP transport (256 random bits)."""
    return secrets.token_urlsafe(32)


class BearerTokenMiddleware:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` gets 401."""

    def __init__(self, app: Any, token: str):
        if not isinstance(token, str) or len(token) < 16:
            raise HeuresisError("the MCP server's HTTP token must be a string of at least 16 "
                                "characters")
        self.app, self._expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = b"missing or wrong bearer token (heuresis mcp printed it at start)"
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"),
                                        (b"www-authenticate", b"Bearer"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(episodes: EpisodeServer, token: str, path: str = "/mcp") -> Any:
    """The streamable HTTP app behind the bearer-token check."""
    app = mcp_server(episodes).streamable_http_app(streamable_http_path=path, host=HOST)
    return BearerTokenMiddleware(app, token)


def serve_http(episodes: EpisodeServer, port: int, token: str, path: str = "/mcp") -> None:
    """Serve streamable HTTP on 127.0.0.1:``port`` until interrupted; every request must
    carry ``Authorization: Bearer <token>``."""
    import uvicorn

    uvicorn.run(http_app(episodes, token, path), host=HOST, port=port, log_level="warning")
