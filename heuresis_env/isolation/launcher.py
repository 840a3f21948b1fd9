"""A launcher for policy processes: one scrubbed interpreter that has imported the package
once and forks each policy process on request, instead of a fresh interpreter per process.

A policy process started from scratch (``python -c …policy_process…``) spends about 2 s
importing the package before the policy is even built; ``heuresis demo`` starts one per policy
and worker. The launcher is started the way a policy process is started — a fresh interpreter
with the policy process's environment (no test salt, the policies' own cache folder,
:func:`~heuresis_env.evaluation.policy_process.policy_environment`) — imports the package, and
then only forks. It never receives anything but what a policy process receives at its start
(its pipes, the confinement config, the working folder): no instance, no truth, no salt. So a
forked policy process holds exactly what a fresh one would, minus the import time.

Each fork does what a fresh policy process does (``policy_process.child_main``): it starts its
own session, dies with the launcher (``PR_SET_PDEATHSIG``), enters the confinement when asked
(namespaces, hidden paths, seccomp) and serves the runner over its pipes. The launcher itself
is non-dumpable, so a policy process of the same user cannot read or write its memory (and
change what later policy processes start from); each fork is made dumpable again (a fresh
interpreter is), and its NumPy global generator is reseeded from the OS, as a fresh
interpreter's would be (Python's ``random`` reseeds itself after a fork).

The runner talks to the launcher over a Unix ``SOCK_SEQPACKET`` socket: ``spawn`` (the pipes
travel as ``SCM_RIGHTS``; the reply is the child's pid), ``wait`` (the child's exit code,
``None`` while it runs; the launcher reaps only when asked, so a pid is never reused while the
runner may still signal it) and ``status`` (its pid, live children and dumpable flag). The launcher exits, ending its children, when the runner's end
of the socket closes — the runner died or closed it: ``SIGTERM`` first, so that a supervisor
of ``process`` isolation kills its policy's whole tree, then ``SIGKILL``.

``$HEURESIS_POLICY_LAUNCHER=0`` turns the launcher off (a fresh interpreter per policy process,
as before; ``benchmarks/bench_policy_process.py`` compares both).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from heuresis_env.isolation import linux
from heuresis_env.isolation.processes import signal_process

#: the launcher's command: import the package (the policy process's module), then serve
LAUNCHER_ENTRY = ("import sys\n"
                  "from heuresis_env.evaluation.policy_process import child_main\n"
                  "from heuresis_env.isolation.launcher import serve_launches\n"
                  "serve_launches(int(sys.argv[1]), child_main)\n")
#: the environment variable that turns the launcher off ("0", "off", "no", "false")
LAUNCHER_VARIABLE = "HEURESIS_POLICY_LAUNCHER"
#: the largest request or reply on the launcher's socket
MESSAGE_BYTES = 1 << 20
_PR_GET_DUMPABLE = 3
#: how long the launcher may take to start (its imports) and answer a request
ANSWER_SECONDS = 600.0


class PolicyLauncherError(Exception):
    """The launcher could not be started, died, or answered something unreadable."""


def launcher_enabled() -> bool:
    """Whether policy processes are forked from a launcher here: Linux (``fork``, ``SCM_RIGHTS``
    and ``SOCK_SEQPACKET``) and not turned off by ``$HEURESIS_POLICY_LAUNCHER``."""
    setting = os.environ.get(LAUNCHER_VARIABLE, "").strip().lower()
    return (sys.platform.startswith("linux") and hasattr(socket, "send_fds")
            and setting not in ("0", "off", "no", "false"))


# ---- the runner's side ------------------------------------------------------------------------

class LaunchedProcess:
    """A policy process forked by a launcher, with the part of ``subprocess.Popen``'s interface
    the runner uses: ``pid``, ``returncode``, ``poll()``, ``wait(timeout)``. Exit codes follow
    ``Popen`` (negative: the signal that ended it)."""

    def __init__(self, launcher: PolicyLauncher, pid: int):
        self.launcher, self.pid = launcher, pid
        self.returncode: int | None = None
        # a pidfd tells whether the process has ended without asking the launcher (the runner
        # polls before every call); the launcher reaps only when asked, so the pid is still
        # this process's here
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = None

    def _ended(self, timeout: float | None) -> bool:
        """Whether the process has ended within ``timeout`` seconds (True when unknown)."""
        if self._pidfd is None:
            return True
        return bool(select.select([self._pidfd], [], [], timeout)[0])

    def _settle(self, code: int | None) -> int | None:
        self.returncode = code
        if code is not None and self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        return code

    def poll(self) -> int | None:
        if self.returncode is None and self._ended(0.0):
            self._settle(self.launcher.exit_code(self.pid, 0.0 if self._pidfd is None else 5.0))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if self._pidfd is not None and not self._ended(timeout):
                raise subprocess.TimeoutExpired("policy process", timeout or 0.0)
            code = self._settle(self.launcher.exit_code(
                self.pid, timeout if self._pidfd is None else 5.0))
            if code is None:
                raise subprocess.TimeoutExpired("policy process", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def __del__(self) -> None:
        if getattr(self, "_pidfd", None) is not None:
            try:
                os.close(self._pidfd)  # type: ignore[arg-type]
            except OSError:
                pass


class PolicyLauncher:
    """The runner's handle on one launcher process (see the module docstring)."""

    def __init__(self, environment: Mapping[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", LAUNCHER_ENTRY, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), close_fds=True, env=dict(environment),
                start_new_session=True, stdin=subprocess.DEVNULL)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._socket = ours
        self._lock = threading.Lock()
        self._closed = False

    @property
    def alive(self) -> bool:
        return not self._closed and self.process.poll() is None

    def _ask(self, request: Mapping[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
        payload = json.dumps(request).encode("utf-8")
        with self._lock:
            if not self.alive:
                raise PolicyLauncherError("the policy launcher is not running")
            try:
                if fds:
                    socket.send_fds(self._socket, [payload], list(fds))
                else:
                    self._socket.send(payload)
                self._socket.settimeout(ANSWER_SECONDS + float(request.get("timeout") or 0))
                reply = self._socket.recv(MESSAGE_BYTES)
            except (OSError, TimeoutError) as exc:
                self.close()
                raise PolicyLauncherError(f"the policy launcher stopped answering ({exc})") from None
        if not reply:
            self.close()
            raise PolicyLauncherError(self._exit_description())
        try:
            answer = json.loads(reply.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self.close()
            raise PolicyLauncherError("the policy launcher sent a reply that is not JSON") from None
        if not isinstance(answer, dict) or "error" in answer:
            raise PolicyLauncherError(f"the policy launcher refused: "
                                      f"{answer.get('error') if isinstance(answer, dict) else answer}")
        return answer

    def spawn(self, fd_in: int, fd_out: int, confine: Mapping[str, Any] | None,
              cwd: str) -> LaunchedProcess:
        """Fork a policy process that reads requests from ``fd_in`` and answers on ``fd_out``
        (both stay open here; close them after the call as after ``Popen``)."""
        answer = self._ask({"op": "spawn", "confine": confine, "cwd": cwd}, (fd_in, fd_out))
        pid = answer.get("pid")
        if not isinstance(pid, int) or pid <= 0:
            raise PolicyLauncherError(f"the policy launcher answered {answer!r} to a spawn")
        return LaunchedProcess(self, pid)

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        """The exit code of a child once it has ended (reaped then), None while it runs after
        ``timeout`` seconds (None: wait for it)."""
        if not self.alive:  # the launcher is gone, and its children with it
            return -signal.SIGKILL
        try:
            answer = self._ask({"op": "wait", "pid": pid, "timeout": timeout})
        except PolicyLauncherError:
            return -signal.SIGKILL
        code = answer.get("status")
        return code if isinstance(code, int) else None

    def status(self) -> dict[str, Any]:
        """The launcher's own account: its pid, its live children, its dumpable flag."""
        return self._ask({"op": "status"})

    def _exit_description(self) -> str:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "the policy launcher closed its socket"
        return f"the policy launcher exited with code {code}"

    def close(self) -> None:
        """Close the socket (the launcher then kills its children and exits) and reap it."""
        if self._closed:
            return
        self._closed = True
        try:
            self._socket.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


_LAUNCHERS: dict[tuple[int, tuple[tuple[str, str], ...]], PolicyLauncher] = {}
_LAUNCHERS_LOCK = threading.Lock()


def launcher_for(environment: Mapping[str, str]) -> PolicyLauncher:
    """This process's launcher for policy processes with ``environment`` (started on first
    use, again after it died)."""
    key = (os.getpid(), tuple(sorted(environment.items())))
    with _LAUNCHERS_LOCK:
        launcher = _LAUNCHERS.get(key)
        if launcher is None or not launcher.alive:
            launcher = _LAUNCHERS[key] = PolicyLauncher(environment)
        return launcher


def close_launchers() -> None:
    """Stop this process's launchers (their policy processes end with them)."""
    with _LAUNCHERS_LOCK:
        launchers = [launcher for (pid, _), launcher in _LAUNCHERS.items() if pid == os.getpid()]
        _LAUNCHERS.clear()
    for launcher in launchers:
        launcher.close()


# ---- the launcher's side ----------------------------------------------------------------------

def serve_launches(fd: int, child_main: Callable[[int, int, Any], None]) -> None:
    """The launcher's loop: fork a policy process running ``child_main(fd_in, fd_out,
    confine)`` per ``spawn``, report exit codes on ``wait``, and end (killing the children)
    when the runner's end of the socket closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner handles Ctrl-C and closes us
    if sys.platform.startswith("linux"):
        linux.prctl(linux.PR_SET_DUMPABLE, 0)
    launcher_pid = os.getpid()
    connection = socket.socket(fileno=fd)
    children: set[int] = set()
    try:
        while True:
            try:
                message, fds, _, _ = socket.recv_fds(connection, MESSAGE_BYTES, 2)
            except OSError:
                return
            if not message:
                return  # the runner is gone
            try:
                request = json.loads(message.decode("utf-8"))
                op = request["op"]
            except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
                _close_all(fds)
                connection.send(json.dumps({"error": f"unreadable request ({exc})"}).encode())
                continue
            if op == "spawn" and len(fds) == 2:
                pid = os.fork()
                if pid == 0:  # the policy process
                    code = 70
                    try:
                        connection.close()
                        code = _become_policy_process(launcher_pid, fds[0], fds[1], request,
                                                      child_main)
                    finally:
                        os._exit(code)
                _close_all(fds)
                children.add(pid)
                reply: dict[str, Any] = {"pid": pid}
            elif op == "wait" and request.get("pid") in children:
                status = _wait(request["pid"], request.get("timeout"))
                if status is not None:
                    children.discard(request["pid"])
                reply = {"status": status}
            elif op == "status":
                reply = {"pid": launcher_pid, "children": sorted(children), "dumpable": (
                    linux.prctl(_PR_GET_DUMPABLE)
                    if sys.platform.startswith("linux") else None)}
            else:
                _close_all(fds)
                reply = {"error": f"unknown request {op!r} (or a pid that is not a child)"}
            connection.send(json.dumps(reply).encode("utf-8"))
    finally:
        _end_children(children)


#: how long the launcher's children get to end their trees after SIGTERM before SIGKILL
END_SECONDS = 5.0


def _end_children(children: set[int]) -> None:
    """End every child: ``SIGTERM`` first (a supervisor of ``process`` isolation then kills
    its policy's whole tree, daemons included; a confined policy's namespace ends with its
    PID 1), ``SIGKILL`` to what is left after :data:`END_SECONDS`; reap them all."""
    for pid in children:
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + END_SECONDS
    left = set(children)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    left.discard(pid)
            except ChildProcessError:
                left.discard(pid)
        time.sleep(0.01)
    for pid in left:
        signal_process(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _close_all(fds: Sequence[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _wait(pid: int, timeout: float | None) -> int | None:
    """Reap ``pid`` within ``timeout`` seconds (None: wait); its exit code, or None."""
    deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
    delay = 0.001
    while True:
        try:
            reaped, status = os.waitpid(pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:
            return -signal.SIGKILL  # already reaped: report it as killed
        if reaped:
            return os.waitstatus_to_exitcode(status)
        if deadline is None or time.monotonic() >= deadline:
            return None
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)


def _become_policy_process(launcher_pid: int, fd_in: int, fd_out: int,
                           request: Mapping[str, Any],
                           child_main: Callable[[int, int, Any], None]) -> int:
    """In the fork: the state of a freshly started policy process, then its main loop."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != launcher_pid:  # the launcher died before the line above
            return 70
        linux.prctl(linux.PR_SET_DUMPABLE, 1)
    np.random.seed()  # a fresh interpreter's NumPy global generator, not the launcher's copy
    os.chdir(str(request["cwd"]))
    try:
        child_main(fd_in, fd_out, request.get("confine"))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the runner sees the exit code
        return 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
    return 0
