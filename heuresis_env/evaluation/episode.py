"""One episode under a run's settings: the task, the environment built from the settings alone,
the policy driven to the end, and the result record.

The runner owns the budgets: it builds every environment from the run's
:class:`~heuresis_env.policy.EpisodeSettings` (never from the policy), hands the same settings
to the policy through ``configure``, and refuses a policy that alters them. The environment
and its referee live here; a policy runs in its own process behind a
:class:`~heuresis_env.evaluation.policy_process.PolicyProxy`, and a reference that needs the
truth (:class:`~heuresis_env.policy.ReferencePolicy`) runs here, given the instance.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections import deque
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from heuresis_env.cache import cache_root
from heuresis_env.env.core import HeuresisEnv
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.policies import make_reference
from heuresis_env.evaluation.policy_process import (
    PolicyDeadlineExceeded,
    PolicyProxy,
    RemotePolicyError,
)
from heuresis_env.evaluation.run_format import run_folders_near
from heuresis_env.evaluation.run_store import transcript_json
from heuresis_env.generation.datasets import register_from_details
from heuresis_env.generation.instances import InstanceKey, cached_instance, get_source
from heuresis_env.generation.salts import SealedSalt
from heuresis_env.policy import EpisodeSettings, Policy, ReferencePolicy
from heuresis_env.registration import env_id, register_envs

#: how long a policy may overrun the wall budget inside one ``reset``/``act`` call before the
#: runner interrupts it and truncates the episode (the env itself checks after each step)
WALL_GRACE_SECONDS = 5.0


# ---- what is sent to a worker and what comes back ------------------------------------------

@dataclass(frozen=True)
class EpisodeTask:
    """One episode to run: an instance of the split and a repeat number (in a question run,
    the question id too; ``index`` is then its instance)."""

    episode_id: str
    family: str
    split: str
    index: int
    repeat: int
    seed: int
    question: int | None = None


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to build the policy and the environments of a run."""

    policy: str
    policy_options: dict[str, Any]
    settings: EpisodeSettings
    d: int | None  # None: each family's own size (a structure's d, a table's d and n)
    n: int | None
    salt: SealedSalt | None = field(default=None, repr=False)
    task: str = "graph"
    name_mode: str = "anonymous"
    #: CSV tables the run plays (``datasets.dataset_details``), registered in every worker
    datasets: tuple[dict[str, Any], ...] = ()
    #: a registered reference that needs the truth, run on the referee's side
    reference: bool = False
    #: how the policy process is isolated: "namespaces" or "process" (see policy_process)
    policy_isolation: str = "process"
    #: the API endpoints a confined policy may reach ("HOST:PORT"; True: its base_url
    #: option's), through the runner's endpoint proxy only
    policy_network: bool | tuple[str, ...] = False
    #: folders and files the policy process must not see besides the cache (the run
    #: directory, a data table's graph file)
    hidden_paths: tuple[str, ...] = ()


@dataclass
class EpisodeOutcome:
    """A finished episode: its result record (without file paths), trace text, and the
    policy's transcript as the text of its file (encoded where the episode ran: a router's
    ledger is thousands of small objects, a string crosses to the saving process whole)."""

    record: dict[str, Any]
    trace_text: str | None
    transcript_text: str | None = None


# ---- one episode --------------------------------------------------------------------------------

@contextmanager
def _wall_guard(deadline: float | None) -> Iterator[None]:
    """Interrupt the enclosed call of an in-process policy (a reference) at ``deadline`` (a
    ``time.monotonic`` time); a policy process is stopped by its proxy instead.

    Uses ``SIGALRM``, so it acts only in the main thread of a process with ``setitimer`` and
    no timer of its own; elsewhere the env's check after each step is the only wall limit.
    """
    usable = (hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread()
              and signal.getitimer(signal.ITIMER_REAL)[0] == 0)  # never displace a caller's
    if deadline is None or not usable:
        yield
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise PolicyDeadlineExceeded

    def on_alarm(signum, frame):  # noqa: ARG001
        raise PolicyDeadlineExceeded

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, remaining)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def environment_kwargs(settings: EpisodeSettings, split: str, d: int | None, n: int | None,
                       interface: str, task: str = "graph",
                       name_mode: str = "anonymous") -> dict[str, Any]:
    """The environment's keyword arguments: all from the run's settings, none from a policy."""
    kwargs = {"split": split, "guided": settings.guided, "max_steps": settings.max_steps,
              "max_seconds": settings.max_seconds, "target": settings.target,
              "toolbox": settings.toolbox, "d": d, "n": n, "interface": interface}
    if task != "graph":
        kwargs.update(task=task, name_mode=name_mode)
    if settings.experiments:
        kwargs["experiments"] = settings.experiments
    return kwargs


