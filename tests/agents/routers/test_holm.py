"""Holm's step-down correction (agents.routers.holm): a hand case, bad input, and the formula."""

from __future__ import annotations

import numpy as np
import pytest

from agents.routers import holm_adjusted_p_values, holm_rejections
from heuresis_env.errors import HeuresisError


def test_holm_hand_case():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → running max 0.06
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(holm_adjusted_p_values(p), [0.03, 0.06, 0.06, 0.02])
    assert holm_rejections(p, 0.05).tolist() == [True, False, False, True]
    # step-down beats Bonferroni: 0.02·2 = 0.04 rejects, then 0.03·1 = 0.03 < running max 0.04
    np.testing.assert_allclose(holm_adjusted_p_values([0.03, 0.02]), [0.04, 0.04])
    assert holm_rejections([0.03, 0.02], 0.05).tolist() == [True, True]
    assert holm_rejections([0.03, 0.02], 0.01).tolist() == [False, False]
    assert holm_adjusted_p_values([]).size == 0
    assert holm_adjusted_p_values([0.6, 0.7]).tolist() == [1.0, 1.0]


def test_holm_rejects_bad_input():
    with pytest.raises(HeuresisError, match=r"\[0, 1\]"):
        holm_adjusted_p_values([0.1, 1.5])
    with pytest.raises(HeuresisError, match="alpha"):
        holm_rejections([0.1], alpha=1.2)


def test_holm_adjusted_p_values_follow_the_formula():
    """statsmodels' Holm equals p̃_(k) = max_{j ≤ k} min(1, (m − j + 1) p_(j)) exactly, ties
    included (any order of tied p-values gives the same adjusted values)."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        m = int(rng.integers(1, 25))
        p = np.round(rng.random(m) ** 3, int(rng.integers(1, 4)))  # rounding makes ties
        ranked = np.sort(p)
        expected_sorted = [max(min(1.0, (m - j) * ranked[j]) for j in range(k + 1))
                           for k in range(m)]
        expected = np.empty(m)
        expected[np.argsort(p, kind="stable")] = expected_sorted
        np.testing.assert_array_equal(holm_adjusted_p_values(p), expected)
