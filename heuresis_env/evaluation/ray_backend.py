"""The Ray backend: episodes as Ray tasks on actors, one set of actors for a whole job.

A job is one or more runs; the driver hands each actor its next episode (:class:`JobQueue`:
an actor stays with one run's policy while that run has episodes left), and each actor holds
the runner (the policy process) of the run it is serving (:class:`RunnerSlot`).

It connects to an existing cluster (``address``, e.g. ``ray://head:10001`` or ``auto``), reuses
a Ray session this process already started, or starts a local one with ``workers`` CPUs for
the run. Workers only run episodes and return their records, traces and transcripts; the
driver writes the run directory, so the results file has the same format as the local
backend's (and, for a deterministic policy, the same lines apart from timing and worker).

Policy modules must be importable on the cluster's workers: for a local cluster the driver's
module path is passed on; on a remote cluster install the package there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.episode import (
    EpisodeOutcome,
    EpisodeTask,
    JobQueue,
    RunnerSlot,
    RunRefused,
    RunSpec,
    worker_name,
)
from heuresis_env.threads import limit_threads

#: environment variables passed on to the workers of a cluster started for the run
FORWARDED_VARIABLES = ("HEURESIS_CACHE_DIR", "HEURESIS_NO_CACHE")


def import_ray() -> Any:
    """Import Ray, or explain how to install it."""
    try:
        import ray
    except ImportError:
        raise HeuresisError("the ray backend needs Ray: pip install 'heuresis[ray]' "
                            "(or use --backend local)") from None
    return ray


class EpisodeActor:
    """A Ray actor: a :class:`RunnerSlot` (one policy instance at a time) running episodes of
    the job's runs."""

    def __init__(self, specs: Sequence[RunSpec]):
        limit_threads()  # one BLAS thread per actor (one CPU each)
        self.slot = RunnerSlot(specs, worker_name("ray"))

    def run(self, run: int, task: EpisodeTask) -> EpisodeOutcome | RunRefused:
        return self.slot.run(run, task)

    def close(self) -> None:
        self.slot.close()


def runtime_environment(extra_paths: Sequence[str]) -> dict[str, Any]:
    """Ray ``runtime_env``: the policy's module path and Heuresis' cache variables."""
    variables = {name: os.environ[name] for name in FORWARDED_VARIABLES if name in os.environ}
    paths = [p for p in dict.fromkeys([*extra_paths, os.getcwd()]) if p]
    variables["PYTHONPATH"] = os.pathsep.join([*paths, "${PYTHONPATH}"])
    return {"env_vars": variables}


def connect_ray(workers: int, address: str | None = None, extra_paths: Sequence[str] = ()
                ) -> tuple[Any, bool]:
    """Ray, connected: to the cluster at ``address``, to the session this process already
    has, or to a local cluster started here with ``workers`` CPUs. Returns (the ``ray``
    module, whether this call connected — then the caller shuts it down)."""
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    environment = runtime_environment(extra_paths)
    options: dict[str, Any] = {"include_dashboard": False}
    saved = dict(os.environ)
    if address is None:
        # "local": a new instance even when a Ray started elsewhere on this machine (``ray
        # start``, a test's cluster) left its address in /tmp/ray, which ray.init() would
        # otherwise join (and refuse, since num_cpus is given for a new instance only).
        # A local cluster inherits this process's environment; a runtime_env would make
        # Ray start every worker through a shell line that breaks on a Python path with
        # a space (e.g. a checkout under "/tmp/ci check")
        options["num_cpus"] = workers
        variables = dict(environment["env_vars"])
        variables["PYTHONPATH"] = os.pathsep.join(
            p for p in (*variables["PYTHONPATH"].split(os.pathsep)[:-1],
                        os.environ.get("PYTHONPATH", "")) if p)
        os.environ.update(variables)
    else:
        options["runtime_env"] = environment
    try:
        ray.init(address=address or "local", **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
        raise HeuresisError(f"could not start or reach {where}: {exc}") from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return ray, True


def run_with_ray(specs: Sequence[RunSpec], items: Sequence[tuple[int, EpisodeTask]],
                 workers: int, address: str | None = None, extra_paths: Sequence[str] = ()
                 ) -> Iterator[tuple[int, EpisodeOutcome | RunRefused]]:
    """Run the episodes ``items`` — ``(run, task)``, ``run`` an index into ``specs`` — on
    ``workers`` Ray actors; yields ``(run, outcome)`` as episodes end, and ``(run,
    RunRefused)`` when a run's policy cannot start (its other episodes are dropped)."""
    ray, connected_here = connect_ray(workers, address, extra_paths)
    actor_class = ray.remote(num_cpus=1, max_restarts=0)(EpisodeActor)
    actors: list[Any] = []
    try:
        actors = [actor_class.remote(list(specs)) for _ in range(min(workers, len(items)))]
        job = JobQueue(items)
        running: dict[Any, tuple[int, int, EpisodeTask]] = {}

        def hand_out(slot: int) -> None:
            item = job.next_for(slot)
            if item is not None:
                running[actors[slot].run.remote(*item)] = (slot, *item)

        for slot in range(len(actors)):
            hand_out(slot)
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            slot, run, task = running.pop(ready[0])
            try:
                outcome = ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                raise HeuresisError(f"episode {task.episode_id} failed on Ray; finished "
                                    f"episodes are saved, rerun to resume. {exc}") from None
            if isinstance(outcome, RunRefused):
                job.drop(run)
            hand_out(slot)
            yield run, outcome
        try:
            ray.get([actor.close.remote() for actor in actors])
        except ray.exceptions.RayError as exc:
            raise HeuresisError(f"every episode is saved, but closing the policy failed on "
                                f"Ray: {exc}") from None
    finally:
        for actor in actors:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if connected_here:
            ray.shutdown()
