"""The language-model policy: a ReAct loop over a chat backend, one action per turn.

Each :meth:`LLMPolicy.act` sends the conversation — the system prompt (protocol, stated
target, the prompt level's hints), the task statement from the first observation, then every
action and its observation — with the episode's tool schemas, and returns the one action the
reply contains (native tool call first, else an action read from the text). A reply with no
readable action is passed on as it is: the environment answers with an error observation,
which costs a step, exactly as it would for any agent.

**The last turn** — one step left, or the wall time nearly over — asks for the final edge
list instead, reads it tolerantly (:func:`~agents.llm.parsing.parse_edge_list`), allows one
retry after a list that cannot be accepted (a model call, not a step) and returns
``{"tool": "submit", "args": {"edges": [...]}}``; if both attempts fail it submits the working
graph. So every episode ends in a submission.

**Budgets** come from the runner's :class:`~heuresis_env.policy.EpisodeSettings`: the token
budget per turn is each call's ``max_tokens``; steps are read from the observation's
``budget_left``; the wall clock starts at :meth:`reset`. API retries (429, 5xx, time-outs)
happen inside the backend, are counted in :meth:`usage` and never cost a step.

**Records**: :meth:`usage` gives tokens, cost (from the price table), API retries, turns;
:meth:`transcript` the full exchange — every message, every reply with its reasoning, usage
and timing, every action and the final turn — which the runner stores beside the trace.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.llm.backends import (
    AnthropicBackend,
    BackendError,
    ChatBackend,
    DeadlineExceeded,
    OpenAIChatBackend,
)
from agents.llm.connection import ENV_MODEL, resolve_connection
from agents.llm.heuristic_model import HeuristicModel
from agents.llm.local_models import local_model_spec
from agents.llm.local_server import local_chat_server
from agents.llm.messages import ChatReply
from agents.llm.parsing import (
    EdgeListError,
    action_schema,
    edge_list_schema,
    extract_action,
    parse_edge_list,
    strict_action,
    strict_edge_list,
    tool_call_action,
)
from agents.llm.prices import PriceTable
from agents.llm.prompts import (
    FINAL_NOT_RUN_MESSAGE,
    NOT_RUN_MESSAGE,
    check_prompt_level,
    check_target,
    final_request,
    final_retry_request,
    observation_message,
    system_prompt,
)
from agents.llm.server import HEURISTIC_MODEL_NAME, ChatServer
from heuresis_env.env import tool_schemas
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import has_directed_cycle
from heuresis_env.policy import EpisodeSettings, Policy

#: how long past the wall budget the final turn's model calls may run (the evaluation runner
#: interrupts a policy call 5 s past it)
FINAL_TURN_GRACE_SECONDS = 2.0
#: how the final turn ended, as reported in ``usage()["final_turn"]``
#: how replies are read: tolerantly (any action in the text; the final list with one retry) or
#: strictly (one JSON value and nothing else; no retry)
PARSE_MODES = ("tolerant", "strict")
FINAL_STATUSES = ("edge_list", "edge_list_after_retry", "model_submitted_working_graph",
                  "fallback_working_graph")


@dataclass(frozen=True)
class PendingCall:
    """The last action's origin: the native call to answer, and calls left unrun."""

    tool_call_id: str | None
    ignored: tuple[str, ...] = ()


@dataclass(frozen=True)
class _FinalRead:
    edges: list[str] | None = None
    working_graph: bool = False
    problem: str | None = None


