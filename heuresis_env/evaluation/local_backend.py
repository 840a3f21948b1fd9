"""The local backend: episodes in ``workers`` spawned processes, one pool for a whole job.

A job is one or more runs (the policies of ``heuresis demo``, say): the workers are started
once and import the package once. The parent hands each worker its next episode
(:class:`JobQueue`: a worker stays with one run's policy while that run has episodes left, so
a policy process is started about once per run rather than once per run and worker); each
worker holds the runner (the policy process) of the run it is serving (:class:`RunnerSlot`).
A worker whose last episode was quick (under :data:`PREFETCH_BELOW_SECONDS`, an episode
served from cache) gets its next episode queued ahead, so it never waits while the parent
saves the one before; a slow episode's worker gets one at a time, so no episode waits behind
a long one at the job's end. Outcomes are yielded as episodes end, tagged with their run; a
worker that dies or fails stops the job with a message (finished episodes are saved by the
caller, so rerunning resumes).
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
    EpisodeTask,
    JobQueue,
    RunnerSlot,
    RunRefused,
    RunSpec,
    worker_name,
)
from heuresis_env.evaluation.policy_process import runner_protected
from heuresis_env.threads import limit_threads

#: a worker whose last episode took less than this gets its next one queued ahead
PREFETCH_BELOW_SECONDS = 0.5


def _exit_when_orphaned(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(3)


def _worker_main(specs: Sequence[RunSpec], slot_index: int, tasks, results,
                 parent_pid: int) -> None:
    """A spawned worker: episodes ``(run, task)`` from its own queue ``tasks`` until a
    ``None``, each on the runner of its run (``specs[run]``; one policy process at a time).
    Messages to the parent: ``(kind, slot_index, name, (run, episode), payload)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    limit_threads()  # N workers on N cores, not N × BLAS threads
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), daemon=True).start()
    name = worker_name()

    def say(kind: str, where: tuple | None, payload: Any = None) -> None:
        results.put((kind, slot_index, name, where, payload))

    # non-dumpable for its whole life, not only while a policy process lives: between two
    # runs' policies, another worker's policy must not read this one's memory or environment
    # (the test salt)
    with runner_protected():
        slot = RunnerSlot(specs, name)
        try:
            while True:
                item = tasks.get()
                if item is None:
                    break
                run, task = item
                say("started", (run, task.episode_id))
                try:
                    result = slot.run(run, task)  # an outcome, or the run's policy refused
                except BaseException:  # noqa: BLE001 - reported; the parent stops the job
                    say("fatal", (run, task.episode_id), traceback.format_exc())
                    return
                say("done", (run, task.episode_id), result)
        finally:
            try:
                slot.close()
            finally:
                say("exit", None)


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


def run_local_processes(specs: Sequence[RunSpec], items: Sequence[tuple[int, EpisodeTask]],
                        workers: int) -> Iterator[tuple[int, EpisodeOutcome | RunRefused]]:
    """Run the episodes ``items`` — ``(run, task)``, ``run`` an index into ``specs`` — on one
    pool of ``workers`` spawned processes; yields ``(run, outcome)`` as episodes end, and
    ``(run, RunRefused)`` when a run's policy cannot start (its other episodes are dropped,
    the job goes on)."""
    context = multiprocessing.get_context("spawn")
    result_queue = context.Queue()
    count = min(workers, len(items))
    task_queues = [context.Queue() for _ in range(count)]
    job = JobQueue(items)
    processes = [context.Process(target=_worker_main, name=f"heuresis-worker-{k}",
                                 args=(list(specs), k, task_queues[k], result_queue,
                                       os.getpid()))
                 for k in range(count)]
    for process in processes:
        process.start()
    handed = [0] * count  # episodes handed to each worker and not finished
    ended = [False] * count  # the worker has been told to stop (nothing left to hand out)

    def hand(slot: int, depth: int) -> None:
        """Queue episodes for worker ``slot`` until it holds ``depth`` (or the end)."""
        while not ended[slot] and handed[slot] < depth:
            item = job.next_for(slot)
            task_queues[slot].put(item)
            if item is None:
                ended[slot] = True
            else:
                handed[slot] += 1

    for k in range(count):
        hand(k, 1)
    remaining = len(items)
    began: dict[str, float] = {}  # when each worker started its current episode
    in_flight: dict[str, Any] = {}
    exited: set[str] = set()
    completed = False
    try:
        while remaining:
            try:
                kind, slot, name, where, payload = result_queue.get(timeout=0.5)
            except queue.Empty:
                dead = [p for p in processes if p.exitcode is not None]
                if dead:
                    _check_dead_workers(processes, result_queue, in_flight, exited)
                continue
            run, episode = where if where is not None else (None, None)
            if kind == "started":
                in_flight[name] = episode
                began[name] = time.monotonic()
            elif kind == "done":
                assert run is not None, "a worker's result names the episode it finished"
                in_flight.pop(name, None)
                remaining -= 1
                handed[slot] -= 1
                if isinstance(payload, RunRefused):
                    remaining -= job.drop(run)
                quick = time.monotonic() - began.pop(name, 0.0) < PREFETCH_BELOW_SECONDS
                hand(slot, 2 if quick else 1)  # before the caller saves this one
                yield run, payload
            elif kind == "exit":
                exited.add(name)
            elif kind == "fatal":
                yield from _finished_in_queue(result_queue)
                raise HeuresisError(f"worker {name} failed while running episode {episode}; "
                                    f"finished episodes are saved, rerun to resume. Its "
                                    f"traceback:\n{payload}")
        completed = True
    finally:
        if completed:
            for process in processes:
                process.join(30.0)
        _stop_processes(processes)
        for task_queue in task_queues:
            task_queue.cancel_join_thread()
        result_queue.cancel_join_thread()


def _finished_in_queue(result_queue, wait: float = 1.0
                       ) -> Iterator[tuple[int, EpisodeOutcome | RunRefused]]:
    """Episodes other workers finished while the job was stopping (still in the queue), so
    the caller saves them before the error."""
    deadline = time.monotonic() + wait
    while True:
        try:
            kind, _, _, where, payload = result_queue.get(
                timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            return
        if kind == "done":
            yield where[0], payload


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
