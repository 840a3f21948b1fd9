"""Every example script runs for real at a tiny size (the README and docs point to them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args: str, timeout: float = 600) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_quickstart_runs_an_episode_and_prints_scores():
    out = run_example("quickstart.py", "--d", "5", "--n", "200")
    assert "TASK: recover the causal graph" in out
    assert "terminated=True truncated=False" in out
    assert "'f1':" in out


@pytest.mark.slow
def test_compare_llm_backends_runs_both_sdks_against_the_loopback_server(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = run_example("compare_llm_backends.py", "--d", "5", "--n", "200", "--count", "1",
                      "--out", str(tmp_path / "cmp"))
    assert "loopback server" in out
    # the arms are named by the policies' names, never by the loopback server's address
    headline = out[out.index("| policy |"):]
    assert "| llm-openai" in headline and "| llm-anthropic" in headline
    assert "http" not in headline and "127.0.0.1" not in headline
    for arm in ("openai", "anthropic"):
        results = (tmp_path / "cmp" / arm / "results.jsonl").read_text().splitlines()
        assert len(results) == 1
    assert (tmp_path / "cmp" / "report" / "report.html").exists()
    # a second run resumes (the loopback server's new random port is not part of the runs'
    # identity) and rewrites the report and viewer
    again = run_example("compare_llm_backends.py", "--d", "5", "--n", "200", "--count", "1",
                        "--out", str(tmp_path / "cmp"))
    assert "(0 run now, 1 resumed)" in again and "| llm-openai" in again


@pytest.mark.slow
def test_train_repair_policy_learns_and_beats_the_guided_start_on_held_out_instances(tmp_path):
    """The example at its default size (issue 42): it learns — the untrained network, the warm
    start and PPO measured on dev instances held out from training — and ends with a paired
    95% interval of F1(policy) − F1(guided start) above 0; PPO's last progress line is said
    once; the reloaded policy runs on held-out instances."""
    out = run_example("train_repair_policy.py", "--out", str(tmp_path / "rl"), timeout=1800)
    for name in ("model.npz", "model.json", "policy.json", "report.json", "learning_curve.png"):
        assert (tmp_path / "rl" / name).is_file()
    import json
    import re

    report = json.loads((tmp_path / "rl" / "report.json").read_text())
    assert report["test_split"] == "dev" and report["dev_indices"] == list(range(60))
    assert report["test_indices"] == list(range(60, 92))  # never trained on
    assert report["f1_difference"]["low"] > 0, report["f1_difference"]
    assert report["policy_means"]["truncated"] == 0.0  # it submits, every episode
    final = re.search(r"after PPO .* difference ([+-]\d\.\d+) \[([+-]\d\.\d+), "
                      r"([+-]\d\.\d+)\]", out)
    assert final and float(final.group(2)) > 0, out
    assert "untrained network: F1 gain" in out and "after the warm start" in out
    assert "the trained policy beats the guided start on instances it never saw" in out
    assert sum("PPO: 20,000 of 20,000 steps (100%)" in line for line in out.splitlines()) == 1
    runs = [line for line in out.splitlines() if line.startswith("dev instance")]
    assert [line.split(":")[0] for line in runs] == [f"dev instance {i}" for i in (60, 61, 62)]
    assert all("F1 " in line for line in runs)
