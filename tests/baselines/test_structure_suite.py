"""``heuresis baselines --suite bnlearn`` and ``--dataset``: the share of the oracle's gain that
GES recovers, the suite table on small networks, and every algorithm on a user's table."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from baselines.structure_table import (
    SUITE_ALGORITHMS,
    _share,
    compute_suite_table,
    format_suite_table,
    share_interval,
)
from heuresis_env import cli


def test_share_of_the_oracle_gain():
    kci = np.array([0.6, 0.7, 0.8])
    oracle = kci + 0.2
    assert _share(kci + 0.2, kci, oracle) == pytest.approx(1.0)
    assert _share(kci + 0.1, kci, oracle) == pytest.approx(0.5)
    assert _share(kci - 0.1, kci, oracle) == pytest.approx(-0.5)
    assert math.isnan(_share(kci, kci, kci))  # the oracle gains nothing
    low, high = share_interval(kci + np.array([0.05, 0.1, 0.15]), kci, oracle, seed=0,
                               n_resamples=500)
    assert 0.25 - 1e-9 <= low <= 0.5 <= high <= 0.75 + 1e-9
    assert all(math.isnan(v) for v in share_interval(kci, kci, kci, seed=0, n_resamples=50))


def test_suite_table_on_small_networks():
    rows = compute_suite_table(["bnlearn-cancer", "bnlearn-asia"], split="dev", count=2,
                               n=300, n_resamples=200)
    assert [r.family for r in rows] == ["bnlearn-cancer", "bnlearn-asia"]
    for row in rows:
        assert set(row.f1) == {*SUITE_ALGORITHMS, "oracle"} and row.n_instances == 2
        # the oracle is PC-KCI plus restored true edges: never below PC-KCI
        assert row.f1["oracle"].mean >= row.f1["pc-kci"].mean - 1e-12
        assert row.gain_oracle == pytest.approx(row.f1["oracle"].mean - row.f1["pc-kci"].mean)
    text = format_suite_table(rows, "dev", 300)
    assert "bnlearn-asia" in text and "GES share of oracle gain" in text


def test_cli_baselines_dataset_with_and_without_graph(tmp_path, capsys):
    rng = np.random.default_rng(2)
    a = rng.normal(size=150)
    b = a + rng.normal(size=150)
    c = b + rng.normal(size=150)
    data = tmp_path / "t.csv"
    data.write_text("a,b,c\n" + "\n".join(f"{x},{y},{z}" for x, y, z in zip(a, b, c)))
    graph = tmp_path / "g.txt"
    graph.write_text("a --> b\nb --> c\n")
    assert cli.main(["baselines", "--dataset", str(data), "--graph", str(graph),
                     "--algorithms", "pc-fisherz,ges", "--json", str(tmp_path / "o.json")]) == 0
    printed = capsys.readouterr().out
    assert "graph" in printed and "pc-fisherz" in printed
    document = json.loads((tmp_path / "o.json").read_text())
    assert document["ground_truth"] and document["rows"][0]["scores"]["f1"] > 0
    assert cli.main(["baselines", "--dataset", str(data), "--algorithms", "pc-fisherz"]) == 0
    printed = capsys.readouterr().out
    assert "no ground truth" in printed and "      -" in printed
    assert cli.main(["baselines", "--graph", str(graph)]) == 2
    assert "go with --dataset" in capsys.readouterr().err
