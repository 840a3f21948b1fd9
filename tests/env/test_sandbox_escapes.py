"""The sandbox against the escapes of issue 18: a Python installed anywhere on the host (``/tmp``,
``/dev/shm``, a path with spaces), every copy of the project's packages out of reach, no
process of the code outliving its call, and a result channel the code cannot forge.

These run real sandboxes (``namespaces`` isolation) and real interpreters in temporary
virtual environments; they are skipped on a machine without namespaces.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

import heuresis_env
import heuresis_env.env.sandbox.runner as runner
from heuresis_env.env.sandbox import Sandbox, SandboxLimits, detect_isolation
from heuresis_env.isolation import detection as isolation

NAMESPACES_MISSING = detect_isolation()["levels"]["namespaces"]
pytestmark = pytest.mark.skipif(
    bool(NAMESPACES_MISSING),
    reason=f"namespaces isolation unavailable: {'; '.join(NAMESPACES_MISSING)}")

NAMES = ["X1", "X2", "X3"]
SHORT = SandboxLimits(cpu_seconds=3, wall_seconds=4)
CHECKOUT = Path(heuresis_env.__file__).resolve().parents[1]
SITE_PACKAGES = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(50, 3))


def dependency_paths() -> list[str]:
    """The folders this interpreter imports its dependencies from (NumPy, SciPy, ...), without
    the project checkout."""
    paths = []
    for entry in sys.path:
        real = os.path.realpath(entry) if entry else ""
        if (real and os.path.isdir(real) and real.endswith(("site-packages", "dist-packages"))
                and not (Path(real) / "heuresis_env").is_dir()):
            paths.append(real)
    return list(dict.fromkeys(paths))


def make_venv(where: Path, with_checkout: bool) -> Path:
    """A virtual environment at ``where`` that sees this interpreter's packages through a .pth
    file (and the checkout when asked); returns its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    lines = dependency_paths() + ([str(CHECKOUT)] if with_checkout else [])
    (where / SITE_PACKAGES / "heuresis-test-dependencies.pth").write_text("\n".join(lines) + "\n")
    return where / "bin" / "python"


SANDBOX_SCRIPT = """
import json, sys
import numpy as np
from heuresis_env.env.sandbox import Sandbox, SandboxLimits
code = sys.argv[1]
with Sandbox(np.arange(12.0).reshape(6, 2), ["a", "b"], SandboxLimits(wall_seconds=30),
             prewarm=False) as box:
    result = box.run(code)
print(json.dumps({"status": result.status, "value": result.value, "text": result.to_text(),
                  "heuresis_env": __import__("heuresis_env").__file__}))
"""


