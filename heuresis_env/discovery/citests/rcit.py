"""Randomized conditional-independence tests with random Fourier features: RCIT and RCoT
(Strobl, Zhang & Visweswaran, J. Causal Inference 2019).

A seeded re-implementation of causal-learn's ``causallearn.utils.RCIT`` (``RCIT`` with
``rcit=True`` / ``False`` and ``RIT`` for S = ∅): the same standardisation, median-distance
bandwidths (first 500 rows), Fourier-feature construction, partial cross-covariance and
null approximations. causal-learn draws its random features from the global
``np.random``; here every draw comes from the ``random`` argument, in causal-learn's order
(z's features, then x's, then y's; weights then phases), so passing a
``np.random.RandomState(k)`` reproduces ``np.random.seed(k)`` followed by causal-learn's
call draw for draw (the tests check this). The :class:`CITest` classes derive each call's
``numpy.random.Generator`` from (seed, x, y, S), so a result does not depend on the order of
calls and is cached on disk under the data, the parameters and the seed.

RCIT's y-features are built on [y, z]; RCoT's on y alone (Strobl et al.'s RCoT). Both
use RIT (five features each for x and y, as causal-learn) when S = ∅. Null
approximations (``approx``): "lpd4" (Lindsay–Pilla–Basak, the default, falling back to
"hbe" when it fails), "hbe" (Hall–Buckley–Eagleson), "gamma" (Satterthwaite–Welch),
"chi2" (normalised statistic), "perm" (``n_permutations`` permutations).
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any, ClassVar

import numpy as np
import scipy.linalg
from scipy.special import chdtrc

from heuresis_env.discovery.citests.base import CITest
from heuresis_env.errors import HeuresisError, UnknownNameError

APPROXIMATIONS = ("lpd4", "hbe", "gamma", "chi2", "perm")
_BANDWIDTH_ROWS = 500  # rows used for the median-distance bandwidth (causal-learn, R RCIT)
_UNCONDITIONAL_FEATURES = 5  # RIT's features per variable (fixed in causal-learn and R)
#: bump when the numbers an RCIT/RCoT computes change, so stale disk-cache entries are ignored
IMPLEMENTATION_VERSION = 1


#: what the tests draw from (``normal``, ``uniform``, ``permutation``)
RandomSource = np.random.Generator | np.random.RandomState


def standardize(values: np.ndarray) -> np.ndarray:
    """Columns to mean 0 and standard deviation 1 (ddof = 1)."""
    return (values - values.mean(axis=0)) / values.std(axis=0, ddof=1)


def median_bandwidth(points: np.ndarray) -> float:
    """Median non-zero Euclidean distance among the first 500 rows (1 if all are equal)."""
    from scipy.spatial.distance import pdist  # here: scipy.spatial costs 0.1–0.3 s to import

    distances = pdist(points[:_BANDWIDTH_ROWS], "euclidean")
    distances = distances[distances != 0]
    bandwidth = float(np.median(distances)) if distances.size else 0.0
    return bandwidth if bandwidth > 0 else 1.0


def fourier_features(points: np.ndarray, count: int, bandwidth: float, random: RandomSource) -> np.ndarray:
    """√2 cos(W pᵢ + b) with W ~ N(0, 1/bandwidth²), b ~ U[0, 2π): a random-feature map of a
    Gaussian kernel. Draws W (count × dim) then b (count × 1) from ``random``."""
    weights = (1 / bandwidth) * random.normal(size=(count, points.shape[1]))
    phases = 2 * np.pi * random.uniform(size=(count, 1))
    return np.sqrt(2) * np.cos(weights @ points.T + phases).T


def _covariance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross-covariance of the columns of a and b (ddof = 1)."""
    return (a - a.mean(axis=0)).T @ (b - b.mean(axis=0)) / (a.shape[0] - 1)


