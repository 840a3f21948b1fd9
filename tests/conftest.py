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


#: the slow tests that take longest (minutes of training or a whole job), started first
LONGEST_FIRST = (
    "tests/test_examples.py::test_train_repair_policy",
    "tests/agents/rl/test_train.py::test_trained_policy_beats",
    "tests/agents/amortized/test_directed.py::test_a_small_directed_model",
    "tests/agents/amortized/test_amortized.py::test_a_model_trained",
    "tests/agents/test_learned_repair.py::test_learned_repair_beats",
    "tests/agents/llm/test_local_models.py::",
    "tests/test_demo.py::",
)


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
    the slow tests head the workers' first blocks, the longest first. A slow test whose
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

    def rank(item) -> int:
        return next((k for k, prefix in enumerate(LONGEST_FIRST)
                     if item.nodeid.startswith(prefix)), len(LONGEST_FIRST))

    def together(item) -> list[str]:
        marker = item.get_closest_marker("machine_wide")
        keys = [f"machine_wide:{marker.args[0]}"] if marker is not None else []
        return keys + ([f"fixtures:{module(item)}"] if _shared_fixtures(item) else [])

    lanes: list[list] = [[] for _ in range(workers)]
    lane_of: dict[str, int] = {}
    for item in sorted(slow, key=rank):  # stable: collection order within a rank
        keys = together(item)
        lane = next((lane_of[k] for k in keys if k in lane_of), None)
        if lane is None:
            lane = min(range(workers), key=lambda k: len(lanes[k]))
        lane_of.update(dict.fromkeys(keys, lane))
        lanes[lane].append(item)
    moved = {id(item) for item in slow}
    rest = [item for item in items if id(item) not in moved]
    ordered = []
    for lane in lanes:
        ordered += lane
        take = max(chunk - len(lane), 0)
        ordered += rest[:take]
        rest = rest[take:]
    items[:] = ordered + rest
