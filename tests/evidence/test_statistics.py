"""Pair statistics: closed forms that agree with the tests they replace, and signals that
point the right way on graphs with a known answer."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from heuresis_env.data import data_sha256
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import (
    STATISTICS_BLOCKS,
    STATISTICS_PAIR_FEATURE_NAMES,
    compute_pair_statistics,
    fisherz_screen,
    pair_statistics,
)
from heuresis_env.generation import InstanceKey, generate_instance


def test_the_closed_form_screen_equals_the_largest_fisher_z_p_value():
    instance = generate_instance(InstanceKey("lg", "dev", 3, d=8, n=300))
    test = make_ci_test("fisherz", instance.X)
    empty, max1, max2 = fisherz_screen(np.corrcoef(instance.X, rowvar=False), 300)
    for i, j in itertools.combinations(range(8), 2):
        others = [k for k in range(8) if k not in (i, j)]
        for size, matrix in ((0, empty), (1, max1), (2, max2)):
            largest = max(test.test(i, j, s).p_value for level in range(size + 1)
                          for s in itertools.combinations(others, level))
            expected = min(-math.log10(max(largest, 1e-30)), 30.0)
            assert matrix[i, j] == pytest.approx(expected, abs=1e-6)
            assert matrix[j, i] == matrix[i, j]


def _chain(n: int = 800, seed: int = 0) -> np.ndarray:
    """X1 → X2 → X3 with a nonlinear, non-Gaussian additive-noise second link; X4 apart."""
    rng = np.random.default_rng(seed)
    x1 = rng.uniform(-2, 2, n)
    x2 = np.tanh(1.5 * x1) + 0.3 * rng.uniform(-1, 1, n)
    x3 = x2 ** 2 + 0.2 * rng.uniform(-1, 1, n)
    x4 = rng.normal(size=n)
    data = np.column_stack([x1, x2, x3, x4])
    return (data - data.mean(axis=0)) / data.std(axis=0)


def test_statistics_see_the_chain_and_the_direction_of_an_additive_noise_link():
    data = _chain()
    stats = compute_pair_statistics(data, ["X1", "X2", "X3", "X4"], data_sha256(data))
    marginal = stats.pair("kernel_logp_marginal")
    partial = stats.pair("kernel_logp_partial")
    assert marginal[0, 1] > 5 and marginal[1, 2] > 5  # edges: dependent
    assert marginal[0, 3] < 3 and marginal[2, 3] < 3  # X4 alone
    assert partial[0, 2] < partial[0, 1] and partial[0, 2] < partial[1, 2]  # X1 ⫫ X3 | X2
    # the residual of X3 regressed on X2 is independent of X2; the reverse fit is not
    anm = stats.pair("anm_residual_logp")
    assert anm[1, 2] < 3 < anm[2, 1]
    assert stats.pairs.shape == (4, 4, len(STATISTICS_PAIR_FEATURE_NAMES))
    assert np.all(stats.pairs[np.arange(4), np.arange(4)] == 0)
    for feature in (f for b in STATISTICS_BLOCKS for f in b.pair if f.symmetric):
        matrix = stats.pair(feature.name)
        assert np.array_equal(matrix, matrix.T), feature.name


@pytest.mark.parametrize("link", ["cube", "tanh", "sine", "linear"])
def test_the_residual_test_orients_additive_noise_pairs(link):
    """x → y with uniform noise: nonlinear links, and a linear one (non-Gaussian noise, as
    LiNGAM reads it) — the fit of y on x leaves a residual less dependent on x than the
    reverse fit's on y, on every one of five seeds; clearly independent on most."""
    maps = {"cube": lambda x: x ** 3 / 3, "tanh": lambda x: np.tanh(2 * x),
            "sine": lambda x: np.sin(2 * x), "linear": lambda x: x}
    clear = 0
    for seed in range(5):
        rng = np.random.default_rng(seed)
        x = rng.uniform(-2, 2, 600)
        y = maps[link](x) + (1.0 if link == "linear" else 0.4) * rng.uniform(-1, 1, 600)
        data = np.column_stack([x, y])
        data = (data - data.mean(axis=0)) / data.std(axis=0)
        stats = compute_pair_statistics(data, ["X", "Y"], data_sha256(data), searches=False)
        anm = stats.pair("anm_residual_logp")
        assert anm[0, 1] + 3 < anm[1, 0] and anm[1, 0] > 5, (seed, anm[0, 1], anm[1, 0])
        clear += anm[0, 1] < 3
    assert clear >= 4


def test_statistics_are_equivariant_and_cached():
    data = _chain(400, seed=1)
    names = ["A", "B", "C", "D"]
    order = [2, 0, 3, 1]
    sha = data_sha256(data)
    plain = compute_pair_statistics(data, names, sha, searches=False)
    moved = compute_pair_statistics(data[:, order], [names[k] for k in order], sha,
                                    searches=False)
    for name in ("abs_r", "abs_partial_r", "fz_logp_max2", "pc_fz_kept", "gain_alone",
                 "anm_residual_logp", "kernel_logp_marginal", "kernel_logp_partial"):
        expected = plain.pair(name)[np.ix_(order, order)]
        assert np.allclose(moved.pair(name), expected, atol=1e-4), name
    assert np.allclose(moved.nodes, plain.nodes[order], atol=1e-4)
    again = pair_statistics(data, names, sha, searches=False)
    assert pair_statistics(data, names, sha, searches=False) is again
    assert not plain.node("boss_ran").any()


def test_statistics_refuse_a_table_too_small_to_read():
    with pytest.raises(HeuresisError, match="at least 2 variables"):
        compute_pair_statistics(np.zeros((50, 1)), ["A"], "0" * 64)


def test_pc_fisherz_is_capped_where_its_search_would_explode():
    """A search over a budget is run again capped at the deepest level it completed; within
    the budget it is PC-Fisher-z itself. (A hub of many neighbours — d = 50, one collider of
    21 parents — made the uncapped search run for hours in tens of GB.)"""
    from heuresis_env.discovery.pc import pc
    from heuresis_env.evidence.statistics import _budgeted_pc

    rng = np.random.default_rng(3)
    noise = rng.standard_normal((1000, 6))
    source = noise[:, 0]  # a diamond: source → a, b → sink, then a collider of three
    a, b = source + noise[:, 1], source + noise[:, 2]
    sink = a + b + noise[:, 3]
    data = np.column_stack([source, a, b, sink, noise[:, 4], noise[:, 5],
                            sink + noise[:, 4] + noise[:, 5] + rng.standard_normal(1000)])
    names = [f"X{k}" for k in range(data.shape[1])]
    free = pc(data, names, ci_test="fisherz", alpha=0.05)
    deepest = max(r.level for r in free.deletion_log)
    assert deepest >= 2
    within = _budgeted_pc(data, names, budget=10**6)
    assert within.skeleton == free.skeleton and within.deletion_log == free.deletion_log
    # a budget that the levels 0 and 1 fit but level 2 does not: the search capped at |S| ≤ 1
    level_1 = make_ci_test("fisherz", data)
    capped_reference = pc(None, names, ci_test=level_1, alpha=0.05, max_depth=1)
    capped = _budgeted_pc(data, names, budget=level_1.n_computed + 1)
    assert capped.skeleton == capped_reference.skeleton
    assert capped.deletion_log == capped_reference.deletion_log
    assert capped.skeleton != free.skeleton
