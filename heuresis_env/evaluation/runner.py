"""``evaluate``: run one policy on a benchmark's episodes under identical settings, resumably.

The runner owns the budgets: it builds every environment from the run's
:class:`~heuresis_env.policy.EpisodeSettings` (never from the policy), hands the same settings
to the policy through ``configure``, and refuses a policy that alters them. Each episode gets
a fresh environment; its result line is appended atomically to the run directory as soon as
it ends, so a killed run resumes where it stopped (finished episode ids are skipped).

Backends: ``local`` runs episodes in this process (``workers=1``) or in ``workers`` spawned
processes, each holding one policy instance; ``ray`` runs them as Ray tasks on actors (see
:mod:`heuresis_env.evaluation.ray_backend`). Both produce the same results file for a
deterministic policy, apart from timing and worker fields.
"""

from __future__ import annotations

import math
import os
import queue
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.evaluation.run_store import (
    RunStore,
    build_config,
    episode_id,
    episode_seed,
)
from heuresis_env.policy import EpisodeSettings, Policy

BACKENDS = ("local", "ray")
#: how long a policy may overrun the wall budget inside one ``reset``/``act`` call before the
#: runner interrupts it and truncates the episode (the env itself checks after each step)
WALL_GRACE_SECONDS = 5.0
PROMPT_LEVELS = (1, 2, 3, 4)


# ---- what is sent to a worker and what comes back ------------------------------------------

