"""Episode traces: one JSON-lines file per episode, and replay that checks them.

A trace holds a ``header`` record (everything needed to rebuild the environment and the
instance, except a secret test salt), one ``step`` record per action and an ``end`` record::

    {"type": "step", "step": 3, "action": {...} | "...", "tool": "ci_test",
     "args": {...}, "error": null, "output_sha256": "…", "graph_diff": [...],
     "evidence": [1, 2], "evidence_source": "implicit", "budget_used": {"steps": 3,
     "seconds": 0.8}, "duration": 0.02}

Each edit is linked to the evidence behind it: the step numbers the edit named in its
``evidence`` argument, else every successful tool call since the previous edit that touched
one of the pairs it changes (:class:`EvidenceLinker`). :func:`replay_trace` re-runs the
recorded actions on a fresh environment and checks that it reaches the same graph and
scores (and reports every step whose output differs).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heuresis_env.errors import HeuresisError, InstanceFormatError
from heuresis_env.toolbox.registry import MAX_ACTION_CHARS, json_safe

TRACE_VERSION = 1


def text_digest(text: str) -> str:
    """SHA-256 of an observation text (the trace stores digests, not texts)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EvidenceLinker:
    """Which tool calls stand behind an edit: explicit ids, else the calls since the pair's
    previous edit."""

    def __init__(self) -> None:
        self.calls: list[int] = []  # steps of successful tool calls (not edits), ascending
        self.last_edit: dict[frozenset[int], int] = {}

    def record_call(self, step: int) -> None:
        self.calls.append(step)

    def link_edit(self, step: int, pairs: Iterable[frozenset[int]],
                  explicit: list[int] | None) -> tuple[list[int], str]:
        """Evidence ids of an edit at ``step`` touching ``pairs``, and their source."""
        pairs = list(pairs)
        if explicit:
            ids, source = sorted(set(int(e) for e in explicit)), "explicit"
        else:
            since = min((self.last_edit.get(p, 0) for p in pairs), default=0)
            ids, source = [c for c in self.calls if c > since], "implicit"
        for pair in pairs:
            self.last_edit[pair] = step
        return ids, source


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def serializable_action(action: Any) -> tuple[Any, bool]:
    """The action as stored in a trace, and whether it is stored in full."""
    if isinstance(action, bytes):
        action = action.decode("utf-8", "replace")
    if isinstance(action, str):
        if len(action) > MAX_ACTION_CHARS + 1:
            return action[:MAX_ACTION_CHARS + 1], False
        return action, True
    try:
        from heuresis_env.toolbox.registry import _plain

        plain = json_safe(_plain(action))
        text = json.dumps(plain)
    except Exception:  # noqa: BLE001 - anything unserializable is stored by its repr
        return repr(action)[:MAX_ACTION_CHARS + 1], False
    if len(text) > MAX_ACTION_CHARS + 1:
        return text[:MAX_ACTION_CHARS + 1], False
    return plain, True


class TraceWriter:
    """Writes one episode's trace; each record is flushed as one line."""

    def __init__(self, path: str | os.PathLike, header: dict[str, Any]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self.write({"type": "header", "trace_version": TRACE_VERSION, **header})

    def write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            raise HeuresisError(f"the trace {self.path} is closed")
        self._file.write(json.dumps(json_safe(record), separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self, end: dict[str, Any] | None = None) -> None:
        if self._file is None:
            return
        if end is not None:
            self.write({"type": "end", **end})
        self._file.close()
        self._file = None

    @property
    def closed(self) -> bool:
        return self._file is None


def trace_file_name(family: str, split: str, index: int) -> str:
    """A unique file name (vector environments share a trace directory)."""
    return f"{family}-{split}-{index:03d}-{uuid.uuid4().hex[:12]}.jsonl"


# ---- reading and replay -------------------------------------------------------------------------

@dataclass
class Trace:
    """A parsed trace file."""

    path: Path
    header: dict[str, Any]
    steps: list[dict[str, Any]]
    end: dict[str, Any] | None


def read_trace(path: str | os.PathLike) -> Trace:
    """Parse a trace file; a missing header or a malformed line raises a clear error."""
    path = Path(path)
    if not path.is_file():
        raise InstanceFormatError(f"no trace file at {path}")
    header, steps, end = None, [], None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InstanceFormatError(f"{path}:{number}: not JSON ({exc.msg})") from None
            kind = record.get("type") if isinstance(record, dict) else None
            if kind == "header":
                header = record
            elif kind == "step":
                steps.append(record)
            elif kind == "end":
                end = record
            else:
                raise InstanceFormatError(f"{path}:{number}: unknown record type {kind!r}")
    if header is None:
        raise InstanceFormatError(f"{path} has no header record; it is not a Heuresis trace")
    if header.get("trace_version") != TRACE_VERSION:
        raise InstanceFormatError(f"{path} is trace version {header.get('trace_version')!r}; "
                                  f"this code reads version {TRACE_VERSION}")
    return Trace(path, header, steps, end)


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
    from heuresis_env.env import HeuresisEnv
    from heuresis_env.graphs import Graph

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
        _, _ = env.reset(seed=header.get("seed"), options={"index": header["instance"]["index"]})
        if env.unwrapped.instance_sha256 != header["instance"]["sha256"]:
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
            digest = env.unwrapped.last_output_digest
            if digest != record.get("output_sha256"):
                mismatches.append(int(record["step"]))
        if not done:
            info = env.unwrapped.end_episode("replay_end")
        replayed_graph = env.unwrapped.working_graph
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
