"""Run directories for the viewer's tests: a language-model policy (the loopback heuristic
model: a transcript with outputs, tokens and cost) and a scripted policy whose trace has every
kind of step, both written by ``heuresis evaluate`` itself, and a reference run of the real
``bca`` policy reading a selection file that chooses GES on every family (selecting on the
fly would take minutes at this size), so the report re-derives it and uses it as BCA_φ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heuresis_env.evaluation import evaluate
from heuresis_env.policy import EpisodeSettings
from tests.reports.report_fixtures import SELECTION_NAME, run_policy

FAMILIES = ("lg", "anm")
COUNT = 2
D, N = 5, 200
SETTINGS = EpisodeSettings(max_steps=20, max_seconds=600.0)


@pytest.fixture(scope="session")
def viewer_runs(tmp_path_factory) -> dict[str, Path]:
    from heuresis_env.evaluation.policies import make_policy

    root = tmp_path_factory.mktemp("viewer-runs")
    selection = root / SELECTION_NAME
    selection.write_text(json.dumps({"bca": {family: "ges" for family in FAMILIES}}))
    options = {"selection_path": str(selection)}
    runs = {"bca": run_policy(root / "bca", "bca", lambda f, r: make_policy("bca", options),
                              policy_options=options, families=FAMILIES, count=COUNT,
                              settings=SETTINGS, d=D, n=N)}
    for name, spec in (("llm", "llm-heuristic"),
                       ("evidence", "tests.viewer.viewer_policies:EvidencePolicy")):
        summary = evaluate(spec, families=list(FAMILIES), split="dev", count=COUNT,
                           settings=SETTINGS, out_dir=root / name, d=D, n=N, progress=False)
        runs[name] = summary.out_dir
    return runs
