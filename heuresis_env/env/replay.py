"""Replay: re-run a trace's actions on a fresh environment and check graph and scores.

Budgets are lifted (the recorded actions are exactly the ones that ran); every step whose
output differs from the recorded digest is reported (e.g. timing-dependent code output).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heuresis_env.env.core import HeuresisEnv
from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import Graph
from heuresis_env.trace_files import read_trace


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass
class ReplayReport:
    """The outcome of :func:`replay_trace`: ``ok`` when graph and scores match."""

    path: Path
    n_steps: int
    same_graph: bool
    same_scores: bool
    recorded_scores: dict[str, Any] | None
    replayed_scores: dict[str, Any]
    recorded_termination: str | None
    replayed_termination: str | None
    output_mismatches: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.same_graph and self.same_scores

    def summary(self) -> str:
        verdict = "OK" if self.ok else "MISMATCH"
        lines = [f"{verdict}: {self.path} ({self.n_steps} steps replayed)",
                 f"  graph {'identical' if self.same_graph else 'DIFFERS'}; scores "
                 f"{'identical' if self.same_scores else 'DIFFER'}"]
        if self.replayed_scores:
            shown = ", ".join(f"{k}={v}" for k, v in self.replayed_scores.items())
            lines.append(f"  replayed scores: {shown}")
        if self.output_mismatches:
            lines.append(f"  outputs differ at steps {self.output_mismatches[:20]} (e.g. "
                         "timing-dependent code output)")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _scores_equal(a: dict[str, Any] | None, b: dict[str, Any]) -> bool:
    if a is None:
        return False
    for key in set(a) | set(b):
        x, y = a.get(key), b.get(key)
        if isinstance(x, float | int) and isinstance(y, float | int):
            if not (x == y or (math.isnan(x) and math.isnan(y))
                    or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)):
                return False
        elif _json_number(x) != _json_number(y) and not (
                (x is None and isinstance(y, float) and math.isnan(y))
                or (y is None and isinstance(x, float) and math.isnan(x))
                or (x == "nan" and isinstance(y, float) and math.isnan(y))):
            return False
    return True


def replay_trace(path: str | os.PathLike, salt: str | None = None) -> ReplayReport:
    """Re-run a trace's actions on a fresh environment and compare graph and scores.

    Budgets are lifted (the recorded actions are exactly the ones that ran); a sealed test
    instance needs its ``salt``.
    """
    trace = read_trace(path)
    header = trace.header
    config = dict(header["config"])
    notes: list[str] = []
    if header.get("sealed") and salt is None:
        raise HeuresisError(f"{trace.path} ran on a sealed test instance; pass its salt")
    config.update(max_steps=max(len(trace.steps), 1), max_seconds=None, trace_path=None,
                  render_mode=None, salt=salt, rl_text=True)
    env = HeuresisEnv(**config)
    try:
        options = ({"question": header["question"]["id"]} if header.get("question")
                   else {"index": header["instance"]["index"]})
        _, _ = env.reset(seed=header.get("seed"), options=options)
        if env.instance_sha256 != header["instance"]["sha256"]:
            raise HeuresisError(f"{trace.path}: the regenerated instance differs from the "
                                "recorded one (another generator version or salt)")
        mismatches = []
        info: dict[str, Any] = {}
        done = False
        for record in trace.steps:
            if done:
                notes.append(f"the replay ended before step {record['step']}")
                break
            if not record.get("action_complete", True):
                notes.append(f"step {record['step']}: the recorded action was truncated")
            action = record["rl_action"] if "rl_action" in record else record["action"]
            observation, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            digest = env.last_output_digest
            if digest != record.get("output_sha256"):
                mismatches.append(int(record["step"]))
        if not done:
            info = env.end_episode("replay_end")
        replayed_graph = env.working_graph
    finally:
        env.close()
    end = trace.end or {}
    recorded_graph = end.get("final_graph")
    same_graph = recorded_graph is not None and Graph.from_dict(recorded_graph) == replayed_graph
    replayed_scores = info.get("scores", {})
    same_scores = _scores_equal(end.get("scores"), replayed_scores)
    if trace.end is None:
        notes.append("the trace has no end record (the writer was killed); graph and scores "
                     "cannot be compared")
    elif end.get("scores_withheld"):
        notes.append("the trace holds no scores (withheld, as on a sealed MCP session; "
                     "`heuresis score` computes them): only the final graph is compared")
        same_scores = True
    elif end.get("termination_reason") == "unfinished":
        notes.append("the episode was left unfinished (reset before its end): only the final "
                     "graph is compared")
        same_scores = True
    return ReplayReport(
        path=trace.path, n_steps=len(trace.steps), same_graph=same_graph,
        same_scores=same_scores,
        recorded_scores=end.get("scores"), replayed_scores=replayed_scores,
        recorded_termination=end.get("termination_reason"),
        replayed_termination=info.get("termination_reason"),
        output_mismatches=mismatches, notes=notes)
