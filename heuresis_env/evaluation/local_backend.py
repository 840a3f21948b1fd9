"""The local backend: episodes in ``workers`` spawned processes, each holding one policy.

Outcomes are yielded as episodes end; a worker that dies or fails stops the run with a message
(finished episodes are saved by the caller, so rerunning resumes).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import socket
import threading
import time
import traceback
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


def _exit_when_orphaned(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(3)


def _worker_main(spec: RunSpec, tasks, results, parent_pid: int) -> None:
    """A spawned worker: one policy instance, episodes from ``tasks`` until a ``None``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    limit_threads()  # N workers on N cores, not N × BLAS threads
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), daemon=True).start()
    name = worker_name()
    try:
        runner = EpisodeRunner(spec, name)
    except HeuresisError as exc:  # a policy that cannot start: its message says why
        results.put(("refused", name, None, str(exc)))
        return
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
    remaining = len(tasks)
    in_flight: dict[str, Any] = {}
    exited: set[str] = set()
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
            elif kind == "refused":
                raise HeuresisError(payload)
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
