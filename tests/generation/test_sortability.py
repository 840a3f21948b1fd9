"""Sortability diagnostics: hand-computed cases, agreement with Reisach et al.'s reference
code, and the standardization claim on the lg family."""

from __future__ import annotations

import math

import numpy as np
import pytest

from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.generation.sortability import (
    order_alignment,
    r2_coefficients,
    r2_sortability,
    varsortability,
)

CHAIN = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])


def _data_with_variances(variances, n=4000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, len(variances))) * np.sqrt(variances)


def test_chain_hand_cases():
    scores_up, scores_down = np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    assert order_alignment(CHAIN, scores_up) == 1.0
    assert order_alignment(CHAIN, scores_down) == 0.0
    assert order_alignment(CHAIN, np.ones(3)) == 0.5
    # paths a→b, b→c, a→c (length 2); scores 1, 3, 2: a→b up, b→c down, a→c up ⇒ 2/3
    assert order_alignment(CHAIN, np.array([1.0, 3.0, 2.0])) == pytest.approx(2 / 3)
    # a tie on a→b (1/2), b→c up, a→c up ⇒ 2.5 / 3
    assert order_alignment(CHAIN, np.array([1.0, 1.0, 2.0])) == pytest.approx(2.5 / 3)


def test_paths_are_counted_once_per_pair_and_length():
    # diamond a→b→d, a→c→d: length 1: ab, ac, bd, cd; length 2: a→d (two paths, counted
    # once, as the reference code's boolean matrix powers do)
    diamond = np.zeros((4, 4), dtype=int)
    for i, j in [(0, 1), (0, 2), (1, 3), (2, 3)]:
        diamond[i, j] = 1
    scores = np.array([2.0, 1.0, 3.0, 0.0])
    # ab down, ac up, bd down, cd down, ad down ⇒ 1 / 5
    assert order_alignment(diamond, scores) == pytest.approx(1 / 5)
    # a shortcut a→d as well: the pair (a, d) now counts at length 1 and at length 2
    diamond[0, 3] = 1
    # scores 0, 1, 2, 2: ab, ac, bd, ad up, cd tied (1/2); length 2: ad up ⇒ 5.5 / 6
    assert order_alignment(diamond, np.array([0.0, 1.0, 2.0, 2.0])) == pytest.approx(5.5 / 6)


def test_no_edges_gives_nan():
    assert math.isnan(varsortability(_data_with_variances([1, 2, 3]), np.zeros((3, 3))))
    assert math.isnan(r2_sortability(_data_with_variances([1, 2, 3]), np.zeros((3, 3))))


def test_varsortability_on_known_variances_and_ties():
    assert varsortability(_data_with_variances([1, 4, 9]), CHAIN) == 1.0
    assert varsortability(_data_with_variances([9, 4, 1]), CHAIN) == 0.0
    standardized = _data_with_variances([9, 4, 1])
    standardized = (standardized - standardized.mean(0)) / standardized.std(0)
    assert varsortability(standardized, CHAIN) == 0.5
    # with tol = 0 the rounding-level differences of standardized variances are not ties
    assert varsortability(standardized, CHAIN, tol=0.0) in (0.0, 1 / 3, 2 / 3, 1.0, 0.5,
                                                            1 / 6, 5 / 6)


def _reference_varsortability(X, W, tol=1e-9):
    """Scriddie/Varsortability src/varsortability.py (ties count 0), for tie-free data."""
    E = W != 0
    Ek = E.copy()
    var = np.var(X, axis=0, keepdims=True)
    tol = var.min() * tol
    n_paths = 0
    n_correctly_ordered_paths = 0
    for _ in range(E.shape[0] - 1):
        n_paths += Ek.sum()
        n_correctly_ordered_paths += (Ek * var / var.T > 1 + tol).sum()
        Ek = Ek.dot(E)
    return n_correctly_ordered_paths / n_paths


