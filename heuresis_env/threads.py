"""Threads of the numeric libraries: one BLAS (and torch) thread per Heuresis process.

Heuresis parallelizes with processes (evaluation workers, Ray actors, baseline pools), so a
multi-threaded BLAS inside each puts workers × threads on the cores. OpenBLAS's idle threads
also spin after every call, competing with the thread that has work: on a loaded 2-core
machine a 300-row distance correlation took 65 ms with OpenBLAS's default two threads and
4.6 ms with one, and an SVD of a 600 × 103 matrix 489 ms against 12 ms
(``docs/performance.md``). The ``heuresis`` command, evaluation workers and baseline pools
therefore call :func:`limit_threads`; ``$HEURESIS_THREADS`` overrides the count.
"""

from __future__ import annotations

import os
import sys

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
