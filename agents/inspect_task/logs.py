"""Both ways between inspect eval logs and Heuresis run directories.

:func:`import_inspect_log` (``heuresis import-inspect LOG --out RUN_DIR``) turns the log of a
Heuresis inspect task into a run directory — ``config.json`` from the task's metadata and the
eval's model, one result line per finished sample (its epoch the repeat), the episode's trace
and the policy's transcript — so that ``heuresis report`` and ``heuresis view`` show an inspect
run beside RL and scripted policies under the same budgets. A log is a file from anywhere, so
nothing in it is trusted as a score: each episode's final graph (or answer) is scored again
against the instance regenerated on the referee's side — its data hash checked against the
one the log records — and a question's truth, which the log never holds, comes back from the
regenerated question set. Importing the same log again resumes (finished episodes are kept);
another log with the same settings and model may be imported into the same directory. Who
played is the log's claim: the run's ``attribution`` is ``self-reported``, and the report
says so beside its arm. A log of a sealed split imports as a sealed run (its config and
lines sealed with ``$HEURESIS_TEST_SALT``, which the import needs anyway).

:func:`export_run` (``heuresis export-inspect RUN_DIR --out LOG``) writes a run directory as
an inspect log that ``inspect view`` opens: one sample per episode, its messages the policy's
conversation (a language-model policy's transcript) or the trace's tool calls, its score the
result line's, a question's truth left out as in the task's own logs.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
)
from inspect_ai.scorer import SampleScore, Score, mean, stderr
from inspect_ai.tool import ToolCall, ToolCallError

from agents.inspect_task.backend import inspect_messages
from agents.inspect_task.scorer import GRAPH_SCORE_KEYS, QUESTION_SCORE_KEYS, score_value
from agents.inspect_task.solver import (
    STORE_RECORD,
    STORE_TRACE,
    STORE_TRANSCRIPT,
    answer_text,
    policy_name,
    public_record,
    public_trace,
    sample_episode,
)
from agents.inspect_task.tasks import METADATA_KEY, TASK_NAMES
from heuresis_env.env import open_instance
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import (
    RunDirectory,
    RunStore,
    build_config,
    episode_file_stem,
    load_run,
    run_salt,
)
from heuresis_env.generation import InstanceKey, SealedSalt
from heuresis_env.graphs import Graph
from heuresis_env.questions import make_question_referee, question_set
from heuresis_env.reports import SELF_REPORTED

__all__ = ["ImportSummary", "export_run", "import_inspect_log"]

#: what a run directory's config records as its policy isolation for an inspect run: the
#: model ran where its provider serves it; the environment and referee in inspect's process
INSPECT_ISOLATION = "inspect"


@dataclass
class ImportSummary:
    """What an import wrote: the run directory, episodes imported now and before, samples
    left out (with the reason) and scores the referee corrected."""

    out_dir: Path
    imported: int = 0
    already: int = 0
    skipped: list[str] = field(default_factory=list)
    corrected: list[str] = field(default_factory=list)

    def to_text(self) -> str:
        lines = [f"{self.out_dir}: {self.imported} episode(s) imported"
                 + (f", {self.already} already there" if self.already else "")]
        lines += [f"  skipped {reason}" for reason in self.skipped]
        lines += [f"  rescored {note}" for note in self.corrected]
        return "\n".join(lines)


# ---- import ---------------------------------------------------------------------------------

def _salt(digest: str | None, where: str) -> SealedSalt | None:
    """The test salt a log's samples were generated with (``$HEURESIS_TEST_SALT``, checked
    against the digest the log records), as for the run directory it becomes."""
    return run_salt(RunDirectory(Path(where), {"salt_digest": digest}, []))


def _plain(scores: Mapping[str, Any]) -> dict[str, Any]:
    """Scores as the environment reports them (Python floats and ints; None kept)."""
    return {k: (None if v is None else float(v) if isinstance(v, float | np.floating)
                else int(v)) for k, v in scores.items()}


def _canonical_answer(answer: Any) -> Any:
    """A logged answer (``answer_json``: "yes"/"no", a number, a mark matrix) in the form the
    question's referee scores."""
    if answer is None:
        return None
    if answer in ("yes", "no"):
        return answer == "yes"
    if isinstance(answer, int | float) and not isinstance(answer, bool):
        return float(answer)
    if isinstance(answer, list):
        return np.asarray(answer, dtype=int)
    raise HeuresisError(f"the logged answer {str(answer)[:80]!r} is not an answer a Heuresis "
                        "question takes")


