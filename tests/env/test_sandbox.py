"""The code tool's sandbox, attacked for real: every adversarial snippet runs in a real
sandbox, ends with the right status, leaves the test process running, and the next call
works. Legitimate analyses run and return their results.

The adversarial tests need the full ``namespaces`` isolation; they are skipped (with the
doctor's reason) on a machine that cannot provide it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import resource
import socket
import threading
import time

import numpy as np
import pytest

import heuresis_env
import heuresis_env.env.sandbox.runner as runner
from heuresis_env.env.sandbox import (
    MAX_CODE_BYTES,
    Sandbox,
    SandboxLimits,
    SandboxResult,
    run_code,
)
from heuresis_env.env.sandbox.runner import UID_BASE
from heuresis_env.errors import HeuresisError
from heuresis_env.isolation.detection import (
    own_package_directories,
)
from tests.env.sandbox_fixtures import (
    NAMES,
    NAMESPACES_MISSING,
    SHORT,
    assert_next_call_works,
    make_data,
    needs_namespaces,
    needs_root,
)


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return make_data()


@pytest.fixture(scope="module")
def sandbox(data):
    """One sandbox with short limits shared by the adversarial tests (each call is fresh)."""
    if NAMESPACES_MISSING:
        pytest.skip("namespaces isolation unavailable")
    with Sandbox(data, NAMES, SHORT) as box:
        yield box


@pytest.fixture(scope="module")
def roomy_sandbox(data):
    """Default limits, for legitimate analyses that import SciPy and scikit-learn."""
    with Sandbox(data, NAMES, allow_weak_isolation=bool(NAMESPACES_MISSING)) as box:
        yield box


def sandbox_processes() -> list[tuple[int, int]]:
    """(pid, uid) of processes running as a sandbox uid (UID_BASE + host pid) anywhere on
    the machine. A worker is one process with its own uid; everything a call forks shares
    that call's uid."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as f:
                    uid = next(int(line.split()[1]) for line in f if line.startswith("Uid:"))
            except (OSError, StopIteration, ValueError):
                continue
            if uid >= UID_BASE:
                found.append((int(entry), uid))
    return found


def processes_of_uid(uid: int) -> list[int]:
    return [pid for pid, owner in sandbox_processes() if owner == uid]


# -- adversarial snippets ---------------------------------------------------------------------


@needs_namespaces
def test_infinite_loop_times_out_with_a_traceback(sandbox):
    result = sandbox.run("n = 0\nwhile True:\n    n += 1\n")
    assert result.status == "timeout", (result.status, result.message, result.stderr)
    # whichever comes first: 2 s of CPU or 3 s of wall clock
    assert re.search(r"(CPU-time limit of 2 s|wall-clock limit of 3 s)$", result.message)
    assert re.search(r'File "<code>", line [23]', result.traceback)  # where it was stopped
    assert 2.5 < result.duration_s < 3 + runner.WALL_GRACE_SECONDS + 2
    assert_next_call_works(sandbox)


@needs_namespaces
@pytest.mark.slow
def test_cpu_time_limit_holds_even_when_the_code_ignores_sigxcpu(data):
    limits = SandboxLimits(cpu_seconds=1, wall_seconds=60)
    with Sandbox(data, NAMES, limits, prewarm=False) as box:
        polite = box.run("while True: pass")
        assert polite.status == "timeout" and "CPU-time limit of 1 s" in polite.message
        stubborn = box.run("import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
                           "while True: pass")
        assert stubborn.status == "timeout", stubborn.to_text()
        assert "CPU-time limit" in stubborn.message  # the kernel's hard limit, not the clock
        assert_next_call_works(box)


