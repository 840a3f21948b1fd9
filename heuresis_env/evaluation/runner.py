"""``evaluate``: run one policy on a benchmark's episodes under identical settings, resumably;
``evaluate_many``: several such runs as one job on one pool of workers.

The runner owns the budgets: it builds every environment from the run's
:class:`~heuresis_env.policy.EpisodeSettings` (never from the policy), hands the same settings
to the policy through ``configure``, and refuses a policy that alters them. Each episode gets
a fresh environment; its result line is appended atomically to the run directory as soon as
it ends, so a killed run resumes where it stopped (finished episode ids are skipped).

Backends: ``local`` runs episodes in this process (``workers=1``) or in ``workers`` spawned
processes, each holding one policy instance at a time
(:mod:`heuresis_env.evaluation.local_backend`); ``ray`` runs them as Ray tasks on actors
(:mod:`heuresis_env.evaluation.ray_backend`). Both produce the same results file for a
deterministic policy, apart from timing and worker fields. A job of several runs starts its
workers once and passes them from one run's policy to the next.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from heuresis_env.env.core import HeuresisEnv
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.evaluation.episode import (
    EpisodeOutcome,
    EpisodeTask,
    JobQueue,
    RunnerSlot,
    RunRefused,
    RunSpec,
    environment_kwargs,
    worker_name,
)
from heuresis_env.evaluation.integrity import verify_run
from heuresis_env.evaluation.local_backend import run_local_processes
from heuresis_env.evaluation.policies import (
    check_policy_options,
    registered_policies,
    registered_references,
    resolve_policy_factory,
)
from heuresis_env.evaluation.policy_process import (
    confinement_available,
    runner_protected,
)
from heuresis_env.evaluation.ray_backend import run_with_ray
from heuresis_env.evaluation.request import RunRequest, check_int
from heuresis_env.evaluation.run_format import (
    episode_id,
    episode_seed,
    load_run,
    question_episode_id,
)
from heuresis_env.evaluation.run_store import RunStore, build_config
from heuresis_env.evaluation.summary import (
    RunSummary,
    error_reasons,
    run_notes,
    summarize_family,
)
from heuresis_env.generation.datasets import register_dataset
from heuresis_env.generation.families import FAMILY_GROUPS, available_families, expand_families
from heuresis_env.generation.instances import (
    SPLIT_SIZES,
    STREAM_SPLITS,
    InstanceKey,
    available_sources,
    get_source,
    split_size,
)
from heuresis_env.progress import progress_bar
from heuresis_env.questions import question_set

BACKENDS = ("local", "ray")


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


def evaluate(request: RunRequest | str, /, *, workers: int = 1, backend: str = "local",
             address: str | None = None, progress: bool = True, **run: Any) -> RunSummary:
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
    ``"namespaces"`` insists, ``"process"`` settles for a plain process, whose whole process
    tree still ends with it; ``auto`` on a machine without namespaces refuses a policy that is
    not registered, ``module:attr``, unless ``"process"`` is asked for). A confined policy has
    no network but loopback; one declared to need API endpoints reaches those endpoints only,
    through a proxy of the runner (``policy_network``: a list of ``"HOST:PORT"``, or True to
    take them from a ``base_url`` option; a registered API policy declares its own); a
    registered
    reference that needs the truth (``heuresis.references``) runs on the referee's side and
    its run is marked as a reference.

    The run is a :class:`~heuresis_env.evaluation.request.RunRequest`, or its fields as
    keywords after the policy (``evaluate("pc-kci", families=["lg"], split="test", ...)``);
    ``workers``, ``backend``, ``address`` and ``progress`` describe the job. Several runs in
    one job (one pool of workers for all): :func:`evaluate_many`.
    """
    if isinstance(request, RunRequest):
        if run:
            raise HeuresisError(f"pass either a RunRequest or the run's keyword arguments, "
                                f"not both (got {sorted(run)} beside the request)")
    else:
        request = RunRequest.from_arguments({"policy_spec": request, **run})
    return evaluate_many([request], workers=workers, backend=backend, address=address,
                         progress=progress)[0]


