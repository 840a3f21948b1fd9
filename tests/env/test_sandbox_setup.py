"""The sandbox's configuration and its parts: isolation levels refused or chosen, bad
configuration, the output capture, the mounts, the result's text and the doctor (the attacks
and legitimate analyses are tests/env/test_sandbox.py)."""

from __future__ import annotations

import argparse
import ast
import json

import numpy as np
import pytest

from heuresis_env.env.sandbox import (
    IsolationUnavailableError,
    Sandbox,
    SandboxLimits,
    SandboxResult,
    detect_isolation,
    doctor_report,
)
from heuresis_env.env.sandbox.runner import OutputCapture
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError
from heuresis_env.isolation.detection import resolve_isolation, sandbox_mounts, unique_outermost
from tests.env.sandbox_fixtures import NAMES, assert_next_call_works, make_data, needs_namespaces


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return make_data()


# -- weak isolation, configuration ------------------------------------------------------------


def test_weak_isolation_is_refused_without_opt_in(data):
    with pytest.raises(IsolationUnavailableError, match="allow_weak_isolation=True"):
        Sandbox(data, NAMES, isolation="none")
    with pytest.raises(UnknownNameError, match="Known isolation levels: auto, namespaces"):
        Sandbox(data, NAMES, isolation="chroot")


def test_auto_refuses_a_machine_without_namespaces(monkeypatch):
    detected = dict(detect_isolation())
    detected["levels"] = {"namespaces": ["net namespace (Operation not permitted)"],
                          "unprivileged": [], "none": []}
    detected["best"] = "unprivileged"
    monkeypatch.setattr("heuresis_env.isolation.detection.detect_isolation", lambda: detected)
    with pytest.raises(IsolationUnavailableError) as caught:
        resolve_isolation("auto", allow_weak_isolation=False)
    message = str(caught.value)
    assert "net namespace (Operation not permitted)" in message
    assert "allow_weak_isolation=True" in message and "heuresis doctor" in message
    assert resolve_isolation("auto", allow_weak_isolation=True) == ("unprivileged", "setuid")
    with pytest.raises(IsolationUnavailableError, match="not available here"):
        resolve_isolation("namespaces", allow_weak_isolation=True)


def test_unavailable_level_names_what_is_missing(data):
    missing = detect_isolation()["levels"]["unprivileged"]
    if not missing:
        pytest.skip("unprivileged isolation is available on this machine")
    with pytest.raises(IsolationUnavailableError, match="not available here; it lacks"):
        Sandbox(data, NAMES, isolation="unprivileged", allow_weak_isolation=True)


def test_none_isolation_still_limits_and_reports(data):
    with Sandbox(data, NAMES, SandboxLimits(wall_seconds=2, cpu_seconds=2), isolation="none",
                 allow_weak_isolation=True) as box:
        assert box.level == "none"
        assert box.run("float(X[:, 0].mean())").value == repr(float(data[:, 0].mean()))
        assert box.run("while True: pass").status == "timeout"
        assert box.run("b = bytearray(30 * 2**30)").status == "memory"
        assert box.run("import ctypes; ctypes.string_at(0)").status == "killed"
        env = ast.literal_eval(box.run("import os; sorted(os.environ)").value)
        assert "HEURESIS_CACHE_DIR" not in env  # a clean environment even here
        assert_next_call_works(box)


def test_bad_configuration_raises():
    X = make_data(20)
    with pytest.raises(DataError, match="2-D"):
        Sandbox(X[:, 0], NAMES)
    with pytest.raises(DataError, match="one name per column"):
        Sandbox(X, NAMES[:3])
    with pytest.raises(DataError, match="numbers"):
        Sandbox(np.array([["a", "b"]]), ["p", "q"])
    with pytest.raises(HeuresisError, match="code must be a string"):
        with Sandbox(X, NAMES, allow_weak_isolation=True, prewarm=False) as box:
            box.run(b"1")
    for bad in ({"cpu_seconds": 0}, {"memory_bytes": "2G"}, {"max_processes": True},
                {"wall_seconds": -1}, {"output_bytes": 1.5}):
        with pytest.raises(HeuresisError, match="SandboxLimits"):
            SandboxLimits(**bad)


# -- pieces -----------------------------------------------------------------------------------


def test_output_capture_keeps_head_and_tail():
    capture = OutputCapture(cap=100)
    capture.feed(b"a" * 50)
    assert not capture.truncated and capture.text() == "a" * 50
    capture.feed(b"b" * 50)
    assert not capture.truncated and capture.text() == "a" * 50 + "b" * 50
    capture.feed(b"c" * 1000 + b"END")
    assert capture.truncated and capture.total == 1103
    text = capture.text()
    assert text.startswith("a" * 50 + "b" * 25)  # head: cap - tail (25 bytes)
    assert text.endswith("c" * 22 + "END")
    assert "1,003 bytes of output omitted" in text  # 1103 - 100 kept
    unicode = OutputCapture(cap=64)
    unicode.feed("é".encode() * 10)
    assert unicode.text() == "é" * 10


def test_a_bound_folder_holding_the_cache_is_refused():
    with pytest.raises(IsolationUnavailableError, match="would expose /usr/share/heuresis"):
        sandbox_mounts(forbidden=["/usr/share/heuresis"])
    assert "/usr" in sandbox_mounts(forbidden=["/tmp/cache"])["read_only_binds"]


def test_unique_outermost_drops_nested_paths():
    assert unique_outermost(["/usr/lib", "/usr", "/opt/py/lib", "/opt/py", "/usr"]) == [
        "/usr", "/opt/py"]
    assert unique_outermost(["/usr2", "/usr"]) == ["/usr", "/usr2"]


def test_result_text_for_each_status():
    timeout = SandboxResult(status="timeout", message="the code ran past the wall-clock limit",
                            traceback="Traceback ...", duration_s=3.2)
    assert timeout.to_text().splitlines()[0] == (
        "status: timeout (3.20 s): the code ran past the wall-clock limit")
    assert "--- traceback ---\nTraceback ..." in timeout.to_text()
    assert SandboxResult(status="ok", value="3").to_text() == (
        "status: ok (0.00 s)\n--- value ---\n3")


@needs_namespaces
def test_doctor_reports_and_self_tests(capsys):
    report = doctor_report()
    assert "namespaces    available" in report
    assert "Self-test (isolation 'namespaces'): ok" in report
    assert "Seccomp 2" in report and "CapEff 0000000000000000" in report
    assert "listener saw no connection" in report and "not visible" in report
    from heuresis_env.cli import doctor

    parser = argparse.ArgumentParser()
    doctor.add_arguments(parser)
    assert doctor.run(parser.parse_args(["--json"])) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["best"] == "namespaces" and printed["levels"]["namespaces"] == []

