"""``heuresis evaluate`` on data tables and structures: a user's CSV with and without a graph
(in-process and in spawned workers), the Sachs data, a BNLearn family, and their report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from heuresis_env import cli
from heuresis_env.evaluation import evaluate, load_run
from heuresis_env.evaluation.run_format import regenerate_instance
from heuresis_env.policy import EpisodeSettings

FISHER = "tests.evaluation.eval_policies:fisher_skeleton"
SETTINGS = EpisodeSettings(max_steps=20, max_seconds=60.0)


@pytest.fixture()
def csv_table(tmp_path) -> tuple[Path, Path]:
    rng = np.random.default_rng(5)
    a = rng.normal(size=200)
    b = 1.5 * a + rng.normal(size=200)
    c = b - rng.normal(size=200)
    path = tmp_path / "cells.csv"
    path.write_text("dose,marker,outcome\n" + "\n".join(
        f"{x:.5f},{y:.5f},{z:.5f}" for x, y, z in zip(a, b, c)) + "\n")
    graph = tmp_path / "cells_graph.txt"
    graph.write_text("dose --> marker\nmarker --> outcome\n")
    return path, graph


def results(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_cli_evaluate_a_csv_without_a_graph(tmp_path, csv_table, capsys):
    path, _ = csv_table
    out = tmp_path / "run"
    assert cli.main(["evaluate", "--policy", FISHER, "--dataset", str(path), "--out", str(out),
                     "--max-steps", "20", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "table-cells" in printed and "no ground truth" in printed
    (record,) = results(out)
    assert record["family"] == "table-cells" and record["ground_truth"] is False
    assert record["scores"]["f1"] is None and record["final_graph"]["names"] == [
        "dose", "marker", "outcome"]
    config = json.loads((out / "config.json").read_text())
    assert config["datasets"][0]["path"] == str(path.resolve())
    assert config["instance_keys"][0]["graph_model"] == "data"


def test_cli_evaluate_a_csv_with_a_graph(tmp_path, csv_table, capsys):
    path, graph = csv_table
    out = tmp_path / "run"
    assert cli.main(["evaluate", "--policy", FISHER, "--dataset", str(path), "--graph",
                     str(graph), "--out", str(out), "--no-progress"]) == 0
    (record,) = results(out)
    assert record["ground_truth"] is True and 0 < record["scores"]["f1"] <= 1
    # the notes fit a table (issue 42): one instance, no salt; not "regenerate", not --count
    err = capsys.readouterr().err
    assert "table-cells is a data table: one table is one instance" in err
    assert "regenerate" not in err and "--count" not in err
    assert cli.main(["report", str(out), "--out", str(tmp_path / "report"), "--no-progress",
                     "--no-traces", "--bootstrap", "200"]) == 0
    err = capsys.readouterr().err
    assert "table-cells is a data table: one table is one instance" in err
    assert "regenerate" not in err and "--count" not in err and "not sealed" not in err
    # a report process registers the table again from the run's config and finds the same data
    run = load_run(out)
    instance = regenerate_instance(run, ("table-cells", "test", 0), record["instance_sha256"])
    assert instance.record.dag.n_edges() == 2


def test_evaluate_a_table_in_spawned_workers_with_a_structure(tmp_path, csv_table):
    path, graph = csv_table
    summary = evaluate(FISHER, families=["bnlearn-cancer"], count=2, split="dev",
                       settings=SETTINGS, workers=2, out_dir=tmp_path / "run", progress=False,
                       datasets=[{"path": path, "graph": graph, "anonymize": True}])
    by_family = {row.family: row for row in summary.families}
    assert set(by_family) == {"bnlearn-cancer", "table-cells"}
    assert by_family["bnlearn-cancer"].episodes == 2 and by_family["table-cells"].episodes == 1
    records = {r["family"]: r for r in results(tmp_path / "run")}
    assert records["table-cells"]["final_graph"]["names"] == ["X1", "X2", "X3"]
    assert all(r["error"] is None for r in results(tmp_path / "run"))


def test_cli_evaluate_sachs_and_report(tmp_path, capsys):
    out = tmp_path / "run"
    assert cli.main(["evaluate", "--policy", FISHER, "--family", "sachs", "--out", str(out),
                     "--max-steps", "150", "--no-progress"]) == 0
    (record,) = results(out)
    assert record["family"] == "sachs" and record["ground_truth"] is True
    assert 0 < record["scores"]["f1"] < 1
    assert "sachs is a data table" in capsys.readouterr().err
    assert cli.main(["report", str(out), "--out", str(tmp_path / "report"), "--no-progress",
                     "--no-traces", "--bootstrap", "200"]) == 0
    assert "| sachs |" in (tmp_path / "report" / "report.md").read_text()


def test_report_says_no_ground_truth(tmp_path, csv_table):
    path, _ = csv_table
    out = tmp_path / "run"
    evaluate(FISHER, settings=SETTINGS, out_dir=out, progress=False, families=[],
             datasets=[{"path": path}])
    assert cli.main(["report", str(out), "--out", str(tmp_path / "report"), "--no-progress",
                     "--no-traces", "--bootstrap", "200"]) == 0
    text = (tmp_path / "report" / "report.md").read_text()
    assert "no ground truth for table-cells" in text


def test_bad_dataset_options_are_refused(tmp_path, csv_table, capsys):
    path, graph = csv_table
    assert cli.main(["evaluate", "--policy", FISHER, "--family", "lg", "--graph", str(graph),
                     "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    assert "go with --dataset" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n" + "\n".join(f"{i},{'?' if i == 4 else i * i}" for i in range(12)))
    assert cli.main(["evaluate", "--policy", FISHER, "--dataset", str(bad), "--out",
                     str(tmp_path / "y"), "--no-progress"]) == 2
    assert "missing values in column(s) 'b'" in capsys.readouterr().err


def test_evaluate_notes_fit_the_source_of_the_instances(monkeypatch):
    """Generated instances of an unsealed test split get the sealing note; a data table gets
    the one-instance note instead (issue 42)."""
    from heuresis_env.cli.evaluate import source_notes

    monkeypatch.delenv("HEURESIS_TEST_SALT", raising=False)
    (note,) = source_notes(["lg", "anm"], "test")
    assert note.startswith("the test split is not sealed") and "regenerate" in note
    assert source_notes(["lg"], "dev") == []
    (note,) = source_notes(["sachs"], "test")
    assert note.startswith("sachs is a data table: one table is one instance")
    sealing, table = source_notes(["lg", "sachs"], "test")
    assert "not sealed" in sealing and "sachs is a data table" in table
