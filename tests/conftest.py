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
