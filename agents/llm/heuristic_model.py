"""The keyless stand-in for a language model (``backend="heuristic"``, ``heuresis llm-server``
without ``--model``): :class:`HeuristicModel`, a deterministic responder of the loopback chat
server (:mod:`agents.llm.server`) that plays a sensible episode — PC-KCI, PC-Fisher-z, a few
KCI tests of the pairs they disagree on — for examples, tests and keyless runs."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.llm.parsing import EdgeListError, find_json_action, parse_edge_list
from agents.llm.prompts import FINAL_TURN_MARKER
from agents.llm.server import ChatRequest, ScriptedReply, text_reply, tool_call
from heuresis_env.errors import HeuresisError

__all__ = ["HeuristicModel"]

_NAMES_IN_TASK = re.compile(r"columns named ([A-Za-z0-9_, ]+)\.")
_STEPS_LEFT = re.compile(r"\[(\d+) steps? left")
_P_VALUE = re.compile(r"p-value ([0-9.eE+-]+|nan)")


@dataclass
class _Call:
    tool: str
    args: dict[str, Any]
    result: str | None = None


@dataclass
class HeuristicModel:
    """A deterministic stand-in for a language model, for examples and keyless runs.

    Strategy: run PC-KCI (saved as ``pc_kci``) and PC-Fisher-z; for up to ``max_tests`` pairs
    adjacent in PC-Fisher-z's output but not in PC-KCI's, test the pair with KCI given their
    PC-KCI neighbours (at most two); submit PC-KCI's edges plus every tested pair whose
    p-value is below ``restore_alpha`` (as an undirected edge). It answers the final-turn
    request with that edge list, works with or without native tools, and submits early when
    the observation says two steps or fewer are left.
    """

    max_tests: int = 3
    restore_alpha: float = 0.01
    calls: list[str] = field(default_factory=list)

    def __call__(self, request: ChatRequest) -> ScriptedReply:
        names = self._names(request.messages)
        history = self._history(request.messages)
        last = request.messages[-1] if request.messages else {}
        last_text = str(last.get("content") or "")
        graph = self._plan_graph(history, names)
        if last.get("role") == "user" and FINAL_TURN_MARKER in last_text:
            self.calls.append("final")
            lines = "\n".join(graph) if graph else "[]"
            return text_reply(f"Final edge list:\n{lines}",
                              reasoning="The budget is spent; PC-KCI's graph with the restored "
                                        "pairs is my answer.")
        steps_left = None
        for message in reversed(request.messages):
            match = _STEPS_LEFT.search(str(message.get("content") or ""))
            if match:
                steps_left = int(match.group(1))
                break
        tool, args, thought = self._next_action(history, names, steps_left, graph)
        self.calls.append(tool)
        if request.tools:
            return tool_call(tool, args, text=f"Thought: {thought}", reasoning=thought)
        action = json.dumps({"tool": tool, "args": args})
        return text_reply(f"Thought: {thought}\nAction:\n```json\n{action}\n```",
                          reasoning=thought)

    # ---- reading the conversation ------------------------------------------------------------
    @staticmethod
    def _names(messages: Sequence[dict[str, Any]]) -> list[str]:
        for message in messages:
            if message.get("role") == "user":
                match = _NAMES_IN_TASK.search(str(message.get("content") or ""))
                if match:
                    return [n.strip() for n in match.group(1).split(",") if n.strip()]
        raise HeuresisError("the heuristic model found no 'columns named ...' in the task")

    @staticmethod
    def _history(messages: Sequence[dict[str, Any]]) -> list[_Call]:
        """The actions taken so far with their results (native tool calls or text actions)."""
        history: list[_Call] = []
        by_id: dict[str, _Call] = {}
        awaiting_text: _Call | None = None
        for message in messages:
            role = message.get("role")
            if role == "assistant":
                awaiting_text = None
                calls = message.get("tool_calls") or []
                for index, call in enumerate(calls):
                    function = call.get("function", {})
                    try:
                        args = json.loads(function.get("arguments") or "{}")
                    except json.JSONDecodeError:
                        args = {}
                    entry = _Call(function.get("name", ""), args if isinstance(args, dict)
                                  else {})
                    if index == 0:
                        history.append(entry)
                    by_id[call.get("id")] = entry
                if not calls:
                    action, _ = find_json_action(str(message.get("content") or ""))
                    if action is not None:
                        awaiting_text = _Call(action["tool"], action.get("args") or {})
                        history.append(awaiting_text)
            elif role == "tool":
                entry = by_id.get(message.get("tool_call_id"))
                if entry is not None and entry.result is None:
                    entry.result = str(message.get("content") or "")
            elif role == "user" and awaiting_text is not None:
                awaiting_text.result = str(message.get("content") or "")
                awaiting_text = None
        return history

    @staticmethod
    def _algorithm_edges(history: Sequence[_Call], name: str, names: Sequence[str]
                         ) -> list[str] | None:
        for call in history:
            if call.tool == "run_algorithm" and call.args.get("name") == name \
                    and call.result is not None:
                if call.result.startswith("Error") or "returned" not in call.result:
                    return []
                try:
                    return parse_edge_list(call.result, names)
                except EdgeListError:
                    return []
        return None

    def _plan_graph(self, history: Sequence[_Call], names: Sequence[str]) -> list[str]:
        """PC-KCI's edges plus the restored pairs (the answer so far)."""
        base = self._algorithm_edges(history, "pc-kci", names) or []
        graph = list(base)
        adjacent = {frozenset(_pair(e)) for e in base}
        for call in history:
            if call.tool != "ci_test" or call.result is None:
                continue
            match = _P_VALUE.search(call.result)
            pair = frozenset((call.args.get("x"), call.args.get("y")))
            if match and pair not in adjacent:
                p_value = float(match.group(1))
                if p_value < self.restore_alpha:
                    graph.append(f"{call.args['x']} --- {call.args['y']}")
                    adjacent.add(pair)
        return graph

    def _next_action(self, history: Sequence[_Call], names: Sequence[str],
                     steps_left: int | None, graph: list[str]
                     ) -> tuple[str, dict[str, Any], str]:
        submit = ("submit", {"edges": graph},
                  f"I submit PC-KCI's graph with the pairs that stayed dependent "
                  f"({len(graph)} edges).")
        if steps_left is not None and steps_left <= 2:
            return submit
        kci = self._algorithm_edges(history, "pc-kci", names)
        if kci is None:
            return ("run_algorithm", {"name": "pc-kci", "save_as": "pc_kci"},
                    "Start from PC with the kernel CI test, which detects non-linear "
                    "dependence.")
        fisher = self._algorithm_edges(history, "pc-fisherz", names)
        if fisher is None:
            return ("run_algorithm", {"name": "pc-fisherz"},
                    "Compare with PC-Fisher-z: pairs it keeps but PC-KCI deleted may be "
                    "wrongly deleted edges.")
        kci_pairs = {frozenset(_pair(e)) for e in kci}
        tested = {frozenset((c.args.get("x"), c.args.get("y"))) for c in history
                  if c.tool == "ci_test"}
        candidates = [_pair(e) for e in fisher if frozenset(_pair(e)) not in kci_pairs]
        candidates = sorted(candidates, key=lambda p: (names.index(p[0]), names.index(p[1])))
        open_candidates = [p for p in candidates if frozenset(p) not in tested]
        if open_candidates and len(tested) < self.max_tests:
            x, y = open_candidates[0]
            neighbours = {n: set() for n in names}
            for edge in kci:
                u, v = _pair(edge)
                neighbours[u].add(v)
                neighbours[v].add(u)
            common = sorted(neighbours[x] & neighbours[y], key=names.index)
            others = sorted((neighbours[x] | neighbours[y]) - {x, y} - set(common),
                            key=names.index)
            given = (common + others)[:2]
            return ("ci_test", {"x": x, "y": y, "given": given, "method": "kci"},
                    f"PC-Fisher-z keeps {x} - {y} but PC-KCI deleted it; test it with KCI "
                    f"given {given or 'nothing'}.")
        return submit


def _pair(edge: str) -> tuple[str, str]:
    parts = edge.split()
    return parts[0], parts[-1]
