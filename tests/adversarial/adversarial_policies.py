"""Policies written as an adversary would, each used by one test of the adversarial suite
(run in their own process by ``heuresis evaluate`` as ``tests.adversarial.adversarial_policies:
NAME``). None of them writes anywhere but where it is told by its options (a pytest tmp_path)
or attempts the creation of a *new*, uniquely named file to prove it cannot."""

from __future__ import annotations

from typing import Any

from heuresis_env.policy import Policy

SCRIPT_BREAKER = "<!--<script></script>\u2028&amp;"


class MalformedTranscript(Policy):
    """Submits one edge; reports a transcript of wrong types and notes that would break a page
    embedding them raw (route 7), and usage with negative tokens and cost (route 9)."""

    name = "malformed-transcript"

    def __init__(self, label: str = ""):
        self.label = label  # shown by the viewer among the run's options

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.done = False

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if not self.done:
            self.done = True
            return {"tool": "add_edge", "args": {"x": "X1", "y": "X2", "directed": False}}
        return {"tool": "submit", "args": {}}

    def transcript(self) -> Any:
        return [{"event": "model_call", "reply": "lots", "cost_usd": "free"},
                {"event": "model_call", "reply": {"usage": {"prompt": "many"}}},
                {"event": "action", "step": "two"},
                {"event": "message", "message": 5, "content": {"a": SCRIPT_BREAKER}}]

    def notes(self) -> list[str]:
        return [SCRIPT_BREAKER]

    def usage(self) -> dict[str, Any]:
        return {"prompt_tokens": -1000, "completion_tokens": -5, "cost_usd": -3.5,
                "api_retries": -2}


def _try_create(folder: str) -> str | None:
    """Try to create a new, uniquely named file in ``folder``; None when refused. A file that
    could be created is removed at once (and the caller's test fails)."""
    import os
    import uuid

    path = os.path.join(folder, f"heuresis-probe-{uuid.uuid4().hex}")
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:
        return None
    os.close(fd)
    os.unlink(path)
    return path


class Escaper(Policy):
    """Tries, once per process, the routes of issue 30 from inside the policy process and
    reports what worked in its transcript; then submits the empty graph.

    - route 1: create a new file in the project's package, the virtual environment's
      site-packages, the standard library, the interpreter's folder, ``/etc``, ``/root``,
      ``/usr/lib`` and ``/`` (a file created there is removed at once);
    - route 2: any worker's runner folder (``heuresis-runner-*``) in ``/tmp`` or the runner's
      temporary folder (``runner_tmp``), and any trace file in one;
    - route 3: create a file in another policy's cache folder (``other_cache``); its own cache
      folder (``$HEURESIS_CACHE_DIR``) stays writable (the positive control);
    - route 6: see or write into the run directory (``run_dir``);
    - route 9: connect to a TCP listener of the test on 127.0.0.1 (``port``); list the
      network interfaces;
    - its identity: uid and effective capabilities.

    The targets come in ``$ESCAPER_TARGETS`` (JSON), not as options: the paths a policy's
    options name are the user's, made readable to it on purpose.
    """

    name = "escaper"

    def __init__(self) -> None:
        import json
        import os

        targets = json.loads(os.environ.get("ESCAPER_TARGETS") or "{}")
        self.options = {"run_dir": targets.get("run_dir", ""),
                        "other_cache": targets.get("other_cache", ""),
                        "runner_tmp": targets.get("runner_tmp", ""),
                        "port": int(targets.get("port", 0))}
        self.found: dict[str, Any] | None = None

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if self.found is None:
            self.found = self._attack()

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return {"tool": "submit", "args": {}}

    def transcript(self) -> Any:
        return [self.found]

    def _attack(self) -> dict[str, Any]:
        import glob
        import os
        import socket
        import sys
        import sysconfig

        import heuresis_env

        targets = {
            "project": os.path.dirname(os.path.abspath(heuresis_env.__file__)),
            "site-packages": sysconfig.get_paths()["purelib"],
            "stdlib": os.path.dirname(os.__file__),
            "interpreter": os.path.dirname(os.path.realpath(sys.executable)),
            "etc": "/etc", "root-home": "/root", "usr-lib": "/usr/lib", "root": "/"}
        written = {name: path for name, folder in targets.items()
                   if os.path.isdir(folder) and (path := _try_create(folder))}
        folders = ["/tmp", "/var/tmp", "/dev/shm"]
        if self.options["runner_tmp"]:
            folders.append(self.options["runner_tmp"])
        runner_folders = sorted({p for folder in folders
                                 for p in glob.glob(os.path.join(folder, "heuresis-runner-*"))})
        traces = [p for folder in runner_folders
                  for p in glob.glob(os.path.join(folder, "**", "*.jsonl"), recursive=True)]
        own_cache = os.environ.get("HEURESIS_CACHE_DIR", "")
        other = self.options["other_cache"]
        run_dir = self.options["run_dir"]
        connection = "no port given"
        if self.options["port"]:
            try:
                with socket.create_connection(("127.0.0.1", self.options["port"]), timeout=3):
                    connection = "connected"
            except OSError as exc:
                connection = f"refused: {exc.__class__.__name__} {exc.errno}"
        with open("/proc/self/status") as f:
            status = dict(line.split(":\t", 1) for line in f.read().splitlines()
                          if ":\t" in line)
        return {
            "written": written,
            "runner_folders": runner_folders, "traces": traces,
            "own_cache_writable": bool(own_cache and _try_create(own_cache)),
            "other_cache_visible": bool(other and os.path.exists(other)),
            "other_cache_written": bool(other and os.path.isdir(other) and _try_create(other)),
            "run_dir_visible": bool(run_dir and os.path.exists(
                os.path.join(run_dir, "config.json"))),
            "run_dir_written": bool(run_dir and os.path.isdir(run_dir)
                                    and _try_create(run_dir)),
            "connection": connection,
            "interfaces": sorted(name for _, name in socket.if_nameindex()),
            "uid": os.getuid(), "cap_eff": status.get("CapEff", "").strip(),
            "tmp_listing": sorted(os.listdir("/tmp")),
        }