def run_sandbox_with(python: Path, code: str, cwd: Path) -> dict:
    completed = subprocess.run([str(python), "-c", SANDBOX_SCRIPT, code], cwd=cwd,
                               capture_output=True, text=True, timeout=600,
                               env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


# -- item 1: any path of the host ------------------------------------------------------------


def test_root_layout_never_puts_a_link_or_the_scratch_on_a_bound_path():
    root_layout, candidates = isolation.root_layout, isolation.SCRATCH_CANDIDATES
    for binds in (["/usr"], ["/usr", "/tmp/a b/.venv/lib/python3.11/site-packages"],
                  ["/usr", "/scratch/envs/py"], ["/usr", "/dev/shm/venv"],
                  ["/usr", "/scratch/x", "/sandbox-scratch/y"], ["/usr", "/tmp"]):
        layout = root_layout(binds)
        scratch = layout["scratch_dir"]
        assert scratch in candidates
        for path in [scratch, *layout["root_links"]]:
            for bind in binds:
                assert not (bind == path or bind.startswith(path + "/")
                            or path.startswith(bind + "/")), (path, bind)
        assert all(target == scratch for link, target in layout["root_links"].items()
                   if link in ("/tmp", "/dev/shm"))
    assert root_layout(["/usr"]) == {"scratch_dir": "/scratch", "root_links": {
        "/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0",
        "/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2",
        "/dev/shm": "/scratch", "/tmp": "/scratch"}, "scratch_views": []}
    # a bind under /tmp: /tmp is no link but a second view of the scratch, holding the bind
    layout = root_layout(["/usr", "/tmp/venv", "/dev/shm/py"])
    assert "/tmp" not in layout["root_links"] and "/dev/shm" not in layout["root_links"]
    assert layout["scratch_views"] == ["/tmp", "/dev/shm"]
    assert root_layout(["/usr", "/tmp"])["scratch_views"] == []  # /tmp itself bound
    assert root_layout(["/usr", "/scratch/venv"])["scratch_dir"] == "/sandbox-scratch"


def _shm_base() -> Path | None:
    base = Path("/dev/shm")
    return base if base.is_dir() and os.access(base, os.W_OK) else None


@pytest.mark.parametrize("where", ["tmp", "a path with spaces", "dev-shm"])
def test_sandbox_runs_with_its_python_under_any_host_path(where, tmp_path):
    if where == "dev-shm":
        base = _shm_base()
        if base is None:
            pytest.skip("no writable /dev/shm")
        root = Path(os.path.realpath(base)) / f"heuresis-test-{uuid.uuid4().hex[:8]}"
    elif where == "a path with spaces":
        root = tmp_path / "with space" / "and another"
    else:
        root = tmp_path / "venv-root"
    try:
        python = make_venv(root / "venv", with_checkout=True)
        site = str(root / "venv" / SITE_PACKAGES)
        code = ("import os, tempfile, scipy\n"
                "path = tempfile.mkstemp()[1]\n"
                "open(path, 'w').write('scratch works')\n"
                "open('/tmp/plain.txt', 'w').write('/tmp works')\n"  # code that assumes /tmp
                "open('/dev/shm/shm.txt', 'w').write('/dev/shm works')\n"
                f"(float(X.sum()), open(path).read(), os.path.isdir({site!r}),\n"
                " open(os.path.join(tempfile.gettempdir(), 'plain.txt')).read(),\n"
                " open('/dev/shm/shm.txt').read())")
        outcome = run_sandbox_with(python, code, tmp_path)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert outcome["status"] == "ok", outcome["text"]
    assert outcome["value"] == "(66.0, 'scratch works', True, '/tmp works', '/dev/shm works')"


# -- item 2: every copy of the project's packages --------------------------------------------


PROBE_OWN_PACKAGES = """
import importlib, importlib.util, os, sys
# brute force: every folder a regular install could use, added to the import path
for root in list(sys.path):
    for dirpath, dirnames, _ in os.walk(root):
        if dirpath.endswith(("site-packages", "dist-packages")) and dirpath not in sys.path:
            sys.path.append(dirpath)
        if dirpath.count(os.sep) - root.count(os.sep) > 4:
            dirnames[:] = []
found = {}
for name in ("heuresis_env", "agents", "baselines", "heuresis_env.generation.instances"):
    try:
        module = importlib.import_module(name)
    except Exception:
        continue
    # an empty folder imports as an empty namespace package: no code, nothing found
    code = [getattr(module, "__file__", None)] + [
        folder for folder in getattr(module, "__path__", []) if os.listdir(folder)]
    if any(code):
        found[name] = code
found
"""


@pytest.mark.slow
def test_a_regular_install_beside_the_checkout_is_not_importable_inside(tmp_path):
    """A real non-editable install in a virtual environment, run from a checkout of the
    project (the parent imports the checkout, the install sits in site-packages)."""
    source = tmp_path / "checkout"
    shutil.copytree(CHECKOUT, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "runs", "__pycache__", "*.egg-info", "build", ".pytest_cache"))
    python = make_venv(tmp_path / "venv", with_checkout=False)
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(source)],
        capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    site_copy = tmp_path / "venv" / SITE_PACKAGES / "heuresis_env"
    assert site_copy.is_dir()
    outcome = run_sandbox_with(python, PROBE_OWN_PACKAGES, cwd=source)
    assert outcome["heuresis_env"].startswith(str(source))  # the parent found the checkout
    assert outcome["status"] == "ok", outcome["text"]
    assert outcome["value"] == "{}"
    # the same from the install alone (another working folder)
    outcome = run_sandbox_with(python, PROBE_OWN_PACKAGES, cwd=tmp_path)
    assert outcome["heuresis_env"].startswith(str(tmp_path / "venv"))
    assert outcome["status"] == "ok" and outcome["value"] == "{}", outcome["text"]


