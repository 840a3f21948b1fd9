"""Experiments on the hidden SCM: do() rows against the closed-form interventional
distribution of a linear-Gaussian model, randomized experiments, seeds and salts."""

from __future__ import annotations

import numpy as np
import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.generation.experiments import (
    check_experiment,
    draw_experiment,
    experiment_seed,
    make_laboratory,
)
from heuresis_env.generation.instances import InstanceKey, generate_instance

SALT = "c8b25c3901290ada29c188ad91ce710f0ca44e9cd978a8dbddb5405e8b952048"


def _weights_and_scales(scm) -> tuple[np.ndarray, np.ndarray]:
    """The raw linear model: W[i, j] the weight of i in j's equation; σ_j the noise scales."""
    d = scm.d
    weights, scales = np.zeros((d, d)), np.zeros(d)
    for j, mechanism in enumerate(scm.mechanisms):
        assert mechanism.kind in ("root_gaussian", "linear")
        for parent, w in zip(mechanism.parents, mechanism.params.get("weights", []),
                             strict=False):
            weights[scm.index(parent), j] = w
        scales[j] = mechanism.params["noise_scale"]
    return weights, scales


def _closed_form(scm, target: int, value: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of the standardized rows under do(target = value) (value None: the
    target's observational marginal, independent of everything upstream)."""
    weights, scales = _weights_and_scales(scm)
    d = scm.d
    observational = np.linalg.inv(np.eye(d) - weights.T)
    variances = scales ** 2
    cut = weights.copy()
    cut[:, target] = 0.0
    transfer = np.linalg.inv(np.eye(d) - cut.T)  # raw = transfer @ e
    noise_mean = np.zeros(d)
    noise_variance = variances.copy()
    if value is None:  # the raw marginal of the target: mean 0, its observational variance
        noise_variance[target] = (observational @ np.diag(variances) @ observational.T)[
            target, target]
    else:
        noise_mean[target] = scm.column_means[target] + scm.column_sds[target] * value
        noise_variance[target] = 0.0
    mean = transfer @ noise_mean
    covariance = transfer @ np.diag(noise_variance) @ transfer.T
    means, sds = scm.column_means, scm.column_sds
    return (mean - means) / sds, covariance / np.outer(sds, sds)


def _middle_node(scm) -> int:
    adjacency = scm.adjacency
    candidates = [j for j in range(scm.d) if adjacency[:, j].any() and adjacency[j].any()]
    assert candidates
    return candidates[0]


@pytest.mark.parametrize("value", [1.5, None])
def test_do_rows_match_the_closed_form_linear_gaussian_distribution(value):
    instance = generate_instance(InstanceKey("lg", "dev", 3, d=8))
    scm = instance.record.scm
    target = _middle_node(scm)
    n = 40_000
    rows = draw_experiment(scm, experiment_seed(instance.key, 1), target, value, n)
    mean, covariance = _closed_form(scm, target, value)
    if value is not None:
        assert np.all(rows[:, target] == value)
    sd = np.sqrt(np.maximum(np.diag(covariance), 1e-12))
    standard_error = sd / np.sqrt(n)
    assert np.all(np.abs(rows.mean(axis=0) - mean) < 5 * standard_error + 1e-9)
    empirical = np.cov(rows, rowvar=False)
    # covariance entries: sd of a sample covariance ≈ sqrt((σ_ii σ_jj + σ_ij²) / n)
    tolerance = 5 * np.sqrt((np.outer(np.diag(covariance), np.diag(covariance))
                             + covariance ** 2) / n) + 1e-9
    assert np.all(np.abs(empirical - covariance) < tolerance)
    parents = np.nonzero(scm.adjacency[:, target])[0]
    if value is None:  # the target's causes no longer move it
        for parent in parents:
            assert abs(np.corrcoef(rows[:, parent], rows[:, target])[0, 1]) < 5 / np.sqrt(n)


def test_experiments_replay_and_share_noise_across_targets():
    instance = generate_instance(InstanceKey("wild", "dev", 0))
    laboratory = make_laboratory(instance, None)
    assert laboratory is not None
    first = laboratory(1, 2, 1.0, 50)
    assert first.tobytes() == laboratory(1, 2, 1.0, 50).tobytes()  # same ordinal, same rows
    assert first.tobytes() != laboratory(2, 2, 1.0, 50).tobytes()  # the next experiment differs
    assert not first.flags.writeable
    # common random numbers: the k-th experiment's exogenous noise is the same whatever the
    # target, so the non-descendants of both targets agree to the bit
    scm = instance.record.scm
    other = laboratory(1, 5, -1.0, 50)
    untouched = set(range(scm.d)) - {2, 5} - {scm.index(n) for n in scm.descendants("X3")} \
        - {scm.index(n) for n in scm.descendants("X6")}
    for j in untouched:
        assert first[:, j].tobytes() == other[:, j].tobytes()


def test_sealed_experiments_differ_from_public_ones():
    key = InstanceKey("lg", "test", 0)
    sealed = make_laboratory(generate_instance(key, SALT), SALT)
    public = make_laboratory(generate_instance(key, None), None)
    assert sealed is not None and public is not None
    assert sealed(1, 0, 0.5, 20).tobytes() != public(1, 0, 0.5, 20).tobytes()
    assert experiment_seed(key, 1, SALT).entropy != experiment_seed(key, 1, None).entropy
    # dev ignores a salt, as instances do
    dev = InstanceKey("lg", "dev", 0)
    assert experiment_seed(dev, 1, SALT).entropy == experiment_seed(dev, 1, None).entropy


def test_bad_experiments_are_refused():
    with pytest.raises(HeuresisError, match="target"):
        check_experiment(5, 5, 1.0, 10)
    with pytest.raises(HeuresisError, match="within"):
        check_experiment(5, 0, 11.0, 10)
    with pytest.raises(HeuresisError, match="within"):
        check_experiment(5, 0, float("nan"), 10)
    with pytest.raises(HeuresisError, match="rows"):
        check_experiment(5, 0, None, 0)