class Daemonizer(Policy):
    """Route 8: at its first reset, leaves a daemon behind (double fork, ``setsid``, a new
    process group) that only sleeps, and reports its pid; then submits the empty graph.

    With ``$DAEMONIZER_PIDFILE`` set it also writes the daemon's pid there and then never
    acts (it sleeps), so that a test can kill the runner in the middle of the run."""

    name = "daemonizer"

    def __init__(self) -> None:
        self.daemon: int | None = None

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        import os
        import time

        if self.daemon is not None:
            return
        read, write = os.pipe()
        first = os.fork()
        if first == 0:  # the intermediate: a new session, one more fork, and gone
            os.close(read)
            os.setsid()
            second = os.fork()
            if second == 0:
                os.write(write, str(os.getpid()).encode())
                os.close(write)
                for fd in range(0, 3):
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                while True:
                    time.sleep(60)
            os._exit(0)
        os.close(write)
        os.waitpid(first, 0)
        self.daemon = int(os.read(read, 32).decode())
        os.close(read)
        pidfile = os.environ.get("DAEMONIZER_PIDFILE")
        if pidfile:
            with open(pidfile + ".part", "w") as f:
                f.write(f"{self.daemon} {os.getpid()}")
            os.replace(pidfile + ".part", pidfile)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        import os
        import time

        if os.environ.get("DAEMONIZER_PIDFILE"):
            time.sleep(600)  # the test kills the runner meanwhile
        return {"tool": "submit", "args": {}}

    def transcript(self) -> Any:
        return [{"daemon": self.daemon}]


