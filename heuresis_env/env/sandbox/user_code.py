"""Running the agent's code inside the sandboxed process: the data in scope, CPU-time and
wall-clock limits as exceptions the code cannot swallow, the value of a final expression,
and a traceback without the sandbox's own frames.

Loaded by :mod:`.child` (a script: standard library only) before the sandbox is sealed.
"""

from __future__ import annotations

import builtins
import os
import signal
import sys
import time


class CPUTimeExceeded(BaseException):
    """Raised at the CPU-time limit (SIGXCPU); a BaseException so ``except Exception`` in
    the agent's code does not swallow it."""

    __module__ = "__main__"  # tracebacks name it as the script's own: no module prefix


class WallTimeExceeded(BaseException):
    """Raised at the wall-clock limit (SIGALRM), so the traceback shows where the code was."""

    __module__ = "__main__"


def run_user_code(code: str, X, names: list[str], np, limits: dict,
                  extra: dict | None = None) -> dict:
    """Execute ``code`` with ``X``, ``names`` and ``np`` in scope (and ``extra``'s names: an
    episode with experiments adds ``regimes`` and ``experiments``); return status, the repr
    of a final expression, and the traceback of an error (frames of this file removed)."""
    import ast
    import faulthandler
    import linecache
    import math
    import resource

    main_pid = os.getpid()
    faulthandler.enable(file=sys.stderr, all_threads=True)
    filename = "<code>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace = {"__name__": "__main__", "__builtins__": builtins,
                 "X": X, "names": names, "np": np, **(extra or {})}

    def on_cpu_limit(signum, frame):
        raise CPUTimeExceeded(f"CPU-time limit of {limits['cpu_seconds']:g} s exceeded")

    def on_wall_limit(signum, frame):
        raise WallTimeExceeded(f"wall-clock limit of {limits['wall_seconds']:g} s exceeded")

    signal.signal(signal.SIGXCPU, on_cpu_limit)
    signal.signal(signal.SIGALRM, on_wall_limit)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = usage.ru_utime + usage.ru_stime
    soft = math.ceil(cpu_before + limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))  # the hard limit is SIGKILL
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, limits["wall_seconds"])

    outcome: dict = {"status": "ok", "value": None, "value_truncated": False,
                     "traceback": None, "message": None, "error_type": None}
    try:
        tree = ast.parse(code, filename=filename, mode="exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
        import traceback

        signal.setitimer(signal.ITIMER_REAL, 0)
        text = "".join(traceback.format_exception_only(type(exc), exc))
        outcome.update(status="error", error_type=type(exc).__name__, traceback=text,
                       message=text.strip().splitlines()[-1], cpu_seconds=0.0,
                       run_seconds=time.monotonic() - started)
        return outcome
    try:
        last = (tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr)
                else None)
        assert last is None or isinstance(last, ast.Expr)
        exec(compile(tree, filename, "exec"), namespace)
        if last is not None:
            expression = ast.Expression(last.value)
            value = eval(compile(expression, filename, "eval"), namespace)
            if value is not None:
                text = safe_repr(value)
                cap = limits["output_bytes"]
                if len(text) > cap:
                    text = text[:cap]
                    outcome["value_truncated"] = True
                outcome["value"] = text
    except SystemExit as exc:
        if exc.code not in (None, 0):
            outcome.update(status="error", error_type="SystemExit",
                           message=f"the code called sys.exit({exc.code!r})")
    except BaseException as exc:  # noqa: BLE001 - the agent's errors are results
        if isinstance(exc, (CPUTimeExceeded, WallTimeExceeded)):
            status = "timeout"
        elif isinstance(exc, MemoryError):
            status = "memory"
        else:
            status = "error"
        outcome.update(status=status, error_type=type(exc).__name__,
                       traceback=format_traceback(exc),
                       message=f"{type(exc).__name__}: {exc}".rstrip(": "))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if os.getpid() != main_pid:  # a process the code forked: it must not report
            flush_streams()
            os._exit(0)
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    outcome["cpu_seconds"] = usage.ru_utime + usage.ru_stime - cpu_before
    outcome["run_seconds"] = time.monotonic() - started
    flush_streams()
    return outcome


def safe_repr(value) -> str:
    try:
        return repr(value)
    except BaseException as exc:  # noqa: BLE001
        return f"<repr failed: {type(exc).__name__}: {exc}>"


def flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a closed stream has nothing to flush
            pass


def format_traceback(exc: BaseException) -> str:
    """The traceback as Python prints it, without this file's frames."""
    import traceback

    here = os.path.abspath(__file__)

    def strip(te) -> None:
        te.stack = traceback.StackSummary.from_list(
            [frame for frame in te.stack if os.path.abspath(frame.filename) != here])
        for chained in (te.__cause__, te.__context__):
            if chained is not None:
                strip(chained)

    try:
        te = traceback.TracebackException.from_exception(exc)
        strip(te)
        return "".join(te.format())
    except BaseException:  # noqa: BLE001
        return "".join(traceback.format_exception_only(type(exc), exc))
