"""Run directories for the viewer's tests: a language-model policy (the loopback heuristic
model: a transcript with outputs, tokens and cost) and a scripted policy whose trace has every
kind of step, both written by ``heuresis evaluate`` itself, and a reference run named ``bca``
(GES submitted on every instance: the real BCA policy first selects its algorithms, minutes
at this size)."""

from __future__ import annotations

from pathlib import Path

import pytest

from heuresis_env.evaluation import evaluate
from heuresis_env.policy import EpisodeSettings
from tests.reports.report_fixtures import AlgorithmPolicy, run_policy

FAMILIES = ("lg", "anm")
COUNT = 2
D, N = 5, 200
SETTINGS = EpisodeSettings(max_steps=20, max_seconds=600.0)


@pytest.fixture(scope="session")
def viewer_runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("viewer-runs")
    runs = {"bca": run_policy(root / "bca", "bca", lambda f, r: AlgorithmPolicy("ges"),
                              families=FAMILIES, count=COUNT, settings=SETTINGS, d=D, n=N)}
    for name, spec in (("llm", "llm-heuristic"),
                       ("evidence", "tests.viewer.viewer_policies:EvidencePolicy")):
        summary = evaluate(spec, families=list(FAMILIES), split="dev", count=COUNT,
                           settings=SETTINGS, out_dir=root / name, d=D, n=N, progress=False)
        runs[name] = summary.out_dir
    return runs