def evaluate_many(runs: Sequence[RunRequest | Mapping[str, Any]], workers: int = 1,
                  backend: str = "local",
                  address: str | None = None, progress: bool = True) -> list[RunSummary]:
    """Several runs as one job on one pool of ``workers`` (processes or Ray actors), started
    once: the main job's policies share their workers instead of each starting its own.

    Each run is a :class:`~heuresis_env.evaluation.request.RunRequest` or a mapping of its
    fields (:data:`RUN_ARGUMENTS`; ``policy_spec`` and ``out_dir`` required) and gets its own run directory, config, resume
    and summary, exactly as :func:`evaluate` would give it. Every run is checked, and every
    run directory locked, before any episode starts. Each worker stays with one run's policy
    while that run has episodes left, then takes a run no other worker serves, or joins the
    one with the most episodes left (:class:`~heuresis_env.evaluation.episode.JobQueue`), so
    a policy starts about once per run and runs' episodes interleave. A policy that cannot start costs its own run (its
    episodes are dropped; the other runs go on) and the job then raises with its message; a
    worker that fails or dies stops the job. Finished episodes of every run are saved either
    way, and a rerun resumes them.
    """
    started = time.perf_counter()
    if backend not in BACKENDS:
        raise UnknownNameError("backend", backend, BACKENDS)
    workers = check_int("workers", workers, 1)
    if address is not None and backend != "ray":
        raise HeuresisError("address is for the ray backend (an existing Ray cluster); "
                            "pass backend='ray' or drop the address")
    if not runs:
        raise HeuresisError("give at least one run to evaluate")
    prepared = [_prepare(RunRequest.from_arguments(arguments)) for arguments in runs]
    directories = [os.path.realpath(os.fspath(run.out_dir)) for run in prepared]
    repeated = sorted({d for d in directories if directories.count(d) > 1})
    if repeated:
        raise HeuresisError(f"two runs of one job write to the same run directory "
                            f"{', '.join(repeated)}; give each run its own out_dir")
    if len(prepared) > 1:  # no policy sees another run's results (their scores) either
        for run in prepared:
            if run.spec.policy_isolation == "namespaces":
                for other in prepared:
                    _refuse_working_folder_inside(other.out_dir)
            run.spec = replace(run.spec, hidden_paths=tuple(dict.fromkeys(
                (*directories, *run.spec.hidden_paths))))
    with ExitStack() as stack:
        for run in prepared:
            stack.enter_context(run.store.lock())
        stack.enter_context(runner_protected())
        for run in prepared:
            run.accepted = run.store.prepare(run.config, force=run.force)
            done = run.store.finished_ids()
            if done:  # resuming: what is there is checked, never trusted (issue 30)
                verify_run(load_run(run.out_dir), salt=run.spec.salt)
            run.pending = [task for task in run.tasks if task.episode_id not in done]
            if not run.pending:
                run.store.commit()  # a forced config with nothing left to run
        _run_pending(prepared, workers, backend, address, progress, started)
        for run in prepared:
            if run.refused is None:  # a run whose policy never started leaves no config
                run.store.commit()
            if run.seconds is None:
                run.seconds = time.perf_counter() - started
            wanted = {task.episode_id for task in run.tasks}
            run.records = [r for r in run.store.read_results() if r["episode_id"] in wanted]
    refused = [run for run in prepared if run.refused is not None]
    if len(prepared) == 1 and refused:
        raise HeuresisError(refused[0].refused)
    if refused:
        raise HeuresisError(
            f"{len(refused)} of the job's {len(prepared)} runs could not start their policy "
            f"(the other runs finished; every finished episode is saved, rerun to resume): "
            + "; ".join(f"{run.out_dir}: {run.refused}" for run in refused))
    return [_summary(run, backend, workers) for run in prepared]


@dataclass
class _PreparedRun:
    """One run of a job, checked and laid out: its spec, episodes and run directory."""

    spec: RunSpec
    store: RunStore
    out_dir: str | os.PathLike
    config: dict[str, Any]
    tasks: list[EpisodeTask]
    families: list[str]
    split: str
    task: str
    force: bool
    accepted: list[str] = field(default_factory=list)
    pending: list[EpisodeTask] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    #: from the job's start to this run's last saved episode (to the job's end if none ran)
    seconds: float | None = None
    #: why the run's policy could not start, when it could not (the job went on without it)
    refused: str | None = None


