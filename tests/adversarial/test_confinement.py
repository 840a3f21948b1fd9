"""Routes 1, 2, 3 (the cache folders), 6 (another run's files), 8 and 9 (the network): what a
policy process can reach, tried from inside it by ``adversarial_policies.Escaper`` and
``Daemonizer``, run by ``heuresis evaluate`` as a user starts it.

Nothing here writes outside a pytest tmp_path: a probe only tries to create a new, uniquely
named file in a folder it must not write (removed at once if that succeeds, and the test
fails)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from heuresis_env.evaluation.policy_process import confinement_available
from heuresis_env.evaluation.run_format import load_run
from heuresis_env.isolation.confinement import POLICY_UID_BASE

ROOT = Path(__file__).resolve().parents[2]
ESCAPER = "tests.adversarial.adversarial_policies:Escaper"
DAEMONIZER = "tests.adversarial.adversarial_policies:Daemonizer"
PROBER = "tests.adversarial.adversarial_policies:NetworkProber"
needs_namespaces = pytest.mark.skipif(confinement_available() is not None,
                                      reason=f"no namespaces here: {confinement_available()}")


def run_policy(tmp_path: Path, spec: str, isolation: str, *extra: str,
               targets: dict | None = None, workers: int = 2, prober: dict | None = None,
               stderr: list | None = None) -> list[dict]:
    out, cache, runner_tmp = tmp_path / "runs" / "attack", tmp_path / "cache", tmp_path / "tmp"
    runner_tmp.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "heuresis_env.cli", "evaluate", "--policy", spec,
               "--family", "lg", "--split", "dev", "--count", "2", "--repeats", "2", "--d",
               "4", "--n", "100", "--max-steps", "3", "--workers", str(workers), "--out",
               str(out), "--no-progress", "--policy-isolation", isolation, *extra]
    environment = {**os.environ, "HEURESIS_CACHE_DIR": str(cache), "TMPDIR": str(runner_tmp),
                   "ESCAPER_TARGETS": json.dumps(targets or {}),
                   "PROBER_TARGETS": json.dumps(prober or {})}
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    if stderr is not None:
        stderr.append(done.stderr)
    run = load_run(out)
    return [json.loads((out / e.transcript).read_text())[0] for e in run.episodes]


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def accepted(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            connection, _ = server.accept()
        except BlockingIOError:
            return count
        connection.close()
        count += 1


@needs_namespaces
def test_a_confined_policy_writes_nothing_reads_no_runner_folder_and_has_no_network(
        tmp_path, listener):
    other_cache = tmp_path / "cache-policies" / "another-policy"
    other_cache.mkdir(parents=True)
    out = tmp_path / "runs" / "attack"
    targets = {"run_dir": str(out), "other_cache": str(other_cache),
               "runner_tmp": str(tmp_path / "tmp"), "port": listener.getsockname()[1]}
    found = run_policy(tmp_path, ESCAPER, "namespaces", targets=targets)
    assert len(found) == 4
    for report in found:
        assert report["written"] == {}  # route 1: no system, project or venv path
        assert report["runner_folders"] == [] and report["traces"] == []  # route 2
        assert report["own_cache_writable"] is True  # the positive control
        assert not report["other_cache_visible"] and not report["other_cache_written"]
        assert not report["run_dir_visible"] and not report["run_dir_written"]  # route 6
        assert report["connection"].startswith("refused")  # route 9
        assert report["interfaces"] == ["lo"]
        assert report["cap_eff"] == "0000000000000000"
        if os.geteuid() == 0:
            assert report["uid"] >= POLICY_UID_BASE  # a dedicated, unprivileged uid
    assert accepted(listener) == 0
    # nothing the probes tried to create is left anywhere they tried
    assert not list(other_cache.iterdir())


class _Endpoint:
    """An HTTP server on all of the host's addresses answering its name; counts requests."""

    def __init__(self, name: str):
        import http.server
        import threading

        endpoint = self
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                endpoint.requests += 1
                body = name.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def host_addresses() -> list[str]:
    """The host's IPv4 addresses other than loopback (SIOCGIFADDR on each interface)."""
    import fcntl
    import struct

    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s",
                                                                         name.encode()[:15]))
            except OSError:
                continue
            address = socket.inet_ntoa(packed[20:24])
            if not address.startswith("127."):
                found.append(address)
    return found


@needs_namespaces
def test_a_policy_declared_to_need_an_endpoint_reaches_it_and_nothing_else(tmp_path):
    """The policy's network namespace keeps loopback only; the runner's proxy (HTTPS_PROXY in
    the policy) reaches the declared endpoint, refuses another with 403 and a log line, and
    no direct connection leaves the namespace."""
    declared, undeclared = _Endpoint("declared"), _Endpoint("undeclared")
    stderr: list[str] = []
    try:
        targets = {"declared": declared.port, "undeclared": undeclared.port,
                   "addresses": host_addresses()}
        found = run_policy(tmp_path, PROBER, "namespaces", "--policy-network",
                           f"127.0.0.1:{declared.port}", prober=targets, workers=1,
                           stderr=stderr)
    finally:
        declared.close()
        undeclared.close()
    assert found
    for report in found:
        assert report["proxy"].startswith("http://127.0.0.1:") and report["http_proxy"]
        assert report["urllib_declared"] == "200 declared"
        assert report["httpx_declared"] == "200 declared"
        assert report["tunnel_declared"] == "tunnel HTTP/1.0 200 OK declared"
        assert report["urllib_undeclared"] == "403"
        assert report["httpx_undeclared"].startswith("403")
        assert report["tunnel_undeclared"] == "HTTP/1.1 403 Forbidden"
        assert all(outcome.startswith("refused") for outcome in report["direct"].values()), \
            report["direct"]
        assert report["interfaces"] == ["lo"]
    assert undeclared.requests == 0 and declared.requests >= 3  # once per policy process
    assert f"refused CONNECT 127.0.0.1:{undeclared.port}" in stderr[0]
    assert f"refused GET 127.0.0.1:{undeclared.port}" in stderr[0]


