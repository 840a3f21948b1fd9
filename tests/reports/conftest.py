"""Run directories shared by the report tests (written once per session: real episodes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reports.report_fixtures import write_standard_runs


@pytest.fixture(scope="session")
def standard_runs(tmp_path_factory) -> dict[str, Path]:
    return write_standard_runs(tmp_path_factory.mktemp("runs"))
