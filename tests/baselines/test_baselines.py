"""Baselines: merge_k / merge*, BCA selection, the oracle's repair step (pure graph logic),
and the `heuresis baselines` command end to end on a tiny setting."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from baselines.merges import best_k, merge_k
from baselines.oracle import restore_wrong_deletions
from baselines.selection import select_bca
from heuresis_env.discovery.pc import Deletion
from heuresis_env.graphs import Graph

NAMES = ["A", "B", "C", "D"]


def test_merge_k_counts_skeleton_votes_and_keeps_agreed_directions():
    g1 = Graph.from_edges(NAMES, [("A", "B"), ("B", "C")])
    g2 = Graph.from_edges(NAMES, [("A", "B"), ("C", "B"), ("C", "D")])
    g3 = Graph.from_edges(NAMES, [("A", "B")], directed=False)
    m1 = merge_k([g1, g2, g3], 1)
    assert m1.n_edges() == 3
    m2 = merge_k([g1, g2, g3], 2)
    assert {frozenset((e.u, e.v)) for e in m2.edges()} == {frozenset("AB"), frozenset("BC")}
    assert m2.edge("A", "B").is_directed and m2.parents("B") == ["A"]  # g3 undirected: no veto
    assert m2.edge("B", "C").is_undirected  # g1 says B→C, g2 says C→B
    m3 = merge_k([g1, g2, g3], 3)
    assert [str(e) for e in m3.edges()] == ["A --> B"]


def test_merge_k_rejects_bad_k_and_mismatched_names():
    g = Graph.from_edges(NAMES, [("A", "B")])
    with pytest.raises(ValueError, match=r"1\.\.1"):
        merge_k([g], 2)
    with pytest.raises(ValueError, match="same variables"):
        merge_k([g, Graph(["A", "B", "C", "E"])], 1)


def test_best_k_picks_the_k_with_the_best_mean_score():
    truth = Graph.from_edges(NAMES, [("A", "B")])
    noisy = [Graph.from_edges(NAMES, [("A", "B"), ("C", "D")]),
             Graph.from_edges(NAMES, [("A", "B"), ("B", "D")]),
             Graph.from_edges(NAMES, [("A", "C")])]

    def f1(g, t):
        p, s = g.skeleton(), t.skeleton()
        tp = np.sum(p & s) / 2
        return 0.0 if tp == 0 else 2 * tp / (p.sum() / 2 + s.sum() / 2)

    k, means = best_k([noisy], [truth], f1)
    assert k == 2 and means[1] == 1.0 and means[0] < 1.0


def test_select_bca_takes_the_best_mean_and_counts_failures_as_zero():
    assert select_bca({"a": [0.5, 0.5], "b": [0.9, np.nan], "c": [0.6, 0.6]}) == "c"
    assert select_bca({"a": [0.7], "b": [0.7]}) == "a"  # ties: first in reference order
    with pytest.raises(ValueError):
        select_bca({})


def test_oracle_restores_exactly_the_wrong_deletions_with_true_direction():
    true_dag = Graph.from_edges(NAMES, [("A", "B"), ("B", "C"), ("D", "C")])
    pc_graph = Graph.from_edges(NAMES, [("A", "B")], directed=False)
    log = [
        Deletion(order=0, x="B", y="C", conditioning_set=(), level=0, statistic=0.1,
                 p_value=0.4, test="kci"),  # wrong: true edge B→C
        Deletion(order=1, x="A", y="D", conditioning_set=(), level=0, statistic=0.1,
                 p_value=0.7, test="kci"),  # right: true non-edge
        Deletion(order=2, x="C", y="D", conditioning_set=("B",), level=1, statistic=0.1,
                 p_value=0.2, test="kci"),  # wrong: true edge D→C
    ]
    repaired = restore_wrong_deletions(pc_graph, log, true_dag)
    assert repaired.edge("B", "C").is_directed and repaired.children("B") == ["C"]
    assert repaired.children("D") == ["C"]
    assert not repaired.adjacent("A", "D")
    assert repaired.edge("A", "B").is_undirected  # PC's own edges untouched


@pytest.mark.slow
def test_heuresis_baselines_command_end_to_end(tmp_path):
    out = tmp_path / "table.json"
    cmd = [sys.executable, "-m", "heuresis_env.cli", "baselines", "--family", "lg", "--split", "test",
           "--count", "3", "--selection-count", "3", "--algorithms", "pc-fisherz,ges",
           "--d", "5", "--n", "200", "--resamples", "500", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "BCA = " in proc.stdout and "repair headroom" in proc.stdout
    # without a terminal, progress comes as lines (the last one at least), and the workers
    # are one per available CPU by default (issue 42)
    from heuresis_env.threads import available_cpus

    assert "algorithm runs: 18 of 18 runs (100%)" in proc.stderr, proc.stderr
    assert f"({available_cpus()} worker(s))" in proc.stdout
    tables = json.loads(out.read_text())["tables"]
    (lg,) = tables
    assert lg["family"] == "lg" and lg["n_instances"] == 3
    assert {r["name"] for r in lg["algorithms"]} == {"pc-kci", "pc-fisherz", "ges"}
    assert lg["bca"] in {"pc-kci", "pc-fisherz", "ges"}
    # the oracle only adds true edges to PC-KCI: its F1 is never below PC-KCI's
    pc_kci = next(r for r in lg["algorithms"] if r["name"] == "pc-kci")["f1"]["mean"]
    assert lg["oracle_f1"]["mean"] >= pc_kci - 1e-12
    # a second run is served from the cache
    proc2 = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc2.returncode == 0
    assert json.loads(out.read_text())["tables"][0]["bca_f1"] == lg["bca_f1"]
    # the file is a BCA selection for episodes of its size only
    from baselines.policies import load_bca_selection, selection_size

    assert selection_size(out) == {"d": 5, "n": 200, "graph_model": "er"}
    assert load_bca_selection(out) == {"lg": lg["bca"]}


def test_unknown_family_and_algorithm_are_clear_errors():
    base = [sys.executable, "-m", "heuresis_env.cli", "baselines", "--count", "1"]
    proc = subprocess.run(base + ["--family", "wilde"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "wild" in proc.stderr and "unknown family" in proc.stderr
    proc = subprocess.run(base + ["--family", "lg", "--algorithms", "pc-fisher"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "pc-fisherz" in proc.stderr
