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
from heuresis_env.errors import HeuresisError


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


@pytest.mark.slow
def test_budgeted_runs_stop_the_slow_skip_its_group_and_are_remembered():
    from baselines.family_table import OVER_BUDGET, _cached_job, over_budget, run_budgeted
    from heuresis_env.generation import InstanceKey

    keys = [InstanceKey("bnlearn-asia", "dev", i) for i in range(2)]
    jobs = [(k, a) for k in keys for a in ("pc-fisherz", "notears-mlp")]
    # NOTEARS-MLP needs seconds of CPU time on Asia at n = 600; PC-Fisher-z a few hundredths
    out = run_budgeted(jobs, budget=0.5, workers=1)
    assert set(out) == {(k.slug, a) for k, a in jobs}
    for key in keys:
        scores, _, error, _ = out[(key.slug, "pc-fisherz")]
        assert error is None and 0 < scores["f1"] <= 1
    stopped = out[(keys[0].slug, "notears-mlp")]
    assert stopped[0] is None and stopped[2] == f"{OVER_BUDGET}: stopped after 0.5 s"
    skipped = out[(keys[1].slug, "notears-mlp")]  # its group's first run was stopped
    assert over_budget(skipped[2]) and "not run" in skipped[2] and keys[0].slug in skipped[2]
    # remembered: the same or a smaller budget reads the stop back, a larger one runs again
    # (slug, algorithm, scores, seconds, error, oracle scores)
    assert over_budget(_cached_job(keys[0], "notears-mlp", 0.5)[4])
    assert over_budget(_cached_job(keys[0], "notears-mlp", 0.25)[4])
    assert _cached_job(keys[0], "notears-mlp", 1.0) is None
    assert _cached_job(keys[1], "notears-mlp", 0.5) is None  # skipped, never tried
    assert _cached_job(keys[0], "pc-fisherz", 0.5)[4] is None  # a cached result
    again = run_budgeted(jobs, budget=0.5, workers=2)  # warm: from the caches, no worker
    assert {k: v[2] is None for k, v in again.items()} == {k: v[2] is None
                                                            for k, v in out.items()}
    with pytest.raises(HeuresisError, match="budget"):
        run_budgeted(jobs, budget=0.0)


@pytest.mark.slow
def test_a_budgeted_group_runs_in_order_and_stops_at_its_first_run_over_budget():
    from baselines.family_table import OVER_BUDGET, over_budget, run_budgeted
    from heuresis_env.generation import InstanceKey

    # one group (family, algorithm): PC-KCI on Asia takes hundredths of a second at n = 100
    # and seconds at n = 1,000; with two workers the third job would start beside the second
    # if the group did not run in order
    small, large, small_again = (InstanceKey("bnlearn-asia", "dev", 0, n=100),
                                 InstanceKey("bnlearn-asia", "dev", 0, n=1000),
                                 InstanceKey("bnlearn-asia", "dev", 1, n=100))
    other = [InstanceKey("bnlearn-cancer", "dev", i, n=100) for i in range(3)]
    jobs = [(k, "pc-kci") for k in (small, large, small_again)] + [(k, "pc-fisherz")
                                                                   for k in other]
    out = run_budgeted(jobs, budget=1.0, workers=2)
    assert out[(small.slug, "pc-kci")][2] is None
    assert out[(large.slug, "pc-kci")][2] == f"{OVER_BUDGET}: stopped after 1 s"
    skipped = out[(small_again.slug, "pc-kci")]
    assert over_budget(skipped[2]) and f"not run, {large.slug} took over" in skipped[2]
    assert all(out[(k.slug, "pc-fisherz")][2] is None for k in other)  # other groups go on
    warm = run_budgeted(jobs, budget=1.0, workers=1)
    assert warm[(large.slug, "pc-kci")][2].endswith("(an earlier run)")  # read back
    assert ({k: (v[2] is None, over_budget(v[2]), v[0]) for k, v in warm.items()}
            == {k: (v[2] is None, over_budget(v[2]), v[0]) for k, v in out.items()})


@pytest.mark.slow
def test_shelf_table_on_small_networks(capsys):
    from baselines.reference import REFERENCE_ALGORITHMS
    from baselines.structure_table import compute_shelf_table, format_shelf_table

    rows = compute_shelf_table(full=["bnlearn-cancer"], large=["bnlearn-earthquake"], count=2,
                               n=200, workers=2, budget=60.0)
    full, large = rows
    assert (full.family, full.d, full.n_edges, full.n_instances) == ("bnlearn-cancer", 5, 4, 2)
    assert full.algorithms == list(REFERENCE_ALGORITHMS) and large.algorithms == list(
        SUITE_ALGORITHMS)
    assert all(full.f1[a] is not None for a in REFERENCE_ALGORITHMS)  # all fit in 60 s
    assert full.bca in REFERENCE_ALGORITHMS and large.bca is None
    assert full.selection_headroom == pytest.approx(full.f1[full.bca] - full.f1["pc-kci"])
    assert full.repair_headroom == pytest.approx(full.oracle_f1 - full.f1[full.bca])
    for row in rows:
        assert row.oracle_f1 >= row.f1["pc-kci"] - 1e-12  # PC-KCI plus restored true edges
        assert all(v >= 0 for v in row.seconds.values())
    text = format_shelf_table(rows, 200, 60.0)
    assert "bnlearn-earthquake" in text and "notears-mlp" in text and "BCA_φ" in text
    assert cli.main(["baselines", "--suite", "shelf", "--split", "dev"]) == 2
    assert "test split" in capsys.readouterr().err
    assert cli.main(["baselines", "--budget", "5"]) == 2
    assert "--budget goes with --suite" in capsys.readouterr().err