@dataclass(frozen=True)
class EpisodeTask:
    """One episode to run: an instance of the split and a repeat number."""

    episode_id: str
    family: str
    split: str
    index: int
    repeat: int
    seed: int


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to build the policy and the environments of a run."""

    policy: str
    policy_options: dict[str, Any]
    settings: EpisodeSettings
    d: int
    n: int
    salt: str | None = field(default=None, repr=False)


@dataclass
class EpisodeOutcome:
    """A finished episode: its result record (without file paths), trace text, transcript."""

    record: dict[str, Any]
    trace_text: str | None
    transcript: Any = None


# ---- one episode --------------------------------------------------------------------------------

class _WallTimeExceeded(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """Raised inside a policy call that overran the wall budget (BaseException: a policy's
    ``except Exception`` cannot swallow it)."""


@contextmanager
def _wall_guard(deadline: float | None) -> Iterator[None]:
    """Interrupt the enclosed policy call at ``deadline`` (a ``perf_counter`` time).

    Uses ``SIGALRM``, so it acts only in the main thread of a process with ``setitimer`` and
    no timer of its own; elsewhere the env's check after each step is the only wall limit.
    """
    usable = (deadline is not None and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread()
              and signal.getitimer(signal.ITIMER_REAL)[0] == 0)  # never displace a caller's
    if not usable:
        yield
        return
    remaining = deadline - time.perf_counter()
    if remaining <= 0:
        raise _WallTimeExceeded

    def on_alarm(signum, frame):  # noqa: ARG001
        raise _WallTimeExceeded

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, remaining)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def environment_kwargs(settings: EpisodeSettings, split: str, d: int, n: int,
                       interface: str) -> dict[str, Any]:
    """The environment's keyword arguments: all from the run's settings, none from a policy."""
    return {"split": split, "guided": settings.guided, "max_steps": settings.max_steps,
            "max_seconds": settings.max_seconds, "target": settings.target,
            "toolbox": settings.toolbox, "d": d, "n": n, "interface": interface}


def make_environment(family: str, kwargs: Mapping[str, Any]):
    """A fresh environment for one episode (the registered id when there is one)."""
    import gymnasium as gym

    from heuresis_env.registration import env_id, register_envs

    register_envs()
    if env_id(family) in gym.registry:
        return gym.make(env_id(family), disable_env_checker=True, **kwargs)
    from heuresis_env.env import HeuresisEnv

    return HeuresisEnv(family=family, **kwargs)


def _number(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def usage_fields(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """Tokens, cost and API retries from a policy's ``usage()``.

    Recognized keys: ``prompt_tokens``/``input_tokens``, ``completion_tokens``/
    ``output_tokens`` (or ``tokens: {"prompt", "completion"}``), ``cost_usd``, ``api_retries``.
    """
    usage = dict(usage or {})
    nested = usage.get("tokens") if isinstance(usage.get("tokens"), Mapping) else {}
    prompt = next((v for v in (_number(usage.get("prompt_tokens")),
                               _number(usage.get("input_tokens")), _number(nested.get("prompt")))
                   if v is not None), None)
    completion = next((v for v in (_number(usage.get("completion_tokens")),
                                   _number(usage.get("output_tokens")),
                                   _number(nested.get("completion"))) if v is not None), None)
    tokens = None
    if prompt is not None or completion is not None:
        tokens = {"prompt": prompt or 0, "completion": completion or 0}
    cost = usage.get("cost_usd")
    cost = float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None
    return {"tokens": tokens, "cost_usd": cost, "api_retries": _number(usage.get("api_retries"))}


def _settings_changes(expected: EpisodeSettings, actual: Any) -> list[str]:
    if not isinstance(actual, EpisodeSettings):
        return [f"settings replaced by a {type(actual).__name__}"]
    return [f"{name} {value!r} → {getattr(actual, name)!r}"
            for name, value in expected.to_dict().items()
            if getattr(actual, name, None) != value]


class EpisodeRunner:
    """One policy instance that runs episodes: in-process, in a worker process or a Ray actor."""

    def __init__(self, spec: RunSpec, worker: str, policy: Policy | None = None):
        from heuresis_env.evaluation.policies import make_policy

        self.spec = spec
        self.worker = worker
        self.policy = policy if policy is not None else make_policy(spec.policy,
                                                                     spec.policy_options)
        if self.policy.interface not in ("text", "rl"):
            raise HeuresisError(f"policy {spec.policy!r} has interface "
                                f"{self.policy.interface!r}; expected 'text' or 'rl'")
        self._configure()

    def _configure(self) -> None:
        self.policy.configure(self.spec.settings)
        changes = _settings_changes(self.spec.settings, getattr(self.policy, "settings", None))
        if changes:
            raise HeuresisError(f"policy {self.spec.policy!r} changed the settings the runner "
                                f"gave it ({'; '.join(changes)}); budgets and options are "
                                "imposed by the runner, identical for every policy")

    def run(self, task: EpisodeTask) -> EpisodeOutcome:
        """Run one episode; a policy exception ends it with ``error`` set, scored as it stands."""
        settings = self.spec.settings
        trace_dir = tempfile.mkdtemp(prefix="heuresis-episode-")
        env = None
        try:
            kwargs = environment_kwargs(settings, task.split, self.spec.d, self.spec.n,
                                        self.policy.interface)
            env = make_environment(task.family, {**kwargs, "trace_path": trace_dir,
                                                 "salt": self.spec.salt})
            base = env.unwrapped
            started = time.perf_counter()
            observation, info = env.reset(seed=task.seed, options={"index": task.index})
            deadline = (None if settings.max_seconds is None
                        else time.perf_counter() + settings.max_seconds + WALL_GRACE_SECONDS)
            final, error = self._drive(env, observation, info, deadline)
            wall_seconds = time.perf_counter() - started
            final_graph = base.working_graph.to_dict()
            usage: Mapping[str, Any] = {}
            transcript = None
            try:
                usage = self.policy.usage() or {}
                transcript = self.policy.transcript()
            except Exception as exc:  # noqa: BLE001 - a failing report is an episode error
                error = error or f"policy usage()/transcript() raised {type(exc).__name__}: {exc}"
            changes = _settings_changes(settings, getattr(self.policy, "settings", None))
            if changes:
                error = error or (f"the policy changed its settings during the episode "
                                  f"({'; '.join(changes)}); the runner's budgets applied")
                self._configure_quietly()
            trace_file = base.trace_file
            trace_text = trace_file.read_text(encoding="utf-8") if trace_file else None
            reason = str(final["termination_reason"])
            terminated = reason == "submitted"
            truncated = reason in ("step_budget", "wall_time")
            record = {
                "episode_id": task.episode_id, "policy": self.spec.policy,
                "family": task.family, "split": task.split, "index": task.index,
                "repeat": task.repeat, "instance_sha256": base.instance_sha256,
                "scores": dict(final["scores"]), "steps": int(final["steps_used"]),
                "terminated": terminated, "truncated": truncated,
                "finished": terminated and not truncated, "termination_reason": reason,
                "wall_seconds": wall_seconds, **usage_fields(usage),
                "final_graph": final_graph, "trace": None, "transcript": None,
                "error": error, "worker": self.worker,
            }
            return EpisodeOutcome(record, trace_text, transcript)
        finally:
            if env is not None:
                env.close()
            shutil.rmtree(trace_dir, ignore_errors=True)

    def _drive(self, env, observation: Any, info: dict[str, Any], deadline: float | None
               ) -> tuple[dict[str, Any], str | None]:
        """Alternate policy and env until the episode ends; returns the final info and error."""
        base = env.unwrapped
        stage = "reset"
        try:
            with _wall_guard(deadline):
                self.policy.reset(observation, info)
            while True:
                stage = "act"
                with _wall_guard(deadline):
                    action = self.policy.act(observation, info)
                stage = "step"
                observation, _, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    return info, None
        except _WallTimeExceeded:
            return base.end_episode("wall_time"), None
        except Exception as exc:  # noqa: BLE001 - the run goes on; the episode records it
            where = "the environment's step" if stage == "step" else f"policy.{stage}()"
            message = f"{where} raised {type(exc).__name__}: {exc}"
            return base.end_episode("aborted"), message[:4000]

    def _configure_quietly(self) -> None:
        try:
            self.policy.configure(self.spec.settings)
        except Exception:  # noqa: BLE001 - the next episode's check reports it
            pass

    def close(self) -> None:
        self.policy.close()


# ---- local worker processes -----------------------------------------------------------------------

def worker_name(kind: str = "local") -> str:
    return f"{kind}:{socket.gethostname()}:{os.getpid()}"


def _exit_when_orphaned(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(3)


def _worker_main(spec: RunSpec, tasks, results, parent_pid: int) -> None:
    """A spawned worker: one policy instance, episodes from ``tasks`` until a ``None``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), daemon=True).start()
    name = worker_name()
    try:
        runner = EpisodeRunner(spec, name)
    except BaseException:  # noqa: BLE001 - reported to the parent, which stops the run
        results.put(("fatal", name, None, traceback.format_exc()))
        return
    try:
        while True:
            task = tasks.get()
            if task is None:
                break
            results.put(("started", name, task.episode_id, None))
            try:
                outcome = runner.run(task)
            except BaseException:  # noqa: BLE001
                results.put(("fatal", name, task.episode_id, traceback.format_exc()))
                return
            results.put(("done", name, task.episode_id, outcome))
    finally:
        try:
            runner.close()
        finally:
            results.put(("exit", name, None, None))