def _prepare(request: RunRequest) -> _PreparedRun:
    """Lay out one run: its tables registered, families resolved, spec, episodes and config
    built (writes nothing)."""
    tables = [register_dataset(t["path"], t.get("graph"), anonymize=bool(t.get("anonymize")),
                               standardize=bool(t.get("standardize", True)), name=t.get("name"))
              for t in request.datasets]
    families = request.families
    if tables and families == "all":
        families = ()
    chosen = _resolve_families([*([families] if isinstance(families, str) else families),
                                *(t.name for t in tables)])
    split, salt = request.split, request.sealed_salt
    _check_environment(request, chosen[0])
    reference = request.policy_spec in registered_references()
    if reference:  # a trusted, registered reference: built here, so checked here
        factory = resolve_policy_factory(request.policy_spec)
        check_policy_options(request.policy_spec, factory, dict(request.policy_options))
        isolation = "process"
    else:  # a policy is imported, checked and built only in its own process
        isolation = _resolve_policy_isolation(request.policy_isolation, request.out_dir,
                                              request.policy_spec)
    table_details = tuple(dict(t.details) for t in tables)
    spec = RunSpec(policy=request.policy_spec, policy_options=dict(request.policy_options),
                   settings=request.settings, d=request.d, n=request.n, salt=salt,
                   task=request.task, name_mode=request.name_mode,
                   datasets=table_details, reference=reference,
                   policy_isolation=isolation, policy_network=request.policy_network,
                   hidden_paths=(os.path.realpath(os.fspath(request.out_dir)),
                                 *(os.path.realpath(t["graph"]) for t in table_details
                                   if t.get("graph"))))
    if request.task == "graph":
        keys, tasks = _graph_tasks(request, chosen)
        count = request.count if request.count is not None else SPLIT_SIZES[split]
        question_fields: dict[str, Any] = {}
    else:
        tasks, keys, question_fields = _question_tasks(chosen, request)
        count = question_fields["questions"]["count"]
    config = build_config(policy=request.policy_spec, policy_options=request.policy_options,
                          settings=request.settings.to_dict(), split=split, families=chosen,
                          count=count, repeats=request.repeats, d=request.d, n=request.n,
                          instance_keys=[k.to_dict() for k in keys], salt=salt,
                          datasets=table_details, reference=reference,
                          policy_isolation="referee" if reference else isolation)
    config.update(question_fields)
    store = RunStore(request.out_dir)
    store.salt = salt  # a sealed run: its config and result lines carry an HMAC
    return _PreparedRun(spec=spec, store=store, out_dir=request.out_dir, config=config,
                        tasks=tasks, families=chosen, split=split, task=request.task,
                        force=request.force)


def _graph_tasks(request: RunRequest, families: Sequence[str]
                 ) -> tuple[list[InstanceKey], list[EpisodeTask]]:
    """The instances of a graph run — the first ``count`` of each family's split — and its
    episodes (every instance ``repeats`` times)."""
    split = request.split
    if request.count is None and split in STREAM_SPLITS:
        raise HeuresisError(f"the {split} split is an unbounded stream of instances: "
                            f"give a count")
    size = SPLIT_SIZES[split]
    count = size if request.count is None else check_int("count", request.count, 1, size)
    keys = [InstanceKey(family, split, index, d=request.d, n=request.n) for family in families
            for index in range(min(count, split_size(family, split)))]
    tasks = [EpisodeTask(episode_id(k.family, split, k.index, repeat), k.family, split,
                         k.index, repeat,
                         episode_seed(episode_id(k.family, split, k.index, repeat)))
             for k in sorted(keys, key=lambda k: k.index) for repeat in range(request.repeats)]
    return keys, tasks


def _summary(run: _PreparedRun, backend: str, workers: int) -> RunSummary:
    score = "f1" if run.task == "graph" else "correct"
    records = run.records
    by_family = [summarize_family(family, [r for r in records if r.get("family") == family],
                                  score)
                 for family in run.families]
    return RunSummary(out_dir=Path(run.out_dir), policy=run.spec.policy, split=run.split,
                      backend=backend, workers=workers, total_episodes=len(run.tasks),
                      resumed=len(run.tasks) - len(run.pending), ran=len(run.pending),
                      seconds=run.seconds or 0.0, families=by_family,
                      overall=summarize_family("all", records, score),
                      accepted_differences=run.accepted,
                      score_label="F1" if run.task == "graph" else "accuracy",
                      error_reasons=error_reasons(records), notes=run_notes(records))


def _question_tasks(families: Sequence[str], request: RunRequest
                    ) -> tuple[list[EpisodeTask], list[InstanceKey], dict[str, Any]]:
    """The episodes of a question run — the first ``count`` questions of each family's set —
    the instances they are about, and the config fields that fix the sets."""
    split, d, n, repeats = request.split, request.d, request.n, request.repeats
    salt, name_mode = request.sealed_salt, request.name_mode
    sizes = {family: InstanceKey(family, split, 0, d=d, n=n).size for family in families}
    sets = {family: question_set(family, split, sizes[family][0], sizes[family][1],
                                 salt=salt or "")
            for family in families}
    size = min(len(s) for s in sets.values())
    count = size if request.count is None else check_int("count", request.count, 1, size)
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


