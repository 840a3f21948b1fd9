"""Shared test set-up: every test session (every pytest-xdist worker) gets its own empty
on-disk cache, and a test marked ``machine_wide("NAME")`` holds a lock file of that name in
the system's temporary folder while it runs, so tests that need one machine-wide resource (a
local Ray cluster, a system user made with ``useradd``) run one at a time across workers —
and across test sessions on the same machine."""

import os
import tempfile

import pytest
from filelock import FileLock


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    root = tmp_path_factory.mktemp("heuresis-cache")
    old = os.environ.get("HEURESIS_CACHE_DIR")
    os.environ["HEURESIS_CACHE_DIR"] = str(root)
    yield root
    if old is None:
        os.environ.pop("HEURESIS_CACHE_DIR", None)
    else:
        os.environ["HEURESIS_CACHE_DIR"] = old


@pytest.fixture(autouse=True)
def _machine_wide_resource(request):
    marker = request.node.get_closest_marker("machine_wide")
    if marker is None:
        yield
        return
    (name,) = marker.args
    with FileLock(os.path.join(tempfile.gettempdir(), f"heuresis-tests-{name}.lock")):
        yield


#: the slow tests' durations, seconds, as measured one at a time (``pytest -v -n 0 -m slow
#: --durations=0``, 2026-12-07, on the shared machine under load 11-20: several times an idle
#: machine's, but in proportion); a slow test not named here counts DEFAULT_SLOW_SECONDS
SLOW_SECONDS = {
    "tests/test_examples.py::test_train_repair_policy": 300,  # 179 s with a warm cache
    "tests/agents/amortized/test_amortized.py::test_a_model_trained": 119,
    "tests/agents/llm/test_local_models.py::test_one_episode": 77,  # 113 s and 40 s
    "tests/agents/llm/test_local_models.py::test_inspect_reaches": 95,
    "tests/agents/llm/test_local_models.py::test_the_server_answers": 34,  # the model's load
    "tests/agents/llm/test_local_models.py::test_the_comparison_plays": 30,
    "tests/test_demo.py::test_demo_adds_a_configured_llm": 95,
    "tests/test_demo.py::test_demo_runs_policies": 61,
    "tests/baselines/test_structure_suite.py::": 51,  # 41 s, 56 s, 55 s
    "tests/test_docs.py::test_a_python_block_runs_as_written[docs/rl.md": 42,
    "tests/agents/amortized/test_directed.py::test_a_small_directed_model": 37,
    "tests/agents/test_inspect_task.py::": 34,  # 32 s and 35 s
    "tests/test_examples.py::test_compare_llm_backends": 28,
    "tests/test_docs.py::test_a_python_block_runs_as_written[docs/inspect.md": 26,
    "tests/baselines/test_baselines.py::": 24,
    "tests/env/test_sandbox_escapes.py::test_a_regular_install": 22,
}
DEFAULT_SLOW_SECONDS = 10


def _shared_fixtures(item) -> set[str]:
    """The fixtures of module, class or package scope a test uses: set up once for the tests
    of its module that one worker runs in a row, and again wherever such a test goes apart."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return {"(unknown)"}
    return {name for name, definitions in info.name2fixturedefs.items()
            if definitions and definitions[-1].scope not in ("function", "session")}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Under ``pytest -n N`` with ``--dist load`` (``make test``) the slow tests start first,
    shared among the workers: xdist hands each worker a first block of consecutive tests
    (``len(items) // N // 4`` of them, as xdist 3 computes it) and the rest a few at a time to
    whichever worker is free. Left in place, a long test collected late (the RL example's
    training, near the end) starts when the other worker has little left and runs alone; here
    the slow tests head the workers' first blocks, the longest first (by SLOW_SECONDS), each
    to the worker with the least slow work so far. A slow test whose
    module-scoped fixtures the module's other tests use too stays in place (moved, it would
    set them up again); slow tests sharing such fixtures, or one machine-wide resource, go to
    one worker together. Only the order changes: the same tests run, with the same fixtures."""
    # a worker knows its number of peers (xdist sets the variable); it sees its own --dist as
    # "no", so the order is the same under every distribution (only load's blocks use it)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers < 2:
        return
    chunk = max(min(len(items) // workers // 4, config.getoption("maxschedchunk") or len(items)),
                2)

    def module(item) -> str:
        return item.nodeid.split("::", 1)[0]

    def is_slow(item) -> bool:
        return item.get_closest_marker("slow") is not None

    kept: dict[str, set[str]] = {}  # per module, the shared fixtures its quick tests use
    for item in items:
        if not is_slow(item):
            kept.setdefault(module(item), set()).update(_shared_fixtures(item))
    slow = [item for item in items if is_slow(item)
            and not _shared_fixtures(item) & kept.get(module(item), set())]
    if not slow or chunk * workers > len(items):
        return

    def seconds(item) -> float:
        return next((v for prefix, v in SLOW_SECONDS.items() if item.nodeid.startswith(prefix)),
                    DEFAULT_SLOW_SECONDS)

    def together(item) -> list[str]:
        marker = item.get_closest_marker("machine_wide")
        keys = [f"machine_wide:{marker.args[0]}"] if marker is not None else []
        return keys + ([f"fixtures:{module(item)}"] if _shared_fixtures(item) else [])

    # the longest first, each to the worker with the least so far (stable: collection order
    # among equals), tests that go together to one worker
    lanes: list[list] = [[] for _ in range(workers)]
    load = [0.0] * workers
    lane_of: dict[str, int] = {}
    for item in sorted(slow, key=seconds, reverse=True):
        keys = together(item)
        lane = next((lane_of[k] for k in keys if k in lane_of), None)
        if lane is None:
            lane = min(range(workers), key=lambda k: load[k])
        lane_of.update(dict.fromkeys(keys, lane))
        lanes[lane].append(item)
        load[lane] += seconds(item)
    moved = {id(item) for item in slow}
    rest = [item for item in items if id(item) not in moved]
    ordered = []
    for lane in lanes:
        # the tests of a module that share its fixtures in a row (set up once), where the
        # first of them stands
        first: dict[str, int] = {}
        for k, item in enumerate(lane):
            first.setdefault(module(item) if _shared_fixtures(item) else str(id(item)), k)
        lane.sort(key=lambda t: first[module(t) if _shared_fixtures(t) else str(id(t))])
        ordered += lane
        take = max(chunk - len(lane), 0)
        ordered += rest[:take]
        rest = rest[take:]
    items[:] = ordered + rest