class LLMPolicy(Policy):
    """A ReAct language-model policy on the text view (see the module docstring).

    ``native_tools=False`` sends no tool schemas and asks for JSON actions in the text (for
    servers without function calling). The wrappers compared on small models
    (``docs/llm.md``): ``parse="strict"`` reads an action only from a native tool call or a
    reply that is one JSON action, and the final edge list only from a reply that is one JSON
    list, with no retry; ``constrained=True`` asks the server to decode each action (and the
    final list) under its JSON schema (``response_format``); ``loop=False`` asks for the final
    edge list on the first turn, without any tool. ``wall_reserve_seconds`` fixes how much wall time the
    final turn keeps; by default it is three times the slowest model call plus the slowest
    environment step seen so far, at least min(5 s, 10% of the wall budget).
    """

    interface = "text"

    def __init__(self, backend: ChatBackend, *, name: str = "llm",
                 prices: PriceTable | str | Path | Mapping[str, Any] | None = None,
                 native_tools: bool = True, wall_reserve_seconds: float | None = None,
                 clock: Callable[[], float] = time.monotonic, resources: Sequence[Any] = (),
                 parse: str = "tolerant", constrained: bool = False, loop: bool = True):
        if not isinstance(backend, ChatBackend):
            raise HeuresisError(f"backend must implement ChatBackend (kind, model, complete, "
                                f"close), got {type(backend).__name__}")
        if wall_reserve_seconds is not None and (
                isinstance(wall_reserve_seconds, bool)
                or not isinstance(wall_reserve_seconds, int | float) or wall_reserve_seconds < 0):
            raise HeuresisError(f"wall_reserve_seconds must be a number ≥ 0 or None, "
                                f"got {wall_reserve_seconds!r}")
        if parse not in PARSE_MODES:
            raise UnknownNameError("parse mode", parse, PARSE_MODES)
        if constrained and (native_tools or not getattr(backend, "response_formats", False)):
            raise HeuresisError("constrained=True decodes JSON actions in the text under a "
                                "schema: it needs native_tools=False and a backend that sends "
                                "response_format (the openai backend, a local model)")
        self.backend = backend
        self.name = name
        self.parse = parse
        self.constrained = bool(constrained)
        self.loop = bool(loop)
        self.prices = prices if isinstance(prices, PriceTable) else PriceTable.load(prices)
        self.native_tools = bool(native_tools)
        self.wall_reserve_seconds = wall_reserve_seconds
        self._clock = clock
        self._resources = list(resources)
        self._messages: list[dict[str, Any]] | None = None
        self._events: list[dict[str, Any]] = []
        self._reset_counters()

    # ---- Policy interface ------------------------------------------------------------------------
    def configure(self, settings: EpisodeSettings) -> None:
        """Take the run's settings (checked here so a bad level fails before any episode)."""
        check_prompt_level(settings.prompt_level)
        check_target(settings.target)
        if settings.token_budget_per_turn < 1:
            raise HeuresisError(f"token_budget_per_turn must be ≥ 1, got "
                                f"{settings.token_budget_per_turn!r}")
        super().configure(settings)

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        settings = self.settings
        check_prompt_level(settings.prompt_level)
        check_target(settings.target)
        names = info.get("names")
        if not names:
            raise HeuresisError("reset info carries no 'names'; the LLM policy needs the text "
                                "view of a Heuresis environment (interface='text')")
        self._names = [str(n) for n in names]
        task = "qa" if info.get("question") else "graph"
        schemas = tool_schemas(settings.toolbox, settings.guided, "openai", task,
                               settings.experiments > 0)
        self._tool_names = [s["function"]["name"] for s in schemas]
        self._tools = schemas if self.native_tools else None
        self._action_format = _response_format("action", action_schema(schemas)) \
            if self.constrained else None
        self._reset_counters()
        self._started = self._clock()
        self._messages = []
        self._events = []
        self._event("episode", policy=self.name, backend=self.backend.kind,
                    model=self.backend.model, settings=settings.to_dict(),
                    native_tools=self.native_tools, names=list(self._names),
                    tools=list(self._tool_names), instance=info.get("instance"))
        self._append({"role": "system", "content": self._system_prompt(info)})
        self._append({"role": "user", "content": observation_message(
            _text(observation), _steps_left(observation, settings), self._seconds_left())})

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self._messages is None:
            raise HeuresisError("call reset() before act()")
        now = self._clock()
        if self._last_act_end is not None:
            self._slowest_step = max(self._slowest_step, now - self._last_act_end)
        steps_left = _steps_left(observation, self.settings)
        if self._turns > 0:
            self._record_observation(observation, steps_left)
        self._turns += 1
        if not self.loop:
            action = self._final_turn("direct")
        elif self._actions_left(steps_left) <= 1:
            action = self._final_turn("steps")
        elif self._wall_is_near():
            action = self._final_turn("time")
        else:
            action = self._action_turn(steps_left)
        self._last_act_end = self._clock()
        return action

    def usage(self) -> dict[str, Any]:
        """Tokens, cost (USD, None when a model has no price), API retries, turns, calls."""
        return {
            "backend": self.backend.kind, "model": self.backend.model,
            "prompt_tokens": self._prompt_tokens, "completion_tokens": self._completion_tokens,
            "cached_prompt_tokens": self._cached_tokens,
            "reasoning_tokens": self._reasoning_tokens,
            "tokens": {"prompt": self._prompt_tokens, "completion": self._completion_tokens},
            "cost_usd": None if self._cost_unknown else self._cost,
            "api_retries": self._api_retries, "turns": self._turns,
            "model_calls": self._model_calls, "backend_errors": self._backend_errors,
            "final_turn": self._final_status,
        }

    def transcript(self) -> list[dict[str, Any]] | None:
        """The episode's exchange as events (episode, message, model_call, action, ...)."""
        return copy.deepcopy(self._events) if self._events else None

    def release_resources(self) -> list[Any]:
        """Hand over what this policy would close (its in-process server) to another owner,
        e.g. a policy of another task built on the same backend."""
        resources, self._resources = self._resources, []
        return resources

    def close(self) -> None:
        self.backend.close()
        for resource in self._resources:
            resource.close()
        self._resources = []

    # ---- hooks of a task's variant (agents.qa.llm) -----------------------------------------------
    def _system_prompt(self, info: dict[str, Any]) -> str:
        settings = self.settings
        return system_prompt(settings.prompt_level, settings.target, toolbox=settings.toolbox,
                             guided=settings.guided, native_tools=self.native_tools)

    def _actions_left(self, steps_left: int) -> int:
        """Actions this turn and after may take (the final turn comes at 1)."""
        return steps_left

    # ---- turns -----------------------------------------------------------------------------------
    def _action_turn(self, steps_left: int) -> Any:
        try:
            reply = self._call("action", self._action_deadline(), self._action_format)
        except BackendError as exc:
            if exc.fatal:
                raise
            reason = "time" if isinstance(exc, DeadlineExceeded) else "error"
            return self._final_turn(reason)
        extracted = (strict_action(reply) if self.parse == "strict"
                     else extract_action(reply, self._tool_names))
        self._append(reply.assistant_message())
        action, tidied = self._tidy(extracted.action)
        self._pending = PendingCall(extracted.tool_call_id, extracted.ignored_tool_calls)
        self._event("action", turn=self._turns, steps_left=steps_left, action=action,
                    source=extracted.source, note=extracted.note,
                    edges_normalized=tidied)
        return action

    def _final_turn(self, reason: str) -> dict[str, Any]:
        self._append({"role": "user", "content": final_request(self._names, self.settings.target,
                                                               reason)})
        read, reply = self._ask_final("final")
        problems = [read.problem] if read.problem else []
        status = "edge_list"
        if read.edges is None and not read.working_graph and self.parse == "tolerant":
            if reply is not None:
                self._answer_calls(reply, FINAL_NOT_RUN_MESSAGE)
            self._append({"role": "user", "content": final_retry_request(
                read.problem or "no edge list", self._names, self.settings.target)})
            read, reply = self._ask_final("final_retry")
            if read.problem:
                problems.append(read.problem)
            status = "edge_list_after_retry"
        if read.edges is not None:
            action: dict[str, Any] = {"tool": "submit", "args": {"edges": read.edges}}
        else:
            action = {"tool": "submit", "args": {}}
            status = ("model_submitted_working_graph" if read.working_graph
                      else "fallback_working_graph")
        self._final_status = status
        self._pending = None
        self._event("final_turn", turn=self._turns, reason=reason, status=status,
                    edges=read.edges, problems=problems)
        self._event("action", turn=self._turns, steps_left=None, action=action,
                    source="final_turn", note=status, edges_normalized=False)
        return action

    def _ask_final(self, purpose: str) -> tuple[_FinalRead, ChatReply | None]:
        answer_format = None
        if self.constrained:
            answer_format = _response_format("edge_list", edge_list_schema(
                self._names, directed_only=self.settings.target == "dag"))
        try:
            reply = self._call(purpose, self._final_deadline(), answer_format)
        except BackendError as exc:
            if exc.fatal:
                raise
            return _FinalRead(problem=f"the model call failed ({exc})"), None
        self._append(reply.assistant_message())
        return self._read_final(reply), reply

    def _read_final(self, reply: ChatReply) -> _FinalRead:
        """The final graph in a reply: a submit/set_graph call's edges, else the text's list."""
        source: Any = reply.text
        for call in reply.tool_calls:
            if call.name not in ("submit", "set_graph"):
                continue
            action = tool_call_action(call)
            if not isinstance(action, dict) or not isinstance(action["args"], dict):
                return _FinalRead(problem=f"the arguments of {call.name} are not a JSON object")
            edges = action["args"].get("edges")
            if edges is None and call.name == "submit":
                return _FinalRead(working_graph=True)
            source = edges
            break
        try:
            if self.parse == "strict" and isinstance(source, str):
                source = strict_edge_list(source)
            edges = parse_edge_list(source if source is not None else "", self._names)
            self._check_target(edges)
        except EdgeListError as exc:
            return _FinalRead(problem=str(exc))
        return _FinalRead(edges=edges)

    def _check_target(self, edges: list[str]) -> None:
        """Refuse a directed cycle under the cpdag and dag targets (the env would reject it)."""
        if self.settings.target not in ("cpdag", "dag"):
            return
        index = {name: i for i, name in enumerate(self._names)}
        directed = np.zeros((len(self._names),) * 2, dtype=bool)
        for edge in edges:
            u, symbol, v = edge.split()
            if symbol == "-->":
                directed[index[u], index[v]] = True
        if has_directed_cycle(directed):
            raise EdgeListError(f"the directed edges form a cycle, which the target "
                                f"{self.settings.target!r} forbids; reverse or drop an edge")

    # ---- conversation ----------------------------------------------------------------------------
    def _record_observation(self, observation: Any, steps_left: int) -> None:
        content = observation_message(_text(observation), steps_left, self._seconds_left())
        pending, self._pending = self._pending, None
        if pending is not None and pending.tool_call_id is not None:
            self._append({"role": "tool", "tool_call_id": pending.tool_call_id,
                          "content": content})
            for call_id in pending.ignored:
                self._append({"role": "tool", "tool_call_id": call_id,
                              "content": NOT_RUN_MESSAGE})
        else:
            self._append({"role": "user", "content": f"Observation:\n{content}"})

    def _answer_calls(self, reply: ChatReply, message: str) -> None:
        for call in reply.tool_calls:
            self._append({"role": "tool", "tool_call_id": call.id, "content": message})

    def _append(self, message: dict[str, Any]) -> None:
        self._messages.append(message)
        self._event("message", index=len(self._messages) - 1,
                    message={k: v for k, v in message.items() if k != "provider_content"})

    def _tidy(self, action: Any) -> tuple[Any, bool]:
        """Edge lists of submit/set_graph in the environment's notation (X1 → X2 becomes
        X1 --> X2); a list that cannot be read is left for the environment to refuse."""
        if not (isinstance(action, dict) and action.get("tool") in ("submit", "set_graph")
                and isinstance(action.get("args"), dict)
                and isinstance(action["args"].get("edges"), list)):
            return action, False
        try:
            edges = parse_edge_list(action["args"]["edges"], self._names)
        except EdgeListError:
            return action, False
        if edges == action["args"]["edges"]:
            return action, False
        return {**action, "args": {**action["args"], "edges": edges}}, True

    # ---- model calls and accounting --------------------------------------------------------------
    def _call(self, purpose: str, deadline: float | None,
              response_format: dict[str, Any] | None = None) -> ChatReply:
        real_deadline = None
        if deadline is not None:
            real_deadline = time.monotonic() + (deadline - self._clock())
        started = self._clock()
        extra = {} if response_format is None else {"response_format": response_format}
        try:
            reply = self.backend.complete(self._messages, self._tools,
                                          int(self.settings.token_budget_per_turn),
                                          deadline=real_deadline, **extra)
        except BackendError as exc:
            self._backend_errors += 1
            self._api_retries += int(exc.retries)
            self._event("model_call_failed", turn=self._turns, purpose=purpose,
                        error=str(exc), error_type=type(exc).__name__, status=exc.status,
                        attempts=exc.attempts,
                        api_retries=exc.retries,
                        retry_errors=list(exc.retry_errors), fatal=exc.fatal,
                        seconds=self._clock() - started)
            raise
        seconds = self._clock() - started
        self._slowest_call = max(self._slowest_call, seconds)
        self._model_calls += 1
        self._api_retries += int(reply.api_retries)
        usage = reply.usage
        self._prompt_tokens += int(usage.get("prompt", 0))
        self._completion_tokens += int(usage.get("completion", 0))
        self._cached_tokens += int(usage.get("cached_prompt", 0))
        self._reasoning_tokens += int(usage.get("reasoning", 0))
        cost = self.prices.cost(reply.model or self.backend.model, usage)
        if cost is None:
            self._cost_unknown = True
        else:
            self._cost += cost
        self._event("model_call", turn=self._turns, purpose=purpose, seconds=seconds,
                    cost_usd=cost, reply=reply.to_dict())
        return reply

    def _reset_counters(self) -> None:
        self._prompt_tokens = self._completion_tokens = 0
        self._cached_tokens = self._reasoning_tokens = 0
        self._cost, self._cost_unknown = 0.0, False
        self._api_retries = self._turns = self._model_calls = self._backend_errors = 0
        self._final_status: str | None = None
        self._pending: PendingCall | None = None
        self._slowest_call = self._slowest_step = 0.0
        self._last_act_end: float | None = None
        self._started = 0.0

    def _event(self, kind: str, **fields: Any) -> None:
        self._events.append({"event": kind, "t": round(self._clock() - self._started, 6),
                             **fields})

    # ---- the wall clock --------------------------------------------------------------------------
    def _seconds_left(self) -> float | None:
        if self.settings.max_seconds is None:
            return None
        return float(self.settings.max_seconds) - (self._clock() - self._started)

    def _final_reserve(self) -> float:
        """Wall time kept for the final turn (its call and one retry)."""
        if self.wall_reserve_seconds is not None:
            return float(self.wall_reserve_seconds)
        floor = min(5.0, 0.1 * float(self.settings.max_seconds or 0.0))
        return max(floor, 2.0 * self._slowest_call)

    def _wall_is_near(self) -> bool:
        """True when another action turn (a call and a step) might leave no time to submit."""
        left = self._seconds_left()
        if left is None:
            return False
        if self.wall_reserve_seconds is not None:
            return left <= self.wall_reserve_seconds
        return left <= max(self._final_reserve(), 3.0 * self._slowest_call + self._slowest_step)

    def _action_deadline(self) -> float | None:
        if self.settings.max_seconds is None:
            return None
        return self._started + float(self.settings.max_seconds) - self._final_reserve()

    def _final_deadline(self) -> float | None:
        if self.settings.max_seconds is None:
            return None
        return self._started + float(self.settings.max_seconds) + FINAL_TURN_GRACE_SECONDS


