"""Pairwise direction evidence: HSIC, additive-noise models, pairwise LiNGAM ratios."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from heuresis_env.discovery.orientation import (
    anm_decision,
    anm_direction,
    break_directed_cycles,
    edges_on_cycles,
    hsic_test,
    orient_skeleton_pairwise,
    orientation_probe,
    pairwise_lingam_ratio,
)
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError

# ---- HSIC ---------------------------------------------------------------------------------


def _hsic_by_definition(a: np.ndarray, b: np.ndarray) -> float:
    """n·HSIC_b = tr(K H L H) / n with explicit H and Gretton's median-heuristic kernels."""
    n = a.shape[0]

    def gram(v: np.ndarray) -> np.ndarray:
        squared = squareform(pdist(v[:, None], "sqeuclidean"))
        sigma2 = 0.5 * np.median(pdist(v[:, None], "sqeuclidean"))
        return np.exp(-squared / (2 * sigma2))

    h = np.eye(n) - np.ones((n, n)) / n
    return float(np.trace(gram(a) @ h @ gram(b) @ h)) / n


def test_hsic_statistic_matches_its_definition():
    rng = np.random.default_rng(0)
    a = rng.normal(size=80)
    b = a ** 2 + rng.normal(size=80)
    result = hsic_test(a, b)
    assert result.statistic == pytest.approx(_hsic_by_definition(a, b), rel=1e-10)
    assert result.n == 80
    swapped = hsic_test(b, a)
    assert swapped.statistic == pytest.approx(result.statistic, rel=1e-12)
    assert swapped.p_value == pytest.approx(result.p_value, rel=1e-9)


def test_hsic_is_calibrated_under_independence():
    rng = np.random.default_rng(1)
    p_values = np.array([hsic_test(rng.normal(size=150), rng.standard_t(3, size=150)).p_value
                         for _ in range(200)])
    rejection_rate = np.mean(p_values < 0.05)
    assert 0.015 <= rejection_rate <= 0.10
    assert 0.3 < np.median(p_values) < 0.7


def test_hsic_detects_uncorrelated_dependence():
    rng = np.random.default_rng(2)
    a = rng.normal(size=300)
    b = a ** 2 + 0.3 * rng.normal(size=300)  # Pearson r ≈ 0, strongly dependent
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.15
    assert hsic_test(a, b).p_value < 1e-6


def test_hsic_subsamples_with_the_given_generator():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=400), rng.normal(size=400)
    first = hsic_test(a, b, max_rows=100, rng=np.random.default_rng(7))
    second = hsic_test(a, b, max_rows=100, rng=np.random.default_rng(7))
    other = hsic_test(a, b, max_rows=100, rng=np.random.default_rng(8))
    assert first == second
    assert first.n == 100
    assert other.statistic != first.statistic


def test_hsic_rejects_bad_input():
    rng = np.random.default_rng(4)
    with pytest.raises(DataError, match="NaN"):
        hsic_test(np.array([1.0, np.nan, 2, 3, 4, 5, 6]), rng.normal(size=7))
    with pytest.raises(DataError, match="constant"):
        hsic_test(np.ones(20), rng.normal(size=20))
    with pytest.raises(DataError, match="rows"):
        hsic_test(rng.normal(size=20), rng.normal(size=21))


# ---- additive-noise models -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_anm_orients_cubic_with_gaussian_noise(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=500)
    y = x ** 3 + rng.normal(size=500)
    forward = anm_direction(x, y, np.random.default_rng(0))
    assert forward.direction() == "x->y"
    assert forward.p_value_x_to_y > 0.05 > forward.p_value_y_to_x
    backward = anm_direction(y, x, np.random.default_rng(0))
    assert backward.direction() == "y->x"
    assert backward.p_value_y_to_x == pytest.approx(forward.p_value_x_to_y)


@pytest.mark.parametrize("seed", range(4))
def test_anm_orients_tanh_with_uniform_noise(seed):
    rng = np.random.default_rng(100 + seed)
    x = rng.normal(size=500)
    y = np.tanh(2 * x) + rng.uniform(-0.5, 0.5, size=500)
    assert anm_direction(x, y, np.random.default_rng(0)).direction() == "x->y"


def test_anm_with_gaussian_process_regression():
    rng = np.random.default_rng(5)
    x = rng.uniform(-2, 2, size=250)
    y = x ** 3 - 2 * x + 0.8 * rng.normal(size=250)
    result = anm_direction(x, y, np.random.default_rng(0), regressor="gp")
    assert result.regressor == "gp"
    assert result.direction() == "x->y"


def test_anm_decision_rule():
    assert anm_decision(0.4, 0.001) == "x->y"
    assert anm_decision(0.001, 0.4) == "y->x"
    assert anm_decision(0.01, 0.0001) is None  # both rejected: no additive-noise model fits
    assert anm_decision(0.50, 0.47) is None  # both fit about equally (e.g. linear Gaussian)
    assert anm_decision(0.50, 0.47, margin=0.01) == "x->y"
    assert anm_decision(0.04, 0.0, alpha=0.01, margin=0.01) == "x->y"
    assert anm_decision(0.04, 0.0, alpha=0.01) is None  # gap below the default margin


