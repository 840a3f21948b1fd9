"""Shared test set-up: every test session gets its own empty on-disk cache."""

import os

import pytest


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
