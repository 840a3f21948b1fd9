"""Scores and bootstrap intervals: hand-computed cases, causal-learn's SHD, invariants, coverage."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from causallearn.graph.Edge import Edge as CausalLearnEdge
from causallearn.graph.Endpoint import Endpoint
from causallearn.graph.GeneralGraph import GeneralGraph
from causallearn.graph.GraphNode import GraphNode
from causallearn.graph.SHD import SHD
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.graphs import EdgeMark, Graph, cpdag_from_dag
from heuresis_env.metrics import (
    adjacency_f1,
    adjacency_scores,
    bootstrap_mean_ci,
    nshd,
    paired_bootstrap,
    score_graph,
    shd,
    shd_cpdag,
    unpaired_bootstrap,
)

T, A, C = EdgeMark.TAIL, EdgeMark.ARROW, EdgeMark.CIRCLE
NAMES = ["X1", "X2", "X3", "X4"]
PROPERTY_SETTINGS = settings(max_examples=80, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])


def dag(*edges: tuple[str, str], names=NAMES) -> Graph:
    return Graph.from_edges(names, edges)


# True DAG X1 → X2 → X3 ← X4: CPDAG X1 — X2, X2 → X3 ← X4 (the collider is compelled).
TRUE_DAG = dag(("X1", "X2"), ("X2", "X3"), ("X4", "X3"))


# ---- hand-computed cases ----------------------------------------------------------------------

def test_identical_graphs():
    scores = score_graph(TRUE_DAG.copy(), TRUE_DAG)
    assert scores == {"f1": 1.0, "precision": 1.0, "recall": 1.0, "shd": 0, "nshd": 0.0,
                      "shd_cpdag": 1, "n_edges": 3,  # X1 → X2 is undirected in the CPDAG
                      "orientation": 1.0}


def test_orientation_accuracy_reads_the_arrows_of_the_true_edges_found():
    # the true CPDAG finds every true edge and orients two of the three right
    assert score_graph(cpdag_from_dag(TRUE_DAG), TRUE_DAG)["orientation"] == pytest.approx(2 / 3)
    reversed_graph = Graph.from_dag(TRUE_DAG.directed_adjacency().T, TRUE_DAG.names)
    scores = score_graph(reversed_graph, TRUE_DAG)
    assert scores["orientation"] == 0.0 and scores["f1"] == 1.0
    assert math.isnan(score_graph(Graph.empty(TRUE_DAG.names), TRUE_DAG)["orientation"])


def test_the_true_cpdag_scores_zero_against_the_cpdag_only():
    cpdag = cpdag_from_dag(TRUE_DAG)
    assert [str(e) for e in cpdag.edges()] == ["X1 --- X2", "X2 --> X3", "X4 --> X3"]
    scores = score_graph(cpdag, TRUE_DAG)
    assert scores["shd"] == 1 and scores["shd_cpdag"] == 0 and scores["f1"] == 1.0


def test_a_reversal_costs_one():
    predicted = dag(("X2", "X1"), ("X2", "X3"), ("X4", "X3"))
    assert shd(predicted, TRUE_DAG) == 1
    assert adjacency_f1(predicted, TRUE_DAG) == 1.0
    assert shd_cpdag(predicted, cpdag_from_dag(TRUE_DAG)) == 1
    collider_reversed = dag(("X1", "X2"), ("X3", "X2"), ("X4", "X3"))
    assert shd(collider_reversed, TRUE_DAG) == 1


def test_an_undirected_edge_between_true_neighbours_costs_one():
    predicted = TRUE_DAG.copy()
    predicted.add_undirected("X2", "X3")
    assert shd(predicted, TRUE_DAG) == 1
    # against the CPDAG both X2 — X3 (directed there) and X1 → X2 (undirected there) differ
    assert shd_cpdag(predicted, cpdag_from_dag(TRUE_DAG)) == 2
    predicted = cpdag_from_dag(TRUE_DAG)
    predicted.add_undirected("X2", "X3")
    assert shd_cpdag(predicted, cpdag_from_dag(TRUE_DAG)) == 1


@pytest.mark.parametrize("mark_u, mark_v", [(A, A), (C, A), (C, C), (T, C), (A, C)])
def test_every_pag_edge_other_than_the_true_arrow_costs_one(mark_u, mark_v):
    predicted = TRUE_DAG.copy()
    predicted.set_edge("X1", "X2", mark_u, mark_v)
    assert shd(predicted, TRUE_DAG) == 1
    assert adjacency_f1(predicted, TRUE_DAG) == 1.0


def test_an_extra_edge():
    predicted = dag(("X1", "X2"), ("X2", "X3"), ("X4", "X3"), ("X1", "X4"))
    scores = score_graph(predicted, TRUE_DAG)
    assert scores["shd"] == 1 and scores["n_edges"] == 4
    assert scores["precision"] == 0.75 and scores["recall"] == 1.0
    assert scores["f1"] == pytest.approx(6 / 7)
    assert scores["shd_cpdag"] == 2  # the extra edge and X1 → X2


def test_a_missing_edge():
    predicted = dag(("X1", "X2"), ("X2", "X3"))
    scores = adjacency_scores(predicted, TRUE_DAG)
    assert scores["precision"] == 1.0 and scores["recall"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx(0.8)
    assert (scores["true_positives"], scores["false_positives"], scores["false_negatives"]) == (2, 0, 1)
    assert shd(predicted, TRUE_DAG) == 1


def test_reversal_extra_and_missing_together():
    predicted = dag(("X2", "X1"), ("X1", "X3"), ("X4", "X3"))  # reversed, X2→X3 missing, X1→X3 extra
    assert shd(predicted, TRUE_DAG) == 3
    assert nshd(predicted, TRUE_DAG) == 0.75
    assert adjacency_f1(predicted, TRUE_DAG) == pytest.approx(2 / 3)


def test_an_empty_prediction_has_nan_precision_and_zero_f1():
    scores = score_graph(Graph(NAMES), TRUE_DAG)
    assert math.isnan(scores["precision"])
    assert scores["recall"] == 0.0 and scores["f1"] == 0.0
    assert scores["shd"] == 3 and scores["nshd"] == 0.75 and scores["n_edges"] == 0


def test_both_graphs_empty_agree_exactly():
    scores = score_graph(Graph(NAMES), Graph(NAMES))
    assert math.isnan(scores["precision"]) and math.isnan(scores["recall"])
    assert scores["f1"] == 1.0 and scores["shd"] == 0 and scores["shd_cpdag"] == 0


def test_an_empty_truth_with_edges_predicted():
    scores = adjacency_scores(dag(("X1", "X2")), Graph(NAMES))
    assert scores["precision"] == 0.0 and math.isnan(scores["recall"]) and scores["f1"] == 0.0
    assert shd(dag(("X1", "X2")), Graph(NAMES)) == 1


def test_variables_are_matched_by_name_not_position():
    reordered = dag(("X1", "X2"), ("X2", "X3"), ("X4", "X3"), names=["X3", "X1", "X4", "X2"])
    assert score_graph(reordered, TRUE_DAG) == score_graph(TRUE_DAG, TRUE_DAG)


def test_mismatched_variables_are_named_in_the_error():
    with pytest.raises(HeuresisError, match=r"unknown \['X9'\], missing \['X4'\]"):
        shd(dag(names=["X1", "X2", "X3", "X9"]), TRUE_DAG)
    with pytest.raises(HeuresisError, match="Graph"):
        adjacency_f1(np.zeros((4, 4)), TRUE_DAG)


def test_wrong_kind_of_truth_is_refused():
    with pytest.raises(HeuresisError, match="shd_cpdag"):
        shd(TRUE_DAG, cpdag_from_dag(TRUE_DAG))
    pag = TRUE_DAG.copy()
    pag.set_edge("X1", "X2", C, A)
    with pytest.raises(HeuresisError, match="pag"):
        shd_cpdag(TRUE_DAG, pag)
    with pytest.raises(HeuresisError, match="skeleton"):
        score_graph(TRUE_DAG, TRUE_DAG, true_cpdag=Graph(NAMES))


def test_score_graph_accepts_the_stored_cpdag():
    cpdag = cpdag_from_dag(TRUE_DAG)
    predicted = dag(("X2", "X1"), ("X3", "X2"))
    assert score_graph(predicted, TRUE_DAG, cpdag) == score_graph(predicted, TRUE_DAG)


# ---- causal-learn's SHD ----------------------------------------------------------------------

_CAUSALLEARN_ENDPOINT = {T: Endpoint.TAIL, A: Endpoint.ARROW, C: Endpoint.CIRCLE}


def to_causallearn(graph: Graph) -> GeneralGraph:
    nodes = [GraphNode(name) for name in graph.names]
    general = GeneralGraph(nodes)
    for edge in graph.edges():
        general.add_edge(CausalLearnEdge(nodes[graph.index(edge.u)], nodes[graph.index(edge.v)],
                                         _CAUSALLEARN_ENDPOINT[edge.mark_u],
                                         _CAUSALLEARN_ENDPOINT[edge.mark_v]))
    return general


def causallearn_shd(truth: Graph, mean: Graph) -> int:
    return SHD(to_causallearn(truth), to_causallearn(mean)).get_shd()


def random_dag(rng: np.random.Generator, names: list[str], edge_probability: float) -> Graph:
    d = len(names)
    order = rng.permutation(d)
    adjacency = np.zeros((d, d), dtype=bool)
    adjacency[np.ix_(order, order)] = np.triu(rng.random((d, d)) < edge_probability, k=1)
    return Graph.from_dag(adjacency, names)


def random_output(rng: np.random.Generator, truth: Graph, kinds: list[tuple]) -> Graph:
    """A perturbed copy of ``truth``: edges dropped, added, and re-marked with ``kinds``."""
    output = Graph(truth.names)
    for u, v in itertools.combinations(truth.names, 2):
        if truth.adjacent(u, v) != (rng.random() < 0.2):  # flip adjacency with probability 0.2
            edge = truth.edge(u, v)  # marks in (u, v) order
            if edge is not None and rng.random() < 0.5:
                output.set_edge(u, v, edge.mark_u, edge.mark_v)
            else:
                mark_u, mark_v = kinds[rng.integers(len(kinds))]
                output.set_edge(u, v, mark_u, mark_v)
    return output


def test_shd_agrees_with_causallearn_on_dag_outputs():
    rng = np.random.default_rng(11)
    names = [f"X{i + 1}" for i in range(8)]
    totals = []
    for _ in range(150):
        truth = random_dag(rng, names, 0.3)
        output = random_output(rng, truth, [(T, A), (A, T)])
        assert shd(output, truth) == causallearn_shd(truth, output)
        totals.append(shd(output, truth))
    assert np.mean(totals) > 2  # the cases are not trivial


def test_shd_agrees_with_causallearn_on_cpdag_and_pag_outputs():
    """Against a DAG truth both count a pair once whenever its end marks differ in any way."""
    rng = np.random.default_rng(12)
    names = [f"X{i + 1}" for i in range(7)]
    kinds = [(T, A), (A, T), (T, T), (A, A), (C, A), (A, C), (C, C)]
    for _ in range(150):
        truth = random_dag(rng, names, 0.35)
        output = random_output(rng, truth, kinds)
        assert shd(output, truth) == causallearn_shd(truth, output)
        true_cpdag = cpdag_from_dag(truth)
        assert shd_cpdag(output, true_cpdag) == causallearn_shd(true_cpdag, output)


def test_where_causallearn_and_our_scores_differ():
    """causal-learn has one symmetric SHD for any two graphs: it equals our ``shd`` when given
    the true DAG and our ``shd_cpdag`` when given the true CPDAG, so for a CPDAG-valued output
    its number depends on which truth the caller passes. We keep two named scores and refuse
    a non-DAG truth in ``shd``. Other libraries differ more: cdt's default counts a reversal as
    2 (here it would be 2, we say 1) and notears' ``count_accuracy`` counts an undirected edge
    over a true edge as 0 (here it would be 0, we say 1 against the DAG)."""
    chain = dag(("X1", "X2"), ("X2", "X3"), names=["X1", "X2", "X3"])
    output = cpdag_from_dag(chain)  # X1 — X2 — X3: the exact equivalence class
    assert causallearn_shd(chain, output) == shd(output, chain) == 2
    assert causallearn_shd(cpdag_from_dag(chain), output) == shd_cpdag(output, output) == 0
    assert shd(output, chain) != shd_cpdag(output, cpdag_from_dag(chain))
    with pytest.raises(HeuresisError):
        shd(chain, output)  # causal-learn would silently score against a CPDAG here
    reversed_chain = dag(("X2", "X1"), ("X2", "X3"), names=["X1", "X2", "X3"])
    assert shd(reversed_chain, chain) == causallearn_shd(chain, reversed_chain) == 1


# ---- properties -------------------------------------------------------------------------------

@st.composite
def graph_pairs(draw, max_d: int = 7):
    """Two random graphs over the same variables; the first a DAG, the second any marks."""
    d = draw(st.integers(2, max_d))
    names = [f"V{i}" for i in range(d)]
    order = draw(st.permutations(range(d)))
    adjacency = np.zeros((d, d), dtype=bool)
    for i, j in itertools.combinations(range(d), 2):
        if draw(st.booleans()):
            adjacency[order[i], order[j]] = True
    truth = Graph.from_dag(adjacency, names)
    marks = np.zeros((d, d), dtype=np.int8)
    ends = st.sampled_from([T, A, C])
    for i, j in itertools.combinations(range(d), 2):
        if draw(st.booleans()):
            marks[i, j], marks[j, i] = draw(ends), draw(ends)
    other = np.zeros((d, d), dtype=bool)
    for i, j in itertools.combinations(range(d), 2):
        if draw(st.booleans()):
            other[order[j], order[i]] = True  # the reverse causal order
    return truth, Graph(names, marks), draw(st.permutations(range(d))), Graph.from_dag(other, names)


def nan_equal(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y)


@PROPERTY_SETTINGS
@given(graph_pairs())
def test_swapping_roles_swaps_precision_and_recall(pair):
    truth, output, _, _ = pair
    forward, backward = adjacency_scores(output, truth), adjacency_scores(truth, output)
    assert nan_equal(forward["precision"], backward["recall"])
    assert nan_equal(forward["recall"], backward["precision"])
    assert forward["f1"] == pytest.approx(backward["f1"])
    assert 0.0 <= forward["f1"] <= 1.0
    if not (math.isnan(forward["precision"]) or math.isnan(forward["recall"])):
        p, r = forward["precision"], forward["recall"]
        assert forward["f1"] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0)


@PROPERTY_SETTINGS
@given(graph_pairs())
def test_shd_bounds_and_identity(pair):
    truth, output, _, _ = pair
    assert shd(truth, truth) == 0 and shd_cpdag(truth, truth) == 0
    cpdag = cpdag_from_dag(truth)
    assert shd(cpdag, truth) == int(np.triu(cpdag.undirected_adjacency()).sum())
    counts = adjacency_scores(output, truth)
    skeleton_difference = counts["false_positives"] + counts["false_negatives"]
    distance = shd(output, truth)
    assert skeleton_difference <= distance <= skeleton_difference + counts["true_positives"]
    assert shd_cpdag(output, truth) == distance  # a DAG is its own mark matrix


@PROPERTY_SETTINGS
@given(graph_pairs())
def test_scores_are_invariant_under_renaming_and_reordering(pair):
    truth, output, permutation, _ = pair
    renamed = [f"renamed_{name}" for name in truth.names]
    new_names = [renamed[k] for k in permutation]
    order = np.ix_(permutation, permutation)
    renamed_truth = Graph(new_names, truth.marks[order])
    renamed_output = Graph(new_names, output.marks[order])
    before, after = score_graph(output, truth), score_graph(renamed_output, renamed_truth)
    assert before.keys() == after.keys()
    assert all(nan_equal(before[key], after[key]) for key in before)
    # the output may also list its variables in another order than the truth
    shuffled_output = Graph([output.names[k] for k in permutation], output.marks[order])
    scrambled = score_graph(shuffled_output, truth)
    assert all(nan_equal(before[key], scrambled[key]) for key in before)


@PROPERTY_SETTINGS
@given(graph_pairs())
def test_shd_is_symmetric_on_dags_and_obeys_the_triangle_inequality(pair):
    truth, output, _, other = pair
    assert shd(other, truth) == shd(truth, other)
    assert shd(output, truth) <= shd_cpdag(output, other) + shd(other, truth)


# ---- bootstrap --------------------------------------------------------------------------------

def test_the_paired_bootstrap_uses_one_index_matrix_for_both_policies():
    rng = np.random.default_rng(3)
    a, b = rng.random(25), rng.random(25)
    result = paired_bootstrap(a, b, n_resamples=2000, seed=42)
    indices = np.random.default_rng(42).integers(0, 25, size=(2000, 25), dtype=np.int32)
    reference = a[indices].mean(axis=1) - b[indices].mean(axis=1)
    assert result.mean == pytest.approx(a.mean() - b.mean())
    assert (result.low, result.high) == pytest.approx(tuple(np.quantile(reference, [0.025, 0.975])))
    assert result.standard_error == pytest.approx(reference.std(ddof=1))
    assert (result.n, result.n_dropped, result.n_resamples) == (25, 0, 2000)


def test_interval_coverage_is_nominal_for_a_known_mean_difference():
    """500 experiments of 100 paired instances with a true difference 0.05: the 95% interval
    should cover it in a binomial band around 95% (the percentile interval runs slightly
    narrow on few instances: about 94% at n = 40, so n = 100 keeps the test about the code)."""
    rng = np.random.default_rng(2024)
    true_difference, n_experiments, n = 0.05, 500, 100
    covered = 0
    for experiment in range(n_experiments):
        baseline = rng.normal(0.7, 0.1, n)
        policy = baseline + true_difference + rng.normal(0, 0.05, n)
        result = paired_bootstrap(policy, baseline, n_resamples=1000, seed=experiment)
        covered += result.low <= true_difference <= result.high
    band = 3 * math.sqrt(0.95 * 0.05 / n_experiments)
    assert 0.95 - band <= covered / n_experiments <= 0.95 + band


def test_ninety_percent_intervals_cover_about_ninety_percent_on_heavy_tails():
    """Student-t5 scores, 200 instances (large enough that the percentile interval's
    small-sample narrowness, about 1.5 points at n = 60, is negligible)."""
    rng = np.random.default_rng(5)
    covered, n_experiments = 0, 600
    for experiment in range(n_experiments):
        result = bootstrap_mean_ci(rng.standard_t(5, 200), n_resamples=500, confidence=0.9,
                                   seed=experiment)
        covered += result.low <= 0.0 <= result.high
    band = 3 * math.sqrt(0.9 * 0.1 / n_experiments)
    assert 0.9 - band <= covered / n_experiments <= 0.9 + band


def test_pairing_narrows_the_interval_on_correlated_scores():
    rng = np.random.default_rng(8)
    instance_difficulty = rng.normal(0.6, 0.15, 32)
    policy = instance_difficulty + 0.03 + rng.normal(0, 0.02, 32)
    reference = instance_difficulty + rng.normal(0, 0.02, 32)
    paired = paired_bootstrap(policy, reference, seed=1)
    unpaired = unpaired_bootstrap(policy, reference, seed=1)
    assert paired.mean == pytest.approx(unpaired.mean)
    assert paired.width < 0.25 * unpaired.width
    assert paired.excludes_zero() and not unpaired.excludes_zero()
    # on independent scores the two agree
    independent = rng.normal(0.6, 0.15, 200), rng.normal(0.6, 0.15, 200)
    assert paired_bootstrap(*independent, seed=2).width == pytest.approx(
        unpaired_bootstrap(*independent, seed=2).width, rel=0.2)


def test_seeds_and_generators_make_results_reproducible():
    values = np.random.default_rng(0).random(30)
    assert bootstrap_mean_ci(values, seed=7) == bootstrap_mean_ci(values, seed=7)
    assert bootstrap_mean_ci(values) == bootstrap_mean_ci(values, seed=0)
    assert bootstrap_mean_ci(values, seed=7) != bootstrap_mean_ci(values, seed=8)
    assert (bootstrap_mean_ci(values, rng=np.random.default_rng(7))
            == bootstrap_mean_ci(values, seed=7))
    shared = np.random.default_rng(7)
    assert bootstrap_mean_ci(values, rng=shared) != bootstrap_mean_ci(values, rng=shared)


def test_nan_pairs_are_dropped_and_counted():
    a = np.array([0.9, np.nan, 0.7, 0.8, 0.6, 0.75])
    b = np.array([0.8, 0.5, np.nan, 0.7, 0.65, 0.7])
    result = paired_bootstrap(a, b, n_resamples=500, seed=3)
    keep = [0, 3, 4, 5]
    assert (result.n, result.n_dropped) == (4, 2)
    kept_only = paired_bootstrap(a[keep], b[keep], n_resamples=500, seed=3)
    assert result == dataclasses.replace(kept_only, n_dropped=2)
    empty = bootstrap_mean_ci([np.nan, np.nan])
    assert empty.n == 0 and empty.n_dropped == 2 and math.isnan(empty.mean)
    assert math.isnan(empty.low) and math.isnan(empty.high)


def test_large_samples_match_normal_theory():
    """10,000 resamples of 5,000 instances go through the blocked path; the interval must
    match mean ± 1.96·sd/√n."""
    values = np.random.default_rng(4).exponential(1.0, 5000)
    result = bootstrap_mean_ci(values, seed=1)
    standard_error = values.std(ddof=1) / math.sqrt(values.size)
    assert result.standard_error == pytest.approx(standard_error, rel=0.05)
    assert result.low == pytest.approx(values.mean() - 1.96 * standard_error, abs=0.2 * standard_error)
    assert result.high == pytest.approx(values.mean() + 1.96 * standard_error, abs=0.2 * standard_error)
    assert bootstrap_mean_ci(values, seed=1) == result


def test_degenerate_samples():
    constant = bootstrap_mean_ci([0.5] * 10, n_resamples=100)
    assert (constant.mean, constant.low, constant.high) == (0.5, 0.5, 0.5)
    single = bootstrap_mean_ci([0.3], n_resamples=1)
    assert (single.low, single.high, single.standard_error) == (0.3, 0.3, 0.0)
    assert str(constant).startswith("0.500 [0.500, 0.500] (95%, n=10)")


@pytest.mark.parametrize("call, error, match", [
    (lambda: paired_bootstrap([1, 2, 3], [1, 2]), DataError, "3 values of a and 2 of b"),
    (lambda: paired_bootstrap([[1, 2], [3, 4]]), DataError, "one-dimensional"),
    (lambda: paired_bootstrap(["x", "y"]), DataError, "numbers"),
    (lambda: paired_bootstrap([1.0, math.inf]), DataError, "infinite"),
    (lambda: paired_bootstrap([1, 2], n_resamples=0), HeuresisError, "positive integer"),
    (lambda: paired_bootstrap([1, 2], n_resamples=10.5), HeuresisError, "positive integer"),
    (lambda: paired_bootstrap([1, 2], confidence=1.0), HeuresisError, "between 0 and 1"),
    (lambda: paired_bootstrap([1, 2], confidence=95), HeuresisError, "between 0 and 1"),
    (lambda: paired_bootstrap([1, 2], rng=np.random.default_rng(), seed=1), HeuresisError,
     "either rng or seed"),
    (lambda: paired_bootstrap([1, 2], rng=3), HeuresisError, "Generator"),
    (lambda: paired_bootstrap([1, 2], seed=-1), HeuresisError, "non-negative"),
])
def test_bad_bootstrap_input_is_explained(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_seeded_paired_bootstrap_is_kept_on_disk_and_read_back_identically(monkeypatch):
    """Reports recompute hundreds of seeded bootstraps; a warm rerun reads them from the cache
    (the same result, the resampling not run again); a caller's generator is never cached."""
    import heuresis_env.metrics as metrics

    rng = np.random.default_rng(7)
    a, b = rng.random(57), rng.random(57)
    first = paired_bootstrap(a, b, n_resamples=3000, seed=11)
    calls = []
    original = metrics._percentile_bootstrap
    monkeypatch.setattr(metrics, "_percentile_bootstrap",
                        lambda *args, **kwargs: calls.append(1) or original(*args, **kwargs))
    assert paired_bootstrap(a, b, n_resamples=3000, seed=11) == first and calls == []
    # any change to the values, the seed or the settings is another key
    assert paired_bootstrap(a, b, n_resamples=3000, seed=12) != first and len(calls) == 1
    paired_bootstrap(a[::-1], b[::-1], n_resamples=3000, seed=11)
    paired_bootstrap(a, b, n_resamples=3000, seed=11, confidence=0.9)
    assert len(calls) == 3
    paired_bootstrap(a, b, n_resamples=3000, rng=np.random.default_rng(11))
    paired_bootstrap(a, b, n_resamples=3000, rng=np.random.default_rng(11))
    assert len(calls) == 5
    # the cached value is what a fresh computation gives
    monkeypatch.setenv("HEURESIS_NO_CACHE", "1")
    assert paired_bootstrap(a, b, n_resamples=3000, seed=11) == first and len(calls) == 6


def test_the_wilson_interval_is_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    from heuresis_env.metrics import wilson_interval

    for values in ([1, 1, 1], [1, 0, 0, 1, 1], [0.5, 1.0, 0.0, 1.0]):
        result = wilson_interval(values, confidence=0.9)
        share = float(np.mean(values))
        low, high = proportion_confint(share * len(values), len(values), alpha=0.1,
                                       method="wilson")
        assert (result.mean, result.low, result.high) == pytest.approx((share, low, high))
    assert wilson_interval([1, 1, 1]).high == 1.0 and wilson_interval([1, 1, 1]).low < 1.0
    assert math.isnan(wilson_interval([]).low)
