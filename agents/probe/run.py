"""Run the name-only probe against a chat backend, score it, and write its table.

Scores: per network, adjacency F1 of the answered skeleton and orientation accuracy (of the
true edges the answer joins, the share it orients the true way; an unoriented answer edge
counts as wrong); over the pairs, accuracy with a 95% Wilson interval. ``probe.json`` in the
output directory holds every prompt, reply, parsed answer and score, and the table rows that
``heuresis report --probe DIR`` puts in a report.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.llm import ChatBackend, EdgeListError, parse_edge_list
from agents.probe.items import (
    ARMS,
    SYSTEM_PROMPT,
    UNNAMED_KEYS,
    NetworkItem,
    network_items,
    pair_items,
)
from heuresis_env.files import atomic_write_bytes, json_safe
from heuresis_env.graphs import EdgeMark, Graph, graph_from_edge_lines
from heuresis_env.metrics import adjacency_scores, wilson_interval
from heuresis_env.reports import PROBE_FILE, PROBE_FORMAT_VERSION

MAX_TOKENS = 2048
_PAIR_ANSWER = re.compile(r"\b([AB])\s*(?:-+>|→|=>|causes)\s*([AB])\b", re.IGNORECASE)


def orientation_accuracy(answer: Graph, truth: Graph) -> float:
    """Of the true (directed) edges the answer joins, the share oriented the true way."""
    joined = correct = 0
    for edge in truth.edges():
        found = answer.edge(edge.u, edge.v)
        if found is None:
            continue
        joined += 1
        mark_at_v = found.mark_v if found.u == edge.u else found.mark_u
        mark_at_u = found.mark_u if found.u == edge.u else found.mark_v
        correct += mark_at_v == EdgeMark.ARROW and mark_at_u == EdgeMark.TAIL
    return correct / joined if joined else math.nan


def score_network(item: NetworkItem, reply: str) -> dict[str, Any]:
    """Parse a network answer over the item's names and score it (an unreadable answer is
    the empty graph, flagged)."""
    error = None
    try:
        edges = parse_edge_list(reply, item.names)
    except EdgeListError as exc:
        edges, error = [], str(exc)
    answer = graph_from_edge_lines(item.names, edges)
    scores = adjacency_scores(answer, item.truth)
    return {"edges": edges, "parse_error": error, "f1": scores["f1"],
            "precision": scores["precision"], "recall": scores["recall"],
            "orientation": orientation_accuracy(answer, item.truth),
            "n_answered": answer.n_edges(), "n_true": item.truth.n_edges()}


def read_pair_answer(reply: str) -> bool | None:
    """True for 'A -> B', False for 'B -> A', None when the reply says neither."""
    for match in _PAIR_ANSWER.finditer(reply):
        first, second = match.group(1).upper(), match.group(2).upper()
        if first != second:
            return first == "A"
    return None


@dataclass
class ProbeResult:
    backend: str
    model: str
    seed: int
    networks: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    seconds: float

    def pair_summary(self, arm: str) -> dict[str, Any]:
        rows = [p for p in self.pairs if p["arm"] == arm]
        correct = sum(bool(p["correct"]) for p in rows)
        interval = wilson_interval([bool(p["correct"]) for p in rows])  # nan without pairs
        low, high = interval.low, interval.high
        return {"arm": arm, "pairs": len(rows), "correct": correct,
                "accuracy": correct / len(rows) if rows else math.nan, "low": low,
                "high": high, "unparsed": sum(p["answer"] is None for p in rows)}

    def table_rows(self) -> list[list[str]]:
        """The probe's one table: each item, with names and in its control arm."""
        def cell(row: dict[str, Any] | None) -> str:
            if row is None:
                return "—"
            orientation = ("n/a" if math.isnan(row["orientation"])
                           else f"{row['orientation']:.2f}")
            note = " (unreadable)" if row["parse_error"] else ""
            return f"F1 {row['f1']:.2f}, orient. {orientation}{note}"

        by = {(r["item"], r["arm"]): r for r in self.networks}
        rows = []
        for item in dict.fromkeys(r["item"] for r in self.networks if r["arm"] != "unnamed"):
            truth = by[(item, "names")]
            rows.append([f"{item} (d={truth['d']}, {truth['n_true']} arcs)", cell(truth),
                         cell(by.get((item, "indices")))])
        unnamed = [r for r in self.networks if r["arm"] == "unnamed"]
        if unnamed:
            f1 = float(np.mean([r["f1"] for r in unnamed]))
            orientations = [r["orientation"] for r in unnamed
                            if not math.isnan(r["orientation"])]
            orient = f"{np.mean(orientations):.2f}" if orientations else "n/a"
            rows.append([f"{len(unnamed)} Heuresis instances (never named; mean)", "—",
                         f"F1 {f1:.2f}, orient. {orient}"])
        pair_cells = []
        for arm in ("names", "indices"):
            s = self.pair_summary(arm)
            pair_cells.append("—" if not s["pairs"] else
                              f"accuracy {s['accuracy']:.2f} [{s['low']:.2f}, {s['high']:.2f}]"
                              + (f", {s['unparsed']} unparsed" if s["unparsed"] else ""))
        n_pairs = self.pair_summary("names")["pairs"]
        rows.append([f"Tübingen pairs ({n_pairs}, direction)", *pair_cells])
        return rows

    def to_markdown(self) -> str:
        lines = [f"Name-only probe: {self.backend} model `{self.model}`, seed {self.seed} "
                 f"({self.seconds:.0f} s)", "",
                 "| item | with names | names replaced by indices / never named |",
                 "|---|---|---|"]
        lines += [f"| {' | '.join(row)} |" for row in self.table_rows()]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": PROBE_FORMAT_VERSION, "backend": self.backend,
                "model": self.model, "seed": self.seed, "seconds": self.seconds,
                "table": {"columns": ["item", "with names",
                                      "names replaced by indices / never named"],
                          "rows": self.table_rows()},
                "pair_summaries": [self.pair_summary(arm) for arm in ("names", "indices")],
                "networks": self.networks, "pairs": self.pairs}


