"""``build_site``: run directories in, a static trace viewer out.

The site is ``OUT/index.html`` (the runs and a table of every episode, embedded as JSON),
``OUT/static/`` (the viewer's own script and style, copied from the package: nothing is
fetched from the network at view time) and one file per episode in ``OUT/episodes/``, loaded
by the page only when that episode is opened, so a run of 1,000 episodes opens as fast as a
run of ten. An episode file is JSON wrapped in one script call (``heuresisEpisode(...)``), so
the site works from ``file://`` as well as over HTTP (browsers refuse ``fetch`` of local
files).

Everything is read from the run directory format (:mod:`heuresis_env.evaluation.run_format`)
and the trace format (:mod:`heuresis_env.trace_files`). The true graph of an episode is the
hidden DAG of its instance, regenerated from the run's config after the run
(:func:`~heuresis_env.evaluation.run_format.regenerate_instance`; a sealed test split needs
``$HEURESIS_TEST_SALT``), as the reports do.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.integrity import verify_run
from heuresis_env.evaluation.run_format import (
    EpisodeRecord,
    RunDirectory,
    episode_file_stem,
    find_run_directories,
    load_run,
    regenerate_instance,
)
from heuresis_env.files import (
    atomic_write_bytes,
    json_compact,
    json_indented_head,
    json_safe,
    output_directory,
)
from heuresis_env.graphs import Graph, GraphError, edge_from_text
from heuresis_env.progress import progress_bar
from heuresis_env.reports.loading import BCA, CONDITION_FIELDS, run_names
from heuresis_env.threads import can_fork, parallel_map
from heuresis_env.trace_files import Trace, read_trace
from heuresis_env.version import __version__

#: the page's data format version (the script checks it)
SITE_FORMAT = 1
STATIC_DIR = Path(__file__).resolve().parent / "static"
#: the shipped files copied into ``OUT/static``
STATIC_FILES = ("viewer.js", "viewer.css", "LICENSE.txt")
EPISODES_DIR = "episodes"
#: a file marking a directory as a viewer site, so a rebuild may clear its episodes
MARKER = ".heuresis-viewer"
#: the longest tool output or transcript text kept per step (characters)
MAX_TEXT = 20_000
#: policy options whose values are never shown (keys, tokens, passwords)
_SECRET_OPTION = re.compile(r"key|token|secret|password|credential", re.IGNORECASE)

#: the columns of the episode table, in the order of each row of ``index.rows``
INDEX_COLUMNS = ("id", "run", "family", "index", "repeat", "f1", "precision", "recall", "shd",
                 "delta", "steps", "reason", "finished", "prompt_tokens", "completion_tokens",
                 "cost", "seconds", "file", "error", "instance", "search")
#: the longest text an index row keeps of its episode's tools and arguments (for the search)
MAX_SEARCH_CHARS = 1_000


@dataclass
class SiteSummary:
    """What :func:`build_site` wrote."""

    out_dir: Path
    index_path: Path
    n_runs: int
    n_episodes: int
    n_traces: int
    n_truths: int
    index_bytes: int
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    processes: int = 1  # how many processes wrote the episode files


# ---- small readers ------------------------------------------------------------------------------

def _finite(value: Any) -> float | None:
    """A number for JSON (NaN and infinities as None)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _clip(text: Any, limit: int = MAX_TEXT, whole: str | None = None) -> str | None:
    """``text`` (a value: indented JSON) cut at ``limit`` characters, saying so; ``whole``
    names where the whole value is kept. A value is indented only as far as is shown."""
    if text is None:
        return None
    if isinstance(text, str):
        if len(text) <= limit:
            return text
        head, rest = text[:limit], f"{len(text) - limit} more characters not shown"
    else:
        head, complete = json_indented_head(text, limit)
        if complete:
            return head
        rest = f"cut at {limit} characters"
    return head + f"\n… ({rest}{'; the whole of it: ' + whole if whole else ''})"


def graph_edges(graph: Mapping[str, Any] | Graph | None) -> list[list[Any]] | None:
    """A graph (``Graph.to_dict`` form) as ``[u, v, mark at u, mark at v]`` rows."""
    if graph is None:
        return None
    if not isinstance(graph, Graph):
        graph = Graph.from_dict(dict(graph))
    return [[e.u, e.v, int(e.mark_u), int(e.mark_v)] for e in graph.edges()]


