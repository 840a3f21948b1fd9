"""Policy processes forked from a launcher (``heuresis_env.isolation.launcher``): one
scrubbed interpreter per runner that has imported the package, so a policy process starts in
a fork instead of a fresh interpreter. What a fresh policy process had must still hold: no
salt, its own session, fresh randomness, death with its starter, and no way for a policy to
read or change what the next policy process starts from."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.policy_process import (
    PolicyProcessError,
    PolicyProxy,
    policy_cache_directory,
    policy_environment,
    policy_key,
)
from heuresis_env.generation.instances import TEST_SALT_ENV
from heuresis_env.isolation.launcher import (
    LAUNCHER_VARIABLE,
    close_launchers,
    launcher_for,
)

PROBE = "tests.evaluation.eval_policies:ProcessProbe"


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def gone(pid: int, seconds: float = 10.0) -> bool:
    """Whether ``pid`` has exited (or is a zombie) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # gone before (FileNotFoundError) or while (ProcessLookupError) reading
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(autouse=True)
def fresh_launchers(monkeypatch):
    monkeypatch.setenv(TEST_SALT_ENV, "launcher-test-salt")
    monkeypatch.delenv(LAUNCHER_VARIABLE, raising=False)
    close_launchers()
    yield
    close_launchers()


def test_policy_processes_are_forks_of_one_launcher_that_holds_no_salt():
    first, second = (PolicyProxy(PROBE, isolation="process", salt="launcher-test-salt")
                     for _ in range(2))
    try:
        reports = [proxy.usage() for proxy in (first, second)]
        # each policy process is the child of its supervisor (a subreaper holding its whole
        # process tree), a fork of the launcher
        supervisors = [report["parent"] for report in reports]
        launcher = parent_of(supervisors[0])
        assert parent_of(supervisors[1]) == launcher != os.getpid()
        assert parent_of(launcher) == os.getpid()  # the runner started the launcher
        assert b"serve_launches" in Path(f"/proc/{launcher}/cmdline").read_bytes()
        environment = Path(f"/proc/{launcher}/environ").read_bytes().split(b"\0")
        assert not any(b"launcher-test-salt" in entry for entry in environment)
        own_cache = policy_cache_directory(policy_key(PROBE, {}))  # the policy's own folder
        assert f"HEURESIS_CACHE_DIR={own_cache}".encode() in environment
        # each policy process: its own session; the launcher's memory out of its reach;
        # NumPy's global generator seeded afresh, not copied from the launcher
        for report in reports:
            assert os.getsid(report["pid"]) == report["parent"]  # its supervisor's session
            assert report["parent_memory_readable"] is False
        assert reports[0]["numpy_draw"] != reports[1]["numpy_draw"]
        status = launcher_for(policy_environment("launcher-test-salt", own_cache)).status()
        assert status["pid"] == launcher and status["dumpable"] == 0
        assert sorted(status["children"]) == sorted(supervisors)
    finally:
        first.close()
        second.close()


def test_a_policy_process_that_dies_is_reported_and_replaced_by_a_new_fork():
    proxy = PolicyProxy(PROBE, isolation="process")
    try:
        pid = proxy.usage()["pid"]
        os.kill(pid, signal.SIGSEGV)
        assert gone(pid)
        with pytest.raises(PolicyProcessError, match=r"died \(SIGSEGV\)"):
            proxy.usage()
        proxy._ensure_running()  # what the next reset does
        assert proxy.usage()["pid"] != pid
    finally:
        proxy.close()


def test_when_the_launcher_dies_its_policy_processes_die_and_a_new_launcher_takes_over():
    proxy = PolicyProxy(PROBE, isolation="process")
    try:
        report = proxy.usage()
        os.kill(parent_of(report["parent"]), signal.SIGKILL)  # the launcher
        assert gone(report["parent"]) and gone(report["pid"])  # PR_SET_PDEATHSIG, twice
        with pytest.raises(PolicyProcessError):
            proxy.usage()
        replacement = PolicyProxy(PROBE, isolation="process")
        try:
            assert replacement.usage()["parent"] not in (report["parent"], os.getpid())
        finally:
            replacement.close()
    finally:
        proxy.kill()


def test_closing_the_launchers_ends_their_policy_processes():
    proxy = PolicyProxy(PROBE, isolation="process")
    report = proxy.usage()
    close_launchers()
    assert gone(report["parent"]) and gone(report["pid"])
    proxy.kill()


def test_with_the_launcher_turned_off_each_policy_process_is_a_fresh_interpreter(monkeypatch):
    monkeypatch.setenv(LAUNCHER_VARIABLE, "0")
    proxy = PolicyProxy(PROBE, isolation="process")
    try:
        report = proxy.usage()
        assert parent_of(report["parent"]) == os.getpid()  # through its supervisor
        assert b"policy_process import main" in Path(f"/proc/{report['pid']}/cmdline").read_bytes()
    finally:
        proxy.close()


def test_a_policy_that_cannot_be_built_in_a_fork_names_the_problem():
    with pytest.raises(HeuresisError, match="could not be built: RuntimeError: this policy "
                                            "cannot be built here"):
        PolicyProxy("tests.evaluation.eval_policies:fails_in_worker", isolation="process")
    proxy = PolicyProxy(PROBE, isolation="process")  # the launcher is unharmed
    proxy.close()