def _stop_processes(processes: Sequence[Any], timeout: float = 5.0) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + timeout
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(1.0)


def run_local_processes(spec: RunSpec, tasks: Sequence[EpisodeTask], workers: int
                        ) -> Iterator[EpisodeOutcome]:
    """Run ``tasks`` on ``workers`` spawned processes; yields outcomes as episodes end."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    task_queue, result_queue = context.Queue(), context.Queue()
    count = min(workers, len(tasks))
    for task in tasks:
        task_queue.put(task)
    for _ in range(count):
        task_queue.put(None)
    processes = [context.Process(target=_worker_main, name=f"heuresis-worker-{k}",
                                 args=(spec, task_queue, result_queue, os.getpid()))
                 for k in range(count)]
    for process in processes:
        process.start()
    remaining, in_flight, exited = len(tasks), {}, set()
    completed = False
    try:
        while remaining:
            try:
                kind, name, episode, payload = result_queue.get(timeout=0.5)
            except queue.Empty:
                dead = [p for p in processes if p.exitcode is not None]
                if dead:
                    _check_dead_workers(processes, result_queue, in_flight, exited)
                continue
            if kind == "started":
                in_flight[name] = episode
            elif kind == "done":
                in_flight.pop(name, None)
                remaining -= 1
                yield payload
            elif kind == "exit":
                exited.add(name)
            elif kind == "fatal":
                where = f" while running episode {episode}" if episode else " while starting"
                raise HeuresisError(f"worker {name} failed{where}; finished episodes are "
                                    f"saved, rerun to resume. Its traceback:\n{payload}")
        completed = True
    finally:
        if completed:
            for process in processes:
                process.join(30.0)
        _stop_processes(processes)
        task_queue.cancel_join_thread()
        result_queue.cancel_join_thread()


def _check_dead_workers(processes, result_queue, in_flight: dict[str, str],
                        exited: set[str]) -> None:
    """Raise when a worker died without saying goodbye (killed, out of memory, crashed)."""
    for process in processes:
        if process.exitcode is None:
            continue
        name = f"local:{socket.gethostname()}:{process.pid}"
        if name in exited:
            continue
        # its last messages may still be in the pipe: let the caller read them first
        if not result_queue.empty():
            return
        episode = in_flight.get(name)
        what = f" while running episode {episode}" if episode else ""
        raise HeuresisError(f"worker {name} died{what} (exit code {process.exitcode}); "
                            "finished episodes are saved, rerun the command to resume")


# ---- the run --------------------------------------------------------------------------------------

@dataclass
class FamilySummary:
    """One family's episodes in a run: mean F1 over all and over finished ones, truncation."""

    family: str
    episodes: int
    finished: int
    truncated: int
    errors: int
    mean_f1: float
    mean_f1_finished: float

    @property
    def truncation_rate(self) -> float:
        return self.truncated / self.episodes if self.episodes else math.nan