def _edge(text: Any) -> list[Any] | None:
    if text is None:
        return None
    edge = edge_from_text(str(text))
    return [edge.u, edge.v, int(edge.mark_u), int(edge.mark_v)]


def safe_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Policy options for display: values of keys, tokens and passwords hidden."""
    return {k: ("(hidden)" if _SECRET_OPTION.search(str(k)) else v) for k, v in options.items()}


# ---- the transcript ---------------------------------------------------------------------------

@dataclass
class StepExtras:
    """What a language-model transcript adds to each step: the output the model read, the
    model's own text, tokens and cost of the calls that chose the action."""

    output: str | None = None
    reply: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    calls: int = 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.output is not None:
            out["output"] = _clip(self.output)
        if self.reply:
            out["reply"] = _clip(self.reply, 4000)
        if self.calls:
            out.update(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
                       cost=_finite(self.cost), model_calls=self.calls)
        return out


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "\n".join(str(block.get("text", "")) if isinstance(block, Mapping) else str(block)
                         for block in content)
    return "" if content is None else str(content)


def transcript_steps(events: Any) -> tuple[list[StepExtras], Any]:
    """Per-step extras from a language-model transcript (events with an ``event`` key:
    ``model_call``, ``action``, ``message`` — docs/llm.md), and anything else the transcript
    holds (a router's decision, a scratchpad's ledger) to show as it is.

    The k-th ``action`` event is step k; the model calls since the previous action chose it;
    the first ``tool`` message (or user ``Observation:`` message) after it is step k's output.
    """
    if not (isinstance(events, list) and events and all(
            isinstance(e, Mapping) and "event" in e for e in events)):
        return [], events
    steps: list[StepExtras] = []
    pending = StepExtras()
    awaiting_output: StepExtras | None = None
    for event in events:
        kind = event.get("event")
        if kind == "model_call":
            reply = event.get("reply") or {}
            usage = reply.get("usage") or {}
            pending.calls += 1
            pending.prompt_tokens += int(usage.get("prompt", 0) or 0)
            pending.completion_tokens += int(usage.get("completion", 0) or 0)
            cost = _finite(event.get("cost_usd"))
            if cost is not None:
                pending.cost = (pending.cost or 0.0) + cost
            if reply.get("text"):
                pending.reply = (pending.reply + "\n" if pending.reply else "") + str(reply["text"])
        elif kind == "action":
            steps.append(pending)
            awaiting_output, pending = pending, StepExtras()
        elif kind == "message" and awaiting_output is not None:
            message = event.get("message") or {}
            role = message.get("role")
            text = _message_text(message)
            if role == "tool" or (role == "user" and text.startswith("Observation:")):
                awaiting_output.output = text.removeprefix("Observation:\n")
                awaiting_output = None
    return steps, None


# ---- one episode -----------------------------------------------------------------------------

def _step_json(record: Mapping[str, Any], extras: StepExtras | None) -> dict[str, Any]:
    diff = []
    for change in record.get("graph_diff") or []:
        diff.append({"pair": list(change.get("pair") or []), "before": _edge(change.get("before")),
                     "after": _edge(change.get("after"))})
    step: dict[str, Any] = {
        "n": int(record.get("step", 0)), "tool": record.get("tool"),
        "args": record.get("args"), "error": _clip(record.get("error"), 4000), "diff": diff,
        "seconds": _finite((record.get("budget_used") or {}).get("seconds")),
        "duration": _finite(record.get("duration")),
    }
    if record.get("tool") is None or record.get("error"):
        step["action"] = _clip(record.get("action"), 4000)
    if "evidence" in record:
        step["evidence"] = [int(e) for e in record.get("evidence") or []]
        step["evidence_source"] = record.get("evidence_source")
    if "rl_action" in record:
        step["rl_action"] = record["rl_action"]
    if extras is not None:
        step.update(extras.to_json())
    if step.get("output") is None and isinstance(record.get("output"), str):
        step["output"] = _clip(record["output"])  # the trace's own (bounded) text
    return step


def comparison(truth: list[list[Any]], submitted: list[list[Any]]) -> dict[str, list[list[str]]]:
    """Correct, missing and extra adjacencies of the submitted graph against the truth (pairs
    sorted by name), as the adjacency F1 counts them."""
    def pairs(edges: Iterable[Sequence[Any]]) -> set[tuple[str, str]]:
        return {(min(str(e[0]), str(e[1])), max(str(e[0]), str(e[1]))) for e in edges}

    true_pairs, found = pairs(truth), pairs(submitted)
    return {"correct": sorted(map(list, true_pairs & found)),
            "missing": sorted(map(list, true_pairs - found)),
            "extra": sorted(map(list, found - true_pairs))}