def _response_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's structured-output request for ``schema`` (vLLM and our local server honour
    it too)."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema,
                                                   "strict": True}}


def _text(observation: Any) -> str:
    if isinstance(observation, Mapping):
        return str(observation.get("text", ""))
    return str(observation)


def _steps_left(observation: Any, settings: EpisodeSettings) -> int:
    if isinstance(observation, Mapping) and "budget_left" in observation:
        return int(np.asarray(observation["budget_left"]).reshape(-1)[0])
    return int(settings.max_steps)


# ---- the factory behind the "llm" entry point ---------------------------------------------------

def make_llm_policy(backend: str | None = None, model: str | None = None,
                    base_url: str | None = None, api_key: str | None = None,
                    timeout: float | None = 120.0, max_retries: int = 5,
                    temperature: float | None = None,
                    prices: str | Mapping[str, Any] | None = None,
                    native_tools: bool | None = None, name: str = "llm",
                    thinking_budget: int | None = None,
                    max_tokens_parameter: str | None = None,
                    wall_reserve_seconds: float | None = None, parse: str = "tolerant",
                    constrained: bool = False, loop: bool = True,
                    model_dir: str | None = None, threads: int | None = None) -> LLMPolicy:
    """Build the language-model policy from plain options (the ``llm`` entry point).

    ``backend``: "openai" (any chat-completions server), "anthropic", "heuristic" (a local
    deterministic stand-in, no key) or "local" (a real small model on this machine's CPU,
    ``model`` one of :data:`~agents.llm.local_models.LOCAL_MODELS`; ``model_dir`` a prepared
    copy of it, ``threads`` torch's threads). Backend, key and base URL come from the
    arguments, else the environment (:func:`~agents.llm.connection.resolve_connection`:
    ``$HEURESIS_LLM_BACKEND``, a base URL or ``$OPENAI_API_KEY`` → openai,
    ``$ANTHROPIC_API_KEY`` → anthropic). ``model`` defaults to ``$HEURESIS_LLM_MODEL``. With
    nothing configured it raises, naming the variables to set. ``native_tools`` defaults to
    True, but to False for a local model (it has no tool-calling format). ``parse``,
    ``constrained`` and ``loop`` choose the wrapper (:class:`LLMPolicy`).
    """
    connection = resolve_connection(backend, base_url, api_key)
    wrapper = {"parse": parse, "constrained": constrained, "loop": loop,
               "wall_reserve_seconds": wall_reserve_seconds}
    if connection.backend == "heuristic":
        return make_heuristic_llm_policy(name=name if name != "llm" else "llm-heuristic",
                                         native_tools=native_tools is not False, prices=prices)
    model = model or os.environ.get(ENV_MODEL) or None
    if model is None:
        example = {"openai": "gpt-4.1-mini, or the name your local server serves",
                   "local": "smollm2-135m or gemma3-270m"}.get(connection.backend,
                                                               "claude-sonnet-4-5")
        raise HeuresisError(f"name the model: pass model=... or set {ENV_MODEL} (for "
                            f"example {example})")
    if connection.backend == "local":
        return make_local_llm_policy(model, model_dir=model_dir, threads=threads, name=name,
                                     base_url=base_url,
                                     prices=prices, native_tools=bool(native_tools),
                                     temperature=temperature, timeout=timeout, **wrapper)
    if connection.backend == "openai":
        chat: ChatBackend = OpenAIChatBackend(
            model, base_url=connection.base_url, api_key=connection.api_key, timeout=timeout,
            max_retries=max_retries, temperature=temperature,
            max_tokens_parameter=max_tokens_parameter)
    else:
        chat = AnthropicBackend(model, base_url=connection.base_url, api_key=connection.api_key,
                                timeout=timeout, max_retries=max_retries,
                                temperature=temperature, thinking_budget=thinking_budget)
    return LLMPolicy(chat, name=name, prices=prices, native_tools=native_tools is not False,
                     **wrapper)


