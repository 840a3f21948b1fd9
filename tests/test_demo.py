"""The main job (`heuresis demo`) end to end at a tiny size, and the shipped RL repair policy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from heuresis_env.evaluation.policies import make_policy, registered_policies


def test_the_shipped_rl_policy_is_registered_and_loads_without_options():
    assert "rl" in registered_policies()
    policy = make_policy("rl", {})
    assert policy.interface == "rl"
    shipped = json.loads((Path(sys.modules[type(policy).__module__].SHIPPED_MODEL_DIR)
                          / "report.json").read_text())
    # the shipped model's own training report: trained on wild dev instances, tested on test
    assert shipped["family"] == "wild" and policy.d == shipped["d"]
    assert len(shipped["test_indices"]) >= 30


@pytest.mark.slow
def test_demo_runs_policies_with_the_rl_policy_guided_and_prints_the_headline(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "heuresis_env.cli", "demo", "--count", "1", "--n", "100",
         "--workers", "1", "--max-steps", "20", "--no-llm", "--out", str(out),
         "--policies", "pc-kci,bca,oracle,router,rl"],
        capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for run in ("pc-kci", "bca", "oracle", "router", "rl"):
        config = json.loads((out / "runs" / run / "config.json").read_text())
        lines = (out / "runs" / run / "results.jsonl").read_text().splitlines()
        assert len(lines) == 6  # one instance of each family
        assert config["settings"]["guided"] is (run == "rl")
        assert config["settings"]["max_steps"] == 20
    assert (out / "report" / "report.md").is_file() and (out / "report" / "report.html").is_file()
    assert "router" in proc.stdout and "rl" in proc.stdout
    assert "5 policies × 6 families × 1 instances" in proc.stdout