class _Truths:
    """The hidden DAG of each instance, regenerated once per data hash."""

    def __init__(self) -> None:
        self.graphs: dict[str, list[list[Any]]] = {}
        self.failed: dict[str, str] = {}  # run path → why its instances cannot be regenerated

    def get(self, run: RunDirectory, episode: EpisodeRecord) -> tuple[list | None, str | None]:
        if episode.instance_sha256 in self.graphs:
            return self.graphs[episode.instance_sha256], None
        reason = self.failed.get(str(run.path))
        if reason is not None:
            return None, reason
        try:
            instance = regenerate_instance(run, episode.instance, episode.instance_sha256)
        except HeuresisError as exc:
            if "salt" in str(exc).lower():  # the same for every instance of this run
                self.failed[str(run.path)] = str(exc)
            return None, str(exc)
        edges = graph_edges(instance.record.dag)
        if edges is None:
            return None, "this data table was given without a true graph"
        self.graphs[episode.instance_sha256] = edges
        return edges, None


def episode_payload(run: RunDirectory, run_name: str, episode: EpisodeRecord,
                    truths: _Truths, delta: float | None) -> tuple[dict[str, Any], list[str]]:
    """Everything the episode view shows, and warnings about unreadable parts."""
    warnings: list[str] = []
    notes: list[str] = []
    trace: Trace | None = None
    if episode.trace_path is not None:
        try:
            trace = read_trace(episode.trace_path)
        except HeuresisError as exc:
            warnings.append(f"{run_name} {episode.episode_id}: trace not read ({exc})")
            notes.append(f"The trace could not be read: {exc}")
    else:
        notes.append("The run kept no trace of this episode.")

    extras: list[StepExtras] = []
    other_transcript: Any = None
    if episode.transcript:
        path = run.path / episode.transcript
        try:
            events = json.loads(path.read_text(encoding="utf-8"))
            extras, other_transcript = transcript_steps(events)
        except (OSError, ValueError) as exc:
            warnings.append(f"{run_name} {episode.episode_id}: transcript not read ({exc})")
        except Exception as exc:  # noqa: BLE001 - a transcript of wrong types is skipped
            warnings.append(f"{run_name} {episode.episode_id}: transcript not read (malformed: "
                            f"{type(exc).__name__}: {exc})")
            extras, other_transcript = [], None

    steps = []
    start = None
    header: dict[str, Any] = {}
    if trace is not None:
        header = trace.header
        try:
            start = graph_edges(header.get("starting_graph"))
            for k, record in enumerate(trace.steps):
                steps.append(_step_json(record, extras[k] if k < len(extras) else None))
        except (GraphError, TypeError, ValueError) as exc:
            warnings.append(f"{run_name} {episode.episode_id}: trace not read ({exc})")
            notes.append(f"The trace could not be read: {exc}")
            steps, start = [], None
        if steps and not any("output" in step for step in steps):
            notes.append("This trace keeps a digest of each tool output, not its text (it was "
                         "written before traces kept outputs); `heuresis replay` re-runs the "
                         "steps.")

    final_graph = episode.final_graph
    if final_graph is None and trace is not None:
        final_graph = (trace.end or {}).get("final_graph")
    try:
        final = graph_edges(final_graph)
    except (GraphError, TypeError, ValueError):
        final = None
    names = list((final_graph or header.get("starting_graph") or {}).get("names") or [])
    truth, truth_note = truths.get(run, episode)
    result: dict[str, Any] = {
        "format": SITE_FORMAT, "id": episode.episode_id, "run": run_name,
        "policy": run.policy, "options": safe_options(run.policy_options),
        "settings": run.settings, "family": episode.family, "split": episode.split,
        "index": episode.index, "repeat": episode.repeat, "sha256": episode.instance_sha256,
        "names": names, "start": start, "steps": steps, "final": final,
        "scores": {k: _finite(v) for k, v in episode.scores.items()},
        "delta": delta, "reason": episode.termination_reason, "finished": episode.finished,
        "steps_used": episode.steps, "seconds": _finite(episode.wall_seconds),
        "prompt_tokens": episode.prompt_tokens, "completion_tokens": episode.completion_tokens,
        "cost": _finite(episode.cost_usd), "api_retries": episode.api_retries,
        "error": _clip(episode.error, 4000), "tools": header.get("tools"),
        "truth": truth, "truth_note": truth_note, "notes": notes,
        "task": episode.task, "question": json_safe(episode.question),
        "transcript": (None if other_transcript is None else _clip(
            other_transcript, whole=f"{episode.transcript} in the run directory")),
    }
    if truth is not None and final is not None and episode.task == "graph":
        result["comparison"] = comparison(truth, final)
    return result, warnings


