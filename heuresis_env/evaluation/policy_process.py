"""Policies in their own process: ``heuresis evaluate`` never runs policy code where the truth
lives.

The environment, its referee (closures over the true graphs), the test salt and the instance
memo stay in the runner's process (or its worker, or Ray actor). The policy runs in a child
process started from a fresh interpreter (``python -m heuresis_env.evaluation.policy_process``)
with a scrubbed environment — no ``$HEURESIS_TEST_SALT``, its own cache folder — and imports
the policy by its spec. :class:`PolicyProxy` is a :class:`~heuresis_env.policy.Policy` on the
runner's side that forwards ``configure``, ``reset``, ``act``, ``usage``, ``transcript``,
``failure``, ``notes`` and ``close`` over a pipe; only observations and whitelisted infos (:data:`PUBLIC_RESET_INFO`,
:data:`PUBLIC_STEP_INFO`) cross to the child, and only JSON comes back (the runner never
unpickles what a policy sends). Rewards never cross: the ``Policy`` interface has none, and
the final step's info (the scores) is never passed to a policy.

Where the machine allows it (Linux, root or unprivileged user namespaces) the child is also
*confined* (:mod:`heuresis_env.isolation.confinement`): PID 1 of its own PID namespace with a
fresh ``/proc`` (no other process of the machine is visible, so neither the runner's memory
nor any process environment holding the salt can be read); every mount read-only, a private
``/tmp``, its own cache folder (``…-policies/<policy>``) its only other writable place; a
dedicated unprivileged uid when started by root; loopback only unless the policy is declared
to need an endpoint; Heuresis' cache, the run directories and the runner's work folder covered
by empty read-only folders (no hidden-record cache to read, no earlier result to peek at) and
a data table's graph file (``--graph``) read as empty; without capabilities, with
``no_new_privs`` and a seccomp filter that keeps ``prctl`` from undoing its death with the
runner. Unconfined, it runs below a supervisor that kills its whole process tree when it ends.
The runner makes itself non-dumpable while children live.

A policy that crashes, hangs past the wall budget or answers garbage costs its episode (an
error or ``wall_time`` record), never the run: the child is killed and a fresh one is started
for the next episode.
"""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from heuresis_env.cache import cache_root
from heuresis_env.env.toolbox.registry import describe_object
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.policies import make_policy
from heuresis_env.evaluation.policy_wire import (
    PolicyDeadlineExceeded,
    PolicyProcessError,
    RemotePolicyError,
    decode_action,
    encode_action,
    encode_reply,
    public_info,
    read_frame,
    write_frame,
)
from heuresis_env.evaluation.run_format import connection_option
from heuresis_env.generation.salts import TEST_SALT_ENV, SealedSalt, spec_digest
from heuresis_env.isolation import confinement, linux
from heuresis_env.isolation.detection import detect_isolation
from heuresis_env.isolation.endpoint_proxy import EndpointProxy, policy_endpoints
from heuresis_env.isolation.launcher import (
    LaunchedProcess,
    PolicyLauncherError,
    launcher_enabled,
    launcher_for,
)
from heuresis_env.policy import EpisodeSettings, Policy

#: what a policy receives of ``reset``'s info: the task's public input, its public key (the
#: key regenerates an instance only with the salt, which never reaches the policy process) and
#: in a question episode the public question
PUBLIC_RESET_INFO = ("instance_index", "split", "sha256", "instance", "data", "names",
                     "guided", "n_tools", "sealed", "question", "experiment_rows")
#: what a policy receives of a step's info: the tool, its error and its structured result
PUBLIC_STEP_INFO = ("step", "tool", "error", "data")
#: how long a policy process may take to start and build the policy (model loading included)
START_SECONDS = 600.0
#: how long a call that has no wall deadline may take (configure, usage, close)
CALL_SECONDS = 600.0
#: the largest reply accepted from a policy process (a transcript rarely reaches 10 MB)
MAX_REPLY_BYTES = 256 * 2**20
#: environment variables never passed to a policy process
SECRET_VARIABLES = (TEST_SALT_ENV,)
#: where a policy process keeps its disk cache, beside (never inside) the runner's
POLICY_CACHE_SUFFIX = "-policies"
ISOLATION_LEVELS = ("namespaces", "process")
#: the policy process's command (``-c`` puts the working folder on ``sys.path``, as ``-m``)
CHILD_ENTRY = "import sys; from heuresis_env.evaluation.policy_process import main; main(sys.argv)"
_PR_SET_DUMPABLE, _PR_GET_DUMPABLE = 4, 3


