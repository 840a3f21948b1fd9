"""The adversarial suite as a normal user (issue 30: every route fails "as root and as a normal
user"). Run as root (as in CI), these tests create a normal user when there is none
(``useradd``) and re-run a small part of the suite as that user, with ``runuser``:

- where the user has namespaces (unprivileged user namespaces), the confinement test of
  routes 1, 2, 3, 6 and 9 passes as that user (the confinement then uses a user namespace);
- where namespaces are denied (emulated with a seccomp filter that refuses ``unshare``,
  ``setns`` and namespace flags of ``clone``, as container runtimes' default profiles do),
  ``heuresis evaluate`` says so at start and refuses an unregistered policy unless
  ``--policy-isolation process`` is asked for by name, refuses ``namespaces``, and runs a
  registered policy in a plain process saying so.

The interpreter may lie in a folder other users cannot enter (here ``/root``, mode 0700): the
user's commands then run in a private mount namespace in which those folders are covered by
an empty, traversable tmpfs with only the interpreter's, the virtual environment's and the
project's folders carried over (nothing on the machine changes). As a normal user already, the
whole suite runs as one (``pytest tests/adversarial``), so these are skipped; ``make
test-unprivileged`` runs the whole adversarial suite as the user.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER = os.environ.get("HEURESIS_TEST_USER", "heuresis-adversary")
ESCAPER = "tests.adversarial.adversarial_policies:Escaper"
#: slow; one at a time under pytest -n (both tests create the same system user with useradd)
pytestmark = [pytest.mark.slow, pytest.mark.machine_wide("system-user")]

#: run as root in ``unshare -m``: cover each folder on the way to the needed paths that others
#: cannot enter, carry the needed paths over, then become the user (argv: paths, "--", command)
AS_USER = r"""
import os, subprocess, sys, tempfile
split = sys.argv.index("--")
needed, command = sys.argv[1:split], sys.argv[split + 1:]
def closed(path):
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        folder = "/" + "/".join(parts[:depth])
        if not os.stat(folder).st_mode & 0o001:
            yield folder
covers = sorted({folder for path in needed for folder in closed(path)}, key=len)
covers = [c for c in covers if not any(c.startswith(o + "/") for o in covers if o != c)]
for folder in covers:
    inside = [p for p in needed if p.startswith(folder + "/")]
    stages = []
    for path in inside:
        stage = tempfile.mkdtemp(prefix="heuresis-stage-")
        subprocess.run(["mount", "--bind", path, stage], check=True)
        stages.append((stage, path))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=1m", "tmpfs", folder],
                   check=True)
    for stage, path in stages:
        os.makedirs(path, exist_ok=True)
        subprocess.run(["mount", "--move", stage, path], check=True)
        os.rmdir(stage)
os.execvp("runuser", ["runuser", "-u", os.environ["HEURESIS_TEST_USER"], "--", *command])
"""

#: denies namespaces as a container runtime's default seccomp profile does, then runs argv
NO_NAMESPACES = ("import os, sys\n"
                 "from heuresis_env.isolation import linux\n"
                 "linux.check(linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1), 'no_new_privs')\n"
                 "status = linux.install_seccomp_filter(('unshare', 'setns'))\n"
                 "assert status == 'installed', status\n"
                 "os.execv(sys.argv[1], sys.argv[1:])\n")


def _normal_user() -> str:
    if os.geteuid() != 0:
        pytest.skip("already a normal user: the adversarial suite itself runs as one")
    if not sys.platform.startswith("linux"):
        pytest.skip("runuser and mount namespaces are Linux's")
    for tool in ("useradd", "runuser", "unshare", "mount"):
        if shutil.which(tool) is None:
            pytest.skip(f"no {tool} here: cannot run the suite as a normal user")
    exists = subprocess.run(["id", "-u", USER], capture_output=True)
    if exists.returncode != 0:
        made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin",
                               USER], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"useradd {USER} failed: {made.stderr.strip()}")
    return USER


def _needed_paths() -> list[str]:
    return sorted({os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, ROOT,
                                                 os.path.dirname(os.path.realpath(
                                                     sys.executable)))})


def as_user(command: list[str], home: Path, timeout: float = 600,
            **environment: str) -> subprocess.CompletedProcess:
    """Run ``command`` as the normal user, in the project's folder, with a fresh cache."""
    user = _normal_user()
    home.mkdir(parents=True, exist_ok=True)
    shutil.chown(home, user, user)
    cache = home / "cache"
    cache.mkdir(exist_ok=True)
    shutil.chown(cache, user, user)
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1",
           "HEURESIS_CACHE_DIR": str(cache), "TMPDIR": str(home), "HEURESIS_TEST_USER": user,
           "LANG": "C.UTF-8", **environment}
    full = ["unshare", "-m", "--propagation", "private", sys.executable, "-c", AS_USER,
            *_needed_paths(), "--", "env", *(f"{k}={v}" for k, v in env.items()), *command]
    return subprocess.run(full, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env=env)