# ---- BCA_φ per instance -------------------------------------------------------------------------

def _conditions(run: RunDirectory) -> tuple:
    return tuple(json.dumps(run.settings.get(k), sort_keys=True) for k in CONDITION_FIELDS)


def bca_means(runs: Sequence[RunDirectory]) -> dict[tuple[str, tuple | None], float]:
    """Mean F1 of the ``bca`` runs per instance data hash: keyed by (sha256, conditions) and
    by (sha256, None) for a BCA run under any conditions."""
    sums: dict[tuple[str, tuple | None], list[float]] = {}
    for run in runs:
        if run.policy != BCA:
            continue
        for episode in run.episodes:
            f1 = episode.score("f1")
            if math.isnan(f1) or episode.error:  # an errored episode is no reference
                continue
            for key in ((episode.instance_sha256, _conditions(run)),
                        (episode.instance_sha256, None)):
                sums.setdefault(key, []).append(f1)
    return {key: sum(values) / len(values) for key, values in sums.items()}


def _delta(run: RunDirectory, episode: EpisodeRecord, bca: Mapping) -> float | None:
    if run.policy == BCA:
        return None
    reference = bca.get((episode.instance_sha256, _conditions(run)),
                        bca.get((episode.instance_sha256, None)))
    f1 = episode.score("f1")
    if reference is None or math.isnan(f1):
        return None
    return f1 - reference


# ---- the site ----------------------------------------------------------------------------------

def _prepare(out: Path) -> None:
    """Create ``out``; a rebuild of a viewer site clears its old episode files, and any other
    non-empty directory is refused (nothing of someone else's is overwritten)."""
    output_directory(out, "viewer directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise HeuresisError(f"{out} is a non-empty directory that is not a Heuresis viewer "
                            "site; give an empty or new directory to --out")
    shutil.rmtree(out / EPISODES_DIR, ignore_errors=True)
    (out / EPISODES_DIR).mkdir(parents=True, exist_ok=True)
    (out / "static").mkdir(exist_ok=True)
    (out / MARKER).write_text(f"heuresis {__version__} viewer site\n", encoding="utf-8")


#: characters written as JSON escapes in embedded JSON: ``<`` and ``>`` (no ``</script>`` or
#: ``<!--`` can open or close anything), ``&``, and the line separators JavaScript parsers of
#: old treated as line ends
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                   "\u2029": "\\u2029"}
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029]")


def _script_json(value: Any) -> str:
    """JSON safe to embed in a script element or a script file: ``<``, ``>``, ``&``, U+2028
    and U+2029 are written as ``\\uXXXX`` escapes (the same string once parsed)."""
    text = json_compact(value, ensure_ascii=False)
    return _SCRIPT_UNSAFE.sub(lambda m: _SCRIPT_ESCAPES[m.group()], text)


def _size_text(values: Iterable[Any]) -> int | str | None:
    """One size (``10``), a range (``"5–37"``) or None when the instances do not say."""
    numbers = sorted({int(v) for v in values if isinstance(v, int) and not isinstance(v, bool)})
    if not numbers:
        return None
    return numbers[0] if len(numbers) == 1 else f"{numbers[0]}–{numbers[-1]}"


def _run_json(run: RunDirectory, name: str) -> dict[str, Any]:
    f1 = [e.score("f1") for e in run.episodes if not math.isnan(e.score("f1"))]
    keys = [k for k in run.config.get("instance_keys") or [] if isinstance(k, Mapping)]
    # the size of the instances themselves: a run made without --d or --n records None (each
    # family's own size), and its keys still say what the instances were
    d = run.config.get("d") or _size_text(k.get("d") for k in keys)
    n = run.config.get("n") or _size_text(k.get("n") for k in keys)
    return {"name": name, "path": str(run.path), "policy": run.policy,
            "options": safe_options(run.policy_options), "settings": run.settings,
            "split": run.split, "d": d, "n": n,
            "families": run.config.get("families"), "repeats": run.repeats,
            "episodes": len(run.episodes), "expected": run.expected_episodes,
            "mean_f1": sum(f1) / len(f1) if f1 else None, "created": run.config.get("created")}


