"""Distance-correlation test of dependence (Székely, Rizzo & Bakirov, Ann. Statist. 2007).

``method="permutation"`` (default): the p-value of ``dcor.independence.distance_covariance_test``
with ``n_permutations`` permutations (default 199, so p ≥ 1/200), drawn from a generator
derived from (seed, x, y, S): calibrated at any n, about 1 ms per permutation at n = 600.
``method="chi2"``: the asymptotic test of Székely et al. (Theorem 6): n V²ₙ / S₂ against χ²₁,
computed here with numpy (instant, no ``dcor`` import); it is conservative (p-values too
large under independence) and meant for quick screening.

Conditioning sets: with S ≠ ∅ both x and y are first residualised on S and the residuals
tested (valid when x and y depend on S additively). ``conditioning="kernel"`` (default):
Gaussian kernel ridge regression on the standardised S, median-heuristic bandwidth, ridge
chosen per variable by generalised cross-validation (one eigendecomposition per S, cached,
from a low-rank factor when the kernel allows);
``"linear"``: least squares on [1, S]; ``"none"``: refuse S ≠ ∅. The reported statistic is
the sample distance correlation of the (residualised) pair, in [0, 1].

The ``dcor`` package (numba; several seconds to import) is imported only when a
permutation test runs; :func:`distance_correlation` uses numpy alone.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.spatial.distance import pdist, squareform
from scipy.special import chdtrc

from heuresis_env.discovery.citests.base import CITest, sample_matrix
from heuresis_env.discovery.citests.kci import pivoted_cholesky
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError

METHODS = ("permutation", "chi2")
CONDITIONING = ("kernel", "linear", "none")
#: ridge grid of the kernel regression, as multiples of n (searched by GCV)
_RIDGE_GRID = np.logspace(-6, 0, 25)


def _centered_distances(values: np.ndarray) -> tuple[np.ndarray, float]:
    """Double-centred Euclidean distance matrix and the mean distance a.. (before centring)."""
    distances = squareform(pdist(values, "euclidean"))
    row_means = distances.mean(axis=0)
    grand_mean = float(row_means.mean())
    distances -= row_means[None, :]
    distances -= row_means[:, None]
    distances += grand_mean
    return distances, grand_mean


def _distance_moments(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float, float]:
    """V²(x, y), V²(x, x), V²(y, y) (V-statistics) and the mean distances of x and y."""
    a, mean_a = _centered_distances(x)
    b, mean_b = _centered_distances(y)
    n2 = a.size
    return float(np.vdot(a, b)) / n2, float(np.vdot(a, a)) / n2, float(np.vdot(b, b)) / n2, mean_a, mean_b


def distance_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Sample distance correlation of x and y (vectors or n × p matrices), in [0, 1]; 0 when
    either is constant. Equals ``dcor.distance_correlation`` (the V-statistic form)."""
    x, y = (sample_matrix(x, "x", allow_constant=True),  # dCor of a constant is 0
            sample_matrix(y, "y", allow_constant=True))
    if x.shape[0] != y.shape[0]:
        raise DataError(f"x and y need the same number of rows, got {x.shape[0]} and {y.shape[0]}")
    covariance, variance_x, variance_y, _, _ = _distance_moments(x, y)
    if variance_x <= 0 or variance_y <= 0:
        return 0.0
    return math.sqrt(max(covariance, 0.0) / math.sqrt(variance_x * variance_y))