def _resolve_policy_isolation(requested: str, out_dir: str | os.PathLike,
                              policy_spec: str = "") -> str:
    """The policy process's isolation: ``auto`` picks namespaces where available, and where
    not says so, and refuses a policy that is not registered (``module:attr``: untrusted code)
    unless ``process`` is asked for by name. Confined, the process cannot see the run
    directory, so it must not be its working folder."""
    missing = confinement_available()
    if requested == "namespaces" and missing:
        raise HeuresisError(f"policy isolation 'namespaces' is not available on this machine "
                            f"(it lacks {missing}); pass policy_isolation='process' "
                            "(--policy-isolation process) to run policies in a plain process")
    isolation = requested if requested != "auto" else ("process" if missing else "namespaces")
    if requested == "auto" and missing:
        if policy_spec not in registered_policies():
            raise HeuresisError(
                f"policies cannot be confined on this machine (it lacks {missing}), and "
                f"{policy_spec!r} is not a registered policy: its code would run unconfined "
                "beside the run. Pass --policy-isolation process (policy_isolation='process') "
                "to accept that, or run where namespaces are available (heuresis doctor)")
        print(f"heuresis: policies run unconfined in a plain process here (namespaces "
              f"unavailable: {missing})", file=sys.stderr)
    if isolation == "namespaces":
        _refuse_working_folder_inside(out_dir)
    return isolation


def _refuse_working_folder_inside(out_dir: str | os.PathLike) -> None:
    """A confined policy process cannot see the run directory (an empty folder covers it), so
    the working folder, which it keeps, must not lie inside one."""
    run_dir, here = os.path.realpath(os.fspath(out_dir)), os.path.realpath(os.getcwd())
    if here == run_dir or here.startswith(run_dir.rstrip("/") + "/"):
        raise HeuresisError(f"the run directory {out_dir} holds the working folder; the "
                            "policy process must not see the run directory, so give an "
                            "--out outside the working folder (e.g. runs/NAME)")


def _check_environment(request: RunRequest, family: str) -> None:
    """Build (not reset) one environment so that bad settings fail before any episode runs."""
    kwargs = environment_kwargs(request.settings, request.split, request.d, request.n, "text",
                                request.task, request.name_mode)
    HeuresisEnv(family=family, **kwargs, salt=request.sealed_salt or "").close()


def _run_pending(runs: Sequence[_PreparedRun], workers: int, backend: str,
                 address: str | None, progress: bool, started: float) -> None:
    """Run every run's pending episodes on one set of workers, saving each as it ends."""
    total = sum(len(run.tasks) for run in runs)
    resumed = total - sum(len(run.pending) for run in runs)
    desc = runs[0].spec.policy if len(runs) == 1 else f"{len(runs)} runs"
    bar = progress_bar(total=total, initial=resumed, show=progress, unit="episode", desc=desc)
    counts = {"truncated": 0, "errors": 0}
    bar.set_postfix(counts, refresh=False)
    try:
        items = [(number, task) for number, run in enumerate(runs) for task in run.pending]
        if not items:
            return
        for number, outcome in _outcomes([run.spec for run in runs], items, workers, backend,
                                         address):
            if isinstance(outcome, RunRefused):
                if runs[number].refused is None:
                    runs[number].refused = outcome.message
                continue
            save_outcome(runs[number].store, outcome)
            runs[number].seconds = time.perf_counter() - started
            counts["truncated"] += bool(outcome.record["truncated"])
            counts["errors"] += outcome.record["error"] is not None
            bar.set_postfix(counts, refresh=False)
            bar.update(1)
    finally:
        bar.close()


def _outcomes(specs: Sequence[RunSpec], items: Sequence[tuple[int, EpisodeTask]], workers: int,
              backend: str, address: str | None
              ) -> Iterator[tuple[int, EpisodeOutcome | RunRefused]]:
    """``(run, outcome)`` of each episode ``(run, task)``, on the backend's workers (or here,
    for one worker or one episode); ``(run, RunRefused)`` for a run whose policy cannot
    start (its other episodes are dropped)."""
    if backend == "ray":
        search_paths = [_policy_search_path(spec.policy) for spec in specs]
        yield from run_with_ray(specs, items, workers, address,
                                extra_paths=[p for p in dict.fromkeys(search_paths) if p])
    elif workers == 1 or len(items) == 1:
        slot, job = RunnerSlot(specs, worker_name()), JobQueue(items)
        try:
            while (item := job.next_for(0)) is not None:
                result = slot.run(*item)
                if isinstance(result, RunRefused):
                    job.drop(item[0])
                yield item[0], result
        finally:
            slot.close()
    else:
        yield from run_local_processes(specs, items, workers)


def save_outcome(store: RunStore, outcome: EpisodeOutcome) -> dict[str, Any]:
    """Write an episode's trace and transcript, then append its result line (in that order, so
    a result line never names a file that is missing)."""
    record = dict(outcome.record)
    episode = record["episode_id"]
    if outcome.trace_text is not None:
        record["trace"] = store.write_trace(episode, outcome.trace_text)
    if outcome.transcript_text is not None:
        record["transcript"] = store.write_transcript(episode, outcome.transcript_text)
    store.append_result(record)
    return record