def index_html(title: str, data: Mapping[str, Any]) -> str:
    """The page shell: the index data embedded as JSON, the shipped script and style."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="static/viewer.css">
</head>
<body>
<header class="top"><h1><a href="#" id="home-link">Heuresis trace viewer</a></h1>
<span id="site-summary"></span></header>
<main id="app"><noscript>The viewer needs JavaScript (its script is shipped with the site,
nothing is fetched from the network).</noscript></main>
<script id="index-data" type="application/json">{_script_json(data)}</script>
<script src="static/viewer.js"></script>
</body>
</html>
"""


#: below this many episodes a build stays in one process (a pool costs more than it saves)
PARALLEL_MIN_EPISODES = 400


@dataclass
class _Entry:
    """One episode's contribution to the site: its index row and what went wrong reading it."""

    row: list[Any] | None  # None: the record was skipped
    warnings: list[str]
    has_trace: bool
    has_truth: bool


def search_text(steps: Sequence[Mapping[str, Any]], limit: int = MAX_SEARCH_CHARS) -> str:
    """The tools an episode called and the values of their arguments, each once, in order of
    first use (``ci_test X1 X2 kci run_algorithm pc-kci``): what the page's search matches."""
    words: dict[str, None] = {}

    def add(value: Any) -> None:
        if isinstance(value, Mapping):
            for item in value.values():
                add(item)
        elif isinstance(value, list | tuple):
            for item in value:
                add(item)
        elif value is not None and not isinstance(value, bool):
            words.setdefault(str(value)[:80], None)

    for step in steps:
        if step.get("tool"):
            words.setdefault(str(step["tool"]), None)
        add(step.get("args"))
    return " ".join(words)[:limit]


def _episode_entry(run: RunDirectory, run_number: int, name: str, episode: EpisodeRecord,
                   truths: _Truths, delta: float | None, out: Path) -> _Entry:
    """Write one episode's file and return its row of the index; a record too malformed to
    show is skipped (no row) with a warning naming it."""
    try:
        return _written_entry(run, run_number, name, episode, truths, delta, out)
    except Exception as exc:  # noqa: BLE001 - one bad record never costs the site
        return _Entry(None, [f"{name} {getattr(episode, 'episode_id', '?')}: skipped, the "
                             f"record is malformed ({type(exc).__name__}: {exc})"], False, False)


def _written_entry(run: RunDirectory, run_number: int, name: str, episode: EpisodeRecord,
                   truths: _Truths, delta: float | None, out: Path) -> _Entry:
    payload, problems = episode_payload(run, name, episode, truths, delta)
    file = f"r{run_number}-{episode_file_stem(episode.episode_id)}"
    text = f"heuresisEpisode({json.dumps(file)},{_script_json(payload)});\n"
    atomic_write_bytes(out / EPISODES_DIR / f"{file}.js", text.encode("utf-8"))
    row = [episode.episode_id, run_number, episode.family, episode.index,
           episode.repeat, _finite(episode.score("f1")),
           _finite(episode.score("precision")), _finite(episode.score("recall")),
           _finite(episode.score("shd")), delta, episode.steps,
           episode.termination_reason, episode.finished, episode.prompt_tokens,
           episode.completion_tokens, _finite(episode.cost_usd),
           _finite(episode.wall_seconds), file, bool(episode.error),
           episode.instance_sha256[:16], search_text(payload["steps"])]
    return _Entry(row, problems, bool(payload["steps"] or payload["start"] is not None),
                  payload["truth"] is not None)


#: what :func:`_build_chunk` reads, in this process or a worker forked from it: (runs, names,
#: out, [(run number, episode, delta)] in index order); set by :func:`build_site` while it builds
_FORK_STATE: tuple[list[RunDirectory], list[str], Path,
                   list[tuple[int, EpisodeRecord, float | None]]] | None = None


def _build_chunk(positions: list[int]) -> tuple[list[tuple[int, _Entry]], dict[str, str]]:
    """The entries of these positions of the index (one truth cache for the chunk)."""
    assert _FORK_STATE is not None, "_build_chunk runs inside build_site"
    runs, names, out, items = _FORK_STATE
    truths = _Truths()
    entries = []
    for position in positions:
        run_number, episode, delta = items[position]
        entries.append((position, _episode_entry(runs[run_number], run_number,
                                                 names[run_number], episode, truths, delta,
                                                 out)))
    return entries, truths.failed