def _null_p_value(statistic: float, products: np.ndarray, approx: str, cross: np.ndarray) -> tuple[float, float]:
    """p-value of ``statistic`` = n Σ cross² against the weighted-χ² null whose weights are
    the eigenvalues of the covariance of the feature ``products``; returns (statistic, p)."""
    n = products.shape[0]
    covariance = 1 / n * products.T @ products
    if approx == "chi2":
        flat = cross.ravel()
        statistic = n * float(flat @ (scipy.linalg.pinv(covariance) @ flat))
        return statistic, float(chdtrc(flat.size, statistic))
    eigenvalues = np.linalg.eigvalsh(covariance)
    weights = eigenvalues[eigenvalues > 0]
    if not statistic > 0 or weights.size == 0:
        return statistic, 1.0
    import momentchi2  # light (scipy.stats); a dependency of causal-learn

    if approx == "gamma":
        cdf = momentchi2.sw(weights, statistic)
    elif approx == "hbe":
        cdf = momentchi2.hbe(weights, statistic)
    else:  # lpd4, falling back to hbe as causal-learn does
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                cdf = momentchi2.lpb4(weights, statistic)
            except Exception:  # noqa: BLE001 - momentchi2 raises bare Exception
                cdf = math.nan
        if np.isnan(cdf):
            cdf = momentchi2.hbe(weights, statistic)
    return statistic, max(0.0, 1.0 - float(cdf))


def _permutation_p_value(left: np.ndarray, right: np.ndarray, random: RandomSource, n_permutations: int) -> tuple[float, float]:
    """n Σ cov(left, right)² and the share of row permutations of ``left`` exceeding it."""
    n = left.shape[0]
    statistic = n * float(np.sum(_covariance(left, right) ** 2))
    exceed = 0
    for _ in range(n_permutations):
        permuted = left[random.permutation(n)]
        exceed += n * float(np.sum(_covariance(permuted, right) ** 2)) > statistic
    return statistic, exceed / n_permutations


def _feature_products(res_x: np.ndarray, res_y: np.ndarray) -> np.ndarray:
    pairs = itertools.product(range(res_x.shape[1]), range(res_y.shape[1]))
    return np.array([res_x[:, i] * res_y[:, j] for i, j in pairs]).T


def randomized_independence_test(
    x: np.ndarray, y: np.ndarray, random: RandomSource, approx: str = "lpd4", n_permutations: int = 1000
) -> tuple[float, float]:
    """RIT: x ⟂ y (columns of n × d arrays) by the cross-covariance of five random Fourier
    features each. Returns (statistic, p-value)."""
    x, y = standardize(x), standardize(y)
    bandwidth_x, bandwidth_y = median_bandwidth(x), median_bandwidth(y)
    features_x = standardize(fourier_features(x, _UNCONDITIONAL_FEATURES, bandwidth_x, random))
    features_y = standardize(fourier_features(y, _UNCONDITIONAL_FEATURES, bandwidth_y, random))
    if approx == "perm":
        return _permutation_p_value(features_x, features_y, random, n_permutations)
    cross = _covariance(features_x, features_y)
    statistic = x.shape[0] * float(np.sum(cross**2))
    centered_x = features_x - features_x.mean(axis=0)
    centered_y = features_y - features_y.mean(axis=0)
    return _null_p_value(statistic, _feature_products(centered_x, centered_y), approx, cross)


def randomized_conditional_test(
    x: np.ndarray,
    y: np.ndarray,
    z: np.ndarray,
    random: RandomSource,
    approx: str = "lpd4",
    num_f: int = 100,
    num_f2: int = 5,
    include_z_in_y: bool = True,
    n_permutations: int = 1000,
) -> tuple[float, float]:
    """RCIT (``include_z_in_y``) or RCoT: x ⟂ y | z by the partial cross-covariance of
    ``num_f2`` Fourier features of x and of y (or [y, z]) given ``num_f`` features of z.
    Returns (statistic, p-value)."""
    n = x.shape[0]
    x, y, z = standardize(x), standardize(y), standardize(z)
    if include_z_in_y:
        y = np.column_stack((y, z))
    features_z = standardize(fourier_features(z, num_f, median_bandwidth(z), random))
    features_x = standardize(fourier_features(x, num_f2, median_bandwidth(x), random))
    features_y = standardize(fourier_features(y, num_f2, median_bandwidth(y), random))

    cov_xy = features_x.T @ features_y / (n - 1)
    cov_zz = np.cov(features_z, rowvar=False) + np.eye(num_f) * 1e-10
    cholesky_inverse = np.linalg.inv(np.linalg.cholesky(cov_zz))
    # cov_zz is nearly singular (condition ~1e10 after the 1e-10 ridge), so rounding matters:
    # the copy makes numpy use a general product (as causal-learn) rather than SYRK for AᵀA
    inverse_zz = cholesky_inverse.T @ cholesky_inverse.copy()
    cov_xz = features_x.T @ features_z / (n - 1)
    cov_zy = features_z.T @ features_y / (n - 1)
    projection = features_z @ inverse_zz
    residual_x = features_x - projection @ cov_xz.T
    residual_y = features_y - projection @ cov_zy
    if num_f2 == 1:
        approx = "hbe"  # as causal-learn: one feature pair leaves nothing for lpd4 to match
    if approx == "perm":
        return _permutation_p_value(residual_x, residual_y, random, n_permutations)
    partial_cross = cov_xy - cov_xz @ inverse_zz @ cov_zy
    statistic = n * float(np.sum(partial_cross**2))
    return _null_p_value(statistic, _feature_products(residual_x, residual_y), approx, partial_cross)