def test_a_policy_declared_to_need_the_network_must_name_its_endpoint():
    from heuresis_env.errors import HeuresisError
    from heuresis_env.isolation.endpoint_proxy import policy_endpoints

    with pytest.raises(HeuresisError, match="--policy-network HOST:PORT"):
        policy_endpoints(ESCAPER, {}, True)
    assert policy_endpoints(ESCAPER, {"base_url": "http://127.0.0.1:8080/v1"}, True) == (
        "127.0.0.1:8080",)
    assert policy_endpoints("llm", {}, False, {}) == ("api.openai.com:443",
                                                     "api.anthropic.com:443")
    assert policy_endpoints("llm", {}, False, {"OPENAI_BASE_URL": "https://h.example/v1"}) == (
        "h.example:443",)
    with pytest.raises(HeuresisError, match="HOST:PORT"):
        policy_endpoints(ESCAPER, {}, ["no-port"])


def test_the_endpoint_variables_are_those_of_the_llm_backends():
    from agents.llm.connection import ENV_BASE_URL, SERVICE_VARIABLES
    from heuresis_env.isolation.endpoint_proxy import ENDPOINT_VARIABLES

    assert set(ENDPOINT_VARIABLES) == {ENV_BASE_URL, *(url for _, url in
                                                       SERVICE_VARIABLES.values())}


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:  # gone before (FileNotFoundError) or while (ProcessLookupError) /proc was read
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("isolation", ["process", pytest.param("namespaces",
                                                               marks=needs_namespaces)])
def test_no_daemon_of_a_policy_outlives_its_run(tmp_path, isolation):
    found = run_policy(tmp_path, DAEMONIZER, isolation, workers=1)
    daemons = {report["daemon"] for report in found if report["daemon"]}
    assert daemons
    if isolation == "namespaces":
        return  # its pid is one of its PID namespace: the namespace is gone, so is it
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in daemons) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [pid for pid in daemons if alive(pid)]
    for pid in survivors:  # never leave one behind, even when the test fails
        os.kill(pid, 9)
    assert survivors == []


@pytest.mark.parametrize("launcher", ["1", "0"])
def test_no_daemon_outlives_a_runner_killed_with_sigkill(tmp_path, launcher):
    """Route 8 when the runner itself dies without clean-up (SIGKILL): its launcher (or, with
    the launcher off, the supervisor's parent-death signal) sends the supervisor SIGTERM, and
    the supervisor kills the policy's whole tree, the double-forked daemon included."""
    import signal

    pidfile = tmp_path / "daemon.pid"
    command = [sys.executable, "-m", "heuresis_env.cli", "evaluate", "--policy", DAEMONIZER,
               "--family", "lg", "--split", "dev", "--count", "1", "--d", "4", "--n", "100",
               "--max-steps", "3", "--workers", "1", "--out", str(tmp_path / "run"),
               "--no-progress", "--policy-isolation", "process"]
    environment = {**os.environ, "HEURESIS_CACHE_DIR": str(tmp_path / "cache"),
                   "DAEMONIZER_PIDFILE": str(pidfile), "HEURESIS_POLICY_LAUNCHER": launcher}
    runner = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not pidfile.exists() and runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if not pidfile.exists():
        runner.kill()
        pytest.fail(f"the policy never reported its daemon: {runner.communicate()[1][-3000:]}")
    daemon, policy = (int(v) for v in pidfile.read_text().split())
    assert alive(daemon) and alive(policy)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    deadline = time.monotonic() + 15
    while (alive(daemon) or alive(policy)) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [pid for pid in (daemon, policy) if alive(pid)]
    for pid in survivors:  # never leave one behind, even when the test fails
        os.kill(pid, 9)
    assert survivors == []


def test_auto_isolation_without_namespaces_refuses_an_unregistered_policy(tmp_path,
                                                                         monkeypatch):
    from heuresis_env.errors import HeuresisError
    from heuresis_env.evaluation import runner

    monkeypatch.setattr(runner, "confinement_available", lambda: "mount namespace (denied)")
    with pytest.raises(HeuresisError, match="--policy-isolation process"):
        runner._resolve_policy_isolation("auto", tmp_path / "run", ESCAPER)
    assert runner._resolve_policy_isolation("process", tmp_path / "run", ESCAPER) == "process"
    assert runner._resolve_policy_isolation("auto", tmp_path / "run", "pc-fisherz") == "process"


@needs_namespaces
def test_confined_and_plain_runs_of_one_policy_keep_apart_caches(tmp_path, monkeypatch):
    """Confined by root, a policy runs as its own uid and writes files only that uid reads;
    its plain runs (uid 0 without capabilities) keep another folder, so neither finds the
    other's unreadable entries (a regression: bca's reference cache)."""
    from heuresis_env.evaluation import evaluate
    from heuresis_env.policy import EpisodeSettings

    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path / "cache"))
    options = {"families": ["wild"], "split": "dev", "count": 1, "d": 6, "n": 200,
               "settings": EpisodeSettings(max_steps=12, max_seconds=300.0), "progress": False}
    scores = []
    for number, isolation in enumerate(("process", "namespaces", "process")):
        out = tmp_path / f"run{number}"
        evaluate("bca", out_dir=out, policy_isolation=isolation, **options)
        (record,) = load_run(out).episodes
        assert record.error is None, record.error
        scores.append(record.score("f1"))
    assert len(set(scores)) == 1