def make_environment(family: str, kwargs: Mapping[str, Any]):
    """A fresh environment for one episode (the registered id when there is one)."""
    register_envs()
    if env_id(family) in gym.registry:
        return gym.make(env_id(family), disable_env_checker=True, **kwargs)
    return HeuresisEnv(family=family, **kwargs)


#: the largest count or cost a policy may report of one episode; above, it is unknown (None):
#: a policy's own report is bounded on both sides, never a 309-digit number in a results line
MAX_REPORTED_COUNT, MAX_REPORTED_COST_USD = 10**12, 10**6


def _number(value: Any) -> int | None:
    """A count a policy reported: a non-negative integer up to :data:`MAX_REPORTED_COUNT`,
    else None (unknown)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if 0 <= number <= MAX_REPORTED_COUNT else None


def usage_fields(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """Tokens, cost and API retries from a policy's ``usage()``.

    Recognized keys: ``prompt_tokens``/``input_tokens``, ``completion_tokens``/
    ``output_tokens`` (or ``tokens: {"prompt", "completion"}``), ``cost_usd``, ``api_retries``.
    A negative, non-finite or non-numeric value is recorded as unknown (None): a policy's
    report never lowers the cost table.
    """
    usage = dict(usage or {})
    tokens_field = usage.get("tokens")
    nested: Mapping[str, Any] = tokens_field if isinstance(tokens_field, Mapping) else {}
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
    if cost is not None and not (math.isfinite(cost) and 0 <= cost <= MAX_REPORTED_COST_USD):
        cost = None
    return {"tokens": tokens, "cost_usd": cost, "api_retries": _number(usage.get("api_retries"))}


def _settings_changes(expected: EpisodeSettings, actual: Any) -> list[str]:
    if not isinstance(actual, EpisodeSettings):
        return [f"settings replaced by a {type(actual).__name__}"]
    return [f"{name} {value!r} → {getattr(actual, name)!r}"
            for name, value in expected.to_dict().items()
            if getattr(actual, name, None) != value]


def _other_runs(isolation: str) -> list[str]:
    """Run directories near the working folder and the checkout, hidden from a confined
    policy (an earlier run's results hold the true graphs' scores, an oracle's the graphs)."""
    if isolation != "namespaces":
        return []
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return run_folders_near(os.getcwd(), checkout)


class EpisodeRunner:
    """Runs episodes for one policy: in-process, in a worker process or a Ray actor. The
    environment and its referee live here; the policy runs in its own process (a
    :class:`PolicyProxy`), except a reference, which runs here and is given the truth."""

    def __init__(self, spec: RunSpec, worker: str, policy: Policy | None = None):
        self.spec = spec
        self.worker = worker
        for details in spec.datasets:  # a spawned worker or Ray actor starts without them
            source = get_source(details["name"])
            if source is None or source.details.get("sha256") != details.get("sha256"):
                register_from_details(details)
        self._work_dir = tempfile.mkdtemp(prefix="heuresis-runner-")
        try:
            if policy is not None:  # a policy object given directly (development, tests)
                self.policy = policy
            elif spec.reference:
                self.policy = make_reference(spec.policy, spec.policy_options)
            else:
                self.policy = PolicyProxy(
                    spec.policy, spec.policy_options, isolation=spec.policy_isolation,
                    hidden_paths=[str(cache_root()), *spec.hidden_paths, self._work_dir,
                                  *_other_runs(spec.policy_isolation)],
                    salt=spec.salt, network=spec.policy_network)
            if self.policy.interface not in ("text", "rl"):
                raise HeuresisError(f"policy {spec.policy!r} has interface "
                                    f"{self.policy.interface!r}; expected 'text' or 'rl'")
            self._configure()
        except BaseException:
            self.close()
            raise

    def _configure(self) -> None:
        try:
            self.policy.configure(self.spec.settings)
        except RemotePolicyError as exc:
            raise HeuresisError(f"policy {self.spec.policy!r}: configure() raised "
                                f"{exc.remote_type}: {exc}") from None
        changes = _settings_changes(self.spec.settings, getattr(self.policy, "settings", None))
        if changes:
            raise HeuresisError(f"policy {self.spec.policy!r} changed the settings the runner "
                                f"gave it ({'; '.join(changes)}); budgets and options are "
                                "imposed by the runner, identical for every policy")

    def run(self, task: EpisodeTask) -> EpisodeOutcome:
        """Run one episode; a policy exception, or a failure the policy reports
        (:meth:`~heuresis_env.policy.Policy.failure`), ends it with ``error`` set, scored as it
        stands."""
        settings = self.spec.settings
        # the episode's trace is written in the runner's folder (uniquely named), read back,
        # then deleted: no folder made and removed per episode
        trace_dir = os.path.join(self._work_dir, "traces")
        env = None
        try:
            kwargs = environment_kwargs(settings, task.split, self.spec.d, self.spec.n,
                                        self.policy.interface, self.spec.task,
                                        self.spec.name_mode)
            env = make_environment(task.family, {**kwargs, "trace_path": trace_dir,
                                                 "salt": self.spec.salt or ""})
            base = env.unwrapped
            if isinstance(self.policy, ReferencePolicy):  # the referee's side: the truth
                self.policy.observe_truth(cached_instance(InstanceKey(
                    task.family, task.split, task.index, d=self.spec.d, n=self.spec.n),
                    self.spec.salt or ""))
            started = time.perf_counter()
            options = ({"index": task.index} if task.question is None
                       else {"question": task.question})
            observation, info = env.reset(seed=task.seed, options=options)
            deadline = (None if settings.max_seconds is None
                        else time.monotonic() + settings.max_seconds + WALL_GRACE_SECONDS)
            final, error = self._drive(env, observation, info, deadline)
            wall_seconds = time.perf_counter() - started
            final_graph = base.working_graph.to_dict()
            usage: Mapping[str, Any] = {}
            transcript_text = None
            notes: list[str] = []
            try:
                usage = self.policy.usage() or {}
                transcript = self.policy.transcript()
                # a tool the policy needed was refused, or its submission was rejected
                failure = self.policy.failure()
                error = error or (None if failure is None else str(failure)[:4000])
                notes = [str(note) for note in self.policy.notes() or []]
            except (Exception, PolicyDeadlineExceeded) as exc:  # noqa: BLE001 - an episode error
                error = error or (f"policy usage()/transcript()/failure() raised "
                                  f"{_exception_name(exc)}: {exc}")
            else:
                try:  # encoded here: a string crosses to the process that saves it
                    transcript_text = None if transcript is None else transcript_json(transcript)
                except (ValueError, TypeError, RecursionError) as exc:  # a cycle, too deep
                    error = error or (f"the policy's transcript cannot be stored as JSON "
                                      f"({_exception_name(exc)}: {exc})")
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
                "ground_truth": bool(final.get("ground_truth", True)),
                "terminated": terminated, "truncated": truncated,
                "finished": terminated and not truncated, "termination_reason": reason,
                "wall_seconds": wall_seconds, **usage_fields(usage),
                "final_graph": final_graph, "trace": None, "transcript": None,
                "error": error, "worker": self.worker, "reference": self.spec.reference,
            }
            if notes:
                record["notes"] = notes
            if settings.experiments:  # rows of experiments the episode drew (of its budget)
                record["experiment_rows"] = int(final.get("experiment_rows_used") or 0)
            if task.question is not None:  # the question, its truth and the answer
                record.update(task="qa", question=final.get("question"))
            return EpisodeOutcome(record, trace_text, transcript_text)
        finally:
            if env is not None:
                written = env.unwrapped.trace_file
                env.close()
                if written is not None:
                    written.unlink(missing_ok=True)

    def _call(self, deadline: float | None, method, *args: Any) -> Any:
        """One policy call under the wall deadline (the proxy enforces it on its process)."""
        if isinstance(self.policy, PolicyProxy):
            self.policy.deadline = deadline
            return method(*args)
        with _wall_guard(deadline):
            return method(*args)

    def _drive(self, env, observation: Any, info: dict[str, Any], deadline: float | None
               ) -> tuple[dict[str, Any], str | None]:
        """Alternate policy and env until the episode ends; returns the final info and error.
        The step that ends the episode is never shown to the policy (its info holds scores)."""
        base = env.unwrapped
        stage = "reset"
        try:
            self._call(deadline, self.policy.reset, observation, info)
            while True:
                stage = "act"
                action = self._call(deadline, self.policy.act, observation, info)
                stage = "step"
                observation, _, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    return info, None
        except PolicyDeadlineExceeded:
            return base.end_episode("wall_time"), None
        except Exception as exc:  # noqa: BLE001 - the run goes on; the episode records it
            where = "the environment's step" if stage == "step" else f"policy.{stage}()"
            message = f"{where} raised {_exception_name(exc)}: {exc}"
            return base.end_episode("aborted"), message[:4000]

    def _configure_quietly(self) -> None:
        try:
            self.policy.configure(self.spec.settings)
        except Exception:  # noqa: BLE001 - the next episode's check reports it
            pass

    def close(self) -> None:
        try:
            policy = getattr(self, "policy", None)
            if policy is not None:
                policy.close()
        finally:
            shutil.rmtree(self._work_dir, ignore_errors=True)


