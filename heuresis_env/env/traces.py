"""What the environment writes into an episode's trace (format: :mod:`heuresis_env.trace_files`).

One ``step`` record per action::

    {"type": "step", "step": 3, "action": {...} | "...", "tool": "ci_test",
     "args": {...}, "error": null, "output": "…", "output_sha256": "…", "graph_diff": [...],
     "evidence": [1, 2], "evidence_source": "implicit", "budget_used": {"steps": 3,
     "seconds": 0.8}, "duration": 0.02}

``output`` is the observation text the step returned, cut at :data:`TRACE_OUTPUT_CHARS`
characters (with a note saying how much was left out); ``output_sha256`` is the digest of the
whole text, which replay compares. So the evidence behind an edit (the p-values, the algorithm
outputs) is in the trace for every policy, scripted, RL or language-model alike.

Each edit is linked to the evidence behind it: the step numbers the edit named in its
``evidence`` argument, else every successful tool call since the previous edit that touched
one of the pairs it changes (:class:`EvidenceLinker`). :func:`heuresis_env.env.replay.replay_trace`
re-runs the recorded actions on a fresh environment.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.env.referee import PublicInstance
from heuresis_env.env.rl_view import RLOutcome
from heuresis_env.env.toolbox.registry import (
    MAX_ACTION_CHARS,
    ParsedAction,
    Tool,
    describe_object,
    plain_values,
)
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.files import json_safe
from heuresis_env.graphs import Graph
from heuresis_env.trace_files import TraceWriter

#: the longest output text a step record keeps (characters); the digest covers the whole text
TRACE_OUTPUT_CHARS = 8_000


def text_digest(text: str) -> str:
    """SHA-256 of an observation text (the trace keeps it beside the bounded text)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def bounded_output(text: str, limit: int = TRACE_OUTPUT_CHARS) -> str:
    """``text`` as a step record keeps it: whole up to ``limit`` characters, else its head and
    a note of how many characters were left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters not kept in the trace]"


def output_fields(text: str) -> dict[str, str]:
    """The ``output`` and ``output_sha256`` fields of a step record."""
    return {"output": bounded_output(text), "output_sha256": text_digest(text)}


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


def serializable_action(action: Any) -> tuple[Any, bool]:
    """The action as stored in a trace, and whether it is stored in full; never raises
    (an object that is not plain JSON is stored by a bounded description)."""
    try:
        if type(action) is bytes:
            action = action.decode("utf-8", "replace")
        if type(action) is str:
            if len(action) > MAX_ACTION_CHARS + 1:
                return action[:MAX_ACTION_CHARS + 1], False
            return action, True
        plain = json_safe(plain_values(action))
        text = json.dumps(plain)
    except Exception:  # noqa: BLE001 - anything unserializable is stored by a description
        return describe_object(action, MAX_ACTION_CHARS + 1), False
    if len(text) > MAX_ACTION_CHARS + 1:
        return text[:MAX_ACTION_CHARS + 1], False
    return plain, True


def graph_diff(state: EpisodeState, before: np.ndarray
               ) -> tuple[list[dict[str, Any]], list[frozenset[int]]]:
    """The pairs whose edge changed since ``before`` (a mark matrix), as trace entries."""
    after = state.working_graph.marks
    changed = before != after
    if not changed.any():  # a tool call or a rejected edit: most steps
        return [], []
    changed = np.triu(changed | changed.T, 1)
    diff, pairs = [], []
    before_graph = Graph(state.names, before)
    for i, j in zip(*np.nonzero(changed), strict=True):
        i, j = int(i), int(j)
        pairs.append(frozenset((i, j)))
        diff.append({"pair": [state.names[i], state.names[j]],
                     "before": state.edge_text(i, j, before_graph),
                     "after": state.edge_text(i, j)})
    return diff, pairs


def episode_header(config: dict[str, Any], instance: PublicInstance, seed: int | None,
                   episode: int, state: EpisodeState, tools: Sequence[Tool],
                   question: dict[str, Any] | None) -> dict[str, Any]:
    """A trace's header: the environment's config, the instance, the seed, the episode's
    number, its starting graph, the offered tools and (question episodes) the question
    asked, which replay resets to."""
    header = {
        "config": config,
        "instance": {**instance.key.to_dict(), "sha256": instance.sha256},
        "sealed": instance.sealed, "seed": seed, "episode": episode,
        "starting_graph": state.working_graph.to_dict(),
        "tools": [t.name for t in tools],
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if question is not None:
        header["question"] = question
    return header


class TraceRecorder:
    """One episode's trace: the writer, and the linker that ties each edit to its evidence."""

    def __init__(self, path: str | os.PathLike, header: dict[str, Any]):
        self.writer = TraceWriter(path, header)
        self.linker = EvidenceLinker()

    @property
    def path(self) -> Path:
        return self.writer.path

    @property
    def closed(self) -> bool:
        return self.writer.closed

    def close(self, end: dict[str, Any] | None = None) -> None:
        self.writer.close(end)

    def record_text_step(self, *, step: int, action: Any, parsed: ParsedAction | None,
                         arguments: dict | None, error: str | None, output: str,
                         state: EpisodeState, before: np.ndarray, elapsed: float,
                         step_start: float) -> None:
        """A text-view step: the action as sent (``parsed``: None when it could not be
        parsed), its outcome, the working graph's change since ``before`` and (for an edit)
        its evidence."""
        diff, pairs = graph_diff(state, before)
        tool = None
        edit = submit = False
        explicit_evidence: list[int] = []
        if parsed is not None:
            tool = parsed.tool.name
            edit = parsed.tool.edits_graph
            submit = parsed.tool.rl is not None and parsed.tool.rl.operation == "submit"
            explicit_evidence = list(getattr(parsed.args, "evidence", []) or [])
        stored, complete = serializable_action(action)
        record: dict[str, Any] = {
            "type": "step", "step": step, "action": stored, "action_complete": complete,
            "tool": tool, "args": arguments, "error": error, **output_fields(output),
            "graph_diff": diff,
        }
        if tool is not None and error is None:
            if edit:
                ids, source = self.linker.link_edit(step, pairs, explicit_evidence)
                record["evidence"], record["evidence_source"] = ids, source
            elif not submit:
                self.linker.record_call(step)
        self._finish(record, step, elapsed, step_start)

    def record_rl_step(self, *, step: int, action: Any, outcome: RLOutcome, output: str,
                       elapsed: float, step_start: float) -> None:
        """An RL-view step, recorded as the text-view tool call it stands for."""
        index = serializable_action(action)[0]
        if outcome.index is not None:
            index = outcome.index
        record: dict[str, Any] = {
            "type": "step", "step": step, "rl_action": index,
            "action": {"tool": outcome.tool, "args": outcome.arguments},
            "tool": outcome.tool, "args": outcome.arguments, "error": outcome.error,
            **output_fields(output), "graph_diff": outcome.diff,
        }
        if outcome.error is None and outcome.operation in ("add", "remove", "orient"):
            pair = frozenset((outcome.i, outcome.j))
            ids, source = self.linker.link_edit(step, [pair], None)
            record["evidence"], record["evidence_source"] = ids, source
        elif outcome.error is None and outcome.operation == "test":
            self.linker.record_call(step)
        self._finish(record, step, elapsed, step_start)

    def _finish(self, record: dict[str, Any], step: int, elapsed: float,
                step_start: float) -> None:
        record["budget_used"] = {"steps": step, "seconds": elapsed}
        record["duration"] = time.perf_counter() - step_start
        self.writer.write(record)


def trace_file_name(family: str, split: str, index: int) -> str:
    """A unique file name (vector environments share a trace directory)."""
    return f"{family}-{split}-{index:03d}-{uuid.uuid4().hex[:12]}.jsonl"