def _logged_f1(sample: EvalSample, key: str) -> float | None:
    for score in (sample.scores or {}).values():
        if isinstance(score.value, Mapping) and key in score.value:
            value = score_value(score.value[key])
            return None if isinstance(value, float) and math.isnan(value) else float(value)
    return None


def _config(log: EvalLog, meta: Mapping[str, Any], salt: str | None, where: str
            ) -> dict[str, Any]:
    task = meta.get("task")
    if task not in TASK_NAMES:
        raise HeuresisError(f"{where}: its Heuresis metadata names task {task!r}; expected "
                            f"graph or qa")
    repeats = int(log.eval.config.epochs or 1)
    policy = str(meta.get("policy") or policy_name(log.eval.model))
    config = build_config(
        policy=policy, policy_options=dict(meta.get("policy_options") or {}),
        settings=dict(meta["settings"]), split=str(meta["split"]),
        families=list(meta["families"]), count=int(meta["count"]), repeats=repeats,
        d=meta.get("d"), n=meta.get("n"), instance_keys=list(meta["instance_keys"]),
        salt=salt, reference=False, policy_isolation=INSPECT_ISOLATION)
    config.update(package_versions=meta.get("package_versions") or config["package_versions"],
                  code_version=meta.get("code_version") or config["code_version"],
                  # what every log of this run shares (several logs, e.g. an eval-set's
                  # retries, import into one run directory)
                  inspect={"task": log.eval.task, "model": log.eval.model},
                  # the policy and model are the log's claim: nothing here checks who played
                  attribution=SELF_REPORTED)
    if task == "qa":
        sets = {}
        for family in config["families"]:
            size_d, size_n, graph_model = InstanceKey(family, config["split"], 0,
                                                      d=config["d"], n=config["n"]).size
            sets[family] = question_set(family, config["split"], size_d, size_n, graph_model,
                                        salt=salt)
        config.update(task="qa", name_mode=str(meta.get("name_mode", "anonymous")), questions={
            "count": int(meta["questions"]["count"]),
            "per_kind": meta["questions"]["per_kind"],
            "digests": {family: sets[family].digest for family in config["families"]}})
    return config


#: the fields of a logged episode record kept in the result line, with their types (scores
#: and a question's outcome are recomputed; ids, policy and file paths are the run's own)
_RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    "instance_sha256": (str,), "steps": (int,), "terminated": (bool,), "truncated": (bool,),
    "finished": (bool,), "termination_reason": (str,), "wall_seconds": (int, float),
    "tokens": (dict, type(None)), "cost_usd": (int, float, type(None)),
    "api_retries": (int, type(None)), "final_graph": (dict, type(None)),
    "error": (str, type(None)), "worker": (str, type(None)), "scores": (dict,)}


def _checked_record(record: Mapping[str, Any], question: bool) -> dict[str, Any]:
    """The known fields of a logged record, each of its type (a log is untrusted input)."""
    checked: dict[str, Any] = {}
    for name, types in _RECORD_FIELDS.items():
        value = record.get(name)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise HeuresisError(f"its record's {name!r} is {str(value)[:60]!r}, not a "
                                f"{' or '.join(t.__name__ for t in types)}")
        checked[name] = value
    if question:
        if not isinstance(record.get("question"), dict):
            raise HeuresisError("its record has no question")
        checked.update(task="qa", question=dict(record["question"]))
    return checked