def test_anm_rejects_bad_input():
    rng = np.random.default_rng(6)
    with pytest.raises(UnknownNameError, match="spline"):
        anm_direction(rng.normal(size=50), rng.normal(size=50), regressor="lowess")
    with pytest.raises(DataError, match="one variable"):
        anm_direction(rng.normal(size=(50, 2)), rng.normal(size=50))


# ---- pairwise LiNGAM ---------------------------------------------------------------------------


def test_entropy_ratio_equals_directlingam_pwling_measure():
    import lingam

    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, size=800)
    y = 0.7 * x + rng.uniform(-1, 1, size=800)
    xs, ys = (x - x.mean()) / x.std(), (y - y.mean()) / y.std()
    model = lingam.DirectLiNGAM()
    reference = model._diff_mutual_info(xs, ys, model._residual(xs, ys), model._residual(ys, xs))
    assert pairwise_lingam_ratio(x, y) == pytest.approx(reference, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_lingam_ratios_find_the_direction_of_linear_non_gaussian_pairs(seed):
    rng = np.random.default_rng(10 + seed)
    n = 2000
    x = rng.uniform(-1, 1, size=n)
    y = 0.8 * x + rng.uniform(-1, 1, size=n)
    assert pairwise_lingam_ratio(x, y, "entropy") > 0
    assert pairwise_lingam_ratio(y, x, "entropy") == pytest.approx(-pairwise_lingam_ratio(x, y))
    sparse_x = rng.laplace(size=n)
    sparse_y = 0.8 * sparse_x + rng.laplace(size=n)
    assert pairwise_lingam_ratio(sparse_x, sparse_y, "entropy") > 0
    assert pairwise_lingam_ratio(sparse_x, sparse_y, "tanh") > 0
    skewed_x = rng.exponential(size=n)
    skewed_y = -0.8 * skewed_x + rng.exponential(size=n)
    assert pairwise_lingam_ratio(skewed_x, skewed_y, "skew") > 0
    assert pairwise_lingam_ratio(skewed_y, skewed_x, "skew") < 0


def test_lingam_ratio_is_small_for_gaussian_pairs():
    rng = np.random.default_rng(20)
    x = rng.normal(size=5000)
    y = 0.8 * x + rng.normal(size=5000)
    uniform_x = rng.uniform(-1, 1, size=5000)
    uniform_y = 0.8 * uniform_x + rng.uniform(-1, 1, size=5000)
    gaussian = abs(pairwise_lingam_ratio(x, y))
    assert gaussian < 0.01
    assert gaussian < abs(pairwise_lingam_ratio(uniform_x, uniform_y)) / 5


def test_lingam_ratio_rejects_unknown_method():
    rng = np.random.default_rng(21)
    with pytest.raises(UnknownNameError, match="entropy"):
        pairwise_lingam_ratio(rng.normal(size=30), rng.normal(size=30), "kurtosis")


# ---- probe and skeleton orientation -----------------------------------------------------------


def test_orientation_probe_bundles_all_evidence():
    rng = np.random.default_rng(30)
    x = rng.exponential(size=600)
    y = np.log1p(3 * x) + 0.2 * rng.uniform(-1, 1, size=600)
    probe = orientation_probe(x, y, np.random.default_rng(0))
    json.dumps(probe)  # JSON-ready
    assert probe["n"] == 600
    assert probe["anm"]["direction"] == "x->y"
    assert probe["anm"]["p_value_x_to_y"] > probe["anm"]["p_value_y_to_x"]
    assert set(probe["pairwise_lingam"]) == {"entropy", "tanh", "skew", "direction"}
    assert -1 <= probe["pearson_r"] <= 1


def test_orient_skeleton_pairwise_on_a_nonlinear_chain():
    rng = np.random.default_rng(31)
    n = 500
    a = rng.normal(size=n)
    b = a ** 3 + rng.normal(size=n)
    c = np.tanh(b) + 0.3 * rng.uniform(-1, 1, size=n)
    data = np.column_stack([a, b, c])
    skeleton = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=bool)
    pdag, evidence = orient_skeleton_pairwise(data, skeleton, np.random.default_rng(0))
    assert pdag[0, 1] and not pdag[1, 0]  # a → b
    assert pdag[1, 2] and not pdag[2, 1]  # b → c
    assert not pdag[0, 2] and not pdag[2, 0]  # no edge added
    assert [(e.x, e.y, e.direction) for e in evidence] == [(0, 1, "x->y"), (1, 2, "x->y")]


def test_cycles_are_broken_at_the_weakest_edge():
    # 0 → 1 → 2 → 0 and 2 → 3; the evidence for 1 → 2 is the weakest
    pdag = np.zeros((4, 4), dtype=bool)
    for i, j in [(0, 1), (1, 2), (2, 0), (2, 3)]:
        pdag[i, j] = True
    strength = np.ones((4, 4))
    strength[1, 2] = strength[2, 1] = 0.1
    assert edges_on_cycles(pdag).sum() == 3
    fixed, undirected = break_directed_cycles(pdag, strength)
    assert undirected == [(1, 2)]
    assert fixed[1, 2] and fixed[2, 1]
    assert not edges_on_cycles(fixed & ~fixed.T).any()
    assert fixed[2, 3] and not fixed[3, 2]


def test_orient_skeleton_checks_shapes():
    with pytest.raises(HeuresisError, match="shape"):
        orient_skeleton_pairwise(np.zeros((10, 3)), np.zeros((2, 2), dtype=bool))