@dataclass
class RunSummary:
    """What ``evaluate`` did and the run's per-family results (all its finished episodes)."""

    out_dir: Path
    policy: str
    split: str
    backend: str
    workers: int
    total_episodes: int
    resumed: int
    ran: int
    seconds: float
    families: list[FamilySummary]
    overall: FamilySummary
    accepted_differences: list[str] = field(default_factory=list)

    def to_text(self) -> str:
        """A plain-text table: per family, episodes, mean F1 (all, finished), truncation."""
        def f1(value: float) -> str:
            return "   -  " if math.isnan(value) else f"{value:6.3f}"

        lines = [f"run {self.out_dir}: policy {self.policy}, {self.split} split, "
                 f"{self.total_episodes} episodes ({self.ran} run now, {self.resumed} resumed) "
                 f"in {self.seconds:.1f} s on {self.backend} backend × {self.workers}"]
        for difference in self.accepted_differences:
            lines.append(f"  config changed under --force: {difference}")
        lines.append(f"{'family':<10} {'episodes':>8} {'F1 all':>7} {'F1 fin.':>7} "
                     f"{'finished':>8} {'truncated':>9} {'errors':>6}")
        for row in [*self.families, self.overall]:
            rate = ("  -" if math.isnan(row.truncation_rate)
                    else f"{100 * row.truncation_rate:.0f}%")
            lines.append(f"{row.family:<10} {row.episodes:>8} {f1(row.mean_f1):>7} "
                         f"{f1(row.mean_f1_finished):>7} {row.finished:>8} {rate:>9} "
                         f"{row.errors:>6}")
        return "\n".join(lines)


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def summarize_family(family: str, records: Sequence[Mapping[str, Any]]) -> FamilySummary:
    """Per-family figures of the reporting rule: all episodes, finished ones, truncation."""
    f1 = [_float(r.get("scores", {}).get("f1")) for r in records]
    finished = [x for x, r in zip(f1, records) if r.get("finished")]
    return FamilySummary(family=family, episodes=len(records), finished=len(finished),
                         truncated=sum(bool(r.get("truncated")) for r in records),
                         errors=sum(r.get("error") is not None for r in records),
                         mean_f1=_mean(f1), mean_f1_finished=_mean(finished))


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
    from heuresis_env.families import available_families

    known = available_families()
    if isinstance(families, str):
        families = known if families == "all" else [families]
    chosen = list(dict.fromkeys(families))
    if not chosen:
        raise HeuresisError(f"give at least one family (or 'all'); known: {', '.join(known)}")
    for family in chosen:
        if family not in known:
            raise UnknownNameError("family", family, [*known, "all"])
    return chosen


