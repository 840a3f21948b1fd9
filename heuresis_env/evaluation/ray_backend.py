"""The Ray backend: episodes as Ray tasks on actors that each hold one policy instance.

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
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.episode import (
    EpisodeOutcome,
    EpisodeRunner,
    EpisodeTask,
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
    """A Ray actor: one :class:`EpisodeRunner` (one policy instance) running episodes."""

    def __init__(self, spec: RunSpec):
        limit_threads()  # one BLAS thread per actor (one CPU each)
        self.runner = EpisodeRunner(spec, worker_name("ray"))

    def run(self, task: EpisodeTask) -> EpisodeOutcome:
        return self.runner.run(task)

    def close(self) -> None:
        self.runner.close()


def runtime_environment(extra_paths: Sequence[str]) -> dict[str, Any]:
    """Ray ``runtime_env``: the policy's module path and Heuresis' cache variables."""
    variables = {name: os.environ[name] for name in FORWARDED_VARIABLES if name in os.environ}
    paths = [p for p in dict.fromkeys([*extra_paths, os.getcwd()]) if p]
    variables["PYTHONPATH"] = os.pathsep.join([*paths, "${PYTHONPATH}"])
    return {"env_vars": variables}


def run_with_ray(spec: RunSpec, tasks: Sequence[EpisodeTask], workers: int,
                 address: str | None = None, extra_paths: Sequence[str] = ()
                 ) -> Iterator[EpisodeOutcome]:
    """Run ``tasks`` on ``workers`` Ray actors; yields outcomes as episodes end."""
    ray = import_ray()
    connected_here = False
    if not ray.is_initialized():
        environment = runtime_environment(extra_paths)
        options: dict[str, Any] = {"include_dashboard": False}
        saved = dict(os.environ)
        if address is None:
            # a local cluster inherits this process's environment; a runtime_env would make
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
            ray.init(address=address, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
            raise HeuresisError(f"could not start or reach {where}: {exc}") from None
        finally:
            os.environ.clear()
            os.environ.update(saved)
        connected_here = True
    actor_class = ray.remote(num_cpus=1, max_restarts=0)(EpisodeActor)
    actors: list[Any] = []
    try:
        actors = [actor_class.remote(spec) for _ in range(min(workers, len(tasks)))]
        waiting = deque(tasks)
        running: dict[Any, tuple[Any, EpisodeTask]] = {}
        for actor in actors:
            if waiting:
                task = waiting.popleft()
                running[actor.run.remote(task)] = (actor, task)
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            actor, task = running.pop(ready[0])
            try:
                outcome = ray.get(ready[0])
            except ray.exceptions.RayError as exc:
                raise HeuresisError(f"episode {task.episode_id} failed on Ray; finished "
                                    f"episodes are saved, rerun to resume. {exc}") from None
            yield outcome
            if waiting:
                task = waiting.popleft()
                running[actor.run.remote(task)] = (actor, task)
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