@dataclass(frozen=True)
class RunRefused:
    """What a worker returns instead of an outcome when a run's policy cannot start there
    (its message says why): the job drops the run's other episodes and goes on."""

    message: str


class JobQueue:
    """Hands a job's episodes ``(run, task)`` to its workers, keeping each worker on one
    run's policy as long as it can: starting a policy (its process, its imports, a model) costs
    seconds, an episode served from cache milliseconds.

    A worker stays with the run it is serving while that run has episodes left; then it takes
    the first run no other worker is serving; when every run with episodes left is being
    served, it joins the one with the most left. A worker never returns to a run it left (the
    run had no episode left), so it holds one policy at a time (:class:`RunnerSlot`).
    """

    def __init__(self, items: Iterable[tuple[int, EpisodeTask]]):
        self._pending: dict[int, deque[EpisodeTask]] = {}  # in the runs' order
        for run, task in items:
            self._pending.setdefault(run, deque()).append(task)
        self._serving: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return sum(len(tasks) for tasks in self._pending.values())

    def next_for(self, worker: Hashable) -> tuple[int, EpisodeTask] | None:
        """The next episode for ``worker``, or None when none is left."""
        runs = [run for run, tasks in self._pending.items() if tasks]
        if not runs:
            self._serving.pop(worker, None)
            return None
        current = self._serving.get(worker)
        if current not in runs:
            served = {run for other, run in self._serving.items() if other != worker}
            free = [run for run in runs if run not in served]
            current = free[0] if free else max(runs, key=lambda run: len(self._pending[run]))
        self._serving[worker] = current
        return current, self._pending[current].popleft()

    def drop(self, run: int) -> int:
        """Drop the episodes of ``run`` not handed out yet (its policy cannot start); returns
        how many."""
        tasks = self._pending.pop(run, deque())
        return len(tasks)