def policy_cache_directory(key: str | None = None) -> Path:
    """The policy processes' cache folder, beside (never inside) the runner's; with ``key``
    (:func:`policy_key`) the folder of one policy, which no other policy can write."""
    root = cache_root()
    folder = root.with_name(root.name + POLICY_CACHE_SUFFIX)
    return folder if key is None else folder / key


def policy_key(spec: str, options: Mapping[str, Any]) -> str:
    """A policy's own name for its cache folder and, under root, its uid: the digest of its
    spec and options (how to reach a model — an address, a port, a key — aside)."""
    return spec_digest({"spec": spec, "options": {k: v for k, v in options.items()
                                                  if not connection_option(k)}})


def option_paths(options: Mapping[str, Any]) -> list[str]:
    """Files and folders a policy's options name (a model, a selection file): a confined
    policy reads them where they are (read-only)."""
    found = []
    for value in options.values():
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(item, str | os.PathLike) and os.sep in os.fspath(item):
                path = os.path.realpath(os.fspath(item))
                if os.path.exists(path):
                    found.append(path)
    return found


def policy_environment(salt: SealedSalt | str | None, cache_directory: Path | None = None
                       ) -> dict[str, str]:
    """The policy process's environment: this one without the test salt (nor any variable
    holding it), with the policy's own cache folder."""
    secret = salt.secret if isinstance(salt, SealedSalt) else salt
    environment = {}
    for name, value in os.environ.items():
        if name in SECRET_VARIABLES or (secret and secret in value):
            continue
        environment[name] = value
    environment["HEURESIS_CACHE_DIR"] = str(cache_directory or policy_cache_directory())
    environment["PYTHONUNBUFFERED"] = "1"
    return environment


def confinement_available() -> str | None:
    """Why the policy process cannot be confined in namespaces here, or None when it can."""
    info = detect_isolation()
    missing = [f"{name} namespace ({info['namespaces'].get(name, 'not probed')})"
               for name in ("mount", "pid") if info["namespaces"].get(name) != "ok"]
    if info["privilege_drop"] is None:
        missing.append("root or unprivileged user namespaces")
    return "; ".join(missing) or None


_DUMPABLE_LOCK = threading.Lock()
_DUMPABLE_USERS: list[int] = [0, 0]  # holders (live policy processes, runs), the flag to
# restore


@contextmanager
def runner_protected() -> Iterator[None]:
    """Keep this process non-dumpable for the duration (``evaluate`` holds it for a run)."""
    _hold_non_dumpable(True)
    try:
        yield
    finally:
        _hold_non_dumpable(False)


def _hold_non_dumpable(acquire: bool) -> None:
    """Keep this (the runner's) process non-dumpable while policy processes live, so that a
    process of the same user without capabilities cannot read its memory or environment."""
    if not sys.platform.startswith("linux"):
        return
    with _DUMPABLE_LOCK:
        if acquire:
            if _DUMPABLE_USERS[0] == 0:
                _DUMPABLE_USERS[1] = linux.prctl(_PR_GET_DUMPABLE)
                linux.prctl(_PR_SET_DUMPABLE, 0)
            _DUMPABLE_USERS[0] += 1
        else:
            _DUMPABLE_USERS[0] = max(0, _DUMPABLE_USERS[0] - 1)
            if _DUMPABLE_USERS[0] == 0 and _DUMPABLE_USERS[1] == 1:
                linux.prctl(_PR_SET_DUMPABLE, 1)


