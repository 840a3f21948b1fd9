"""Threads of the numeric libraries: one BLAS (and torch) thread per Heuresis process.

Heuresis parallelizes with processes (evaluation workers, Ray actors, baseline pools), so a
multi-threaded BLAS inside each puts workers × threads on the cores. OpenBLAS's idle threads
also spin after every call, competing with the thread that has work: on a loaded 2-core
machine a 300-row distance correlation took 65 ms with OpenBLAS's default two threads and
4.6 ms with one, and an SVD of a 600 × 103 matrix 489 ms against 12 ms
(``docs/performance.md``). The ``heuresis`` command, evaluation workers and baseline pools
therefore call :func:`limit_threads`; ``$HEURESIS_THREADS`` overrides the count.

Forking a process that runs threads copies their locks in whatever state they are in;
:func:`can_fork` says when a fork is safe enough here, and :class:`ForkedCall` runs one call in
a forked process beside this one (``heuresis demo`` writes its report while it builds the
viewer). :func:`parallel_map` is the one pool of worker processes for a list of jobs (the
evidence of many instances, the reference table's algorithm runs, the viewer's pages): the
start method chosen by :func:`start_method`, one BLAS thread per worker, each failure named by
its job, results in order or as they finish. (The evaluation's local backend is a scheduler of
long-lived workers, not a map, and starts its own; :mod:`heuresis_env.evaluation.local_backend`.)
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from threadpoolctl import threadpool_limits

#: variables read by BLAS/OpenMP libraries when they load (inherited by child processes)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def thread_count() -> int:
    """``$HEURESIS_THREADS`` (a positive integer) or 1."""
    text = os.environ.get("HEURESIS_THREADS", "").strip()
    try:
        count = int(text) if text else 1
    except ValueError:
        count = 1
    return max(1, count)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system reports one): the
    default number of worker processes of a command that parallelizes by processes."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def limit_threads(count: int | None = None) -> int:
    """Limit BLAS, OpenMP and torch to ``count`` threads (default :func:`thread_count`) in this
    process and, through the environment, in processes it starts. Returns the count."""
    count = thread_count() if count is None else max(1, int(count))
    for variable in THREAD_VARIABLES:
        os.environ[variable] = str(count)
    threadpool_limits(limits=count)  # libraries already loaded
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(count)
    return count


def can_fork() -> bool:
    """Forking is safe enough here: Linux, and no thread besides this one but daemon helpers
    (tqdm's monitor, started by any progress bar, sleeps and touches only tqdm's own lock,
    which a forked child never takes)."""
    import multiprocessing
    import threading

    helpers_only = all(thread is threading.current_thread() or thread.daemon
                       for thread in threading.enumerate())
    return (sys.platform.startswith("linux") and helpers_only
            and "fork" in multiprocessing.get_all_start_methods())


def start_method() -> str:
    """The start method of worker processes: ``fork`` where :func:`can_fork` says it is safe
    (the workers inherit the imports, and start in milliseconds), else ``spawn``."""
    return "fork" if can_fork() else "spawn"


Job = TypeVar("Job")
Result = TypeVar("Result")


def _name_job(exception: BaseException, job: Job, number: int, count: int,
              describe: Callable[[Job], str] | None) -> None:
    what = f"job {number + 1} of {count}"
    if describe is not None:
        try:
            what = describe(job)
        except Exception:  # noqa: BLE001, S110 - the job's own exception matters, not this
            pass
    exception.add_note(f"(raised by parallel_map while running {what})")


def _worker_call(function: Callable[[Job], Result], job: Job) -> Result:
    """``function(job)`` in a worker. An exception that pickle cannot rebuild (one whose
    ``__init__`` takes other arguments than its message) would break the whole pool in the
    parent; it comes back as a ``RuntimeError`` with its type, message and traceback."""
    try:
        return function(job)
    except Exception as exc:
        text = traceback.format_exc()
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:  # noqa: BLE001 - any failure to rebuild it
            raise RuntimeError(f"{type(exc).__name__}: {exc}\n{text}") from None
        raise


def parallel_map(function: Callable[[Job], Result], jobs: Iterable[Job], workers: int, *,
                 ordered: bool = True, threads: int | None = None, fork_only: bool = False,
                 describe: Callable[[Job], str] | None = None) -> Iterator[Result]:
    """``function(job)`` for every job, in up to ``workers`` worker processes; yields the
    results in the jobs' order, or with ``ordered=False`` as each finishes (for progress: one
    slow job holds no count back).

    With ``workers`` ≤ 1 or a single job there is no pool: the jobs run in this process, one
    after the other (the same results). Otherwise the workers are started with
    :func:`start_method` and limit their numeric libraries to ``threads`` threads
    (:func:`limit_threads`; default :func:`thread_count`); ``function`` and each job are then
    pickled to a worker, so ``function`` is a module-level function. ``fork_only=True`` is
    for a function that reads state this process set before the call (a module global): it
    runs in forked workers where :func:`can_fork`, and in this process otherwise.

    An exception of a job is raised here, its own type and message (a ``RuntimeError`` with
    both when pickle cannot bring it back from a worker), with a note naming the job
    (``describe(job)``, else its number; a job's ``repr`` may hold a secret such as the test
    salt, so it is never printed). Jobs not yet started are then cancelled. Nothing starts
    until the first result is asked.
    """
    jobs = list(jobs)
    if workers <= 1 or len(jobs) <= 1 or (fork_only and not can_fork()):
        for number, job in enumerate(jobs):
            try:
                result = function(job)
            except Exception as exc:
                _name_job(exc, job, number, len(jobs), describe)
                raise
            yield result
        return
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("fork" if fork_only else start_method())
    pool = ProcessPoolExecutor(min(workers, len(jobs)), mp_context=context,
                               initializer=limit_threads, initargs=(threads,))
    try:
        futures = [pool.submit(_worker_call, function, job) for job in jobs]
        number_of = {future: number for number, future in enumerate(futures)}
        finished: Iterator[Future[Result]]
        if ordered:
            futures.reverse()  # popped from the end: a result is dropped once yielded
            finished = (futures.pop() for _ in range(len(futures)))
        else:
            finished = as_completed(futures)
            del futures
        for future in finished:
            number = number_of.pop(future)
            try:
                result = future.result()
            except Exception as exc:
                _name_job(exc, jobs[number], number, len(jobs), describe)
                raise
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _cancelled() -> Any:
    raise RuntimeError("this forked call was cancelled")


class ForkedCall:
    """``function(*args, **kwargs)`` in a forked child process, started now; :meth:`result`
    waits for it and returns its value (pickled back) or raises its exception (its traceback
    text in the message when the exception itself cannot be pickled). Where forking is not
    safe (:func:`can_fork`), the call runs in this process when :meth:`result` is asked.

    The child is not a daemon, so it may fork in turn (``heuresis demo`` writes the report in a
    forked call, and the report computes Table 4 in another); :meth:`cancel`, or dropping the
    call without asking its result, ends it.
    """

    def __init__(self, function: Callable[..., Any], *args: Any, **kwargs: Any):
        self._call = (function, args, kwargs)
        self._process: Any = None
        if can_fork():
            import multiprocessing

            context = multiprocessing.get_context("fork")
            self._receive, send = context.Pipe(duplex=False)
            self._process = context.Process(target=self._child, args=(send,), daemon=False)
            self._process.start()
            send.close()

    def cancel(self) -> None:
        """End the child if it is still running (its result is then never asked)."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.is_alive():
            process.terminate()
            process.join(1.0)
            if process.is_alive():  # SIGTERM caught or ignored (a handler the fork inherited)
                process.kill()
        process.join()
        self._receive.close()
        self._call = (_cancelled, (), {})

    def __del__(self) -> None:
        try:
            self.cancel()
        except Exception:  # noqa: BLE001, S110 - at interpreter exit, nothing left to end
            pass

    def _child(self, send: Any) -> None:
        # a handler the parent installed for SIGTERM (a CLI's clean shutdown, say) would let the
        # child outlive cancel(): the forked call ends on SIGTERM whatever the parent does
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        function, args, kwargs = self._call
        try:
            reply: tuple[str, Any] = ("ok", function(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
            reply = ("error", (exc, traceback.format_exc()))
        try:
            payload = pickle.dumps(reply)
        except Exception:  # noqa: BLE001 - an unpicklable value or exception: its text
            payload = pickle.dumps(("error", (None, reply[1][1] if reply[0] == "error"
                                              else traceback.format_exc())))
        send.send_bytes(payload)
        send.close()

    def result(self) -> Any:
        """The call's value; its exception is raised here."""
        function, args, kwargs = self._call
        process, self._process = self._process, None
        if process is None:
            return function(*args, **kwargs)
        try:
            payload = self._receive.recv_bytes()
        except EOFError:
            process.join()
            raise RuntimeError(f"the forked process running {function.__name__} died "
                               f"(exit code {process.exitcode})") from None
        finally:
            self._receive.close()
        process.join()
        kind, value = pickle.loads(payload)
        if kind == "ok":
            return value
        exception, text = value
        if exception is None:
            raise RuntimeError(f"{function.__name__} failed in a forked process:\n{text}")
        raise exception
