"""``heuresis train`` (agents.rl.cli): trains, evaluates and writes every file."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np
import pytest

from agents.rl import SubmitStartPolicy, evaluate_policy, load
from agents.rl import cli as cli_train
from heuresis_env.generation import BENCHMARK_FAMILIES
from heuresis_env.policy import EpisodeSettings
from heuresis_env.threads import available_cpus
from tests.agents.rl.rl_fixtures import TINY


def test_cli_trains_evaluates_and_writes_everything(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    cli_train.add_arguments(parser)
    out = tmp_path / "run"
    args = parser.parse_args(["--family", "wild", "--algo", "maskable_ppo", "--steps", "64",
                              "--out", str(out), "--dev-count", "2", "--test-count", "2",
                              "--d", "5", "--n", "200", "--max-steps", "10",
                              "--resamples", "200", "--n-envs", "1"])
    assert cli_train.run(args) == 0
    # the evidence step says how far it is (without a terminal: lines), in one worker process
    # per available CPU by default (issue 42)
    err = capsys.readouterr().err
    assert f"in {available_cpus()} worker process(es)" in err
    assert "evidence: 4 of 4 instances (100%)" in err
    for name in ("model.npz", "model.json", "policy.json", "report.json", "learning_curve.png"):
        assert (out / name).is_file(), name
    report = json.loads((out / "report.json").read_text())
    assert report["test_indices"] == [0, 1] and len(report["policy_f1"]) == 2
    start_results = evaluate_policy(SubmitStartPolicy(), "wild", "test", [0, 1],
                           EpisodeSettings(max_steps=10, max_seconds=None, guided=True), **TINY)
    assert report["start_f1"] == [r.scores["f1"] for r in start_results]
    difference = np.mean(report["policy_f1"]) - np.mean(report["start_f1"])
    assert report["f1_difference"]["mean"] == pytest.approx(difference)
    policy = load(out)
    results = evaluate_policy(policy, "wild", "test", [0, 1],
                              EpisodeSettings(max_steps=10, max_seconds=None, guided=True),
                              **TINY)
    assert [r.scores["f1"] for r in results] == report["policy_f1"]


def test_cli_trains_one_policy_over_all_six_families(tmp_path):
    """``--family all``: one policy trained on episodes of every family, evaluated on each."""
    parser = argparse.ArgumentParser()
    cli_train.add_arguments(parser)
    out = tmp_path / "all"
    args = parser.parse_args(["--family", "all", "--steps", "64", "--out", str(out),
                              "--dev-count", "1", "--test-count", "1", "--d", "5", "--n", "200",
                              "--max-steps", "10", "--resamples", "200", "--n-envs", "1"])
    assert cli_train.run(args) == 0
    report = json.loads((out / "report.json").read_text())
    assert list(report["per_family"]) == list(BENCHMARK_FAMILIES)
    assert len(report["policy_f1"]) == len(BENCHMARK_FAMILIES)
    assert [row["policy_f1"][0] for row in report["per_family"].values()] == report["policy_f1"]
    policy = load(out)
    assert policy.config["family"] == "all" and policy.layout == 2
    settings = EpisodeSettings(max_steps=10, max_seconds=None, guided=True)
    for family, row in report["per_family"].items():
        result = evaluate_policy(policy, family, "test", [0], settings, **TINY)[0]
        assert result.scores["f1"] == row["policy_f1"][0], family


def test_python_m_agents_rl_is_the_same_command():
    """``python -m agents.rl`` reads the arguments of ``heuresis train`` (agents/rl/cli.py)
    and, for --help, loads neither torch nor the RL stack."""
    done = subprocess.run([sys.executable, "-m", "agents.rl", "--help"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "--family" in done.stdout and "--warm-start" in done.stdout
