"""Issue 46, routes 1, 4 and 12 (the policy's module): what a policy process reaches.

1. Other runs' files: on main a confined policy read an earlier run's results (an oracle's on
   a sealed split gives the true graphs) under the working folder. Run folders are now their
   owner's only (0700/0600 whatever the umask) and every run folder near the working folder
   and the checkout is covered for a confined policy.
4. ``process`` isolation: on main a policy killed its supervisor first, and its double-forked
   daemon outlived the run as uid 0. Under root the supervisor now runs as another uid with
   ``CAP_KILL`` only, so the policy (root's uid, no capability) cannot signal it, and the
   supervisor kills the whole tree, daemon included. (The policy keeps root's uid: Python
   and its packages often live in /root; ``namespaces`` is the level for untrusted code.)
12. A policy module in a folder only its owner can read: the error says so, instead of
   asking whether it is on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.policy_process import confinement_available
from heuresis_env.evaluation.run_format import load_run

ROOT = Path(__file__).resolve().parents[2]
READER = "tests.adversarial.adversarial_policies:RunReader"
KILLER = "tests.adversarial.adversarial_policies:SupervisorKiller"
needs_namespaces = pytest.mark.skipif(confinement_available() is not None,
                                      reason=f"no namespaces here: {confinement_available()}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the policy's own uid needs root")
SMALL = ["--family", "lg", "--split", "dev", "--count", "1", "--d", "4", "--n", "100",
         "--max-steps", "3", "--max-seconds", "120", "--workers", "1", "--no-progress"]


def _evaluate(spec: str, out: Path, isolation: str, cwd: Path, **environment: str
              ) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "heuresis_env.cli", "evaluate", "--policy", spec,
               "--out", str(out), "--policy-isolation", isolation, *SMALL]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **environment})


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[-1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_run_folders_are_private_whatever_the_umask(tmp_path):
    previous = os.umask(0)
    try:
        evaluate("pc-fisherz", families=["lg"], count=1, d=4, n=100, progress=False,
                 out_dir=tmp_path / "run", policy_isolation="process")
    finally:
        os.umask(previous)
    run = tmp_path / "run"
    assert run.stat().st_mode & 0o777 == 0o700
    for path in run.rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert path.stat().st_mode & 0o777 == expected, path


@needs_namespaces
def test_a_confined_policy_sees_no_run_folder(tmp_path):
    work = Path(tempfile.mkdtemp(prefix="heuresis-work-"))  # others may enter, as a home is
    try:
        os.chmod(work, 0o755)
        # an earlier run as runs written before run folders were private: world-readable
        old = work / "runs" / "oracle"
        (old / "traces").mkdir(parents=True)
        (old / "config.json").write_text(json.dumps({"policy": "oracle"}))
        (old / "results.jsonl").write_text('{"final_graph": "the true graph"}\n')
        for path in (work / "runs", old, old / "traces"):
            os.chmod(path, 0o755)
        for path in (old / "config.json", old / "results.jsonl"):
            os.chmod(path, 0o644)
        # and one written now, under the working folder too
        evaluate("pc-fisherz", families=["lg"], count=1, d=4, n=100, progress=False,
                 out_dir=work / "runs" / "earlier", policy_isolation="process")
        done = _evaluate(READER, tmp_path / "attack", "namespaces", work,
                         READER_ROOTS=json.dumps([str(ROOT)]))
        assert done.returncode == 0, done.stderr[-3000:]
        run = load_run(tmp_path / "attack")
        read = json.loads((tmp_path / "attack" / run.episodes[0].transcript).read_text())
        assert read[0]["read"] == []
    finally:
        subprocess.run(["rm", "-rf", str(work)], check=False)


@needs_root
def test_a_process_level_policy_cannot_kill_its_supervisor_and_leaves_nothing_behind(tmp_path):
    shared = Path(tempfile.mkdtemp(prefix="heuresis-killer-"))
    target = Path(tempfile.mkdtemp(prefix="heuresis-root-owned-"))
    try:
        os.chmod(shared, 0o777)
        os.chmod(target, 0o755)  # root's: only root may write it
        report = shared / "daemon"
        done = _evaluate(KILLER, tmp_path / "attack", "process", ROOT,
                         KILLER_REPORT=str(report), KILLER_TARGET=str(target))
        assert report.exists(), done.stderr[-3000:]
        pid, _, _ = (int(v) for v in report.read_text().split())
        deadline = time.monotonic() + 15
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        survived = _alive(pid)
        if survived:
            os.kill(pid, 9)
        assert not survived
        # the supervisor runs as another uid, keeping only CAP_KILL: the policy cannot kill it
        assert (Path(str(report) + ".supervisor").read_text() == "PermissionError")
    finally:
        subprocess.run(["rm", "-rf", str(shared), str(target)], check=False)


@needs_namespaces
@needs_root
def test_a_policy_module_its_user_cannot_read_is_explained(tmp_path):
    private = Path(tempfile.mkdtemp(prefix="heuresis-private-"))  # 0700, as mktemp -d makes
    try:
        (private / "my_private_policy.py").write_text(
            "from baselines.policies import algorithm_policy as make\n")
        done = subprocess.run(
            [sys.executable, "-m", "heuresis_env.cli", "evaluate", "--policy",
             "my_private_policy:make", "--out", str(tmp_path / "run"),
             "--policy-isolation", "namespaces", *SMALL],
            cwd=ROOT, capture_output=True, text=True, timeout=600,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(private), str(ROOT)])})
        assert done.returncode != 0
        assert "cannot read" in done.stderr and "0700" in done.stderr, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
    finally:
        subprocess.run(["rm", "-rf", str(private)], check=False)