def _rescored(record: dict[str, Any], config: Mapping[str, Any], salt: str | None,
              question: int | None) -> dict[str, Any]:
    """The record with the referee's scores (and a question's outcome, truth included)."""
    key = InstanceKey(record["family"], record["split"], record["index"], d=config["d"],
                      n=config["n"])
    public, referee = open_instance(key, salt)
    if public.sha256 != record.get("instance_sha256"):
        raise HeuresisError(f"its instance regenerates with data hash {public.sha256[:16]}…, "
                            f"but the log records {str(record.get('instance_sha256'))[:16]}… "
                            "(another generator version or test salt)")
    rescored = dict(record, ground_truth=bool(public.has_ground_truth))
    if question is None:
        final = record.get("final_graph")
        if not isinstance(final, dict):
            raise HeuresisError("its record has no final graph")
        graph = Graph.from_dict(final)
        if list(graph.names) != list(public.names):
            raise HeuresisError(f"its final graph's variables {list(graph.names)[:5]}… are not "
                                f"the instance's {list(public.names)[:5]}…")
        rescored["scores"] = _plain(referee["scores"](graph))
        return rescored
    logged = record.get("question")
    if not isinstance(logged, dict):
        raise HeuresisError("its record has no question")
    size_d, size_n, graph_model = key.size
    asked = question_set(key.family, key.split, size_d, size_n, graph_model,
                         salt=salt).question(question)
    if asked.public.instance_index != key.index:
        raise HeuresisError(f"question {question} is about instance "
                            f"{asked.public.instance_index}, not {key.index}")
    judge = make_question_referee(asked)
    answer = _canonical_answer(logged.get("answer"))
    rescored["scores"] = _plain(judge["scores"](answer))
    rescored["question"] = {**judge["outcome"](answer),
                            "name_mode": config.get("name_mode", "anonymous")}
    return rescored


def import_inspect_log(log_path: str | os.PathLike, out_dir: str | os.PathLike,
                       force: bool = False) -> ImportSummary:
    """Write the episodes of a Heuresis inspect log into a run directory (see the module
    docstring); ``force`` accepts a config that differs from the directory's (as
    ``heuresis evaluate --force``)."""
    where = str(log_path)
    try:
        log = read_eval_log(where)
    except FileNotFoundError:
        raise HeuresisError(f"no inspect log at {where}") from None
    except Exception as exc:  # noqa: BLE001 - a file that is not a log: one clear error
        raise HeuresisError(f"{where} is not an inspect eval log ({type(exc).__name__}: "
                            f"{str(exc)[:300]})") from None
    meta = (log.eval.metadata or {}).get(METADATA_KEY)
    if not isinstance(meta, Mapping):
        raise HeuresisError(f"{where} is the log of task {log.eval.task!r}, not of a Heuresis "
                            f"task ({', '.join(TASK_NAMES.values())}): it has no "
                            f"{METADATA_KEY!r} metadata")
    salt = _salt(meta.get("salt_digest"), where)
    try:
        config = _config(log, meta, salt, where)
    except (KeyError, TypeError, ValueError) as exc:
        raise HeuresisError(f"{where}: its {METADATA_KEY!r} metadata is incomplete or "
                            f"malformed ({type(exc).__name__}: {exc})") from None
    summary = ImportSummary(Path(out_dir))
    store = RunStore(out_dir)
    store.salt = salt  # a log of a sealed split imports sealed: config and lines (route 9)
    known = {(k["family"], k["index"]) for k in config["instance_keys"]}
    with store.lock():
        store.prepare(config, force=force)
        done = store.finished_ids()
        for sample in log.samples or []:
            label = f"sample {sample.id} (epoch {sample.epoch})"
            try:
                episode = sample_episode(sample.metadata or {}, sample.epoch)
            except HeuresisError as exc:
                summary.skipped.append(f"{label}: {exc}")
                continue
            record = (sample.store or {}).get(STORE_RECORD)
            if sample.error is not None or not isinstance(record, dict):
                reason = (f"the sample failed ({sample.error.message[:200]})" if sample.error
                          else "no Heuresis episode record (another solver ran it)")
                summary.skipped.append(f"{label}: {reason}")
                continue
            if episode.episode_id in done:
                summary.already += 1
                continue
            if (episode.family, episode.index) not in known \
                    or episode.split != config["split"] or episode.repeat >= config["repeats"]:
                summary.skipped.append(f"{label}: episode {episode.episode_id} is not one of "
                                       "the run's instances and repeats")
                continue
            try:
                record = _checked_record(record, episode.question is not None)
                record.update(episode_id=episode.episode_id, family=episode.family,
                              split=episode.split, index=episode.index, repeat=episode.repeat,
                              policy=config["policy"], reference=False, trace=None,
                              transcript=None)
                record = _rescored(record, config, salt, episode.question)
            except HeuresisError as exc:
                summary.skipped.append(f"{label}: {exc}")
                continue
            main = "f1" if episode.question is None else "correct"
            logged, scored = _logged_f1(sample, main), score_value(record["scores"].get(main))
            if logged is not None and not (isinstance(scored, float) and math.isnan(scored)) \
                    and not math.isclose(logged, float(scored), abs_tol=1e-9):
                summary.corrected.append(f"{episode.episode_id}: the log's {main} {logged:.4f} "
                                         f"is the referee's {float(scored):.4f}")
            _save(store, record, sample)
            done.add(episode.episode_id)
            summary.imported += 1
        store.commit()
    return summary


