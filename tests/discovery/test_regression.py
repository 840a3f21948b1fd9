"""Cross-fitted nonparametric regression, the GCM test built on it, and KCI's width_scale."""

from __future__ import annotations

import numpy as np
import pytest

import heuresis_env.discovery.regression as regression
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.citests.kci import KCI
from heuresis_env.discovery.regression import (
    CrossFitter,
    generalised_covariance_measure,
    normal_scores,
)
from heuresis_env.errors import HeuresisError


def test_ridge_equals_scikit_learn_at_a_fixed_penalty(monkeypatch):
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    x, y, test = rng.normal(size=(300, 12)), rng.normal(size=300), rng.normal(size=(40, 12))
    monkeypatch.setattr(regression, "PENALTIES", (2.5,))
    predictions, variance = regression._ridge_gcv(x, y, test)
    assert np.allclose(predictions, Ridge(alpha=2.5).fit(x, y).predict(test), atol=1e-10)
    assert 0.5 < variance < 1.5


def test_normal_scores_are_standard_and_rank_preserving():
    rng = np.random.default_rng(1)
    data = np.exp(3 * rng.normal(size=(500, 3)))  # heavy right tails
    scores = normal_scores(data)
    assert np.allclose(scores.mean(0), 0) and np.allclose(scores.std(0, ddof=1), 1)
    assert all(np.array_equal(np.argsort(scores[:, k]), np.argsort(data[:, k])) for k in range(3))
    assert np.abs(scores).max() < 3.5


def test_log_likelihood_gain_rewards_a_parent_and_not_an_irrelevant_variable():
    rng = np.random.default_rng(2)
    n = 600
    a, noise = rng.normal(size=n), rng.normal(size=(n, 3))
    b = np.sin(2 * a) + 0.5 * noise[:, 0]
    c = noise[:, 1]
    fitter = CrossFitter(np.column_stack([a, b, c]), np.random.default_rng(0))
    assert fitter.log_likelihood_gain(1, [], 0) > 0.2        # a → b, nonlinear
    assert fitter.log_likelihood_gain(1, [0], 2) < 0.005     # c adds nothing given a


def test_gcm_is_calibrated_under_conditional_independence_and_finds_dependence():
    rejections, detected = 0, 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        z = rng.normal(size=400)
        x = np.tanh(2 * z) + 0.5 * rng.normal(size=400)
        y = z ** 2 + 0.5 * rng.normal(size=400)
        w = y + 0.5 * x * np.abs(x) + 0.3 * rng.normal(size=400)
        test = make_ci_test("gcm", np.column_stack([x, y, z, w]), seed=seed)
        rejections += test.p_value(0, 1, (2,)) < 0.05        # x ⟂ y | z holds
        detected += test.p_value(0, 3, (2,)) < 0.05          # x and w stay dependent given z
    assert rejections <= 8                                    # nominal 3 of 60
    assert detected >= 55


def test_gcm_uses_one_fold_split_per_dataset_and_checks_its_parameters():
    rng = np.random.default_rng(3)
    data = rng.normal(size=(200, 3))
    test = make_ci_test("gcm", data, seed=4)
    fitter = test.fitter
    statistic, p = generalised_covariance_measure(fitter, 0, 1, (2,))
    assert test.test(0, 1, (2,)).p_value == pytest.approx(p)
    assert make_ci_test("gcm", data, seed=4).p_value(0, 1, (2,)) == pytest.approx(p)
    with pytest.raises(HeuresisError, match="folds"):
        make_ci_test("gcm", data, folds=1)
    with pytest.raises(HeuresisError, match="GCM parameter"):
        make_ci_test("gcm", data, width=3)


def test_kci_width_scale_changes_the_kernel_but_not_the_default_cache_key():
    rng = np.random.default_rng(5)
    x = rng.normal(size=300)
    data = np.column_stack([x, np.sin(3 * x) + 0.3 * rng.normal(size=300), rng.normal(size=300)])
    default = KCI(data, disk_cache=False, est_width="median")
    unscaled = KCI(data, disk_cache=False, est_width="median", width_scale=1.0)
    narrow = KCI(data, disk_cache=False, est_width="median", width_scale=0.5)
    assert unscaled.cache_params() == default.cache_params()
    assert narrow.cache_params() != default.cache_params()
    assert unscaled.test(0, 1, (2,)).statistic == default.test(0, 1, (2,)).statistic
    assert narrow.test(0, 1, (2,)).statistic != pytest.approx(default.test(0, 1, (2,)).statistic)
    manual = KCI(data, disk_cache=False, est_width="manual", kwidthx=1.0, kwidthy=1.0,
                 kwidthz=1.0, width_scale=2.0)
    doubled = KCI(data, disk_cache=False, est_width="manual", kwidthx=2.0, kwidthy=2.0,
                  kwidthz=2.0)
    assert manual.test(0, 1, (2,)).p_value == pytest.approx(doubled.test(0, 1, (2,)).p_value)
    with pytest.raises(HeuresisError, match="width_scale"):
        KCI(data, width_scale=0)