@pytest.fixture
def home():
    folder = Path(tempfile.mkdtemp(prefix="heuresis-user-", dir="/tmp"))
    os.chmod(folder, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_confinement_holds_as_a_normal_user(home):
    """Routes 1, 2, 3, 6, 9 as a normal user: the policy writes nothing (the read-only mounts
    protect even the user's own files), sees no runner folder, no other cache, no run
    directory, no network. Where the user has no namespaces the test asserts the refusal."""
    probe = as_user([sys.executable, "-c", "import os; from heuresis_env.evaluation."
                     "policy_process import confinement_available as c; "
                     "print(os.getuid(), c() or 'available')"], home)
    assert probe.returncode == 0, probe.stderr[-3000:]
    uid, reason = probe.stdout.split(maxsplit=1)
    assert int(uid) == int(subprocess.check_output(["id", "-u", USER])) != 0
    if reason.strip() != "available":  # no user namespaces for this user here
        refused = as_user([sys.executable, "-m", "heuresis_env.cli", "evaluate", "--policy",
                           ESCAPER, "--family", "lg", "--count", "1", "--d", "4", "--n", "100",
                           "--out", str(home / "run"), "--no-progress"], home)
        assert refused.returncode != 0 and "--policy-isolation process" in refused.stderr
        return
    done = as_user([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "tests/adversarial/test_confinement.py::"
                    "test_a_confined_policy_writes_nothing_reads_no_runner_folder_and_has_no_"
                    "network", "--basetemp", str(home / "pytest")], home)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "1 passed" in done.stdout


def test_without_namespaces_a_normal_user_is_told_and_an_unregistered_policy_refused(home):
    evaluate = [sys.executable, "-c", NO_NAMESPACES, sys.executable, "-m", "heuresis_env.cli",
                "evaluate", "--family", "lg", "--split", "dev", "--count", "1", "--d", "4",
                "--n", "100", "--max-steps", "2", "--no-progress"]
    refused = as_user([*evaluate, "--policy", ESCAPER, "--out", str(home / "a")], home)
    assert refused.returncode != 0
    assert "cannot be confined on this machine" in refused.stderr, refused.stderr[-3000:]
    assert "--policy-isolation process" in refused.stderr
    insisted = as_user([*evaluate, "--policy", ESCAPER, "--policy-isolation", "namespaces",
                        "--out", str(home / "b")], home)
    assert insisted.returncode != 0
    assert "'namespaces' is not available" in insisted.stderr, insisted.stderr[-3000:]
    registered = as_user([*evaluate, "--policy", "pc-fisherz", "--out", str(home / "c")], home)
    assert registered.returncode == 0, registered.stderr[-3000:]
    assert "run unconfined in a plain process here" in registered.stderr


if __name__ == "__main__":  # make test-unprivileged: python -m tests.adversarial.test_unprivileged
    home_folder = Path(tempfile.mkdtemp(prefix="heuresis-user-", dir="/tmp"))
    os.chmod(home_folder, 0o755)
    try:
        arguments = sys.argv[1:] or ["tests/adversarial", "tests/env/test_sandbox.py",
                                     "tests/env/test_sandbox_setup.py"]
        completed = as_user([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "--basetemp", str(home_folder / "pytest"), *arguments],
                            home_folder, timeout=3600)
    except pytest.skip.Exception as exc:
        print(f"test-unprivileged: skipped: {exc}")
        sys.exit(0)
    finally:
        shutil.rmtree(home_folder, ignore_errors=True)
    print(completed.stdout + completed.stderr)
    sys.exit(completed.returncode)