def _ask(backend: ChatBackend, prompt: str) -> str:
    messages = [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt}]
    return backend.complete(messages, None, MAX_TOKENS).text


def run_probe(backend: ChatBackend, backend_name: str, seed: int = 0,
              arms: Sequence[str] = ARMS, networks: Sequence[str] | None = None,
              unnamed_count: int = 8, max_pairs: int | None = None,
              progress: Callable[[str], None] | None = None) -> ProbeResult:
    """Ask every question of ``arms`` once and score the answers."""
    started = time.perf_counter()
    kwargs: dict[str, Any] = {"unnamed": UNNAMED_KEYS[:unnamed_count]}
    if networks is not None:
        kwargs["networks"] = networks
    network_rows = []
    for item in network_items(seed, **kwargs):
        if item.arm not in arms:
            continue
        reply = _ask(backend, item.prompt)
        network_rows.append({"item": item.item, "arm": item.arm, "d": len(item.names),
                             "names": list(item.names), "prompt": item.prompt,
                             "reply": reply, **score_network(item, reply)})
        if progress:
            progress(f"{item.arm}:{item.item}")
    pair_rows = []
    pairs = [p for p in pair_items(seed) if p.arm in arms]
    if max_pairs is not None:
        kept = list(dict.fromkeys(p.item for p in pairs))[:max_pairs]
        pairs = [p for p in pairs if p.item in kept]
    for pair in pairs:
        reply = _ask(backend, pair.prompt)
        answer = read_pair_answer(reply)
        pair_rows.append({"item": pair.item, "arm": pair.arm, "a": pair.a, "b": pair.b,
                          "truth": pair.answer, "reply": reply,
                          "answer": None if answer is None else ("A -> B" if answer
                                                                 else "B -> A"),
                          "correct": answer is not None and answer == pair.a_causes_b})
        if progress:
            progress(f"{pair.arm}:{pair.item}")
    return ProbeResult(backend_name, backend.model, seed, network_rows, pair_rows,
                       time.perf_counter() - started)


def write_probe(result: ProbeResult, out_dir: str | Path) -> Path:
    """Write ``probe.json`` (everything) and ``probe.md`` (the table) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / PROBE_FILE, (json.dumps(json_safe(result.to_dict()), indent=1)
                                          + "\n").encode())
    atomic_write_bytes(out / "probe.md", (result.to_markdown() + "\n").encode())
    return out / PROBE_FILE