def _chunk_name(positions: list[int]) -> str:
    """The episodes of a chunk, for an error raised while building it."""
    assert _FORK_STATE is not None, "_chunk_name runs inside build_site"
    items = _FORK_STATE[3]
    first = items[positions[0]][1].episode_id
    return f"the viewer pages of {len(positions)} episode(s) from {first}"


def build_site(run_dirs: Sequence[str | os.PathLike], out_dir: str | os.PathLike, *,
               progress: bool = False, workers: int = 1) -> SiteSummary:
    """Write the viewer site of ``run_dirs`` to ``out_dir`` (see the module docstring).

    ``workers`` > 1 writes the episode files in that many forked processes (Linux, from a
    process with no other thread but daemon helpers, at least
    :data:`PARALLEL_MIN_EPISODES` episodes; otherwise in this one). Either way the episodes
    are built in chunks of whole instances, so each instance's true graph is regenerated
    once, and the site is the same file for file.
    """
    global _FORK_STATE
    started = time.perf_counter()
    if not run_dirs:
        raise HeuresisError("give at least one run directory")
    if workers < 1:
        raise HeuresisError(f"workers must be at least 1, got {workers!r}")
    paths = find_run_directories(run_dirs)  # a demo's folder stands for its runs/*
    runs = [load_run(p) for p in paths]
    unchecked: list[str] = []
    for run in runs:  # scores are re-scored and seals checked, never trusted (issue 30)
        verify_run(run, warn=unchecked.append, complete=True)
    names = run_names(paths)
    out = Path(out_dir)
    _prepare(out)
    for name in STATIC_FILES:
        shutil.copyfile(STATIC_DIR / name, out / "static" / name)

    warnings = [w for run in runs for w in run.warnings] + unchecked
    bca = bca_means(runs)
    items = [(run_number, episode, _delta(run, episode, bca))
             for run_number, run in enumerate(runs)
             for episode in sorted(run.episodes, key=lambda e: (e.family, e.index, e.repeat))]
    # chunks of whole instances, so each instance's truth is regenerated once
    by_instance: dict[str, list[int]] = {}
    for position, (_, episode, _) in enumerate(items):
        by_instance.setdefault(episode.instance_sha256, []).append(position)
    groups = list(by_instance.values())
    n_chunks = min(len(groups), workers * 4)
    chunks = [[p for group in groups[k::n_chunks] for p in group] for k in range(n_chunks)]
    parallel = workers > 1 and len(items) >= PARALLEL_MIN_EPISODES and can_fork()
    bar = progress_bar(total=len(items), show=progress, desc="viewer", leave=False)
    entries: list[_Entry | None] = [None] * len(items)
    failed: dict[str, str] = {}
    _FORK_STATE = (runs, names, out, items)
    try:
        # forked workers read _FORK_STATE; in order of finishing, for the bar
        for done, chunk_failed in parallel_map(_build_chunk, chunks, workers if parallel else 1,
                                               ordered=False, fork_only=True,
                                               describe=_chunk_name):
            for position, entry in done:
                entries[position] = entry
            failed.update(chunk_failed)
            bar.update(len(done))
    finally:
        _FORK_STATE = None
    bar.close()
    rows: list[list[Any]] = []
    n_traces = n_truths = 0
    for written in entries:
        assert written is not None  # every position was built, in order
        warnings += written.warnings
        if written.row is None:
            continue
        rows.append(written.row)
        n_traces += written.has_trace
        n_truths += written.has_truth
    warnings += sorted(set(failed.values()))
    data = {"format": SITE_FORMAT, "version": __version__,
            "built": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "runs": [_run_json(run, name) for run, name in zip(runs, names, strict=True)],
            "columns": list(INDEX_COLUMNS), "rows": rows, "warnings": warnings,
            "has_bca": any(run.policy == BCA for run in runs)}
    page = index_html("Heuresis trace viewer", data).encode("utf-8")
    index_path = out / "index.html"
    atomic_write_bytes(index_path, page)
    return SiteSummary(out_dir=out, index_path=index_path, n_runs=len(runs),
                       n_episodes=len(rows), n_traces=n_traces, n_truths=n_truths,
                       index_bytes=len(page), warnings=warnings,
                       seconds=time.perf_counter() - started,
                       processes=workers if parallel else 1)