def _save(store: RunStore, record: dict[str, Any], sample: EvalSample) -> None:
    """Trace and transcript first, then the result line (as the runner saves an episode)."""
    trace = (sample.store or {}).get(STORE_TRACE)
    if isinstance(trace, str) and trace.strip():
        record["trace"] = store.write_trace(record["episode_id"], trace)
    transcript = (sample.store or {}).get(STORE_TRANSCRIPT)
    if isinstance(transcript, list):
        text = json.dumps(transcript, separators=(",", ":"), default=repr) + "\n"
        record["transcript"] = store.write_transcript(record["episode_id"], text)
    store.append_result(record)


# ---- export ---------------------------------------------------------------------------------

def _read_text(path: Path | None) -> str | None:
    if path is None or not path.is_file():
        return None
    return path.read_text(encoding="utf-8")


def _trace_messages(trace: str, episode: str, policy: str) -> list[ChatMessage]:
    """A trace's steps as tool calls and results (the trace keeps each output's digest, or its
    text where it holds it)."""
    messages: list[ChatMessage] = [ChatMessageUser(content=(
        f"Heuresis episode {episode}, played by {policy}: its actions and their results as "
        "the episode's trace records them (the trace keeps no task statement)."))]
    for line in trace.splitlines():
        step = json.loads(line) if line.strip() else None
        if not isinstance(step, dict) or step.get("type") != "step":
            continue
        call_id = f"step-{step.get('step')}"
        action = step.get("action")
        written = action if isinstance(action, dict) else {}
        function = str(step.get("tool") or written.get("tool") or "action")
        arguments = step.get("args")
        if not isinstance(arguments, dict):
            arguments = (written["args"] if isinstance(written.get("args"), dict)
                         else {"action": action})
        output = step.get("output")
        if not isinstance(output, str):
            digest = str(step.get("output_sha256") or "")
            output = f"(output not stored in the trace; sha256 {digest[:16]}…)" if digest else ""
        error = step.get("error")
        messages.append(ChatMessageAssistant(content="", tool_calls=[
            ToolCall(id=call_id, function=function, arguments=arguments)]))
        messages.append(ChatMessageTool(
            content=output, tool_call_id=call_id, function=function,
            error=None if not error else ToolCallError("unknown", str(error)[:2000])))
    return messages


def _sample_value(record: Mapping[str, Any], task: str) -> dict[str, Any]:
    keys = GRAPH_SCORE_KEYS if task == "graph" else QUESTION_SCORE_KEYS
    scores = record.get("scores") or {}
    value = {key: score_value(scores.get(key)) for key in keys}
    value.update(finished=int(bool(record.get("finished"))), steps=int(record.get("steps", 0)))
    return value


def _results(samples: Sequence[EvalSample], task: str) -> EvalResults:
    """Mean (and standard error) of each main score, as the task's scorer reports them."""
    both, average = {"mean": mean, "stderr": stderr}, {"mean": mean}
    metrics = ({"f1": both, "delta_bca": both, "shd": average, "shd_cpdag": average,
                "finished": average} if task == "graph"
               else {"correct": both, "answered": average})
    by_sample: dict[Any, list[EvalSample]] = {}
    for sample in samples:  # inspect reduces a sample's epochs to their mean first
        by_sample.setdefault(sample.id, []).append(sample)
    scores = []
    for key, functions in metrics.items():
        kept = []
        for sample_id, epochs in by_sample.items():
            values = [float(s.scores["heuresis"].value[key]) for s in epochs]
            value = float(np.mean(values))
            if not math.isnan(value):
                kept.append(SampleScore(score=Score(value=value), sample_id=sample_id))
        computed = {name: EvalMetric(name=name, value=float(make()(kept)) if kept else math.nan)
                    for name, make in functions.items()}
        scores.append(EvalScore(name=key, scorer="heuresis", scored_samples=len(kept),
                                unscored_samples=len(by_sample) - len(kept), metrics=computed))
    return EvalResults(total_samples=len(by_sample), completed_samples=len(by_sample),
                       scores=scores)


