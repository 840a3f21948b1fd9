"""``evaluate``: run one policy on a benchmark's episodes under identical settings, resumably.

The runner owns the budgets: it builds every environment from the run's
:class:`~heuresis_env.policy.EpisodeSettings` (never from the policy), hands the same settings
to the policy through ``configure``, and refuses a policy that alters them. Each episode gets
a fresh environment; its result line is appended atomically to the run directory as soon as
it ends, so a killed run resumes where it stopped (finished episode ids are skipped).

Backends: ``local`` runs episodes in this process (``workers=1``) or in ``workers`` spawned
processes, each holding one policy instance (:mod:`heuresis_env.evaluation.local_backend`);
``ray`` runs them as Ray tasks on actors (:mod:`heuresis_env.evaluation.ray_backend`). Both produce the same results file for a
deterministic policy, apart from timing and worker fields.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from heuresis_env.env.core import HeuresisEnv
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.evaluation.episode import (
    EpisodeOutcome,
    EpisodeRunner,
    EpisodeTask,
    RunSpec,
    environment_kwargs,
    worker_name,
)
from heuresis_env.evaluation.local_backend import run_local_processes
from heuresis_env.evaluation.policies import (
    check_policy_name,
    check_policy_options,
    registered_policies,
    registered_references,
    resolve_policy_factory,
)
from heuresis_env.evaluation.policy_process import (
    ISOLATION_LEVELS,
    confinement_available,
    runner_protected,
)
from heuresis_env.evaluation.ray_backend import run_with_ray
from heuresis_env.evaluation.run_format import (
    episode_id,
    episode_seed,
    question_episode_id,
)
from heuresis_env.evaluation.run_store import RunStore, build_config
from heuresis_env.evaluation.summary import RunSummary, summarize_family
from heuresis_env.generation.datasets import register_dataset
from heuresis_env.generation.families import FAMILY_GROUPS, available_families, expand_families
from heuresis_env.generation.instances import (
    SPLIT_SIZES,
    InstanceKey,
    available_sources,
    get_source,
    resolve_salt,
    split_size,
)
from heuresis_env.policy import EpisodeSettings
from heuresis_env.questions import NAME_MODES, question_set
from heuresis_env.registration import TASKS

BACKENDS = ("local", "ray")
PROMPT_LEVELS = (1, 2, 3, 4)


def _check_settings(settings: EpisodeSettings | Mapping[str, Any]) -> EpisodeSettings:
    if isinstance(settings, Mapping):
        known = set(EpisodeSettings().to_dict())
        unknown = sorted(set(settings) - known)
        if unknown:
            raise HeuresisError(f"unknown episode settings {unknown}; known: {sorted(known)}")
        settings = EpisodeSettings(**settings)
    if not isinstance(settings, EpisodeSettings):
        raise HeuresisError(f"settings must be an EpisodeSettings, got {type(settings).__name__}")
    if isinstance(settings.max_steps, bool) or not isinstance(settings.max_steps, int) \
            or settings.max_steps < 1:
        raise HeuresisError(f"max_steps must be an integer ≥ 1, got {settings.max_steps!r}")
    if settings.max_seconds is not None and (
            isinstance(settings.max_seconds, bool)
            or not isinstance(settings.max_seconds, int | float) or not settings.max_seconds > 0):
        raise HeuresisError(f"max_seconds must be a positive number, got "
                            f"{settings.max_seconds!r}")
    if isinstance(settings.token_budget_per_turn, bool) or not isinstance(
            settings.token_budget_per_turn, int) or settings.token_budget_per_turn < 1:
        raise HeuresisError(f"token_budget_per_turn must be an integer ≥ 1, got "
                            f"{settings.token_budget_per_turn!r}")
    if settings.prompt_level not in PROMPT_LEVELS:
        raise HeuresisError(f"prompt_level must be one of {list(PROMPT_LEVELS)}, got "
                            f"{settings.prompt_level!r}")
    if settings.max_seconds is not None:
        settings = replace(settings, max_seconds=float(settings.max_seconds))
    return settings


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
            high is not None and value > high):
        bound = f"in {low}..{high}" if high is not None else f"≥ {low}"
        raise HeuresisError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


def _check_policy_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Options must be JSON values: config.json records them and workers rebuild the policy."""
    import json

    options = dict(options or {})
    try:
        json.dumps(options, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise HeuresisError(f"policy options must be JSON values (numbers, strings, lists, "
                            f"dicts), since config.json records them: {exc}") from None
    return options


def _resolve_families(families: str | Iterable[str]) -> list[str]:
    """Family and data-set names, with the groups ``all`` and ``bnlearn`` expanded."""
    names = [families] if isinstance(families, str) else list(families)
    chosen: list[str] = []
    for name in names:
        if get_source(name) is not None:
            chosen.append(name)
        elif name in FAMILY_GROUPS or name in available_families():
            chosen += expand_families(name)
        else:
            raise UnknownNameError("family", name, [
                *available_families(), *available_sources(), *FAMILY_GROUPS])
    if not chosen:
        raise HeuresisError(f"give at least one family (or 'all'); known: "
                            f"{', '.join(available_families())}")
    return list(dict.fromkeys(chosen))


def _policy_search_path(spec: str) -> str | None:
    """The sys.path entry holding the policy's module (for workers that start elsewhere)."""
    import importlib.util

    target = spec if ":" in spec else {**registered_policies(),
                                       **registered_references()}.get(spec, "")
    module_name = target.partition(":")[0]
    if not module_name:
        return None
    try:
        found = importlib.util.find_spec(module_name.split(".")[0])
    except (ImportError, ValueError):
        return None
    if found is None:
        return None
    if found.submodule_search_locations:
        return str(Path(list(found.submodule_search_locations)[0]).parent)
    if found.origin and found.origin not in ("built-in", "frozen"):
        return str(Path(found.origin).parent)
    return None


def evaluate(policy_spec: str, families: str | Iterable[str] = "all", split: str = "dev",
             count: int | None = None, settings: EpisodeSettings | Mapping[str, Any] | None = None,
             repeats: int = 1, workers: int = 1, backend: str = "local",
             out_dir: str | os.PathLike = "runs/run", policy_options: Mapping[str, Any] | None = None,
             force: bool = False, d: int | None = None, n: int | None = None,
             salt: str | None = None, progress: bool = True, address: str | None = None,
             task: str = "graph", name_mode: str = "anonymous",
             datasets: Iterable[Mapping[str, Any]] = (),
             policy_isolation: str = "auto") -> RunSummary:
    """Run ``policy_spec`` on ``count`` instances of each family × ``repeats`` into ``out_dir``.

    Finished episodes already in ``out_dir`` are skipped (resume); a different config there is
    refused, naming each differing field, unless ``force``. ``salt`` (default
    ``$HEURESIS_TEST_SALT``) seals the test split; the config records only its digest.

    ``task="qa"`` runs question episodes instead: ``count`` questions of each family's question
    set of the split (default: all), under ``name_mode`` column names ("anonymous" or
    "decoy"); the summary's score is then the share of correct answers.

    ``d`` and ``n`` left as None take each family's size (10 and 600, a structure's d, a
    table's own). ``datasets`` are CSV tables to play (``{"path", "graph", "anonymize",
    "standardize", "name"}``): each is registered, added to ``families`` and recorded in the
    config, so workers and reports can read it again.

    The policy runs in its own process (:mod:`heuresis_env.evaluation.policy_process`),
    confined in namespaces where the machine allows (``policy_isolation="auto"``;
    ``"namespaces"`` insists, ``"process"`` settles for a plain process); a registered
    reference that needs the truth (``heuresis.references``) runs on the referee's side and
    its run is marked as a reference.
    """
    started = time.perf_counter()
    if split not in SPLIT_SIZES:
        raise UnknownNameError("split", split, SPLIT_SIZES)
    if backend not in BACKENDS:
        raise UnknownNameError("backend", backend, BACKENDS)
    tables = [register_dataset(t["path"], t.get("graph"), anonymize=bool(t.get("anonymize")),
                               standardize=bool(t.get("standardize", True)), name=t.get("name"))
              for t in datasets]
    if tables and families == "all":
        families = []
    chosen = _resolve_families([*([families] if isinstance(families, str) else families),
                                *(t.name for t in tables)])
    size = SPLIT_SIZES[split]
    repeats = _check_int("repeats", repeats, 1)
    workers = _check_int("workers", workers, 1)
    settings = _check_settings(EpisodeSettings() if settings is None else settings)
    policy_options = _check_policy_options(policy_options)
    if address is not None and backend != "ray":
        raise HeuresisError("address is for the ray backend (an existing Ray cluster); "
                            "pass backend='ray' or drop the address")
    if task not in TASKS:
        raise UnknownNameError("task", task, TASKS)
    if name_mode not in NAME_MODES:
        raise UnknownNameError("name mode", name_mode, NAME_MODES)
    salt = resolve_salt(split, salt)
    _check_environment(settings, split, chosen[0], d, n, task, name_mode)
    check_policy_name(policy_spec)
    reference = policy_spec in registered_references()
    if reference:  # a trusted, registered reference: built here, so checked here
        factory = resolve_policy_factory(policy_spec)
        check_policy_options(policy_spec, factory, policy_options)
        isolation = "process"
    else:  # a policy is imported, checked and built only in its own process
        isolation = _resolve_policy_isolation(policy_isolation, out_dir)
    table_details = tuple(dict(t.details) for t in tables)
    spec = RunSpec(policy=policy_spec, policy_options=policy_options, settings=settings,
                   d=d, n=n, salt=salt, task=task, name_mode=name_mode,
                   datasets=table_details, reference=reference,
                   policy_isolation=isolation,
                   hidden_paths=(os.path.realpath(os.fspath(out_dir)),
                                 *(os.path.realpath(t["graph"]) for t in table_details
                                   if t.get("graph"))))
    if task == "graph":
        count = size if count is None else _check_int("count", count, 1, size)
        keys = [InstanceKey(family, split, index, d=d, n=n) for family in chosen
                for index in range(min(count, split_size(family, split)))]
        tasks = [EpisodeTask(episode_id(k.family, split, k.index, repeat), k.family, split,
                             k.index, repeat,
                             episode_seed(episode_id(k.family, split, k.index, repeat)))
                 for k in sorted(keys, key=lambda k: k.index) for repeat in range(repeats)]
        question_fields: dict[str, Any] = {}
    else:
        tasks, keys, question_fields = _question_tasks(chosen, split, count, repeats, d, n,
                                                       salt, name_mode)
        count = question_fields["questions"]["count"]
    config = build_config(policy=policy_spec, policy_options=policy_options,
                          settings=settings.to_dict(), split=split, families=chosen,
                          count=count, repeats=repeats, d=d, n=n,
                          instance_keys=[k.to_dict() for k in keys], salt=salt,
                          datasets=table_details, reference=reference,
                          policy_isolation="referee" if reference else isolation)
    config.update(question_fields)
    store = RunStore(out_dir)
    with store.lock(), runner_protected():
        accepted = store.prepare(config, force=force)
        done = store.finished_ids()
        pending = [task for task in tasks if task.episode_id not in done]
        resumed = len(tasks) - len(pending)
        _run_pending(store, spec, pending, len(tasks), resumed, workers, backend, address,
                     progress)
        store.commit()  # a forced config with nothing left to run
        wanted = {task.episode_id for task in tasks}
        records = [r for r in store.read_results() if r["episode_id"] in wanted]
    score = "f1" if task == "graph" else "correct"
    by_family = [summarize_family(family, [r for r in records if r.get("family") == family],
                                  score)
                 for family in chosen]
    return RunSummary(out_dir=Path(out_dir), policy=policy_spec, split=split, backend=backend,
                      workers=workers, total_episodes=len(tasks), resumed=resumed,
                      ran=len(pending), seconds=time.perf_counter() - started,
                      families=by_family, overall=summarize_family("all", records, score),
                      accepted_differences=accepted,
                      score_label="F1" if task == "graph" else "accuracy")


def _question_tasks(families: Sequence[str], split: str, count: int | None, repeats: int,
                    d: int | None, n: int | None, salt: str | None, name_mode: str
                    ) -> tuple[list[EpisodeTask], list[InstanceKey], dict[str, Any]]:
    """The episodes of a question run — the first ``count`` questions of each family's set —
    the instances they are about, and the config fields that fix the sets."""
    sizes = {family: InstanceKey(family, split, 0, d=d, n=n).size for family in families}
    sets = {family: question_set(family, split, sizes[family][0], sizes[family][1], salt=salt)
            for family in families}
    size = min(len(s) for s in sets.values())
    count = size if count is None else _check_int("count", count, 1, size)
    tasks: list[EpisodeTask] = []
    indices: dict[str, set[int]] = {family: set() for family in families}
    for question in range(count):
        for family in families:
            index = sets[family].question(question).public.instance_index
            indices[family].add(index)
            for repeat in range(repeats):
                name = question_episode_id(family, split, question, repeat)
                tasks.append(EpisodeTask(name, family, split, index, repeat,
                                         episode_seed(name), question=question))
    keys = [InstanceKey(family, split, index, d=d, n=n)
            for family in families for index in sorted(indices[family])]
    fields = {"task": "qa", "name_mode": name_mode,
              "questions": {"count": count, "per_kind": sets[families[0]].key["per_kind"],
                            "digests": {f: sets[f].digest for f in families}}}
    return tasks, keys, fields


def _resolve_policy_isolation(requested: str, out_dir: str | os.PathLike) -> str:
    """The policy process's isolation: ``auto`` picks namespaces where available. Confined,
    the process cannot see the run directory, so it must not be its working folder."""
    if requested not in ("auto", *ISOLATION_LEVELS):
        raise UnknownNameError("policy isolation", requested, ("auto", *ISOLATION_LEVELS))
    missing = confinement_available()
    if requested == "namespaces" and missing:
        raise HeuresisError(f"policy isolation 'namespaces' is not available on this machine "
                            f"(it lacks {missing}); pass policy_isolation='process' "
                            "(--policy-isolation process) to run policies in a plain process")
    isolation = requested if requested != "auto" else ("process" if missing else "namespaces")
    if isolation == "namespaces":
        run_dir, here = os.path.realpath(os.fspath(out_dir)), os.path.realpath(os.getcwd())
        if here == run_dir or here.startswith(run_dir.rstrip("/") + "/"):
            raise HeuresisError(f"the run directory {out_dir} holds the working folder; the "
                                "policy process must not see the run directory, so give an "
                                "--out outside the working folder (e.g. runs/NAME)")
    return isolation


def _check_environment(settings: EpisodeSettings, split: str, family: str, d: int | None,
                       n: int | None, task: str = "graph",
                       name_mode: str = "anonymous") -> None:
    """Build (not reset) one environment so that bad settings fail before any episode runs."""
    env = HeuresisEnv(family=family, **environment_kwargs(settings, split, d, n, "text",
                                                          task, name_mode))
    env.close()


def _run_pending(store: RunStore, spec: RunSpec, pending: Sequence[EpisodeTask], total: int,
                 resumed: int, workers: int, backend: str, address: str | None,
                 progress: bool) -> None:
    from tqdm import tqdm

    bar = tqdm(total=total, initial=resumed, disable=not progress, file=sys.stderr,
               unit="episode", desc=spec.policy, dynamic_ncols=True)
    counts = {"truncated": 0, "errors": 0}
    bar.set_postfix(counts, refresh=False)
    try:
        if not pending:
            return
        for outcome in _outcomes(spec, pending, workers, backend, address):
            save_outcome(store, outcome)
            counts["truncated"] += bool(outcome.record["truncated"])
            counts["errors"] += outcome.record["error"] is not None
            bar.set_postfix(counts, refresh=False)
            bar.update(1)
    finally:
        bar.close()


def _outcomes(spec: RunSpec, pending: Sequence[EpisodeTask], workers: int, backend: str,
              address: str | None) -> Iterator[EpisodeOutcome]:
    if backend == "ray":
        search_path = _policy_search_path(spec.policy)
        yield from run_with_ray(spec, pending, workers, address,
                                extra_paths=[search_path] if search_path else [])
    elif workers == 1 or len(pending) == 1:
        runner = EpisodeRunner(spec, worker_name())
        try:
            for task in pending:
                yield runner.run(task)
        finally:
            runner.close()
    else:
        yield from run_local_processes(spec, pending, workers)


def save_outcome(store: RunStore, outcome: EpisodeOutcome) -> dict[str, Any]:
    """Write an episode's trace and transcript, then append its result line (in that order, so
    a result line never names a file that is missing)."""
    record = dict(outcome.record)
    episode = record["episode_id"]
    if outcome.trace_text is not None:
        record["trace"] = store.write_trace(episode, outcome.trace_text)
    if outcome.transcript is not None:
        record["transcript"] = store.write_transcript(episode, outcome.transcript)
    store.append_result(record)
    return record
