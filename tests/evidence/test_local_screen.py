"""The local screen: a nonlinear CI test given small conditioning sets, on graphs with known
answers, checked against a regression-based re-implementation of its statistic."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from heuresis_env.errors import DataError
from heuresis_env.evidence import LOCAL_SCREEN_FEATURES, local_screen
from heuresis_env.evidence.local_screen import (
    LOCAL_SCREEN_ROWS,
    _blocks,
    _Covariances,
    _statistics,
    screen_rows,
)
from heuresis_env.evidence.statistics import _log_p_chi2

MAX1, MAX2, MAX3, COLLIDER = range(4)
THRESHOLD = -math.log10(0.05)


def _noise(rng, n):
    return rng.normal(size=n)


def test_a_nonlinear_chain_is_separated_by_its_middle_variable():
    """x → y → z with y = x² + e (uncorrelated with x) and z = tanh(y) + e: the screen keeps
    x–y and y–z, separates x and z given y, and votes for no collider."""
    rng = np.random.default_rng(1)
    n = 600
    x = _noise(rng, n)
    y = x ** 2 + 0.3 * _noise(rng, n)
    z = np.tanh(y) + 0.3 * _noise(rng, n)
    out = local_screen(np.column_stack([x, y, z]))
    assert abs(np.corrcoef(x, y)[0, 1]) < 0.15  # a linear test would miss x–y
    assert out[0, 1, MAX3] > 5 and out[1, 2, MAX3] > 5
    assert out[0, 2, MAX1] < THRESHOLD and out[0, 2, MAX3] < THRESHOLD
    assert np.all(out[..., COLLIDER] == 0)


def test_a_nonlinear_collider_gets_the_votes_of_both_parents():
    rng = np.random.default_rng(2)
    n = 600
    x, y = _noise(rng, n), _noise(rng, n)
    z = np.tanh(2 * x) + np.abs(y) + 0.3 * _noise(rng, n)
    out = local_screen(np.column_stack([x, y, z]))
    assert out[0, 1, MAX3] < THRESHOLD  # x ⫫ y (the empty set)
    assert out[0, 2, MAX3] > 5 and out[1, 2, MAX3] > 5
    votes = np.zeros((3, 3))
    votes[0, 2] = votes[1, 2] = 1.0  # x → z and y → z, over d − 2 = 1
    assert np.array_equal(out[..., COLLIDER], votes)


def test_the_levels_are_monotone_symmetric_and_the_channels_named():
    rng = np.random.default_rng(3)
    data = rng.normal(size=(400, 7))
    data[:, 3] += np.sin(data[:, 0]) + data[:, 1] ** 2
    data[:, 5] += np.cos(2 * data[:, 3])
    out = local_screen(data)
    assert out.shape == (7, 7, len(LOCAL_SCREEN_FEATURES)) and out.dtype == np.float32
    assert np.allclose(out[..., :3], np.swapaxes(out[..., :3], 0, 1))
    assert np.all(out[..., MAX1] >= out[..., MAX2]) and np.all(out[..., MAX2] >= out[..., MAX3])
    assert np.all(np.diagonal(out, axis1=0, axis2=1) == 0)


def test_permuting_the_variables_permutes_the_screen():
    rng = np.random.default_rng(4)
    data = rng.normal(size=(300, 8))
    data[:, 2] += data[:, 0] ** 2
    data[:, 4] += np.sin(3 * data[:, 2]) + data[:, 1]
    data[:, 7] += data[:, 4] * data[:, 5]
    order = rng.permutation(8)
    base = local_screen(data)
    moved = local_screen(data[:, order])
    assert np.allclose(moved, base[np.ix_(order, order)], atol=1e-5)


def test_the_statistic_agrees_with_a_regression_re_implementation():
    """Bartlett's statistic from the covariances equals the one from explicit least-squares
    residuals of the two tested blocks on the conditioning set's (richer) blocks."""
    rng = np.random.default_rng(5)
    data = rng.normal(size=(500, 5))
    data[:, 1] += np.sin(data[:, 0])
    data[:, 2] += data[:, 1] ** 2
    rows = screen_rows(data)
    draws = (rng.normal(size=8), rng.uniform(0, 2 * np.pi, size=8))
    tested, _ = _blocks(rows, (draws[0][:2], draws[1][:2]))
    conditioning, _ = _blocks(rows, draws)
    r, k, kc = len(rows), tested.shape[2], conditioning.shape[2]
    cov = _Covariances.of(tested, conditioning)
    for (i, j), size in itertools.product([(0, 2), (1, 3)], [0, 1, 2]):
        others = [v for v in range(5) if v not in (i, j)][:size]
        ours = _statistics(cov, np.array([[i, j]]), np.array(others).reshape(1, 1, size))[0, 0]
        design = np.column_stack([np.ones(r)] + [conditioning[:, s, :] for s in others])
        residual = [tested[:, v, :] - design @ np.linalg.lstsq(design, tested[:, v, :],
                                                                rcond=None)[0] for v in (i, j)]
        xx, yy, xy = (a.T @ b for a, b in [(residual[0], residual[0]),
                                            (residual[1], residual[1]),
                                            (residual[0], residual[1])])
        # squared canonical correlations: the eigenvalues of Sxx⁻¹ Sxy Syy⁻¹ Syx
        rho2 = np.linalg.eigvals(np.linalg.solve(xx, xy) @ np.linalg.solve(yy, xy.T)).real
        reference = max(r - 1 - size * kc - (2 * k + 1) / 2, 10.0) * rho2.sum()
        assert ours == pytest.approx(reference, rel=1e-4), (i, j, others)
    assert _log_p_chi2(np.array(0.0), 9.0) == 0.0


def test_the_screen_reads_the_first_rows_at_stored_precision():
    rng = np.random.default_rng(6)
    data = rng.normal(size=(LOCAL_SCREEN_ROWS + 200, 4)) * 7.0 + 3.0
    data[:, 1] += data[:, 0] ** 2
    assert np.array_equal(local_screen(data), local_screen(data[:LOCAL_SCREEN_ROWS]))
    rows = screen_rows(data)
    assert rows.shape == (LOCAL_SCREEN_ROWS, 4)
    assert np.array_equal(rows, rows.astype(np.float16).astype(np.float64))


def test_constant_and_discrete_columns_and_bad_tables():
    rng = np.random.default_rng(7)
    data = rng.normal(size=(300, 4))
    data[:, 1] = 1.0
    data[:, 2] = rng.integers(0, 2, size=300)
    out = local_screen(data)
    assert np.all(np.isfinite(out)) and np.all(out[1, :, :3] == 0)
    with pytest.raises(DataError, match="at least 2 variables"):
        local_screen(np.zeros((100, 1)))
    with pytest.raises(DataError, match="at least 20 rows"):
        local_screen(rng.normal(size=(10, 3)))