def test_agrees_with_the_original_varsortability_script_on_tie_free_data():
    for index in range(10):
        instance = generate_instance(InstanceKey("mixed", "dev", index))
        scm = instance.record.scm
        raw = np.asarray(instance.X) * scm.column_sds + scm.column_means
        adjacency = instance.record.dag.directed_adjacency().astype(int)
        if adjacency.sum() == 0:
            continue
        assert varsortability(raw, adjacency) == pytest.approx(
            _reference_varsortability(raw, adjacency), abs=1e-12)


def test_agrees_with_causaldisco():
    analytics = pytest.importorskip("CausalDisco.analytics")
    for family in ("lg", "wild", "gauntlet"):
        for index in range(6):
            instance = generate_instance(InstanceKey(family, "dev", index))
            scm = instance.record.scm
            raw = np.asarray(instance.X) * scm.column_sds + scm.column_means
            adjacency = instance.record.dag.directed_adjacency().astype(float)
            if adjacency.sum() == 0:
                continue
            assert varsortability(raw, adjacency, tol=0.0) == pytest.approx(
                analytics.var_sortability(raw, adjacency), abs=1e-12)
            assert r2_sortability(instance.X, adjacency) == pytest.approx(
                analytics.r2_sortability(np.asarray(instance.X), adjacency), abs=1e-9)


def test_r2_coefficients_match_least_squares():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 4))
    X[:, 3] += 0.8 * X[:, 0] - 0.5 * X[:, 1]
    r2 = r2_coefficients(X)
    for k in range(4):
        others = np.column_stack([np.ones(500), np.delete(X, k, axis=1)])
        coefficients, *_ = np.linalg.lstsq(others, X[:, k], rcond=None)
        residual = X[:, k] - others @ coefficients
        expected = 1 - residual.var() / X[:, k].var()
        assert r2[k] == pytest.approx(expected, abs=1e-10)


def test_r2_with_a_singular_correlation_matrix_falls_back_to_least_squares():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((300, 3))
    X = np.column_stack([X, X[:, 0] * 2.0])  # an exact duplicate (up to scale)
    r2 = r2_coefficients(X)
    assert np.all(np.isfinite(r2))
    assert r2[0] == pytest.approx(1.0, abs=1e-9) and r2[3] == pytest.approx(1.0, abs=1e-9)
    assert r2[1] < 0.1


def test_r2_sortability_is_scale_invariant():
    instance = generate_instance(InstanceKey("anm", "dev", 5))
    scm = instance.record.scm
    raw = np.asarray(instance.X) * scm.column_sds + scm.column_means
    adjacency = instance.record.dag.directed_adjacency()
    assert r2_sortability(raw, adjacency) == pytest.approx(
        r2_sortability(instance.X, adjacency), abs=1e-9)


def test_lg_varsortability_high_before_and_chance_after_standardization():
    """Reisach et al. (2021): raw linear-Gaussian ER data is highly varsortable; the
    benchmark's standardized columns bring it to chance."""
    raw_values, standardized_values = [], []
    for index in range(30):
        instance = generate_instance(InstanceKey("lg", "dev", index))
        adjacency = instance.record.dag.directed_adjacency()
        if not adjacency.any():
            continue
        raw = instance.record.scm.sample(2000, np.random.default_rng(index), standardize=False)
        raw_values.append(varsortability(raw, adjacency))
        standardized_values.append(varsortability(instance.X, adjacency))
    assert np.mean(raw_values) > 0.85
    assert abs(np.mean(standardized_values) - 0.5) < 0.02


def test_bad_input():
    X = _data_with_variances([1, 2, 3], n=20)
    with pytest.raises(HeuresisError, match=r"\(3, 3\)"):
        varsortability(X, np.zeros((4, 4)))
    with pytest.raises(DataError, match="2-D"):
        varsortability(X[:, 0], CHAIN)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(DataError, match="NaN"):
        r2_sortability(bad, CHAIN)
    with pytest.raises(HeuresisError, match="tol"):
        order_alignment(CHAIN, np.ones(3), tol=-1.0)