@needs_namespaces
def test_wall_clock_limit_holds_when_the_code_ignores_sigalrm(sandbox):
    result = sandbox.run("import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                         "time.sleep(1000)")
    assert result.status == "timeout"
    assert "wall-clock limit" in result.message
    assert result.duration_s < 3 + runner.WALL_GRACE_SECONDS + 2
    assert_next_call_works(sandbox)


@needs_namespaces
def test_allocating_30_gib_is_a_memory_result(sandbox):
    for code in ("big = np.ones(30 * 2**30 // 8)", "big = bytearray(30 * 2**30)"):
        result = sandbox.run(code)
        assert result.status == "memory", result.to_text()
        assert "memory limit of 2 GiB" in result.message
        assert "MemoryError" in result.traceback
    assert_next_call_works(sandbox)


@needs_namespaces
def test_memory_spread_over_processes_is_stopped_by_the_watchdog(data):
    """Each of 6 processes stays under its own 400 MiB address-space limit, together they
    exceed the 400 MiB budget: the resident-memory watchdog stops the call."""
    limits = SandboxLimits(memory_bytes=400 * 2**20, wall_seconds=10)
    code = (
        "import os, time\n"
        "for _ in range(6):\n"
        "    if os.fork() == 0:\n"
        "        block = b'x' * (150 * 2**20)  # written, so resident\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "time.sleep(30)\n"
    )
    with Sandbox(data, NAMES, limits, prewarm=False) as box:
        result = box.run(code)
        assert result.status == "memory", result.to_text()
        assert "together held more than 400 MiB" in result.message
        assert result.duration_s < 8
        assert_next_call_works(box)


@needs_namespaces
@needs_root
def test_fork_bomb_is_contained(sandbox):
    result = sandbox.run("import os\nprint(os.getuid(), flush=True)\nwhile True:\n    os.fork()\n")
    assert result.status in ("error", "killed", "memory"), result.to_text()
    assert result.status != "ok"
    if result.status == "error":
        assert "BlockingIOError" in result.message  # RLIMIT_NPROC refused the fork
    assert_next_call_works(sandbox)
    assert processes_of_uid(int(result.stdout.split()[0])) == []  # nothing of it survives


@needs_namespaces
@needs_root
@pytest.mark.slow
def test_fork_bomb_that_swallows_errors_ends_at_the_wall_clock(data):
    code = ("import os\nprint(os.getuid(), flush=True)\n"
            "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")
    with Sandbox(data, NAMES, SandboxLimits(wall_seconds=2), prewarm=False) as box:
        result = box.run(code)
        assert result.status in ("timeout", "memory"), result.to_text()
        assert_next_call_works(box)
    bomb_uid = int(result.stdout.split()[0])
    deadline = time.monotonic() + 5  # the PID namespace takes every fork with it
    while processes_of_uid(bomb_uid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_of_uid(bomb_uid) == []


@needs_namespaces
def test_no_network_to_a_server_on_the_host_loopback(sandbox):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract_name = f"\0heuresis-sandbox-test-{os.getpid()}"
    abstract.bind(abstract_name)
    abstract.listen(8)
    abstract.settimeout(0.2)
    accepted = []

    def serve(listener):
        while not stop.is_set():
            try:
                accepted.append(listener.accept())
            except (TimeoutError, OSError):
                continue

    stop = threading.Event()
    threads = [threading.Thread(target=serve, args=(s,)) for s in (server, abstract)]
    for thread in threads:
        thread.start()
    try:
        code = f"""
import socket, errno
outcomes = {{}}
for name, family, address in [
        ("tcp", socket.AF_INET, ("127.0.0.1", {port})),
        ("unix", socket.AF_UNIX, {abstract_name!r}),
        ("outside", socket.AF_INET, ("1.1.1.1", 53))]:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(address)
        outcomes[name] = "connected"
    except OSError as exc:
        outcomes[name] = errno.errorcode.get(exc.errno, str(exc))
try:
    socket.getaddrinfo("example.com", 80)
    outcomes["dns"] = "resolved"
except OSError as exc:
    outcomes["dns"] = type(exc).__name__
print(socket.if_nameindex())
outcomes
"""
        result = sandbox.run(code)
        assert result.status == "ok", result.to_text()
        outcomes = ast.literal_eval(result.value)
        assert outcomes["tcp"] in ("ENETUNREACH", "ECONNREFUSED")
        assert outcomes["unix"] in ("ECONNREFUSED", "ENOENT")
        assert outcomes["outside"] == "ENETUNREACH"
        assert outcomes["dns"] == "gaierror"
        assert "'lo'" in result.stdout and "eth" not in result.stdout
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        server.close()
        abstract.close()
    assert accepted == []  # the servers saw no connection
    assert_next_call_works(sandbox)


@needs_namespaces
def test_the_hidden_record_is_not_readable(sandbox, tmp_path):
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"true_dag": [[0, 1], [0, 0]], "secret": "TRUE-GRAPH-7f3a"}))
    record.chmod(0o644)  # even world-readable: it is simply not in the sandbox's world
    cache = os.environ["HEURESIS_CACHE_DIR"]
    (tmp_path / "cache-record.json").write_text("TRUE-GRAPH-7f3a")
    code = f"""
import os
found = {{}}
for path in [{str(record)!r}, {str(tmp_path / "cache-record.json")!r}]:
    try:
        found[path] = open(path).read()
    except OSError as exc:
        found[path] = type(exc).__name__
found["cache"] = os.path.exists({cache!r})
found["data file"] = os.path.exists({os.path.join(sandbox._resources.directory, "data.npy")!r})
import sys
# empty, but for the folders holding a Python bound under /tmp (a view of the scratch)
bound = [p for p in [sys.prefix, sys.base_prefix, *sys.path] if p.startswith("/tmp/")]
found["scratch"] = [name for name in os.listdir("/scratch")
                    if not any(p.startswith("/tmp/" + name + "/") for p in bound)]
import importlib.util
found["heuresis_env"] = importlib.util.find_spec("heuresis_env") is not None
found
"""
    result = sandbox.run(code)
    assert result.status == "ok", result.to_text()
    found = ast.literal_eval(result.value)
    assert found[str(record)] == "FileNotFoundError"
    assert found[str(tmp_path / "cache-record.json")] == "FileNotFoundError"
    assert found["cache"] is False
    assert found["data file"] is False  # not even the sandbox's own copy of the data
    assert found["scratch"] == []
    assert found["heuresis_env"] is False  # its generators could rebuild the record
    assert "TRUE-GRAPH" not in result.to_text()
    assert_next_call_works(sandbox)


