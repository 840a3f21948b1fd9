"""Run directories shared by the report tests (written once per session: real episodes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from heuresis_env.reports import loading
from tests.reports.report_fixtures import write_standard_runs


@pytest.fixture(autouse=True)
def synthetic_runs_are_not_checked(monkeypatch):
    """Synthetic runs (``report_fixtures.write_synthetic_run``) hold chosen scores without
    final graphs or real instances: they test the report's statistics, so the integrity check
    — which refuses exactly such lines (tests/adversarial/test_forged_lines.py) — is skipped
    for them, and for them only."""
    real = loading.verify_run

    def verify(run, *args, **kwargs):
        if run.episodes and all(e.worker == "synthetic" for e in run.episodes):
            return 0
        return real(run, *args, **kwargs)

    monkeypatch.setattr(loading, "verify_run", verify)


@pytest.fixture(scope="session")
def standard_runs(tmp_path_factory) -> dict[str, Path]:
    return write_standard_runs(tmp_path_factory.mktemp("runs"))