def _policy_search_path(spec: str) -> str | None:
    """The sys.path entry holding the policy's module (for workers that start elsewhere)."""
    import importlib.util

    from heuresis_env.evaluation.policies import registered_policies

    target = spec if ":" in spec else registered_policies().get(spec, "")
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
             force: bool = False, d: int = 10, n: int = 600, salt: str | None = None,
             progress: bool = True, address: str | None = None) -> RunSummary:
    """Run ``policy_spec`` on ``count`` instances of each family × ``repeats`` into ``out_dir``.

    Finished episodes already in ``out_dir`` are skipped (resume); a different config there is
    refused, naming each differing field, unless ``force``. ``salt`` (default
    ``$HEURESIS_TEST_SALT``) seals the test split; the config records only its digest.
    """
    from heuresis_env.evaluation.policies import check_policy_options, resolve_policy_factory
    from heuresis_env.instances import SPLIT_SIZES, InstanceKey, resolve_salt

    started = time.perf_counter()
    if split not in SPLIT_SIZES:
        raise UnknownNameError("split", split, SPLIT_SIZES)
    if backend not in BACKENDS:
        raise UnknownNameError("backend", backend, BACKENDS)
    chosen = _resolve_families(families)
    size = SPLIT_SIZES[split]
    count = size if count is None else _check_int("count", count, 1, size)
    repeats = _check_int("repeats", repeats, 1)
    workers = _check_int("workers", workers, 1)
    settings = _check_settings(EpisodeSettings() if settings is None else settings)
    policy_options = _check_policy_options(policy_options)
    if address is not None and backend != "ray":
        raise HeuresisError("address is for the ray backend (an existing Ray cluster); "
                            "pass backend='ray' or drop the address")
    salt = resolve_salt(split, salt)
    keys = [InstanceKey(family, split, index, d=d, n=n)
            for family in chosen for index in range(count)]
    _check_environment(settings, split, chosen[0], d, n)
    factory = resolve_policy_factory(policy_spec)
    check_policy_options(policy_spec, factory, policy_options)
    spec = RunSpec(policy=policy_spec, policy_options=policy_options, settings=settings,
                   d=keys[0].d, n=keys[0].n, salt=salt)
    tasks = [EpisodeTask(episode_id(family, split, index, repeat), family, split, index,
                         repeat, episode_seed(episode_id(family, split, index, repeat)))
             for index in range(count) for family in chosen for repeat in range(repeats)]
    config = build_config(policy=policy_spec, policy_options=policy_options,
                          settings=settings.to_dict(), split=split, families=chosen,
                          count=count, repeats=repeats, d=spec.d, n=spec.n,
                          instance_keys=[k.to_dict() for k in keys], salt=salt)
    store = RunStore(out_dir)
    with store.lock():
        accepted = store.prepare(config, force=force)
        done = store.finished_ids()
        pending = [task for task in tasks if task.episode_id not in done]
        resumed = len(tasks) - len(pending)
        _run_pending(store, spec, pending, len(tasks), resumed, workers, backend, address,
                     progress)
        wanted = {task.episode_id for task in tasks}
        records = [r for r in store.read_results() if r["episode_id"] in wanted]
    by_family = [summarize_family(family, [r for r in records if r.get("family") == family])
                 for family in chosen]
    return RunSummary(out_dir=Path(out_dir), policy=policy_spec, split=split, backend=backend,
                      workers=workers, total_episodes=len(tasks), resumed=resumed,
                      ran=len(pending), seconds=time.perf_counter() - started,
                      families=by_family, overall=summarize_family("all", records),
                      accepted_differences=accepted)


def _check_environment(settings: EpisodeSettings, split: str, family: str, d: int, n: int
                       ) -> None:
    """Build (not reset) one environment so that bad settings fail before any episode runs."""
    from heuresis_env.env import HeuresisEnv

    env = HeuresisEnv(family=family, **environment_kwargs(settings, split, d, n, "text"))
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
        from heuresis_env.evaluation.ray_backend import run_with_ray

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