@needs_namespaces
def test_parent_environment_and_memory_are_out_of_reach(data, monkeypatch):
    secret = "heuresis-parent-secret-91c2"
    monkeypatch.setenv("HEURESIS_SANDBOX_TEST_SECRET", secret)
    parent = os.getpid()
    with Sandbox(data, NAMES, SHORT, prewarm=False) as box:  # started after the secret
        code = f"""
import os
outcomes = {{"own environment": dict(os.environ)}}
for path in ["/proc/{parent}/environ", "/proc/{parent}/mem", "/proc/{parent}/cmdline"]:
    try:
        with open(path, "rb") as f:
            outcomes[path] = f.read(4096)
    except OSError as exc:
        outcomes[path] = type(exc).__name__
outcomes["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
outcomes
"""
        result = box.run(code)
        assert result.status == "ok", result.to_text()
        outcomes = ast.literal_eval(result.value)
        for suffix in ("environ", "mem", "cmdline"):
            assert outcomes[f"/proc/{parent}/{suffix}"] == "FileNotFoundError"
        assert outcomes["pids"] == [1]  # its own PID namespace holds only itself
        assert "HEURESIS_SANDBOX_TEST_SECRET" not in outcomes["own environment"]
        assert set(outcomes["own environment"]) <= {
            "PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "MPLBACKEND", "MPLCONFIGDIR",
            "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
            "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "PYTHONDONTWRITEBYTECODE"}
        assert secret not in result.to_text()
        assert_next_call_works(box)


@needs_namespaces
def test_writing_outside_the_scratch_folder_is_denied(sandbox, tmp_path):
    import numpy

    targets = [
        str(tmp_path / "escape.txt"),
        "/escape.txt",
        "/usr/escape.txt",
        os.path.join(os.path.dirname(os.path.dirname(numpy.__file__)), "escape.py"),
        os.path.join(os.path.dirname(os.__file__), "escape.py"),
        "/etc/passwd",
    ]
    code = f"""
import errno
outcomes = {{}}
for path in {targets!r}:
    try:
        with open(path, "a") as f:
            f.write("escaped")
        outcomes[path] = "written"
    except OSError as exc:
        outcomes[path] = errno.errorcode[exc.errno]
with open("/scratch/inside.txt", "w") as f:  # the scratch folder itself is writable
    f.write("fine")
outcomes["scratch"] = open("/tmp/inside.txt").read()
outcomes
"""
    before = {path: os.path.exists(path) for path in targets}
    result = sandbox.run(code)
    assert result.status == "ok", result.to_text()
    outcomes = ast.literal_eval(result.value)
    assert outcomes.pop("scratch") == "fine"
    for path, outcome in outcomes.items():
        assert outcome in ("EROFS", "ENOENT", "EACCES"), (path, outcome)
        assert os.path.exists(path) == before[path]  # nothing appeared on the host
    with open("/etc/passwd") as f:
        assert "escaped" not in f.read()
    assert_next_call_works(sandbox)


@needs_namespaces
def test_killing_the_parent_fails_and_the_parent_survives(sandbox):
    parent = os.getpid()
    code = f"""
import os, signal
outcomes = {{}}
for name, action in [("parent", lambda: os.kill({parent}, signal.SIGKILL)),
                     ("parent group", lambda: os.killpg({os.getpgid(0)}, signal.SIGKILL)),
                     ("everyone", lambda: os.kill(-1, signal.SIGKILL))]:
    try:
        action()
        outcomes[name] = "sent"
    except OSError as exc:
        outcomes[name] = type(exc).__name__
outcomes
"""
    result = sandbox.run(code)
    assert result.status == "ok", result.to_text()
    outcomes = ast.literal_eval(result.value)
    assert outcomes["parent"] == "ProcessLookupError"  # not in the sandbox's PID namespace
    assert outcomes["parent group"] == "ProcessLookupError"
    assert outcomes["everyone"] in ("sent", "ProcessLookupError")  # reaches no one outside
    assert os.getpid() == parent  # we are alive to check
    assert_next_call_works(sandbox)


@needs_namespaces
def test_ctypes_segfault_is_killed(sandbox):
    result = sandbox.run("import ctypes\nctypes.string_at(0)")
    assert result.status == "killed"
    assert "SIGSEGV" in result.message and "segmentation fault" in result.message
    assert "Segmentation fault" in result.stderr  # faulthandler's report
    assert 'File "<code>", line 2' in result.stderr
    assert_next_call_works(sandbox)


@needs_namespaces
def test_printing_100_mb_is_truncated_with_bounded_memory(sandbox):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = sandbox.run("print('x' * 100_000_000)\nprint('the end')")
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert result.status == "ok", result.message
    assert result.stdout_truncated
    cap = SHORT.output_bytes
    assert len(result.stdout.encode()) < cap + 300
    assert "bytes of output omitted" in result.stdout
    assert f"{100_000_009 - cap:,} bytes" in result.stdout  # 100 MB, 2 newlines, 'the end'
    assert result.stdout.endswith("the end\n")  # the tail is kept
    assert (after - before) * 1024 < 50 * 2**20  # the parent never held the 100 MB
    assert_next_call_works(sandbox)


@needs_namespaces
def test_seccomp_denies_namespaces_but_threads_and_subprocesses_work(sandbox):
    code = """
import ctypes, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
denied = {}
for name, flag in [("user", 0x10000000), ("net", 0x40000000), ("mount", 0x00020000)]:
    rc = libc.unshare(flag)
    denied[name] = (rc, ctypes.get_errno())
results = []
worker = threading.Thread(target=lambda: results.append(sum(range(100))))
worker.start(); worker.join()
echoed = subprocess.run(["/bin/echo", "child process"], capture_output=True, text=True).stdout
status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines()
              if l.startswith(("Cap", "NoNewPrivs", "Seccomp")))
(denied, results, echoed, status)
"""
    result = sandbox.run(code)
    assert result.status == "ok", result.to_text()
    denied, results, echoed, status = ast.literal_eval(result.value)
    assert all(outcome == (-1, 1) for outcome in denied.values())  # EPERM
    assert results == [4950] and echoed == "child process\n"
    assert status["Seccomp"] == "2" and status["NoNewPrivs"] == "1"
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0


@needs_namespaces
@needs_root
def test_runs_as_an_unused_uid_and_the_next_warm_worker_is_fresh(sandbox):
    first = ast.literal_eval(sandbox.run("import os; (os.getuid(), os.getpid())").value)
    second = ast.literal_eval(sandbox.run("import os; (os.getuid(), os.getpid())").value)
    assert first[0] >= UID_BASE and second[0] >= UID_BASE
    assert first[0] != second[0]  # a new process (and uid) per call
    assert first[1] == second[1] == 1  # PID 1 of its own namespace


@needs_namespaces
def test_user_namespace_path_drops_every_capability(data, monkeypatch):
    """The path a non-root user takes (a user namespace, capabilities dropped), forced."""
    monkeypatch.setattr(runner, "resolve_isolation", lambda *_: ("namespaces", "capabilities"))
    with Sandbox(data, NAMES, SHORT, prewarm=False) as box:
        code = """
import errno, socket
status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines()
              if l.startswith(("Cap", "NoNewPrivs", "Seccomp")))
try:
    open("/usr/escape", "w")
    write = "written"
except OSError as exc:
    write = errno.errorcode[exc.errno]
(status, write, [name for _, name in socket.if_nameindex()], X.shape)
"""
        result = box.run(code)
        assert result.status == "ok", result.to_text()
        status, write, interfaces, shape = ast.literal_eval(result.value)
        assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0
        assert status["Seccomp"] == "2"
        assert write == "EROFS" and interfaces == ["lo"] and shape == data.shape
        assert box.run("import ctypes; ctypes.string_at(0)").status == "killed"
        assert_next_call_works(box)


@needs_namespaces
def test_project_packages_in_site_packages_are_covered(data, monkeypatch):
    """A regular install puts heuresis_env in site-packages; the sandbox covers such folders
    with an empty one. Forced here on scikit-learn's folder, which is surely bound."""
    import sklearn

    sklearn_folder = os.path.dirname(os.path.realpath(sklearn.__file__))
    real_mounts = runner.sandbox_mounts

    def with_sklearn_hidden(forbidden):
        mounts = real_mounts(forbidden)
        mounts["hidden_dirs"] = [sklearn_folder]
        return mounts

    monkeypatch.setattr(runner, "sandbox_mounts", with_sklearn_hidden)
    with Sandbox(data, NAMES, SHORT, prewarm=False) as box:
        code = f"""
import os, scipy.stats
try:
    from sklearn.linear_model import LinearRegression
    imported = True
except ImportError:
    imported = False
(os.listdir({sklearn_folder!r}), imported)
"""
        result = box.run(code)
    assert result.status == "ok", result.to_text()
    assert ast.literal_eval(result.value) == ([], False)
    main_folder = os.path.dirname(os.path.realpath(heuresis_env.__file__))
    project = os.path.dirname(main_folder)
    assert main_folder in own_package_directories([project])
    assert own_package_directories(["/nonexistent"]) == []


# -- legitimate code --------------------------------------------------------------------------


def test_regression_fit_with_scikit_learn(roomy_sandbox, data):
    code = """
from sklearn.linear_model import LinearRegression
model = LinearRegression().fit(X[:, [0, 1, 2]], X[:, 3])
print("R2", round(model.score(X[:, [0, 1, 2]], X[:, 3]), 3))
model.coef_.round(2).tolist()
"""
    result = roomy_sandbox.run(code)
    assert result.status == "ok", result.to_text()
    coefficients = ast.literal_eval(result.value)
    assert coefficients == pytest.approx([2.0, -3.0, 0.0], abs=0.05)
    expected = np.linalg.lstsq(np.column_stack([data[:, :3], np.ones(len(data))]),
                               data[:, 3], rcond=None)[0][:3]
    assert coefficients == pytest.approx(expected.round(2).tolist(), abs=1e-9)
    assert result.stdout.startswith("R2 0.99")


def test_kernel_matrix_matches_the_parent(roomy_sandbox, data):
    code = """
from scipy.spatial.distance import cdist
from sklearn.metrics.pairwise import rbf_kernel
gamma = 1 / (2 * np.median(cdist(X, X, "sqeuclidean")))
K = rbf_kernel(X, gamma=gamma)
(K.shape, float(K.sum()), bool(np.allclose(K, K.T)), float(np.linalg.eigvalsh(K).min()))
"""
    result = roomy_sandbox.run(code)
    assert result.status == "ok", result.to_text()
    shape, total, symmetric, smallest = ast.literal_eval(result.value)
    squared = ((data[:, None, :] - data[None, :, :]) ** 2).sum(-1)
    expected = np.exp(-squared / (2 * np.median(squared)))
    assert shape == (len(data), len(data)) and symmetric
    assert total == pytest.approx(expected.sum(), rel=1e-9)
    assert smallest > -1e-8  # positive semi-definite


def test_permutation_test_with_1000_permutations(roomy_sandbox, data):
    code = """
rng = np.random.default_rng(7)
def permutation_p(a, b, permutations=1000):
    observed = abs(np.corrcoef(a, b)[0, 1])
    null = [abs(np.corrcoef(a, rng.permutation(b))[0, 1]) for _ in range(permutations)]
    return float((1 + sum(v >= observed for v in null)) / (permutations + 1))
{name: permutation_p(X[:, i], X[:, 3]) for i, name in enumerate(names[:3])}
"""
    result = roomy_sandbox.run(code)
    assert result.status == "ok", result.to_text()
    p_values = ast.literal_eval(result.value)
    assert p_values["X1"] == p_values["X2"] == pytest.approx(1 / 1001)  # dependent
    assert p_values["X3"] > 0.05  # X3 is independent of X4
    rng = np.random.default_rng(7)  # the same computation here gives the same p-values
    for i in range(3):
        observed = abs(np.corrcoef(data[:, i], data[:, 3])[0, 1])
        null = [abs(np.corrcoef(data[:, i], rng.permutation(data[:, 3]))[0, 1])
                for _ in range(1000)]
        assert p_values[NAMES[i]] == (1 + sum(v >= observed for v in null)) / 1001


def test_x_names_and_numpy_are_in_scope_and_x_is_a_private_copy(roomy_sandbox, data):
    result = roomy_sandbox.run("before = float(X.sum())\nX[:] = 0\n(names, X.shape, before)")
    assert result.status == "ok", result.to_text()
    names, shape, total = ast.literal_eval(result.value)
    assert names == NAMES and shape == data.shape
    assert total == float(data.sum())
    assert np.array_equal(data, make_data())  # the parent's data is untouched
    assert roomy_sandbox.run("float(X.sum())").value == repr(float(data.sum()))


def test_final_expression_value_and_output_sections(roomy_sandbox):
    result = roomy_sandbox.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\n{'a': 1}")
    assert (result.stdout, result.stderr, result.value) == ("out\n", "err\n", "{'a': 1}")
    text = result.to_text()
    assert text.startswith("status: ok (")
    assert "--- stdout ---\nout" in text and "--- stderr ---\nerr" in text
    assert "--- value ---\n{'a': 1}" in text
    assert roomy_sandbox.run("x = 1").value is None  # no final expression
    assert roomy_sandbox.run("None").value is None
    assert "(no output and no final value" in roomy_sandbox.run("x = 1").to_text()
    assert roomy_sandbox.run("for i in range(2):\n    i").value is None  # not a final expr


def test_errors_are_results_with_clean_tracebacks(roomy_sandbox):
    result = roomy_sandbox.run("def f(v):\n    return 1 / v\nf(0)")
    assert result.status == "error"
    assert result.message == "ZeroDivisionError: division by zero"
    assert result.traceback.splitlines()[0] == "Traceback (most recent call last):"
    assert 'File "<code>", line 3, in <module>' in result.traceback
    assert "return 1 / v" in result.traceback  # the source line is shown
    for own in ("child.py", "user_code.py", "linux.py"):  # the sandbox's own frames are hidden
        assert own not in result.traceback
    syntax = roomy_sandbox.run("def broken(:\n    pass")
    assert syntax.status == "error" and syntax.message.startswith("SyntaxError")
    assert "line 1" in syntax.traceback
    assert roomy_sandbox.run("import sys; sys.exit(0)").status == "ok"
    exited = roomy_sandbox.run("import sys; sys.exit(3)")
    assert exited.status == "error" and "sys.exit(3)" in exited.message
    hard = roomy_sandbox.run("import os; os._exit(5)")
    assert hard.status == "error" and "exit code 5" in hard.message
    swallowed = roomy_sandbox.run("try:\n    import nonexistent_module\nexcept ImportError as e:\n"
                                  "    print('caught', e.name)")
    assert swallowed.status == "ok" and swallowed.stdout == "caught nonexistent_module\n"


def test_value_and_stderr_are_capped(roomy_sandbox):
    cap = roomy_sandbox.limits.output_bytes
    result = roomy_sandbox.run("import sys\nsys.stderr.write('e' * 200_000)\n'v' * 200_000")
    assert result.stderr_truncated and not result.stdout_truncated
    assert result.value_truncated and len(result.value) == cap
    assert "bytes of output omitted" in result.stderr
    too_long = roomy_sandbox.run("#" * (MAX_CODE_BYTES + 1))
    assert too_long.status == "error" and "at most" in too_long.message


def test_run_code_function_and_closed_sandbox(data):
    result = run_code("X.shape[1]", data, NAMES, SHORT,
                      allow_weak_isolation=bool(NAMESPACES_MISSING))
    assert isinstance(result, SandboxResult) and result.value == "4"
    box = Sandbox(data, NAMES, SHORT, allow_weak_isolation=bool(NAMESPACES_MISSING))
    warm = box._resources.worker.process
    box.close()
    box.close()  # idempotent
    assert warm.poll() is not None  # the warm worker is gone
    assert not os.path.exists(box._resources.directory)
    with pytest.raises(HeuresisError, match="closed"):
        box.run("1")
