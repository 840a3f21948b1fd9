"""Language-model wrappers compared on real model output (``heuresis llm-compare``).

Each **wrapper** is the ``llm`` policy with a few options (:data:`WRAPPERS`):

| wrapper | what it is |
|---|---|
| ``react`` | the project's wrapper: the ReAct loop (a short thought, one JSON action in the text), the tolerant reading of actions and of the final edge list, one retry of a refused list — prompt level 1 |
| ``react-l3`` | the same at prompt level 3 (how PC works and fails, the non-linear tests) |
| ``strict`` | the ReAct loop read strictly: a reply is an action only if it is one JSON action, the final list only if it is one JSON list; no retry |
| ``constrained`` | each action decoded under its JSON schema (``response_format``: the server masks every token outside it), the final list under an edge-list schema; no thought text |
| ``direct`` | no loop: the final edge list asked for on the first turn, from the task statement alone |

Every wrapper runs on every local model (:data:`~agents.llm.local_models.LOCAL_MODELS`) under
the same step, token and time budgets, beside reference policies (BCA_φ, PC-KCI, the paper's
router, the RL repair policy in the guided condition) under those budgets too; then the report
(``heuresis report``'s tables) and :func:`wrapper_table` — per model, wrapper and family: F1
over all and over finished episodes, truncation, Δʳ_φ, parse failures (action turns whose
reply held no readable action), final-list retries and fall-backs, replies cut by the token
budget, model calls answered per episode and the share that timed out (:func:`timeout_note`
warns when many did), tokens, seconds and cost per episode.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from agents.llm.local_models import LOCAL_MODELS, prepare_model
from agents.llm.local_server import ServerProcess
from heuresis_env.console import text_table
from heuresis_env.errors import UnknownNameError
from heuresis_env.evaluation import evaluate_many, load_run
from heuresis_env.policy import EpisodeSettings
from heuresis_env.reports import build_report

__all__ = ["COMPARISON_SETTINGS", "REFERENCES", "WRAPPERS", "Arm", "comparison_arms",
           "run_comparison", "wrapper_table"]

#: wrapper → (policy options, settings changed)
WRAPPERS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "react": ({}, {}),
    "react-l3": ({}, {"prompt_level": 3}),
    "strict": ({"parse": "strict"}, {}),
    "constrained": ({"constrained": True}, {}),
    "direct": ({"loop": False}, {}),
}
#: the reference policies run beside them (``rl`` in the guided condition)
REFERENCES = ("bca", "pc-kci", "router", "rl")
GUIDED = ("rl",)
#: budgets a CPU meets: 6 steps, 64 tokens a turn, 60 s an episode
COMPARISON_SETTINGS = EpisodeSettings(max_steps=6, max_seconds=60.0, token_budget_per_turn=64)
#: episode workers: enough concurrent episodes to fill each model's batch (a language-model
#: policy is a cheap client; the models live in their servers)
DEFAULT_WORKERS = 16
#: the first model's server port (the next model's is the next port); 0: free ports
DEFAULT_PORT = 8650


@dataclass(frozen=True)
class Arm:
    """One run of the comparison: its name (the run directory's), policy and options,
    settings; ``model``/``wrapper`` for a language-model arm (None for a reference)."""

    name: str
    policy: str
    options: dict[str, Any]
    settings: EpisodeSettings
    model: str | None = None
    wrapper: str | None = None


def comparison_arms(models: Sequence[str], wrappers: Sequence[str],
                    references: Sequence[str], settings: EpisodeSettings,
                    model_dirs: Mapping[str, str] | None = None,
                    servers: Mapping[str, str] | None = None) -> list[Arm]:
    """The runs: every wrapper on every model, then the references. ``servers``: the base
    URL of each model's shared server (its episodes are decoded there, batched), else
    ``model_dirs``: the prepared copy each policy loads itself."""
    arms = []
    for model in models:
        if model not in LOCAL_MODELS:
            raise UnknownNameError("local model", model, LOCAL_MODELS)
        for wrapper in wrappers:
            if wrapper not in WRAPPERS:
                raise UnknownNameError("wrapper", wrapper, WRAPPERS)
            options, changes = WRAPPERS[wrapper]
            policy_options = {"backend": "local", "model": model, **options}
            if servers and model in servers:
                policy_options["base_url"] = str(servers[model])
            elif model_dirs and model in model_dirs:
                policy_options["model_dir"] = str(model_dirs[model])
            arms.append(Arm(f"{model}-{wrapper}", "llm", policy_options,
                            replace(settings, **changes), model, wrapper))
    for reference in references:
        arms.append(Arm(reference, reference, {},
                        replace(settings, guided=True) if reference in GUIDED else settings))
    return arms


def run_comparison(out: Path, *, models: Sequence[str], wrappers: Sequence[str],
                   references: Sequence[str] = REFERENCES, families: str | list[str] = "all",
                   count: int = 6, d: int = 10,
                   n: int = 200, split: str = "test",
                   settings: EpisodeSettings = COMPARISON_SETTINGS,
                   workers: int = DEFAULT_WORKERS, port: int = DEFAULT_PORT,
                   progress: bool = False) -> dict[str, Any]:
    """Prepare the models, start one server per model (``heuresis llm-server``, one torch
    thread each, on ``port``, ``port + 1``, …; 0: free ports), run every arm on ``count``
    instances of each family (all six) in ``workers`` episode workers — the language-model
    policies are clients of their model's server, which decodes their concurrent requests as
    one batch — and write the report and the wrapper table; returns the table's rows and the
    paths."""
    started = time.perf_counter()
    model_dirs = {model: str(prepare_model(model)) for model in models}
    with ExitStack() as stack:
        servers = {model: stack.enter_context(ServerProcess(
            model, model_dir=model_dirs[model], port=port + index if port else 0, threads=1,
            cache_slots=workers // 2 + 4, max_batch=workers)).url
            for index, model in enumerate(models)}
        prepared = time.perf_counter() - started
        arms = comparison_arms(models, wrappers, references, settings, model_dirs, servers)
        runs = [{"policy_spec": arm.policy, "families": families, "split": split,
                 "count": count, "settings": arm.settings, "out_dir": out / "runs" / arm.name,
                 "policy_options": arm.options, "d": d, "n": n} for arm in arms]
        # the references first, then the language-model arms: a reference's episodes compute
        # PC-KCI's evidence (CPU-bound), and beside them the model servers, one core each,
        # would answer after the episodes' deadline — the time budget binding on the harness
        for group in ([r for r, a in zip(runs, arms, strict=True) if a.model is None],
                      [r for r, a in zip(runs, arms, strict=True) if a.model is not None]):
            if group:
                evaluate_many(group, workers=workers, progress=progress)
    ran = time.perf_counter() - started - prepared
    report = build_report([run["out_dir"] for run in runs], out / "report", progress=False)
    rows = wrapper_table([a for a in arms if a.model], out / "runs",
                         "bca" if "bca" in references else None)
    text = format_wrapper_table(rows)
    (out / "wrappers.md").write_text(markdown_wrapper_table(rows, settings, count, d, n))
    (out / "wrappers.json").write_text(json.dumps(
        [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
         for r in rows], indent=1))
    return {"rows": rows, "text": text, "report": report, "prepare_seconds": prepared,
            "run_seconds": ran, "seconds": time.perf_counter() - started}


# ---- the wrapper table ---------------------------------------------------------------------------

def _events(run_dir: Path, episode: Any) -> list[dict[str, Any]]:
    if not episode.transcript:
        return []
    try:
        events = json.loads((run_dir / episode.transcript).read_text())
    except (OSError, json.JSONDecodeError):
        return []
    return events if isinstance(events, list) else []


def _episode_figures(run_dir: Path, episode: Any) -> dict[str, float]:
    events = _events(run_dir, episode)
    actions = [e for e in events if e.get("event") == "action" and e.get("source") != "final_turn"]
    calls = [e for e in events if e.get("event") == "model_call"]
    failed = [e for e in events if e.get("event") == "model_call_failed"
              and int(e.get("attempts", 1) or 0) > 0]  # a call made, not one skipped for time
    finals = [e for e in events if e.get("event") == "final_turn"]
    status = finals[-1].get("status") if finals else None
    return {
        "action_turns": len(actions),
        "unparsed": sum(e.get("source") == "unparsed" for e in actions),
        "calls": len(calls),
        "failed_calls": len(failed),
        # the client's deadline passed before the reply came: the server was slower than the
        # time left (its batch shares a core), not the model's output
        "timed_out": sum(e.get("error_type") == "DeadlineExceeded" for e in failed),
        "cut": sum((e.get("reply") or {}).get("finish_reason") == "length" for e in calls),
        # a retry asked for, whether or not its call could still be made in time
        "final_retry": float(any(e.get("purpose") == "final_retry" for e in events
                                 if e.get("event") in ("model_call", "model_call_failed"))),
        "final_fallback": float(status == "fallback_working_graph"),
        "final_turn": float(bool(finals)),
    }


def _mean(values: Sequence[float]) -> float:
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return float(np.mean(kept)) if kept else math.nan


def wrapper_table(arms: Sequence[Arm], runs_dir: Path, bca: str | None = "bca"
                  ) -> list[dict[str, Any]]:
    """Per language-model arm and family (and ``all``): the comparison's figures (module
    docstring). Δʳ_φ pairs each episode with BCA_φ's on the same instance."""
    bca_f1: dict[tuple[str, int], float] = {}
    if bca is not None and (runs_dir / bca).is_dir():
        for episode in load_run(runs_dir / bca).episodes:
            if episode.error is None:
                bca_f1[(episode.family, episode.index)] = float(episode.scores.get("f1", math.nan))
    rows = []
    for arm in arms:
        run_dir = runs_dir / arm.name
        if not run_dir.is_dir():
            continue
        episodes = load_run(run_dir).episodes
        figures = {id(e): _episode_figures(run_dir, e) for e in episodes}
        families = sorted({e.family for e in episodes})
        for family in [*families, "all"]:
            chosen = [e for e in episodes if family in ("all", e.family)]
            scored = [e for e in chosen if e.error is None]
            f1 = [float(e.scores.get("f1", math.nan)) for e in scored]
            finished = [float(e.scores.get("f1", math.nan)) for e in scored if e.finished]
            deltas = [float(e.scores.get("f1", math.nan)) - bca_f1[(e.family, e.index)]
                      for e in scored if (e.family, e.index) in bca_f1]
            per = [figures[id(e)] for e in scored]
            turns = sum(p["action_turns"] for p in per)
            calls = sum(p["calls"] for p in per)
            made = calls + sum(p["failed_calls"] for p in per)
            tokens = [(e.prompt_tokens or 0) + (e.completion_tokens or 0) for e in scored]
            costs = [e.cost_usd for e in scored if e.cost_usd is not None]
            rows.append({
                "model": arm.model, "wrapper": arm.wrapper, "family": family,
                "episodes": len(chosen), "errors": len(chosen) - len(scored),
                "f1_all": _mean(f1), "f1_finished": _mean(finished),
                "finished": sum(e.finished for e in scored),
                "truncated": _mean([float(e.truncated) for e in scored]),
                "delta_bca": _mean(deltas),
                "parse_failure": sum(p["unparsed"] for p in per) / turns if turns else math.nan,
                "final_retry": _mean([p["final_retry"] for p in per if p["final_turn"]]),
                "final_fallback": _mean([p["final_fallback"] for p in per if p["final_turn"]]),
                "cut_replies": sum(p["cut"] for p in per) / calls if calls else math.nan,
                "answered_calls": _mean([p["calls"] for p in per]),
                "timed_out": sum(p["timed_out"] for p in per) / made if made else math.nan,
                "tokens": _mean(tokens),
                "completion_tokens": _mean([e.completion_tokens or 0 for e in scored]),
                "seconds": _mean([e.wall_seconds for e in scored]),
                "cost_usd": float(sum(costs)) if costs else math.nan,
            })
    return rows


