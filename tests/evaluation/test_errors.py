"""Errors are errors: an episode whose policy raised, was refused a tool it needs or could not
submit what it computed is recorded with its reason, the run's summary lists the reasons and
leaves those episodes out of its means, and a policy's notes (a condition it was not trained
in) reach the summary."""

from __future__ import annotations

import json

from heuresis_env import cli
from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.summary import error_reasons, summarize_family
from heuresis_env.policy import EpisodeSettings

SMALL = {"d": 4, "n": 100, "split": "dev", "progress": False}


def results(out) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_a_refused_algorithm_run_is_an_error_with_its_reason(tmp_path):
    # the code toolbox has no run_algorithm: the baseline cannot run its algorithm
    summary = evaluate("pc-fisherz", families=["lg"], count=2, out_dir=tmp_path / "run",
                       settings=EpisodeSettings(max_steps=5, toolbox="code"), **SMALL)
    records = results(tmp_path / "run")
    assert len(records) == 2
    for record in records:
        assert record["error"].startswith("run_algorithm pc-fisherz failed: run_algorithm is "
                                          "not in the code toolbox")
    assert summary.overall.errors == 2
    assert summary.error_reasons == [(records[0]["error"], 2)]
    text = summary.to_text()
    assert "errors: 2 episodes, left out of the means:" in text
    assert f"  2 × {records[0]['error']}" in text


def test_a_budget_too_small_for_the_run_is_an_error(tmp_path):
    evaluate("pc-fisherz", families=["lg"], count=1, out_dir=tmp_path / "run",
             settings=EpisodeSettings(max_steps=1), **SMALL)
    (record,) = results(tmp_path / "run")
    assert record["error"] == ("the step budget left 1 step(s): no room to run pc-fisherz and "
                               "submit its output")
    assert record["termination_reason"] == "submitted"  # it did submit: the empty graph


def test_a_policy_that_raises_is_listed_by_the_command(tmp_path, capsys):
    out = tmp_path / "bca"
    code = cli.main(["evaluate", "--policy", "bca", "--policy-option", "selection_path="
                     + str(tmp_path / "selection.json"), "--family", "lg", "--split", "dev",
                     "--count", "1", "--d", "4", "--n", "100", "--out", str(out),
                     "--no-progress"])
    printed = capsys.readouterr()
    # a missing selection file: the policy cannot start, a one-line error
    assert code == 2 and "BCA selection file" in printed.err
    (tmp_path / "selection.json").write_text(json.dumps({"bca": {"anm": "ges"}}))
    out = tmp_path / "bca2"
    code = cli.main(["evaluate", "--policy", "bca", "--policy-option", "selection_path="
                     + str(tmp_path / "selection.json"), "--family", "lg", "--split", "dev",
                     "--count", "2", "--d", "4", "--n", "100", "--out", str(out),
                     "--no-progress"])
    printed = capsys.readouterr().out
    # every episode errored: the run is listed, and the command exits 1 (issue 42)
    assert code == 1
    assert "errors: 2 episodes, left out of the means:" in printed
    assert "2 × policy.reset() raised UnknownNameError" in printed and "'lg'" in printed


def test_summary_means_leave_errored_episodes_out():
    records = [{"scores": {"f1": 0.8}, "finished": True, "error": None},
               {"scores": {"f1": 0.0}, "finished": True, "error": "boom"},
               {"scores": {"f1": 0.6}, "finished": False, "truncated": True, "error": None}]
    row = summarize_family("lg", records)
    assert row.errors == 1 and abs(row.mean_f1 - 0.7) < 1e-12 and row.mean_f1_finished == 0.8
    many = [{"error": f"reason {k % 12}"} for k in range(24)]
    ranked = error_reasons(many, limit=5)
    assert len(ranked) == 5 and ranked[-1] == ("(8 other reasons)", 16)


def test_a_policy_process_reports_its_failure_and_notes(tmp_path):
    summary = evaluate("tests.evaluation.eval_policies:noted_failure", families=["lg"],
                       count=2, out_dir=tmp_path / "run", settings=EpisodeSettings(max_steps=3),
                       **SMALL)
    records = results(tmp_path / "run")
    assert [r["error"] for r in records] == ["the tool it needs was refused"] * 2
    assert [r["notes"] for r in records] == [["made for another condition"]] * 2
    assert summary.notes == ["made for another condition"]
    assert "note: made for another condition" in summary.to_text()
    assert summary.error_reasons == [("the tool it needs was refused", 2)]
