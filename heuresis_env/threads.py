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
viewer).
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from collections.abc import Callable
from typing import Any

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
        process.join()
        self._receive.close()
        self._call = (_cancelled, (), {})

    def __del__(self) -> None:
        try:
            self.cancel()
        except Exception:  # noqa: BLE001, S110 - at interpreter exit, nothing left to end
            pass

    def _child(self, send: Any) -> None:
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