class RunnerSlot:
    """The :class:`EpisodeRunner` of the run a worker is serving, for a worker that serves
    several runs (a pool shared by the policies of one job): one runner at a time, built when
    the first episode of a run arrives and closed (its policy process ended) when an episode of
    another run does. A :class:`JobQueue` never sends a worker back to a run it left; if one
    did, the runner would be built again."""

    def __init__(self, specs: Sequence[RunSpec], worker: str):
        self.specs = list(specs)
        self.worker = worker
        self._current: tuple[int, EpisodeRunner] | None = None

    def runner(self, run: int) -> EpisodeRunner:
        """The runner of run ``run`` (an index into ``specs``); builds it when needed."""
        if self._current is not None and self._current[0] == run:
            return self._current[1]
        self.close()
        self._current = (run, EpisodeRunner(self.specs[run], self.worker))
        return self._current[1]

    def run(self, run: int, task: EpisodeTask) -> EpisodeOutcome | RunRefused:
        """The episode's outcome, or :class:`RunRefused` when the run's policy cannot start
        here (a :class:`HeuresisError` saying why; anything else is raised)."""
        try:
            runner = self.runner(run)
        except HeuresisError as exc:
            return RunRefused(str(exc))
        return runner.run(task)

    def close(self) -> None:
        current, self._current = self._current, None
        if current is not None:
            current[1].close()


def _exception_name(exc: BaseException) -> str:
    """The exception's type, or the policy's own exception type when it came from its
    process."""
    if isinstance(exc, RemotePolicyError):
        return exc.remote_type
    return type(exc).__name__


def worker_name(kind: str = "local") -> str:
    return f"{kind}:{socket.gethostname()}:{os.getpid()}"
