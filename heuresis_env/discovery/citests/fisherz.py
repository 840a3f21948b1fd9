"""Fisher-z test of zero partial correlation, from one cached correlation matrix.

Numerically equivalent to causal-learn's ``CIT(data, "fisherz")`` (the same correlation
matrix, the same clipping of |r| ≥ 1 to 1 − 2⁻⁵², the same z and p), but faster: partial
correlations of order 0–2 use closed forms (the recursion formula) on plain floats, and for
|S| ≥ 3 the Cholesky factor of each conditioning set's correlation block and every
variable's whitened covariances with S are computed once, so a test is a few dot products
of length |S| (causal-learn inverts a (|S| + 2)-matrix per test).
"""

from __future__ import annotations

import math
from operator import mul
from typing import ClassVar

import numpy as np

from heuresis_env.discovery.citests.base import CITest
from heuresis_env.errors import DataError

_R_MAX = 1.0 - float(np.finfo(float).eps)  # causal-learn's clip for |r| ≥ 1
_SQRT2 = math.sqrt(2.0)
_SINGULAR = 1e-12  # residual variance (of a unit-variance column) treated as zero


class FisherZ(CITest):
    """x ⟂ y | S for Gaussian data: z = atanh(r_xy·S)·√(n − |S| − 3), p = 2(1 − Φ(|z|)).

    The statistic is |z|. Raises :class:`DataError` when a conditioning set's correlation
    matrix is singular (a variable is a linear function of others) or n − |S| − 3 ≤ 0.
    """

    name: ClassVar[str] = "fisherz"

    def __init__(self, data: np.ndarray, **params):
        super().__init__(data, **params)
        self.correlation = np.corrcoef(self.data, rowvar=False)
        self._rows: list[list[float]] = self.correlation.tolist()
        # per conditioning set S: the Cholesky factor L of C_SS, and per variable v the
        # whitened covariances w_v = L⁻¹ C[S, v] (so C[a, S] C_SS⁻¹ C[S, b] = w_a · w_b)
        self._cholesky: dict[tuple[int, ...], list[list[float]]] = {}
        self._whitened: dict[tuple[tuple[int, ...], int], tuple[float, ...]] = {}

    def partial_correlation(self, x: int, y: int, s: tuple[int, ...]) -> float:
        """The sample partial correlation of columns x and y given the columns s."""
        s = tuple(s)
        rows = self._rows
        if not s:
            return rows[x][y]
        if len(s) == 1:
            return _first_order(rows[x], rows[y], x, y, s[0])
        if len(s) == 2:  # recursion on the first-order partial correlations given s[0]
            z, w = s
            row_x, row_y, row_w = rows[x], rows[y], rows[w]
            r_xy = _first_order(row_x, row_y, x, y, z)
            r_xw = _first_order(row_x, row_w, x, w, z)
            r_yw = _first_order(row_y, row_w, y, w, z)
            residual = (1.0 - r_xw * r_xw) * (1.0 - r_yw * r_yw)
            if residual <= _SINGULAR:
                raise _singular_error((x, y, z, w))
            return (r_xy - r_xw * r_yw) / math.sqrt(residual)
        w_x = self._whitened.get((s, x)) or self._whiten(s, x)
        w_y = self._whitened.get((s, y)) or self._whiten(s, y)
        covariance = rows[x][y] - sum(map(mul, w_x, w_y))
        variance_x = 1.0 - sum(map(mul, w_x, w_x))
        variance_y = 1.0 - sum(map(mul, w_y, w_y))
        if variance_x <= _SINGULAR or variance_y <= _SINGULAR:
            raise _singular_error((x, y, *s))
        return covariance / math.sqrt(variance_x * variance_y)

    def _whiten(self, s: tuple[int, ...], v: int) -> tuple[float, ...]:
        factor = self._cholesky.get(s)
        if factor is None:
            factor = self._cholesky[s] = self._cholesky_of(s)
        row = self._rows[v]
        solution: list[float] = []
        for i, factor_row in enumerate(factor):  # forward substitution L w = C[S, v]
            solution.append((row[s[i]] - sum(a * b for a, b in zip(factor_row, solution))) / factor_row[i])
        whitened = self._whitened[(s, v)] = tuple(solution)
        return whitened

    def _cholesky_of(self, s: tuple[int, ...]) -> list[list[float]]:
        """Lower Cholesky factor of C_SS (rows as lists), or a DataError if it is singular."""
        rows = self._rows
        factor: list[list[float]] = []
        for i, si in enumerate(s):
            factor_row: list[float] = []
            for j in range(i):
                dot = sum(a * b for a, b in zip(factor_row, factor[j]))
                factor_row.append((rows[si][s[j]] - dot) / factor[j][j])
            pivot = rows[si][si] - sum(a * a for a in factor_row)
            if pivot <= _SINGULAR:
                raise _singular_error(s)
            factor_row.append(math.sqrt(pivot))
            factor.append(factor_row)
        return factor

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        degrees = self.n - len(s) - 3
        if degrees <= 0:
            raise DataError(
                f"Fisher-z needs n − |S| − 3 > 0; n = {self.n} rows is too few for |S| = {len(s)}"
            )
        r = self.partial_correlation(x, y, s)
        if abs(r) >= 1.0:
            r = math.copysign(_R_MAX, r)
        statistic = math.sqrt(degrees) * abs(math.atanh(r))
        return statistic, math.erfc(statistic / _SQRT2)


def _first_order(row_a: list[float], row_b: list[float], a: int, b: int, z: int) -> float:
    """Partial correlation of a and b given z, from the correlation matrix rows of a and b."""
    r_az, r_bz = row_a[z], row_b[z]
    residual = (1.0 - r_az * r_az) * (1.0 - r_bz * r_bz)
    if residual <= _SINGULAR:
        raise _singular_error((a, b, z))
    return (row_a[b] - r_az * r_bz) / math.sqrt(residual)


def _singular_error(columns: tuple[int, ...]) -> DataError:
    return DataError(
        f"the correlation matrix of columns {sorted(set(columns))} is singular: a variable "
        "is a linear function of the others, so Fisher-z is undefined"
    )