def _fmt(value: Any, digits: int = 3, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if percent:
        return f"{100 * value:.0f}%"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


_COLUMNS = ("model", "wrapper", "family", "episodes", "F1 all", "F1 fin.", "trunc.",
            "Δʳ_φ", "parse fail", "retry", "fallback", "cut", "answered/ep", "timed out",
            "tokens/ep", "s/ep", "cost $")


def _cells(row: Mapping[str, Any]) -> list[str]:
    return [str(row["model"]), str(row["wrapper"]), str(row["family"]),
            f"{row['episodes']}" + (f" ({row['errors']} err)" if row["errors"] else ""),
            _fmt(row["f1_all"]), _fmt(row["f1_finished"]), _fmt(row["truncated"], percent=True),
            _fmt(row["delta_bca"]) if math.isnan(row["delta_bca"]) else f"{row['delta_bca']:+.3f}",
            _fmt(row["parse_failure"], percent=True), _fmt(row["final_retry"], percent=True),
            _fmt(row["final_fallback"], percent=True), _fmt(row["cut_replies"], percent=True),
            _fmt(row["answered_calls"], 1), _fmt(row["timed_out"], percent=True),
            _fmt(row["tokens"], 0), _fmt(row["seconds"], 1), _fmt(row["cost_usd"], 2)]


def format_wrapper_table(rows: Sequence[Mapping[str, Any]], families: bool = False) -> str:
    """The table as text (by default the ``all`` rows only), with :func:`timeout_note`'s
    warning under it when many calls timed out."""
    chosen = [r for r in rows if families or r["family"] == "all"]
    table = text_table(list(_COLUMNS), [_cells(r) for r in chosen],
                       align="<<<" + ">" * (len(_COLUMNS) - 3))
    note = timeout_note(rows)
    return f"{table}\n\n{note}" if note else table


#: above this share of model calls that timed out, the table's rates describe the servers'
#: speed under the run's concurrency more than the models' output, and the run says so
TIMEOUT_WARNING = 0.25


def timeout_note(rows: Sequence[Mapping[str, Any]]) -> str:
    """A warning when many model calls timed out (empty otherwise): at the comparison's
    concurrency each server decodes a batch on part of a core, and a reply that comes after
    the client's deadline is lost — the time budget then binds on the harness, not on the
    model (docs/llm.md)."""
    shares = {f"{r['model']} {r['wrapper']}": r["timed_out"] for r in rows
              if r["family"] == "all" and not math.isnan(r["timed_out"])}
    worst = {arm: share for arm, share in shares.items() if share > TIMEOUT_WARNING}
    if not worst:
        return ""
    listed = ", ".join(f"{arm} {100 * share:.0f}%" for arm, share in
                       sorted(worst.items(), key=lambda item: -item[1]))
    return (f"note: model calls timed out ({listed}): the servers answered after the "
            "episodes' deadline, so the time budget bound on this run's concurrency, not on "
            "the models; fewer --workers (or a longer --max-seconds) give each call more time")


def markdown_wrapper_table(rows: Sequence[Mapping[str, Any]], settings: EpisodeSettings,
                           count: int, d: int, n: int) -> str:
    """The table as Markdown, every family, with the budgets it ran under."""
    lines = ["# Language-model wrappers on local models\n",
             f"Budgets: {settings.max_steps} steps, {settings.token_budget_per_turn} tokens a "
             f"turn, {settings.max_seconds:g} s an episode; {count} test instances per family "
             f"at d = {d}, n = {n}.\n",
             "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    lines.append("\nparse fail: action turns whose reply held no readable action; retry / "
                 "fallback: final turns that needed the retry / submitted the working graph "
                 "after both answers were refused; cut: model calls stopped by the token "
                 "budget; answered/ep: model calls answered per episode; timed out: calls "
                 "whose reply came after the client's deadline; trunc.: episodes that did not "
                 "submit; Δʳ_φ: F1 − F1(BCA_φ) on the same instances.")
    note = timeout_note(rows)
    if note:
        lines.append("\n" + note)
    return "\n".join(lines) + "\n"
