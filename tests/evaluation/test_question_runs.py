"""Question runs: ``heuresis evaluate --task qa`` writes the task into the run format, records
each question with its truth and answer, resumes, and feeds the report's question section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heuresis_env import cli
from heuresis_env.errors import HeuresisError, RunFormatError
from heuresis_env.evaluation import evaluate, load_run
from heuresis_env.policy import EpisodeSettings
from heuresis_env.questions import KINDS, question_set
from heuresis_env.reports import build_report

SMALL = {"d": 6, "n": 200, "split": "dev", "progress": False}
SETTINGS = EpisodeSettings(max_steps=10, max_seconds=120.0)
QA = {"task": "qa", "settings": SETTINGS, **SMALL}


@pytest.fixture(scope="module")
def question_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("qa") / "qa-tools"
    evaluate("qa-tools", families=["lg", "wild"], count=len(KINDS), out_dir=out, **QA)
    return out


def test_a_question_run_records_the_task_and_every_question(question_run):
    config = json.loads((question_run / "config.json").read_text())
    assert config["task"] == "qa" and config["name_mode"] == "anonymous"
    sets = {f: question_set(f, "dev", d=6, n=200) for f in ("lg", "wild")}
    assert config["questions"] == {"count": 9, "per_kind": 10,
                                   "digests": {f: s.digest for f, s in sets.items()}}
    run = load_run(question_run)
    assert run.task == "qa" and run.expected_episodes == 18 and not run.warnings
    assert sorted(e.episode_id for e in run.episodes) == sorted(
        f"{f}/dev/q{q}/r0" for f in ("lg", "wild") for q in range(9))
    keys = {(k["family"], k["index"]) for k in config["instance_keys"]}
    for episode in run.episodes:
        question = episode.question
        expected = sets[episode.family].question(question["id"])
        assert episode.task == "qa" and episode.index == expected.public.instance_index
        assert (episode.family, episode.index) in keys
        assert question["truth"] == expected.truth_dict()
        assert question["kind"] == list(KINDS)[question["id"]]
        assert episode.score("correct") in (0.0, 1.0) and episode.score("answered") == 1.0
        assert episode.finished and episode.steps <= 4 and not episode.error
        assert episode.trace_path.is_file()


def test_a_finished_question_run_resumes_without_running_anything(question_run):
    summary = evaluate("qa-tools", families=["lg", "wild"], count=len(KINDS),
                       out_dir=question_run, **QA)
    assert summary.ran == 0 and summary.resumed == 18
    assert summary.score_label == "accuracy" and "acc. all" in summary.to_text()
    correct = [e.score("correct") for e in load_run(question_run).episodes]
    assert summary.overall.mean_f1 == pytest.approx(sum(correct) / len(correct))
    with pytest.raises(HeuresisError, match="name_mode"):
        evaluate("qa-tools", families=["lg", "wild"], count=len(KINDS),
                 out_dir=question_run, name_mode="decoy", **QA)


def test_the_cli_runs_question_episodes_with_decoy_names_and_the_code_toolbox(tmp_path):
    out = tmp_path / "decoy"
    code = cli.main(["evaluate", "--task", "qa", "--names", "decoy", "--policy", "qa-tools",
                     "--family", "lg", "--split", "dev", "--count", "3", "--d", "6", "--n",
                     "200", "--max-steps", "10", "--out", str(out), "--no-progress"])
    assert code == 0
    run = load_run(out)
    assert run.config["name_mode"] == "decoy" and len(run.episodes) == 3
    assert all(e.question["name_mode"] == "decoy" for e in run.episodes)
    # qa-tools in the code toolbox: its tools are refused, so it answers its defaults
    out = tmp_path / "code"
    assert cli.main(["evaluate", "--task", "qa", "--toolbox", "code", "--policy", "qa-tools",
                     "--family", "lg", "--split", "dev", "--count", "2", "--d", "6", "--n",
                     "200", "--out", str(out), "--no-progress"]) == 0
    assert [e.question["answer"] for e in load_run(out).episodes] == ["no", "no"]


def test_a_graph_run_result_line_must_hold_f1_and_a_question_line_correct(question_run,
                                                                          tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text((question_run / "config.json").read_text())
    line = json.loads((question_run / "results.jsonl").read_text().splitlines()[0])
    del line["question"]
    (broken / "results.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(RunFormatError, match="'question'"):
        load_run(broken)


def test_the_report_of_question_runs(question_run, tmp_path):
    summary = build_report([question_run], tmp_path / "report", n_resamples=200)
    assert set(summary.tables) == {"qa_levels", "qa_subtypes", "qa_grades", "qa_answers",
                                   "qa_cost"}
    levels = summary.tables["qa_levels"]
    run = load_run(question_run)
    lg = [e for e in run.episodes if e.family == "lg"]
    row = next(v for v in levels.values if v["family"] == "lg")
    assert row["all"]["n"] == 9
    assert row["all"]["mean"] == pytest.approx(sum(e.score("correct") for e in lg) / 9)
    assert 0 <= row["all"]["low"] <= row["all"]["mean"] <= row["all"]["high"] <= 1
    assert [r[1] for r in summary.tables["qa_subtypes"].rows] == [
        k.abbreviation for k in KINDS.values()]
    assert summary.headline.startswith("| policy | family | variable | edge | graph | effect")
    markdown = summary.markdown_path.read_text()
    assert "accuracy per level" in markdown and "cost and steps per question" in markdown
    assert json.loads(summary.json_path.read_text())["tables"]["qa_levels"]["rows"]


def test_a_report_of_graph_and_question_runs_has_both(question_run, tmp_path):
    graph_run = tmp_path / "graph"
    evaluate("pc-fisherz", families=["lg"], count=2, out_dir=graph_run,
             settings=SETTINGS, **SMALL)
    summary = build_report([graph_run, question_run], tmp_path / "report", n_resamples=200,
                           trace_analysis=False)
    assert "headline" in summary.tables and "qa_levels" in summary.tables
    assert "Questions: causal questions" in summary.markdown_path.read_text()
