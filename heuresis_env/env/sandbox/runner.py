"""The parent side of the code sandbox: start workers, send code, collect and classify.

Each call runs in a fresh process started from a fresh interpreter (see ``child.py``), so it
sees none of this process's memory, environment variables or file descriptors. A
:class:`Sandbox` keeps one worker warm (interpreter started, isolation built, NumPy imported,
data loaded) so that a call pays only for the code; a worker serves exactly one call and is
then discarded, whatever happened in it.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from heuresis_env.env.sandbox.result import SandboxResult, SandboxStatus
from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.isolation.detection import (
    MINIMAL_ENVIRONMENT,
    describe_level,
    detect_isolation,
    resolve_isolation,
    sandbox_mounts,
)
from heuresis_env.isolation.limits import MAX_CODE_BYTES, SandboxLimits, format_bytes
from heuresis_env.isolation.processes import kill_uid, signal_process, tree_resident_bytes

#: the supervisor and sandboxed process, run as a script in a fresh interpreter
CHILD_PATH = Path(__file__).with_name("child.py")

#: sandboxed processes started as root run as uid UID_BASE + (their host pid): unused, and
#: distinct for concurrent calls, so that RLIMIT_NPROC counts only one call's processes
UID_BASE = 1_800_000_000
#: how long a worker may take to start (interpreter, isolation, NumPy, data), under load
SETUP_TIMEOUT_SECONDS = 120.0
#: after the wall-clock limit the code gets this long to report its own timeout
WALL_GRACE_SECONDS = 1.0
#: once the worker has exited, how long to wait for processes it left holding the pipes
EXIT_GRACE_SECONDS = 0.5
MEMORY_CHECK_SECONDS = 0.1
#: how long to wait, after killing it, for the sandbox's PID namespace to be empty
NAMESPACE_EXIT_SECONDS = 10.0
READ_CHUNK = 1 << 16
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
SIGNAL_DESCRIPTIONS = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "arithmetic exception",
    signal.SIGABRT: "aborted",
    signal.SIGKILL: "killed from outside, or by the kernel when memory ran out",
}


class OutputCapture:
    """Keeps the head and the tail of a stream within ``cap`` bytes, counting the rest."""

    def __init__(self, cap: int):
        self.cap = cap
        self.tail_cap = min(cap // 4, 4096)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - self.tail_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        if not self.truncated:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
        omitted = self.total - len(self.head) - len(self.tail)
        marker = (f"\n[... {omitted:,} bytes of output omitted: the sandbox keeps "
                  f"{self.cap:,} bytes per stream ...]\n")
        return (self.head.decode("utf-8", errors="replace") + marker
                + self.tail.decode("utf-8", errors="replace"))


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _optional(kind) -> Callable[[object], bool]:
    return lambda value: value is None or isinstance(value, kind) and not isinstance(value, bool)


#: the result channel's messages: kind → the phases it belongs to and its fields' checks.
#: Everything else on the channel — a line of another shape, a second message of one kind, a
#: message out of its phase — was written by the code, and makes the call an ``error``.
MESSAGES: dict[str, tuple[tuple[str, ...], dict[str, Callable[[object], bool]]]] = {
    "READY": (("setup",), {"uid": _optional(int), "host_pid": lambda v: isinstance(v, int),
                        "setup_seconds": _number, "notes": lambda v: isinstance(v, list)}),
    "SETUP_ERROR": (("setup",), {"error": lambda v: isinstance(v, str)}),
    "RESULT": (("call",), {"status": lambda v: v in ("ok", "error", "timeout", "memory"),
                        "value": _optional(str), "traceback": _optional(str),
                        "message": _optional(str), "value_truncated": lambda v: v in (True, False),
                        "cpu_seconds": _number, "run_seconds": _number}),
    "EXIT": (("setup", "call"), {"exit_code": _optional(int), "signal": _optional(int),
                      "cpu_seconds": _number, "max_rss_bytes": _number}),
}


@dataclass
class _Worker:
    """One started sandbox process, used for at most one call."""

    process: subprocess.Popen
    result_fd: int
    scratch: str
    prewarmed: bool
    channel: bytearray = field(default_factory=bytearray)
    messages: dict = field(default_factory=dict)
    forged: list = field(default_factory=list)
    phase: str = "setup"
    closed_fds: set = field(default_factory=set)
    reaped: bool = False
    uid: int | None = None
    pidfd: int | None = None  # the sandboxed process (PID 1 of its namespace), held at READY
    setup_stdout: OutputCapture | None = None
    setup_stderr: OutputCapture | None = None

    @property
    def streams(self) -> dict[int, str]:
        assert self.process.stdout is not None and self.process.stderr is not None  # PIPEs
        return {self.process.stdout.fileno(): "stdout", self.process.stderr.fileno(): "stderr",
                self.result_fd: "result"}

    def take_lines(self) -> None:
        """Parse complete ``KIND JSON`` lines from the result channel; keep each expected
        message once, and set aside as forged whatever else the code wrote there."""
        while b"\n" in self.channel:
            line, _, rest = bytes(self.channel).partition(b"\n")
            self.channel[:] = rest
            kind, _, payload = line.decode("utf-8", errors="replace").partition(" ")
            expected = MESSAGES.get(kind)
            try:
                message = json.loads(payload)
            except ValueError:
                message = None
            valid = (expected is not None and self.phase in expected[0]
                     and kind not in self.messages and isinstance(message, dict)
                     and all(name in message and check(message[name])
                             for name, check in expected[1].items()))
            if valid:
                self.messages[kind] = message
            else:
                self.forged.append(line[:200].decode("utf-8", errors="replace"))

    def hold_sandboxed_process(self) -> None:
        """Open a pidfd on the sandboxed process named by READY, once checked to be the
        supervisor's child (it is blocked reading its code, so its pid cannot be reused)."""
        pid = self.messages["READY"]["host_pid"]
        try:
            with open(f"/proc/{pid}/status") as f:
                parent = next(int(line.split()[1]) for line in f if line.startswith("PPid:"))
            if parent == self.process.pid and hasattr(os, "pidfd_open"):
                self.pidfd = os.pidfd_open(pid)
        except (OSError, StopIteration, ValueError):
            self.pidfd = None

    def has_exited(self) -> bool:
        if self.reaped:
            return True
        try:  # WNOWAIT: the process stays a zombie, so its pid and group stay ours
            info = os.waitid(os.P_PID, self.process.pid,
                             os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def kill(self) -> None:
        """SIGKILL the sandboxed process — PID 1 of its namespace, so the kernel kills every
        process in it, whatever session or group they moved to — then the supervisor's group."""
        if self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                pass
        if self.reaped:
            return
        signal_process(self.process.pid, signal.SIGKILL)

    def wait_for_namespace(self, timeout: float = NAMESPACE_EXIT_SECONDS) -> None:
        """Wait until the sandboxed process has exited; as the init of its PID namespace it
        exits only once every other process in it is gone."""
        if self.pidfd is None:
            return
        try:
            select.select([self.pidfd], [], [], timeout)
        finally:
            os.close(self.pidfd)
            self.pidfd = None

    def reap(self) -> None:
        if self.reaped:
            return
        try:
            _, status = os.waitpid(self.process.pid, 0)
            self.process.returncode = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            self.process.returncode = self.process.returncode or 0
        self.reaped = True


class _Resources:
    """What a Sandbox owns outside Python objects; released by close() or on collection."""

    def __init__(self, directory: str):
        self.directory = directory
        self.worker: _Worker | None = None
        self.closed = False

    def release(self) -> None:
        self.closed = True
        worker, self.worker = self.worker, None
        if worker is not None:
            dispose(worker)
        shutil.rmtree(self.directory, ignore_errors=True)


class Sandbox:
    """Runs untrusted Python over one data table, one fresh isolated process per call.

    Inside, the code finds ``X`` (the data, a NumPy array, a private copy), ``names`` (the
    column names), ``np`` (NumPy), and can import SciPy and scikit-learn. A final expression's
    repr is returned as the value. Nothing persists between calls.

    ``isolation``: ``"auto"`` picks the strongest level available (see
    :mod:`heuresis_env.isolation.detection`); anything weaker than ``"namespaces"`` is refused
    unless ``allow_weak_isolation=True``. ``preload``: modules imported before the code
    arrives (in the warm worker, off the caller's clock). ``prewarm``: keep a worker ready.
    Failures of the code or the sandbox are :class:`SandboxResult` values; only bad
    configuration raises.
    """

    def __init__(
        self,
        X: np.ndarray,
        names: Sequence[str],
        limits: SandboxLimits | None = None,
        isolation: str = "auto",
        allow_weak_isolation: bool = False,
        *,
        preload: Sequence[str] = ("numpy",),
        prewarm: bool = True,
        regimes: np.ndarray | None = None,
        experiments: Sequence[dict] | None = None,
    ):
        self.X = validate_table(X, names)
        if regimes is not None:
            regimes = np.asarray(regimes)
            if regimes.shape != (self.X.shape[0],) or regimes.dtype.kind not in "iu":
                raise HeuresisError("regimes must hold one integer label per row of X")
        self.names = [str(n) for n in names]
        if limits is not None and not isinstance(limits, SandboxLimits):
            raise HeuresisError(f"limits must be a SandboxLimits, got {type(limits).__name__}")
        self.limits = limits or SandboxLimits()
        if isinstance(preload, str) or not all(isinstance(m, str) for m in preload):
            raise HeuresisError("preload must be a sequence of module names")
        if not sys.executable:
            raise HeuresisError("the sandbox needs sys.executable to start an interpreter")
        self.level, self.privilege = resolve_isolation(isolation, allow_weak_isolation)
        self.isolation = describe_level(self.level, self.privilege)
        self.prewarm = prewarm

        directory = tempfile.mkdtemp(prefix="heuresis-sandbox-")
        self._resources = _Resources(directory)
        self._finalizer = weakref.finalize(self, self._resources.release)
        # 0711: an unprivileged sandbox uid may enter its scratch folder here, list nothing
        os.chmod(directory, 0o711 if self.level == "unprivileged" else 0o700)
        self._config_path = os.path.join(directory, "config.json")
        data_path = os.path.join(directory, "data.npy")
        with open(os.open(data_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            np.save(f, self.X, allow_pickle=False)
        config = {
            "mode": self.level,
            "privilege": self.privilege,
            "uid_base": UID_BASE,
            "data_path": data_path,
            "names": self.names,
            "regimes": None if regimes is None else regimes.tolist(),
            "experiments": None if experiments is None else [dict(e) for e in experiments],
            "limits": self.limits.to_dict(),
            "preload": list(preload),
            "seccomp": detect_isolation()["seccomp"] == "available",
            "python_executable": os.path.realpath(sys.executable),
            "root_dir": os.path.join(directory, "root"),
        }
        if self.level == "namespaces":
            os.mkdir(config["root_dir"], 0o700)
            config.update(sandbox_mounts(forbidden=[directory, cache_directory()]))
            config["unreadable_file"] = os.path.join(directory, "unreadable")
            os.close(os.open(config["unreadable_file"], os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                             0o000))
        else:
            config["site_dirs"] = sandbox_mounts(forbidden=[])["site_dirs"]
        with open(os.open(self._config_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                  "w") as f:
            json.dump(config, f)
        self._lock = threading.Lock()
        self._counter = itertools.count()
        if prewarm:
            self._resources.worker = self._try_spawn(prewarmed=True)

    # -- public -------------------------------------------------------------------------------

    def run(self, code: str) -> SandboxResult:
        """Run ``code`` in a fresh sandboxed process and return what happened."""
        if not isinstance(code, str):
            raise HeuresisError(f"code must be a string, got {type(code).__name__}")
        with self._lock:
            if self._resources.closed:
                raise HeuresisError("this Sandbox is closed; create a new one")
            encoded = code.encode("utf-8", errors="replace")
            if len(encoded) > MAX_CODE_BYTES:
                return SandboxResult(
                    status="error", isolation=self.isolation,
                    message=f"the code is {len(encoded):,} bytes; at most "
                            f"{MAX_CODE_BYTES:,} are accepted")
            worker, self._resources.worker = self._resources.worker, None
            try:
                return self._execute(worker, encoded)
            finally:
                if self.prewarm and not self._resources.closed:
                    self._resources.worker = self._try_spawn(prewarmed=True)

    def close(self) -> None:
        """Stop the warm worker and delete the private folder (idempotent)."""
        with self._lock:
            self._finalizer()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Sandbox(X shape {self.X.shape}, isolation={self.level!r}, "
                f"limits={self.limits})")

    # -- workers ------------------------------------------------------------------------------

    def _try_spawn(self, prewarmed: bool) -> _Worker | None:
        try:
            return self._spawn(prewarmed)
        except OSError:
            return None  # e.g. no process slots left; the next call tries again

    def _spawn(self, prewarmed: bool) -> _Worker:
        read_fd, write_fd = os.pipe()
        scratch = os.path.join(self._resources.directory, f"scratch-{next(self._counter)}")
        command = [sys.executable, "-I", "-S", "-B", str(CHILD_PATH), self._config_path,
                   str(write_fd), scratch]
        try:
            process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(write_fd,), close_fds=True, env=MINIMAL_ENVIRONMENT,
                start_new_session=True, cwd=self._resources.directory,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        return _Worker(process=process, result_fd=read_fd, scratch=scratch, prewarmed=prewarmed)

    def _error(self, message: str, started: float, **fields) -> SandboxResult:
        return SandboxResult(status="error", message=message, isolation=self.isolation,
                             duration_s=time.monotonic() - started, **fields)

    def _execute(self, worker: _Worker | None, code: bytes) -> SandboxResult:
        started = time.monotonic()
        try:
            if worker is None:
                worker = self._spawn(prewarmed=False)
            ready = self._wait_until_ready(worker)
            if ready is None and worker.prewarmed:
                # a warm worker can die idle (its spawning thread ended): start a fresh one
                dispose(worker)
                worker = self._spawn(prewarmed=False)
                ready = self._wait_until_ready(worker)
        except OSError as exc:
            return self._error(f"the sandbox could not start a process: {exc}", started)
        try:
            if ready is None:
                setup_error = worker.messages.get("SETUP_ERROR", {}).get("error")
                detail = setup_error or (
                    f"the sandbox process ended while starting "
                    f"(exit code {worker.process.returncode})")
                setup_stderr = worker.setup_stderr
                return self._error(f"the sandbox could not be set up, no code ran: {detail}",
                                   started,
                                   stderr=setup_stderr.text() if setup_stderr else "")
            worker.uid = ready.get("uid")
            worker.hold_sandboxed_process()
            worker.phase = "call"
            return self._collect(worker, code)
        finally:
            dispose(worker)

    def _wait_until_ready(self, worker: _Worker) -> dict | None:
        """Pump the worker's pipes until it reports READY (its set-up output is discarded,
        stderr kept for a set-up failure). None if it failed or died first."""
        worker.setup_stdout = OutputCapture(self.limits.output_bytes)
        worker.setup_stderr = OutputCapture(self.limits.output_bytes)
        sinks = {"stdout": worker.setup_stdout, "stderr": worker.setup_stderr}
        deadline = time.monotonic() + SETUP_TIMEOUT_SECONDS
        selector = _selector(worker)
        try:
            while "READY" not in worker.messages and "SETUP_ERROR" not in worker.messages:
                if not selector.get_map() or time.monotonic() > deadline:
                    return None
                if worker.has_exited() and not _pump(worker, selector, sinks, 0.05):
                    return None
                _pump(worker, selector, sinks, 0.1)
            if "SETUP_ERROR" in worker.messages:
                return None
            while _pump(worker, selector, sinks, 0):  # set-up output already written
                pass
            if worker.has_exited():
                return None
            return worker.messages["READY"]
        finally:
            selector.close()

    def _collect(self, worker: _Worker, code: bytes) -> SandboxResult:
        limits = self.limits
        stdout, stderr = OutputCapture(limits.output_bytes), OutputCapture(limits.output_bytes)
        sinks = {"stdout": stdout, "stderr": stderr}
        started = time.monotonic()
        stdin = worker.process.stdin
        assert stdin is not None  # started with stdin=PIPE
        try:
            stdin.write(code)
            stdin.close()
        except OSError:  # it died before reading the code: the exit report says why
            pass
        deadline = started + limits.wall_seconds + WALL_GRACE_SECONDS
        selector = _selector(worker)
        timed_out = memory_exceeded = False
        exited_at: float | None = None
        next_memory_check = started + MEMORY_CHECK_SECONDS
        try:
            while selector.get_map():
                now = time.monotonic()
                if now >= deadline:
                    timed_out = True
                    break
                if exited_at is None and worker.has_exited():
                    exited_at = now
                if exited_at is not None and now - exited_at > EXIT_GRACE_SECONDS:
                    break
                _pump(worker, selector, sinks, min(0.1, deadline - now))
                if now >= next_memory_check:
                    next_memory_check = now + MEMORY_CHECK_SECONDS
                    roots = [worker.process.pid]
                    if "READY" in worker.messages:
                        roots.append(worker.messages["READY"]["host_pid"])
                    if tree_resident_bytes(*roots) > limits.memory_bytes:
                        memory_exceeded = True
                        break
        finally:
            selector.close()
            worker.kill()
            if self.level == "unprivileged" and worker.uid is not None:
                kill_uid(worker.uid, scan=True)  # this process has threads
            worker.reap()
            worker.wait_for_namespace()
        duration = time.monotonic() - started
        worker.take_lines()
        outcome = worker.messages.get("RESULT")
        exit_report = worker.messages.get("EXIT")
        status, message = self._classify(worker, outcome, exit_report, timed_out,
                                         memory_exceeded)
        outcome = {} if worker.forged else (outcome or {})
        return SandboxResult(
            status=status,
            stdout=stdout.text(),
            stderr=stderr.text(),
            value=outcome.get("value"),
            traceback=outcome.get("traceback"),
            message=message,
            duration_s=duration,
            cpu_seconds=outcome.get("cpu_seconds", (exit_report or {}).get("cpu_seconds")),
            stdout_truncated=stdout.truncated,
            stderr_truncated=stderr.truncated,
            value_truncated=bool(outcome.get("value_truncated")),
            isolation=self.isolation,
        )

    def _classify(self, worker: _Worker, outcome: dict | None, exit_report: dict | None,
                  timed_out: bool, memory_exceeded: bool) -> tuple[SandboxStatus, str | None]:
        limits = self.limits
        wall = f"the wall-clock limit of {limits.wall_seconds:g} s"
        memory = f"the memory limit of {format_bytes(limits.memory_bytes)}"
        memory_total = f"{format_bytes(limits.memory_bytes)} (the memory limit)"
        cpu = f"the CPU-time limit of {limits.cpu_seconds:g} s"
        if memory_exceeded:
            return "memory", (f"the code's processes together held more than {memory_total} "
                              "and were stopped")
        if outcome is not None and exit_report is not None and (
                exit_report["exit_code"] != 0 or exit_report["signal"] is not None):
            worker.forged.append("RESULT (the process then ended with "
                                 f"{exit_report['exit_code'] or exit_report['signal']})")
        if worker.forged:
            shown = "; ".join(repr(line[:60]) for line in worker.forged[:3])
            return "error", (f"the code wrote to the sandbox's result channel ({len(worker.forged)}"
                             f" line(s) of its own, e.g. {shown}); the call's outcome cannot be "
                             "trusted")
        if outcome is not None:
            status, message = outcome.get("status", "error"), outcome.get("message")
            if status == "memory":
                return status, f"the code needed more memory than {memory} ({message})"
            if status == "timeout":
                return status, f"the code ran past {cpu if 'CPU' in str(message) else wall}"
            if status not in ("ok", "error"):
                return "error", f"unexpected status {status!r} from the sandbox"
            return status, message
        if timed_out:
            return "timeout", f"the code ran past {wall} and was stopped"
        sig = (exit_report or {}).get("signal")
        if sig is None and exit_report is None and (worker.process.returncode or 0) < 0:
            sig = -worker.process.returncode
        if sig is not None:
            used = (exit_report or {}).get("cpu_seconds") or 0.0
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL
                                         and used >= limits.cpu_seconds - 0.05):
                return "timeout", f"the code ran past {cpu} and was stopped"
            name = _signal_name(sig)
            description = SIGNAL_DESCRIPTIONS.get(sig)
            return "killed", (f"the process was killed by {name}"
                              + (f" ({description})" if description else ""))
        code = (exit_report or {}).get("exit_code", worker.process.returncode)
        return "error", (f"the process ended with exit code {code} before reporting a result "
                         "(os._exit, or the code closed the result channel)")


def run_code(code: str, X: np.ndarray, names: Sequence[str],
             limits: SandboxLimits | None = None, **options) -> SandboxResult:
    """Run ``code`` once in a new :class:`Sandbox` (no warm worker) and return the result."""
    with Sandbox(X, names, limits, prewarm=False, **options) as sandbox:
        return sandbox.run(code)


# -- helpers ----------------------------------------------------------------------------------


def validate_table(X: np.ndarray, names: Sequence[str]) -> np.ndarray:
    table = np.ascontiguousarray(X)
    if table.ndim != 2:
        raise DataError(f"X must be a 2-D array (rows × columns), got shape {table.shape}")
    if table.dtype.kind not in "biufc":
        raise DataError(f"X must hold numbers, got dtype {table.dtype}")
    if isinstance(names, str) or len(names) != table.shape[1]:
        count = "a string" if isinstance(names, str) else f"{len(names)} names"
        raise DataError(f"names must list one name per column of X ({table.shape[1]}), "
                        f"got {count}")
    return table


def cache_directory() -> str:
    """The cache folder with hidden records, without creating it."""
    return os.environ.get("HEURESIS_CACHE_DIR",
                          os.path.join(os.path.expanduser("~"), ".cache", "heuresis"))


def dispose(worker: _Worker) -> None:
    """Kill a worker's whole PID namespace and process group, reap it, close its pipes,
    delete its scratch."""
    worker.kill()
    worker.reap()
    worker.wait_for_namespace()
    for stream in (worker.process.stdin, worker.process.stdout, worker.process.stderr):
        if stream is None:
            continue
        try:
            stream.close()
        except OSError:
            pass
    if worker.result_fd not in worker.closed_fds:
        os.close(worker.result_fd)
        worker.closed_fds.add(worker.result_fd)
    shutil.rmtree(worker.scratch, ignore_errors=True)


def _selector(worker: _Worker) -> selectors.BaseSelector:
    selector = selectors.DefaultSelector()
    for fd, name in worker.streams.items():
        if fd in worker.closed_fds:
            continue
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ, name)
    return selector


def _pump(worker: _Worker, selector: selectors.BaseSelector, sinks: dict,
          timeout: float) -> bool:
    """Read whatever is ready within ``timeout``; False when nothing was read."""
    got = False
    for key, _ in selector.select(max(timeout, 0)):
        try:
            chunk = os.read(key.fd, READ_CHUNK)
        except BlockingIOError:
            continue
        if not chunk:
            selector.unregister(key.fd)
            continue
        got = True
        if key.data == "result":
            if len(worker.channel) < (1 << 24):  # the code can write here too: bound it
                worker.channel += chunk
            worker.take_lines()
        else:
            sinks[key.data].feed(chunk)
    return got


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