def make_local_llm_policy(model: str, *, model_dir: str | None = None,
                          threads: int | None = None, name: str = "llm",
                          prices: str | Mapping[str, Any] | None = None,
                          native_tools: bool = False, temperature: float | None = None,
                          timeout: float | None = 600.0, base_url: str | None = None,
                          **wrapper: Any) -> LLMPolicy:
    """The LLM policy on a real small model (``backend=local``): the model is loaded here
    (``agents.llm.local_models``) and served on a loopback port by the same chat server as
    the stand-in, so the policy goes through the ``openai`` SDK and HTTP as with any service,
    with token counts from the model's own tokenizer. With ``base_url`` the model is the one
    that ``heuresis llm-server --model`` serves there (shared by many policies, which it
    decodes as one batch; ``heuresis llm-compare`` runs its episodes so); nothing is loaded
    here."""
    server = None
    if base_url is None:
        server = local_chat_server(model, model_dir=model_dir, threads=threads)
    else:
        local_model_spec(model)  # an unknown name is an error naming the catalogue
    try:
        chat = OpenAIChatBackend(model, base_url=server.url if server else base_url,
                                 api_key="local", timeout=max(float(timeout or 0.0), 600.0),
                                 max_retries=0, temperature=temperature,
                                 # a server outside this process is reached as any service
                                 # is (a confined policy: through the runner's proxy)
                                 environment_proxy=server is None)
    except BaseException:
        if server is not None:
            server.close()
        raise
    return LLMPolicy(chat, name=name, prices=prices, native_tools=native_tools,
                     resources=[server] if server else [], **wrapper)


def make_heuristic_llm_policy(name: str = "llm-heuristic", native_tools: bool = True,
                              prices: str | Mapping[str, Any] | None = None,
                              max_tests: int = 3, restore_alpha: float = 0.01) -> LLMPolicy:
    """The LLM policy wired to a loopback server playing
    :class:`~agents.llm.heuristic_model.HeuristicModel`: the full client path (``openai`` SDK,
    HTTP, parsing, final turn) with a deterministic model, no key and no network (the
    ``llm-heuristic`` entry point)."""
    server = ChatServer(responder=HeuristicModel(max_tests=max_tests,
                                                 restore_alpha=restore_alpha),
                        model=HEURISTIC_MODEL_NAME)
    try:
        chat = OpenAIChatBackend(HEURISTIC_MODEL_NAME, base_url=server.url, api_key="local",
                                 timeout=600.0, max_retries=2, environment_proxy=False)
    except BaseException:
        server.close()
        raise
    return LLMPolicy(chat, name=name, prices=prices, native_tools=native_tools,
                     resources=[server])
