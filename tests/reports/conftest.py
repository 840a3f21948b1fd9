"""Run directories shared by the report tests (written once per session: real episodes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from heuresis_env.evaluation.reference_check import ReferenceCheck
from heuresis_env.reports import loading
from tests.reports.report_fixtures import write_standard_runs


def synthetic(run) -> bool:
    return bool(run.episodes) and all(e.worker == "synthetic" for e in run.episodes)


@pytest.fixture(autouse=True)
def synthetic_runs_are_not_checked(monkeypatch):
    """Synthetic runs (``report_fixtures.write_synthetic_run``) hold chosen scores without
    final graphs or real instances: they test the report's statistics, so the integrity check
    and a reference's re-derivation — which refuse exactly such lines
    (tests/adversarial/test_forged_lines.py, test_reference_runs.py) — are skipped for them,
    and for them only."""
    real_verify, real_rederive = loading.verify_run, loading.rederive_reference

    def verify(run, *args, **kwargs):
        return 0 if synthetic(run) else real_verify(run, *args, **kwargs)

    def rederive(run, *args, **kwargs):
        if synthetic(run):
            return ReferenceCheck(run.path, run.policy, True, 0)
        return real_rederive(run, *args, **kwargs)

    monkeypatch.setattr(loading, "verify_run", verify)
    monkeypatch.setattr(loading, "rederive_reference", rederive)


@pytest.fixture(scope="session")
def standard_runs(tmp_path_factory) -> dict[str, Path]:
    return write_standard_runs(tmp_path_factory.mktemp("runs"))