def distance_chi2_test(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Asymptotic test of Székely et al. (2007): statistic n V²ₙ / S₂ (S₂ = a.. · b..), p from
    χ²₁ (conservative). Returns (statistic, p)."""
    x, y = (sample_matrix(x, "x", allow_constant=True),  # dCor of a constant is 0
            sample_matrix(y, "y", allow_constant=True))
    covariance, _, _, mean_a, mean_b = _distance_moments(x, y)
    if mean_a <= 0 or mean_b <= 0:
        return 0.0, 1.0
    statistic = x.shape[0] * max(covariance, 0.0) / (mean_a * mean_b)
    return statistic, float(chdtrc(1, statistic))


class DistanceCorrelation(CITest):
    """Dependence of x and y by distance correlation, after residualising on S (see module).

    Parameters: ``method`` ("permutation" | "chi2"), ``n_permutations`` (199), ``seed``
    (int ≥ 0, default 0) or ``rng`` (a ``numpy.random.Generator``, turned into a seed),
    ``conditioning`` ("kernel" | "linear" | "none").
    """

    name: ClassVar[str] = "dcor"

    def __init__(self, data: np.ndarray, *, disk_cache: bool | None = None, **params: Any):
        super().__init__(data, disk_cache=disk_cache, **_validated_settings(params))
        self.standardized = (self.data - self.data.mean(axis=0)) / self.data.std(axis=0, ddof=1)
        self._eigen: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def generator(self, x: int, y: int, s: tuple[int, ...]) -> np.random.Generator:
        """The generator of test (x, y, S): a function of (seed, x, y, S) only."""
        return np.random.default_rng([self.params["seed"], x, y, len(s), *s])

    def residuals(self, variable: int, s: tuple[int, ...]) -> np.ndarray:
        """Column ``variable`` (standardised) minus its regression on the columns s."""
        values = self.standardized[:, variable]
        if not s:
            return values
        if self.params["conditioning"] == "linear":
            design = np.column_stack([np.ones(self.n), self.standardized[:, list(s)]])
            coefficients, *_ = np.linalg.lstsq(design, values, rcond=None)
            return values - design @ coefficients
        eigenvalues, eigenvectors = self._kernel_eigen(s)
        centered = values - values.mean()
        coordinates = eigenvectors.T @ centered
        outside = float(centered @ centered) - float(coordinates @ coordinates)  # kernel's null space
        best_shrink, best_score = None, math.inf
        for ridge in _RIDGE_GRID * self.n:
            shrink = ridge / (eigenvalues + ridge)  # eigenvalues of I − K(K + αI)⁻¹ on K's range
            residual_norm = max(outside, 0.0) + float(np.sum((shrink * coordinates) ** 2))
            effective_df = float(np.sum(1.0 - shrink))
            score = self.n * residual_norm / max(self.n - effective_df, 1e-12) ** 2
            if score < best_score:
                best_score, best_shrink = score, shrink
        return centered - eigenvectors @ ((1.0 - best_shrink) * coordinates)

    def _kernel_eigen(self, s: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues and eigenvectors of the centred Gaussian kernel of S (its range only,
        from a pivoted Cholesky factor when the kernel has low numerical rank)."""
        cached = self._eigen.get(s)
        if cached is None:
            points = self.standardized[:, list(s)]
            distances = pdist(points, "sqeuclidean")
            positive = distances[distances > 0]
            if positive.size == 0:
                raise DataError(f"the conditioning columns {list(s)} take a single value")
            precision = 1.0 / float(np.median(positive))
            factor = pivoted_cholesky(points, precision, 1e-10, max_rank=self.n // 2)
            if factor is not None:
                vectors, singular_values, _ = np.linalg.svd(factor - factor.mean(axis=0), full_matrices=False)
                cached = (singular_values**2, vectors)
            else:
                kernel = np.exp(-0.5 * precision * squareform(distances))
                column_means = kernel.mean(axis=0)
                kernel -= column_means[None, :] + column_means[:, None] - column_means.mean()
                eigenvalues, eigenvectors = np.linalg.eigh(kernel)
                cached = (np.clip(eigenvalues, 0.0, None), eigenvectors)
            self._eigen[s] = cached
        return cached

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        if s and self.params["conditioning"] == "none":
            raise HeuresisError(
                "the dcor test was built with conditioning='none' and tests marginal "
                f"dependence only; got S = {list(s)} (use conditioning='kernel' or 'linear')"
            )
        residual_x, residual_y = self.residuals(x, s), self.residuals(y, s)
        statistic = distance_correlation(residual_x, residual_y)
        if self.params["method"] == "chi2":
            _, p_value = distance_chi2_test(residual_x, residual_y)
            return statistic, p_value
        from dcor.independence import distance_covariance_test  # slow import (numba)

        result = distance_covariance_test(
            residual_x,
            residual_y,
            num_resamples=self.params["n_permutations"],
            random_state=self.generator(x, y, s),
        )
        return statistic, float(result.pvalue)


_PARAMETERS = ("method", "n_permutations", "seed", "rng", "conditioning")


def _validated_settings(params: dict[str, Any]) -> dict[str, Any]:
    for name in params:
        if name not in _PARAMETERS:
            raise UnknownNameError("dcor parameter", name, _PARAMETERS)
    method = params.get("method", "permutation")
    if method not in METHODS:
        raise UnknownNameError("dcor method", method, METHODS)
    conditioning = params.get("conditioning", "kernel")
    if conditioning not in CONDITIONING:
        raise UnknownNameError("dcor conditioning", conditioning, CONDITIONING)
    n_permutations = params.get("n_permutations", 199)
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, int | np.integer) or n_permutations < 1:
        raise HeuresisError(f"dcor n_permutations must be an integer ≥ 1, got {n_permutations!r}")
    seed = params.get("seed", 0)
    rng = params.get("rng")
    if rng is not None:
        if not isinstance(rng, np.random.Generator):
            raise HeuresisError(f"dcor rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if "seed" in params:
            raise HeuresisError("give dcor either seed or rng, not both")
        seed = int(rng.integers(0, 2**63 - 1))
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise HeuresisError(f"dcor seed must be an integer ≥ 0, got {seed!r}")
    settings: dict[str, Any] = {"method": method, "conditioning": conditioning, "seed": int(seed)}
    if method == "permutation":
        settings["n_permutations"] = int(n_permutations)
    elif "n_permutations" in params:
        raise HeuresisError("dcor n_permutations applies only to method='permutation'")
    return settings