class RCIT(CITest):
    """Randomized conditional independence test (features of y include z); seeded.

    Parameters: ``seed`` (int ≥ 0, default 0) or ``rng`` (a ``numpy.random.Generator``,
    turned into a seed), ``approx`` (default "lpd4"), ``num_f`` (features of z, 100),
    ``num_f2`` (features of x and y, 5), ``n_permutations`` (for approx="perm", 1000).
    """

    name: ClassVar[str] = "rcit"
    include_z_in_y: ClassVar[bool] = True
    disk_cache_default: ClassVar[bool] = True
    seeded: ClassVar[bool] = True

    def __init__(self, data: np.ndarray, *, disk_cache: bool | None = None, **params: Any):
        super().__init__(data, disk_cache=disk_cache, **_validated_settings(self.name, params))

    def cache_params(self) -> dict[str, Any]:
        return {**self.params, "implementation": IMPLEMENTATION_VERSION}

    def generator(self, x: int, y: int, s: tuple[int, ...]) -> np.random.Generator:
        """The generator of test (x, y, S): a function of (seed, x, y, S) only (x < y, S sorted)."""
        return np.random.default_rng([self.params["seed"], x, y, len(s), *s])

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        random = self.generator(x, y, s)
        settings = self.params
        if not s:
            return randomized_independence_test(
                self.data[:, [x]], self.data[:, [y]], random, settings["approx"], settings["n_permutations"]
            )
        return randomized_conditional_test(
            self.data[:, [x]],
            self.data[:, [y]],
            self.data[:, list(s)],
            random,
            approx=settings["approx"],
            num_f=settings["num_f"],
            num_f2=settings["num_f2"],
            include_z_in_y=self.include_z_in_y,
            n_permutations=settings["n_permutations"],
        )


class RCoT(RCIT):
    """Randomized conditional correlation test (features of y alone); seeded. Same
    parameters as :class:`RCIT`; identical to it when S = ∅ (both run RIT)."""

    name: ClassVar[str] = "rcot"
    include_z_in_y: ClassVar[bool] = False


_PARAMETERS = ("seed", "rng", "approx", "num_f", "num_f2", "n_permutations")


def _validated_settings(test_name: str, params: dict[str, Any]) -> dict[str, Any]:
    for name in params:
        if name not in _PARAMETERS:
            raise UnknownNameError(f"{test_name} parameter", name, _PARAMETERS)
    seed = params.get("seed", 0)
    rng = params.get("rng")
    if rng is not None:
        if not isinstance(rng, np.random.Generator):
            raise HeuresisError(f"{test_name} rng must be a numpy.random.Generator, got {type(rng).__name__}")
        if "seed" in params:
            raise HeuresisError(f"give {test_name} either seed or rng, not both")
        seed = int(rng.integers(0, 2**63 - 1))
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise HeuresisError(f"{test_name} seed must be an integer ≥ 0, got {seed!r}")
    approx = params.get("approx", "lpd4")
    if approx not in APPROXIMATIONS:
        raise UnknownNameError(f"{test_name} approx", approx, APPROXIMATIONS)
    settings: dict[str, Any] = {"seed": int(seed), "approx": approx}
    for name, default in (("num_f", 100), ("num_f2", 5), ("n_permutations", 1000)):
        value = params.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise HeuresisError(f"{test_name} {name} must be an integer ≥ 1, got {value!r}")
        settings[name] = int(value)
    return settings