def export_run(run_dir: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Write a run directory as an inspect log at ``out`` (``.eval``, or ``.json`` for inspect's
    JSON format): see the module docstring. Returns the log's path."""
    run = load_run(run_dir)
    task = run.task
    target = Path(out)
    if target.suffix not in (".eval", ".json"):
        raise HeuresisError(f"the log's name must end in .eval or .json, got {target.name!r}")
    config = run.config
    raw = _raw_records(run.path)
    samples = []
    for episode in sorted(run.episodes, key=lambda e: (e.index, e.family, e.repeat,
                                                       e.episode_id)):
        record = raw[episode.episode_id]
        trace = public_trace(_read_text(episode.trace_path))
        transcript_text = _read_text(run.path / episode.transcript if episode.transcript
                                     else None)
        transcript = json.loads(transcript_text) if transcript_text else None
        conversation = [event["message"] for event in transcript or []
                        if isinstance(event, dict) and event.get("event") == "message"]
        if conversation:
            messages = inspect_messages(conversation)
        else:
            messages = _trace_messages(trace or "", episode.episode_id, run.policy)
        public = public_record(record)
        question = public.get("question") if task == "qa" else None
        name = (f"{episode.family}/{episode.split}/q{question['id']}" if question
                else f"{episode.family}/{episode.split}/{episode.index}")
        metadata: dict[str, Any] = {"family": episode.family, "split": episode.split,
                                    "index": episode.index,
                                    "instance": run.instance_key(episode.instance)}
        if question:
            metadata.update(question=int(question["id"]), public_question=question)
        answer = answer_text(public)
        value = _sample_value(record, task)
        samples.append(EvalSample(
            id=episode_file_stem(name), epoch=episode.repeat + 1,
            input=next((m.text for m in messages if m.role == "user"), name), target="",
            messages=messages,
            output=ModelOutput.from_content(model=run.policy, content=answer),
            scores={"heuresis": Score(value=value, answer=answer, explanation=(
                f"{episode.termination_reason} after {episode.steps} steps"))},
            metadata=metadata,
            store={STORE_RECORD: public, STORE_TRACE: trace, STORE_TRANSCRIPT: transcript}))
    meta = {key: config.get(key) for key in ("settings", "families", "split", "count", "d",
                                             "n", "instance_keys", "salt_digest",
                                             "code_version", "package_versions")}
    meta.update(task=task, policy=run.policy, policy_options=run.policy_options,
                exported_from=str(run.path))
    if task == "qa":
        meta.update(name_mode=config.get("name_mode", "anonymous"),
                    questions={k: v for k, v in (config.get("questions") or {}).items()
                               if k != "digests"})
    created = _iso_time(config.get("created"))
    log = EvalLog(
        status="success",
        eval=EvalSpec(created=created, task=TASK_NAMES[task], model=f"heuresis/{run.policy}",
                      dataset=EvalDataset(name=f"heuresis {','.join(run.config['families'])} "
                                               f"{run.split}", samples=len(samples)),
                      config=EvalConfig(epochs=run.repeats), metadata={METADATA_KEY: meta}),
        results=_results(samples, task),
        stats=EvalStats(started_at=created, completed_at=created),
        samples=samples)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(target))
    return target


def _iso_time(stamp: Any) -> str:
    """A config's ``created`` (``%Y-%m-%dT%H:%M:%S%z``) in ISO 8601, as inspect writes times."""
    try:
        return datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%S%z").isoformat()
    except ValueError:
        return datetime.now(UTC).isoformat()


def _raw_records(run_path: Path) -> dict[str, dict[str, Any]]:
    """The result lines as written, by episode id (the last line of an id wins, as
    :func:`~heuresis_env.evaluation.load_run` reads them)."""
    records = {}
    with open(run_path / "results.jsonl", encoding="utf-8") as handle:
        for line in handle:
            if line.endswith("\n") and line.strip():
                record = json.loads(line)
                records[str(record.get("episode_id"))] = record
    return records