def test_the_sandbox_refuses_to_run_when_a_project_package_stays_importable(data, monkeypatch):
    """Should a copy escape the covering, the start-up import check refuses to run code.
    Forced by declaring scikit-learn, which is surely importable, one of our packages."""
    real_mounts = runner.sandbox_mounts

    def with_sklearn_as_ours(forbidden):
        return {**real_mounts(forbidden), "own_packages": ["sklearn"]}

    monkeypatch.setattr(runner, "sandbox_mounts", with_sklearn_as_ours)
    with Sandbox(data, NAMES, SHORT, prewarm=False) as box:
        result = box.run("1 + 1")
    assert result.status == "error" and result.value is None
    assert "could not be set up" in result.message
    assert "importable inside the sandbox" in result.message and "sklearn" in result.message
    # and by default the project's folders are covered
    assert isolation.sandbox_mounts([])["own_packages"] == ["heuresis_env", "agents", "baselines"]


# -- item 3: nothing outlives the call --------------------------------------------------------


def processes_marked(mark: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if mark.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


ESCAPE = """
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
cleared = libc.prctl(1, 0, 0, 0, 0)             # PR_SET_PDEATHSIG: no signal on our parent's death
try:
    os.setsid()                                  # out of the supervisor's process group
except OSError:
    pass
signal.setitimer(signal.ITIMER_REAL, 0)          # cancel the wall-clock alarm
for number in (signal.SIGALRM, signal.SIGXCPU, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, signal.SIG_IGN)
burn = ("import ctypes, os, signal\\n"
        "ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)\\n"
        "signal.signal(signal.SIGXCPU, signal.SIG_IGN)\\n"
        "os.setsid()\\n"
        "while True: pass")
for _ in range(3):
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", burn, "MARK"])
os.closerange(0, 4096)                           # every pipe to the parent
linger = ("import os, signal, time\\n"
          "for n in (signal.SIGALRM, signal.SIGTERM, signal.SIGHUP): signal.signal(n, signal.SIG_IGN)\\n"
          "while True:\\n"
          "    time.sleep(0.2)\\n"
          "    try: os.fork() == 0 and os.execv(os.sys.executable, [os.sys.executable, '-c', 'while True: pass', 'MARK'])\\n"
          "    except OSError: pass")
os.execv(sys.executable, [sys.executable, "-c", linger, "MARK"])
"""


def test_no_process_of_the_code_outlives_its_call(data):
    """PID 1 of the sandbox clears its parent-death signal, leaves the process group, cancels
    its alarm, closes its pipes and keeps forking CPU burners that do the same."""
    mark = f"heuresis-escape-{uuid.uuid4().hex}"
    try:
        with Sandbox(data, NAMES, SHORT) as box:
            started = time.monotonic()
            result = box.run(ESCAPE.replace("MARK", mark))
            elapsed = time.monotonic() - started
            survivors = processes_marked(mark)
            assert survivors == [], f"still running after the call: {survivors}"
            assert result.status in ("error", "killed", "timeout"), result.to_text()
            assert elapsed < 30
            assert box.run("sum(range(10))").value == "45"  # the next call works
        time.sleep(0.5)
        assert processes_marked(mark) == []
    finally:
        for pid in processes_marked(mark):  # on failure, leave the machine clean
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_prctl_cannot_undo_the_death_signal(data):
    with Sandbox(data, NAMES, SHORT, prewarm=False) as box:
        result = box.run("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                         "(libc.prctl(1, 0, 0, 0, 0), ctypes.get_errno(), "
                         "libc.prctl(15, b'renamed', 0, 0, 0))")  # PR_SET_NAME still works
    assert result.status == "ok", result.to_text()
    assert result.value == "(-1, 1, 0)"  # EPERM


def test_the_memory_watchdog_covers_processes_outside_the_supervisors_tree(data):
    """Orphans re-parented to PID 1 in their own sessions are still counted: three of them,
    each under the per-process limit, together above it."""
    limits = SandboxLimits(cpu_seconds=5, wall_seconds=10, memory_bytes=900 * 2**20)
    code = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:             # re-parented to PID 1 once its parent exits
            block = bytearray(350 * 2**20)
            block[::4096] = b"x" * len(block[::4096])
            time.sleep(30)
        os._exit(0)
time.sleep(30)
"""
    with Sandbox(data, NAMES, limits, prewarm=False) as box:
        result = box.run(code)
    assert result.status == "memory", result.to_text()


ENVIRONMENT_PROCESS = """
import sys
import numpy as np
from heuresis_env.env.sandbox import Sandbox, SandboxLimits
limits = SandboxLimits(cpu_seconds=60, wall_seconds=90)
with Sandbox(np.zeros((20, 3)), ["X1", "X2", "X3"], limits, prewarm=False) as box:
    print("calling", flush=True)
    box.run(sys.argv[1])
"""


def test_no_process_of_the_code_outlives_the_environments_process(tmp_path):
    """The environment's process is killed (SIGKILL, no clean-up) while the escaping code of
    the test above runs: the supervisor and PID 1 die by parent-death signals the code cannot
    cancel, and the kernel then ends the whole namespace."""
    mark = f"heuresis-escape-{uuid.uuid4().hex}"
    environment = subprocess.Popen(
        [sys.executable, "-c", ENVIRONMENT_PROCESS, ESCAPE.replace("MARK", mark)],
        cwd=CHECKOUT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(processes_marked(mark)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(processes_marked(mark)) >= 3, environment.communicate(timeout=5)
        environment.kill()
        environment.wait(timeout=10)
        deadline = time.monotonic() + 10
        while processes_marked(mark) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert processes_marked(mark) == [], "the code outlived the environment's process"
    finally:
        environment.kill()
        for pid in processes_marked(mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


# -- item 4: the result channel ---------------------------------------------------------------


VALID_RESULT = json.dumps({"status": "ok", "value": "'forged'", "value_truncated": False,
                           "traceback": None, "message": None, "error_type": None,
                           "cpu_seconds": 0.0, "run_seconds": 0.0})
FORGERIES = {
    "a result that is not an object": b'RESULT "forged"',
    "a result of the wrong shape": b'RESULT {"status": "ok", "value": 5}',
    "an exit report that is a list": b"EXIT []",
    "an exit report of the wrong shape": b'EXIT {"exit_code": "zero"}',
    "an unknown kind": b"HELLO {}",
    "a second ready": b'READY {"uid": 1, "host_pid": 1, "setup_seconds": 0, "notes": []}',
    "bytes that are not UTF-8": b"\xff\xfe\x00 garbage",
    "a well-formed result before the real one": b"RESULT " + VALID_RESULT.encode(),
}


@pytest.mark.parametrize("line", FORGERIES.values(), ids=FORGERIES.keys())
def test_a_forged_result_line_is_an_error_result(line, data):
    forged = line + b"\n"
    code = f"import os, sys\nos.write(int(sys.argv[2]), {forged!r})\n'the real value'"
    with Sandbox(data, NAMES, SHORT, prewarm=False) as box:
        result = box.run(code)
        assert result.status == "error", result.to_text()
        assert "result channel" in result.message
        assert result.value is None
        assert box.run("6 * 7").value == "42"


def test_a_forged_result_followed_by_an_exit_is_an_error_result(data):
    code = ("import os, sys\n"
            f"os.write(int(sys.argv[2]), b'RESULT ' + {VALID_RESULT.encode()!r} + b'\\n')\n"
            "os._exit(3)")
    with Sandbox(data, NAMES, SHORT, prewarm=False) as box:
        result = box.run(code)
    assert result.status == "error" and "result channel" in result.message, result.to_text()
    assert result.value is None
