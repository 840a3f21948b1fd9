"""A deterministic stand-in model for the name-only probe, served by the loopback chat server.

It reads nothing into the names: for a network it answers a chain over the variables in the
order they are listed, for a pair it always answers 'A -> B'. Since the probe shuffles every
presentation order, it scores at chance in every arm — a plumbing stand-in (prompt, HTTP,
parsing, scoring, table) for keyless runs and CI, not a baseline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agents.llm import ChatRequest, ScriptedReply, text_reply

#: the stand-in's model name (as the loopback server reports it)
PROBE_HEURISTIC_MODEL = "heuresis-probe-heuristic"
_LISTED = re.compile(r"^- (\S+)\s*$", re.MULTILINE)


@dataclass
class ProbeHeuristicModel:
    """Answers network questions with a chain in listed order, pair questions with 'A -> B'."""

    calls: list[str] = field(default_factory=list)

    def __call__(self, request: ChatRequest) -> ScriptedReply:
        question = str(request.messages[-1].get("content") or "") if request.messages else ""
        names = _LISTED.findall(question)
        if names:
            self.calls.append("network")
            return text_reply("\n".join(f"{a} --> {b}" for a, b in zip(names, names[1:])))
        self.calls.append("pair")
        return text_reply("A -> B")