class NetworkProber(Policy):
    """Route 9, a policy declared to need one endpoint: once per process, from inside, it
    fetches the declared endpoint through the proxy its environment names (urllib and httpx,
    the HTTP client of the LLM SDKs; and a raw ``CONNECT`` tunnel), tries an undeclared
    endpoint the same ways, and connects directly to the endpoint's port on 127.0.0.1 and on
    the host's other addresses. Targets come in ``$PROBER_TARGETS`` (JSON: ``declared`` and
    ``undeclared`` ports, ``addresses``)."""

    name = "network-prober"

    def __init__(self) -> None:
        self.found: dict[str, Any] | None = None

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if self.found is None:
            self.found = self._probe()

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return {"tool": "submit", "args": {}}

    def transcript(self) -> Any:
        return [self.found]

    @staticmethod
    def _urllib(url: str) -> str:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(url, timeout=10) as reply:
                return f"{reply.status} {reply.read().decode().strip()}"
        except urllib.error.HTTPError as exc:
            return f"{exc.code}"
        except OSError as exc:
            return f"error {exc.__class__.__name__}"

    @staticmethod
    def _httpx(url: str) -> str:
        import httpx

        try:
            reply = httpx.get(url, timeout=10)
            return f"{reply.status_code} {reply.text.strip()}"
        except httpx.HTTPError as exc:
            return f"error {exc.__class__.__name__}"

    @staticmethod
    def _tunnel(proxy: str, port: int) -> str:
        import socket
        from urllib.parse import urlsplit

        address = urlsplit(proxy)
        try:
            with socket.create_connection((address.hostname, address.port), timeout=10) as s:
                s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
                head = s.recv(4096).decode(errors="replace")
                if not head.startswith("HTTP/1.1 200"):
                    return head.split("\r\n", 1)[0]
                s.sendall(b"GET / HTTP/1.1\r\nHost: endpoint\r\nConnection: close\r\n\r\n")
                data = b""
                while chunk := s.recv(4096):
                    data += chunk
                return "tunnel " + data.decode(errors="replace").split("\r\n", 1)[0] + " " + \
                    data.decode(errors="replace").rsplit("\r\n\r\n", 1)[-1].strip()
        except OSError as exc:
            return f"error {exc.__class__.__name__}"

    @staticmethod
    def _direct(host: str, port: int) -> str:
        import socket

        try:
            with socket.create_connection((host, port), timeout=5):
                return "connected"
        except OSError as exc:
            return f"refused {exc.__class__.__name__} {exc.errno}"

    def _probe(self) -> dict[str, Any]:
        import json
        import os
        import socket

        targets = json.loads(os.environ.get("PROBER_TARGETS") or "{}")
        declared, undeclared = int(targets["declared"]), int(targets["undeclared"])
        proxy = os.environ.get("HTTPS_PROXY", "")
        return {
            "proxy": proxy, "http_proxy": os.environ.get("HTTP_PROXY", ""),
            "urllib_declared": self._urllib(f"http://127.0.0.1:{declared}/"),
            "urllib_undeclared": self._urllib(f"http://127.0.0.1:{undeclared}/"),
            "httpx_declared": self._httpx(f"http://127.0.0.1:{declared}/"),
            "httpx_undeclared": self._httpx(f"http://127.0.0.1:{undeclared}/"),
            "tunnel_declared": self._tunnel(proxy, declared) if proxy else "no proxy",
            "tunnel_undeclared": self._tunnel(proxy, undeclared) if proxy else "no proxy",
            "direct": {f"{host}:{port}": self._direct(host, port)
                       for host in ["127.0.0.1", *targets.get("addresses", [])]
                       for port in (declared, undeclared)},
            "interfaces": sorted(name for _, name in socket.if_nameindex()),
        }


class RunReader(Policy):
    """Issue 46, route 1: looks for other runs' results under the working folder, the
    checkout and ``$READER_ROOTS`` (JSON list) and reads what it can; reports the files it
    read (an oracle run's results would give it the true graphs)."""

    name = "run-reader"

    def __init__(self) -> None:
        self.read: list[str] = []

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        import json
        import os

        roots = [os.getcwd(), *json.loads(os.environ.get("READER_ROOTS", "[]"))]
        for root in roots:
            for folder, subfolders, files in os.walk(root):
                subfolders[:] = [s for s in subfolders if not s.startswith(".")
                                 and s not in ("site-packages", "node_modules")]
                if folder.count(os.sep) - root.count(os.sep) > 5:
                    subfolders[:] = []
                for name in files:
                    if name in ("results.jsonl", "config.json"):
                        path = os.path.join(folder, name)
                        try:
                            with open(path) as f:
                                if f.read(64):
                                    self.read.append(path)
                        except OSError:
                            pass

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return {"tool": "submit", "args": {}}

    def transcript(self) -> Any:
        return [{"read": sorted(set(self.read))}]


class SupervisorKiller(Policy):
    """Issue 46, route 4: under ``--policy-isolation process``, leaves a daemon (double fork,
    new session) that writes its pid and uid to ``$KILLER_REPORT`` (and whether it could
    write into ``$KILLER_TARGET``), then kills its own supervisor (its parent) so that nothing
    kills the daemon with it; reports how that went in ``$KILLER_REPORT.supervisor``."""

    name = "supervisor-killer"

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        import os
        import signal
        import time

        report, target = os.environ["KILLER_REPORT"], os.environ["KILLER_TARGET"]
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.closerange(0, 65536)  # a daemon keeps no pipe of the runner
                wrote = False
                try:
                    with open(os.path.join(target, f"planted-{os.getpid()}"), "w") as f:
                        f.write("x")
                    wrote = True
                except OSError:
                    pass
                with open(report + ".part", "w") as f:
                    f.write(f"{os.getpid()} {os.getuid()} {int(wrote)}")
                os.replace(report + ".part", report)
                while True:
                    time.sleep(60)
            os._exit(0)
        deadline = time.monotonic() + 30
        while not os.path.exists(report) and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            os.kill(os.getppid(), signal.SIGKILL)  # the supervisor first
            outcome = "killed"
        except OSError as exc:
            outcome = type(exc).__name__
        with open(report + ".supervisor", "w") as f:
            f.write(outcome)
        time.sleep(5)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        return {"tool": "submit", "args": {}}