class PolicyProcess:
    """One policy process: started, asked, killed. Replies are JSON; a failure to answer in
    time, an exit, or a garbled frame raises and leaves the process dead."""

    def __init__(self, spec: str, options: Mapping[str, Any], *, isolation: str,
                 hidden_paths: Sequence[str] = (), salt: SealedSalt | str | None = None,
                 network: bool | Sequence[str] = False):
        self.spec, self.options = spec, dict(options)
        self.isolation = isolation
        #: the endpoints the policy may reach (``endpoint_proxy.policy_endpoints``): confined,
        #: through an :class:`EndpointProxy` only; unconfined, the host's network is its own
        self.endpoints = policy_endpoints(spec, self.options, network)
        self.network = bool(self.endpoints)
        self._proxy: EndpointProxy | None = None
        self.key = policy_key(spec, self.options)
        # confined by root, the policy runs as its own uid: its files are its uid's, so it
        # keeps a folder apart from the one its unconfined runs (uid 0 without capabilities,
        # which cannot read them) use
        own_uid = isolation == "namespaces" and os.geteuid() == 0
        self.cache_directory = policy_cache_directory(self.key + ("-uid" if own_uid else ""))
        self.hidden_paths = [str(p) for p in hidden_paths]
        self._salt = salt
        self.process: subprocess.Popen | LaunchedProcess | None = None
        self._to_child = self._from_child = -1
        self.description: dict[str, Any] = {}

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> dict[str, Any]:
        """Start the process and build the policy; returns its name and interface."""
        if self.process is not None:  # a process that ended on its own: reap it first
            self.kill()
        to_child_read, to_child_write = os.pipe()
        from_child_read, from_child_write = os.pipe()
        confine = None
        self._prepare_cache_directory()
        if self.isolation == "namespaces":
            privilege = detect_isolation()["privilege_drop"]
            if self.endpoints and self._proxy is None:
                self._proxy = EndpointProxy(self.endpoints)
            confine = {"privilege": privilege, "hidden": self.hidden_paths,
                       "cwd": os.getcwd(),
                       "proxy": None if self._proxy is None else self._proxy.path,
                       "uid": confinement.policy_uid(self.key),
                       "readable": [*confinement.runtime_paths(), os.getcwd(),
                                    *option_paths(self.options),
                                    *([] if self._proxy is None else [self._proxy.folder])],
                       "writable": [str(self.cache_directory)],
                       "private": [tempfile.gettempdir()]}
        _hold_non_dumpable(True)
        try:
            self.process = self._launch(to_child_read, from_child_write, confine)
        except BaseException:
            _hold_non_dumpable(False)
            for fd in (to_child_read, to_child_write, from_child_read, from_child_write):
                os.close(fd)
            raise
        finally:
            if self.process is not None:
                os.close(to_child_read)
                os.close(from_child_write)
        self._to_child, self._from_child = to_child_write, from_child_read
        init = {"spec": self.spec, "options": self.options, "sys_path": list(sys.path),
                "cwd": os.getcwd()}
        try:
            self.description = self.call("init", init, deadline=time.monotonic() + START_SECONDS)
        except RemotePolicyError as exc:
            self.kill()
            if exc.bad_input:
                raise HeuresisError(str(exc)) from None
            raise HeuresisError(f"policy {self.spec!r} could not be built: {exc.remote_type}: "
                                f"{exc}") from None
        except PolicyProcessError as exc:
            self.kill()
            raise HeuresisError(f"policy {self.spec!r} could not be started: {exc}") from None
        except PolicyDeadlineExceeded:
            raise HeuresisError(f"policy {self.spec!r} was not built within "
                                f"{START_SECONDS:g} s") from None
        if not (isinstance(self.description, dict)
                and self.description.get("interface") in ("text", "rl")
                and isinstance(self.description.get("name"), str)):
            self.kill()
            raise HeuresisError(f"policy {self.spec!r}: its process described it as "
                                f"{describe_object(self.description, 200)}")
        return self.description

    def _launch(self, fd_in: int, fd_out: int, confine: dict[str, Any] | None
                ) -> subprocess.Popen | LaunchedProcess:
        """Fork the process from this runner's launcher (an interpreter that has imported the
        package, ``policy_launcher``) or, with the launcher off or failing to start, start a
        fresh interpreter; either way with the scrubbed environment."""
        environment = policy_environment(self._salt, self.cache_directory)
        if launcher_enabled():
            for _ in range(2):  # a launcher that died is replaced once
                try:
                    return launcher_for(environment).spawn(fd_in, fd_out, confine, os.getcwd())
                except PolicyLauncherError as exc:
                    failure = exc
            raise HeuresisError(f"policy {self.spec!r} could not be started: the policy "
                                f"launcher failed ({failure})")
        command = [sys.executable, "-c", CHILD_ENTRY, str(fd_in), str(fd_out),
                   json.dumps(confine)]
        return subprocess.Popen(command, pass_fds=(fd_in, fd_out), close_fds=True,
                                env=environment, start_new_session=True,
                                stdin=subprocess.DEVNULL)

    def _prepare_cache_directory(self) -> None:
        """The policy's own cache folder; owned by its uid when it will run under one."""
        self.cache_directory.mkdir(parents=True, exist_ok=True)
        if self.isolation == "namespaces" and os.geteuid() == 0:
            uid = confinement.policy_uid(self.key)
            os.chown(self.cache_directory, uid, uid)
            os.chmod(self.cache_directory, 0o700)

    def call(self, kind: str, *args: Any, deadline: float | None = None) -> Any:
        """Send one request and return the reply's value; raises :class:`RemotePolicyError`
        for the policy's own exception, :class:`PolicyDeadlineExceeded` past ``deadline``
        (the process is then killed), :class:`PolicyProcessError` for anything else."""
        if not self.alive:
            description = self._exit_description()
            self.kill()
            raise PolicyProcessError(description)
        if deadline is None:
            deadline = time.monotonic() + CALL_SECONDS
        try:
            write_frame(self._to_child, pickle.dumps((kind, args), protocol=5))
            frame = read_frame(self._from_child, MAX_REPLY_BYTES, deadline)
        except TimeoutError:
            self.kill()
            raise PolicyDeadlineExceeded from None
        except (EOFError, BrokenPipeError, OSError):
            description = self._exit_description()
            self.kill()
            raise PolicyProcessError(description) from None
        except PolicyProcessError:
            self.kill()
            raise
        try:
            reply = json.loads(frame.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            self.kill()
            raise PolicyProcessError("the policy process sent a reply that is not JSON") from None
        if isinstance(reply, dict) and set(reply) == {"ok"}:
            return reply["ok"]
        error = reply.get("error") if isinstance(reply, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            raise RemotePolicyError(str(error.get("type", "Exception"))[:100],
                                    error["message"][:4000], str(error.get("traceback", ""))[:20000],
                                    error.get("bad_input") is True)
        self.kill()
        raise PolicyProcessError(f"the policy process sent an unreadable reply "
                                 f"{describe_object(reply, 120)}")

    def _exit_description(self) -> str:
        if self.process is None:
            return "the policy process is not running"
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "the policy process stopped answering"
        if code < 0:
            return f"the policy process died ({signal.Signals(-code).name})"
        return f"the policy process exited with code {code}"

    def kill(self) -> None:
        """Kill the process (its whole group and, when confined, its PID namespace)."""
        if self.process is None:
            return
        process, self.process = self.process, None
        if self.isolation == "process" and process.poll() is None:
            # the supervisor kills the policy's whole tree, then exits
            try:
                os.kill(process.pid, signal.SIGTERM)
                process.wait(timeout=10)
            except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                pass
        for send in (lambda: os.killpg(process.pid, signal.SIGKILL),
                     lambda: os.kill(process.pid, signal.SIGKILL)):
            try:
                send()
            except (ProcessLookupError, PermissionError):
                pass
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self._close_pipes()
        if self._proxy is not None:  # started again with the process
            self._proxy.close()
            self._proxy = None

    def close(self) -> None:
        """Ask the policy to close, then end the process."""
        if self.process is None:
            return
        try:
            self.call("close", deadline=time.monotonic() + 30)
        except (PolicyProcessError, RemotePolicyError, PolicyDeadlineExceeded):
            pass
        process = self.process
        if process is not None:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def _close_pipes(self) -> None:
        for fd in (self._to_child, self._from_child):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._to_child = self._from_child = -1
        _hold_non_dumpable(False)


class PolicyProxy(Policy):
    """A :class:`Policy` whose every call runs in a :class:`PolicyProcess`.

    A failed process is replaced at the next ``reset`` (started, built and configured again).
    The runner sets :attr:`deadline` (a ``time.monotonic`` time) around ``reset`` and ``act``;
    a call past it raises :class:`PolicyDeadlineExceeded`. ``usage()`` fetches usage,
    transcript, failure, notes and the policy's settings in one exchange at the end of an
    episode; ``transcript()``, ``failure()``, ``notes()`` and :attr:`settings` then read what
    it got.
    """

    def __init__(self, spec: str, options: Mapping[str, Any] | None = None, *,
                 isolation: str = "auto", hidden_paths: Sequence[str] = (),
                 salt: SealedSalt | str | None = None,
                 network: bool | Sequence[str] = False):
        if isolation == "auto":
            isolation = "process" if confinement_available() else "namespaces"
        if isolation not in ISOLATION_LEVELS:
            raise HeuresisError(f"policy isolation must be one of {list(ISOLATION_LEVELS)}, "
                                f"got {isolation!r}")
        if isolation == "namespaces" and (missing := confinement_available()):
            raise HeuresisError(f"policy isolation 'namespaces' is not available here: it "
                                f"lacks {missing}")
        self.isolation = isolation
        self._process = PolicyProcess(spec, options or {}, isolation=isolation,
                                      hidden_paths=hidden_paths, salt=salt, network=network)
        description = self._process.start()
        self.name, self.interface = description["name"], description["interface"]
        self.deadline: float | None = None
        self._configured: EpisodeSettings | None = None
        self._reported: dict[str, Any] = {}

    # the settings the policy itself holds (the runner checks it never changes them)
    @property
    def settings(self) -> Any:
        reported = self._reported.get("settings")
        if not isinstance(reported, dict):
            return reported
        try:
            return EpisodeSettings(**reported)
        except TypeError:
            return reported

    @settings.setter
    def settings(self, value: Any) -> None:  # Policy's default; the child's value wins
        pass

    def _ensure_running(self) -> None:
        if not self._process.alive:
            self._process.start()
            if self._configured is not None:
                self.configure(self._configured)

    def configure(self, settings: EpisodeSettings) -> None:
        self._configured = settings
        self._ensure_running()
        self._reported = {"settings": self._process.call("configure", settings.to_dict())}

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self._ensure_running()
        for key in ("usage", "transcript", "failure", "notes"):
            self._reported.pop(key, None)
        self._process.call("reset", observation, public_info(info, PUBLIC_RESET_INFO),
                           deadline=self.deadline)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return decode_action(self._process.call(
            "act", observation, public_info(info, PUBLIC_STEP_INFO), deadline=self.deadline))

    def usage(self) -> dict[str, Any]:
        report = self._process.call("report")
        if not isinstance(report, dict):
            raise PolicyProcessError("the policy process sent an unreadable usage report")
        self._reported = report
        usage = report.get("usage")
        return usage if isinstance(usage, dict) else {}

    def transcript(self) -> Any:
        return self._reported.get("transcript")

    def failure(self) -> str | None:
        failure = self._reported.get("failure")
        return None if failure is None else str(failure)[:4000]

    def notes(self) -> list[str]:
        notes = self._reported.get("notes")
        return [str(n)[:2000] for n in notes[:20]] if isinstance(notes, list) else []

    def kill(self) -> None:
        """End the process now (after a failed call); the next ``reset`` starts a new one."""
        self._process.kill()

    def close(self) -> None:
        self._process.close()


# ---- the policy's side ------------------------------------------------------------------------

class _Server:
    """The policy's side: builds the policy and answers requests until ``close`` or EOF."""

    def __init__(self) -> None:
        self.policy: Policy | None = None

    def init(self, request: Mapping[str, Any]) -> dict[str, Any]:
        for entry in reversed(request["sys_path"]):
            if entry not in sys.path:
                sys.path.insert(1, entry)
        self.policy = make_policy(request["spec"], request["options"])
        if self.policy.interface not in ("text", "rl"):
            raise HeuresisError(f"policy {request['spec']!r} has interface "
                                f"{self.policy.interface!r}; expected 'text' or 'rl'")
        return {"name": str(self.policy.name), "interface": self.policy.interface}

    @property
    def built(self) -> Policy:
        if self.policy is None:
            raise HeuresisError("the policy process was asked before the policy was built")
        return self.policy

    def configure(self, settings: Mapping[str, Any]) -> Any:
        self.built.configure(EpisodeSettings(**settings))
        return _settings_of(self.built)

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.built.reset(observation, info)

    def act(self, observation: Any, info: dict[str, Any]) -> dict[str, Any]:
        return encode_action(self.built.act(observation, info))

    def report(self) -> dict[str, Any]:
        return {"usage": self.built.usage() or {}, "transcript": self.built.transcript(),
                "settings": _settings_of(self.built), "failure": self.built.failure(),
                "notes": list(self.built.notes() or [])}

    def close(self) -> None:
        if self.policy is not None:
            self.policy.close()


def _settings_of(policy: Policy) -> Any:
    settings = getattr(policy, "settings", None)
    if isinstance(settings, EpisodeSettings):
        return settings.to_dict()
    return describe_object(settings, 200)


def serve(fd_in: int, fd_out: int) -> None:
    """Answer the runner's requests (pickled, from a trusted parent) with JSON replies."""
    server = _Server()
    while True:
        try:
            kind, args = pickle.loads(read_frame(fd_in, 1 << 40))
        except EOFError:
            return  # the runner is gone
        try:
            reply = {"ok": getattr(server, kind)(*args)}
        except BaseException as exc:  # noqa: BLE001 - the runner decides what it costs
            if isinstance(exc, KeyboardInterrupt):
                raise
            try:
                message = str(exc)
            except Exception:  # noqa: BLE001
                message = "<the message cannot be shown>"
            reply = {"error": {"type": type(exc).__name__, "message": message,
                               "traceback": traceback.format_exc()[-20000:],
                               "bad_input": isinstance(exc, HeuresisError)}}
        write_frame(fd_out, encode_reply(reply))
        if kind == "close":
            return


def main(argv: list[str]) -> None:
    """A policy process started from scratch: ``CHILD_ENTRY fd_in fd_out confine-json``."""
    child_main(int(argv[1]), int(argv[2]), json.loads(argv[3]))


def child_main(fd_in: int, fd_out: int, confine: Mapping[str, Any] | None) -> None:
    """The policy process: enter the confinement (or, unconfined, die with the runner and drop
    root's capabilities), then serve the runner until ``close`` or EOF. A fresh interpreter
    runs it from :func:`main`; a launcher's fork (``policy_launcher``) calls it directly."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner handles Ctrl-C and stops us
    if confine:
        try:
            confinement.confine(confine)
        except (OSError, linux.SetupError, ctypes.ArgumentError) as exc:
            write_frame(fd_out, encode_reply({"error": {
                "type": "PolicyConfinementError", "traceback": "", "bad_input": True,
                "message": f"the policy process could not be confined in namespaces ({exc}); "
                           "pass --policy-isolation process (policy_isolation='process') to "
                           "run policies in a plain process"}}))
            os._exit(70)
    elif sys.platform.startswith("linux"):
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        # started by root, the policy's capabilities go in the supervisor's fork (which keeps
        # CAP_KILL, as another uid); otherwise there is nothing to drop
        # a supervisor (a child subreaper) holds the policy's whole process tree and kills it
        # when the runner ends the policy (SIGTERM), however the policy forked or detached
        confinement.supervise(lambda: serve(fd_in, fd_out))
        return
    serve(fd_in, fd_out)


if __name__ == "__main__":
    main(sys.argv)
