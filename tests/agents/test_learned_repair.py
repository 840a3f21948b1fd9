"""The supervised repair reference: training on the repair table, the policy's episode equals
the offline decision, and (slow) it beats the guided start on held-out instances."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from agents.learned_repair import (
    LearnedRepairPolicy,
    compare_with_rl,
    comparison_table,
    evaluate_split,
    expected_f1_selection,
    load_classifier,
    load_learned_repair,
    repair_outcomes,
    summarize,
    train_classifier,
)
from agents.rl import SubmitStartPolicy
from heuresis_env.cli import main
from heuresis_env.errors import HeuresisError
from heuresis_env.policy import EpisodeSettings, run_episode
from heuresis_env.registration import env_id, register_envs
from heuresis_env.studies import study

register_envs()
SMALL = {"d": 5, "n": 200}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("learned-repair")
    report = train_classifier(["wild", "hetero"], 4, "logistic", out, d=5, n=200, folds=2)
    return out, report


def test_training_writes_a_model_and_a_grouped_cross_validated_report(trained):
    out, report = trained
    assert (out / "model.npz").is_file() and (out / "model.json").is_file()
    assert (out / "report.json").is_file() and not list(out.glob("*.pkl"))
    summary = report["cross_validated"]["all"]
    assert summary["instances"] == 8
    assert 0 <= summary["f1_start"] <= 1 and len(summary["gain"]) == 3
    assert set(report["cross_validated"]) == {"all", "wild", "hetero"}
    model = load_classifier(out)
    assert model.kind == "logistic" and model.model is not None
    with pytest.raises(HeuresisError, match="no learned-repair model"):
        load_classifier(out / "missing")


def test_the_policy_edits_exactly_what_the_rule_decides(trained):
    out, _ = trained
    policy = load_learned_repair(out)
    assert isinstance(policy, LearnedRepairPolicy) and policy.interface == "text"
    settings = EpisodeSettings(max_steps=50, max_seconds=None, guided=True)
    policy.configure(settings)
    env = gym.make(env_id("wild"), guided=True, split="test", max_steps=50, max_seconds=None,
                   indices=[0, 1, 2], **SMALL)
    records, _ = study(["wild"], [0, 1, 2], "test", d=5, n=200)
    probabilities = policy.model.predict_records(records)
    offline = {o.instance: o for o in repair_outcomes(records, probabilities)}
    for index in range(3):
        result = run_episode(env, policy, seed=index, options={"index": index})
        expected = offline[f"wild/test/{index}"]
        assert result.terminated and result.scores["f1"] == pytest.approx(expected.f1_repaired)
        assert result.steps == 2 + expected.restored + expected.removed
        chosen = np.array([d["selected"] for d in policy.decisions])
        q = np.array([d["probability"] for d in policy.decisions])
        assert np.array_equal(chosen, expected_f1_selection(q)[0])


def test_the_policy_refuses_the_unguided_condition(trained):
    out, _ = trained
    policy = load_learned_repair(out)
    env = gym.make(env_id("wild"), guided=False, indices=[0], **SMALL)
    with pytest.raises(HeuresisError, match="guided"):
        run_episode(env, policy, seed=0)


@pytest.mark.slow
def test_learned_repair_beats_the_guided_start_on_held_out_wild_instances(tmp_path):
    """From an empty cache: train on 40 wild dev instances at d = 10, n = 100, evaluate on
    the 32 test instances; the paired interval of F1(repaired) − F1(PC-KCI) is above 0."""
    report = train_classifier(["wild"], 40, "boosting", tmp_path, d=10, n=100)
    model = load_classifier(tmp_path)
    records, _ = study(["wild"], range(32), "test", d=10, n=100)
    outcomes = repair_outcomes(records, model.predict_records(records))
    summary = summarize(outcomes)
    assert summary["instances"] == 32
    assert summary["gain"][1] > 0, (summary, report["cross_validated"]["all"])


def test_an_rl_report_is_compared_instance_by_instance(trained):
    """compare_with_rl pairs a report's test F1s with the evaluation's: the guided start's
    episode F1 equals the repair table's PC-KCI F1, and a policy equal to learned-repair
    differs from it by exactly 0."""
    out, _ = trained
    policy = load_learned_repair(out)
    settings = EpisodeSettings(max_steps=50, max_seconds=None, guided=True)
    policy.configure(settings)
    env = gym.make(env_id("wild"), guided=True, split="test", max_steps=50, max_seconds=None,
                   indices=[0, 1, 2], **SMALL)
    learned = [run_episode(env, policy, seed=k, options={"index": k}).scores["f1"]
               for k in range(3)]
    rl_env = gym.make(env_id("wild"), interface="rl", guided=True, split="test", max_steps=50,
                      max_seconds=None, indices=[0, 1, 2], **SMALL)
    start = [run_episode(rl_env, SubmitStartPolicy(), seed=k, options={"index": k}).scores["f1"]
             for k in range(3)]
    result = evaluate_split(policy.model, ["wild"], "test", 3, n_resamples=200, **SMALL)
    report = {"family": "wild", "test_indices": [0, 1, 2], "policy_f1": learned,
              "start_f1": start}
    comparison = compare_with_rl(result, report, n_resamples=200)
    row = comparison["families"]["wild"]
    assert row["rl_vs_learned"] == [0.0, 0.0, 0.0]
    assert row["rl_vs_pc-kci"][0] == pytest.approx(np.mean(learned) - np.mean(start))
    assert "| wild |" in comparison_table(comparison)
    with pytest.raises(HeuresisError, match="different guided starts"):
        compare_with_rl(result, {**report, "start_f1": [s - 0.1 for s in start]})
    with pytest.raises(HeuresisError, match="larger --count"):
        compare_with_rl(result, {**report, "test_indices": [0, 1, 5]})


def test_the_command_trains_and_evaluates_through_heuresis_and_python_m(trained, tmp_path,
                                                                        capsys):
    """``heuresis learned-repair`` and ``python -m agents.learned_repair`` are one command
    (agents/learned_repair/cli.py): --evaluate SPLIT scores a model, the full result as JSON;
    without --out or --evaluate it says what is missing and exits 2."""
    out, _ = trained
    result = tmp_path / "dev.json"
    assert main(["learned-repair", "--evaluate", "dev", "--model", str(out), "--families",
                 "wild", "--count", "2", "--d", "5", "--n", "200", "--json", str(result)]) == 0
    assert "| wild |" in capsys.readouterr().out
    assert json.loads(result.read_text(encoding="utf-8"))["split"] == "dev"
    done = subprocess.run([sys.executable, "-m", "agents.learned_repair", "--families", "wild"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "--out is needed to train" in done.stderr
