"""Distance-correlation test of dependence (Székely, Rizzo & Bakirov, Ann. Statist. 2007).

``method="permutation"`` (default): the permutation test of
``dcor.independence.distance_covariance_test`` — statistic n V²ₙ, p = (1 + #{permuted >
observed}) / (R + 1) with R = ``n_permutations`` (default 199, so p ≥ 1/200) — drawing the same
R permutations (``Generator.permutation(n)``, R times, from a generator derived from
(seed, x, y, S)), so its p-values are dcor's. It is computed differently: the tests here are
between two vectors, and for vectors V²ₙ needs no distance matrix. With x sorted, n² V²ₙ is a
few O(n) sums plus the dominance sum Σ_{p<q, y_p<y_q} x_q (y_q − y_p), which a Fenwick tree
gives in O(n log n) (the approach of Huo & Székely, Technometrics 2016); a permutation only
changes which y sits at each sorted x, so one compiled loop (numba, built once per process,
its machine code cached on disk) evaluates the observed and the R permuted statistics
without the O(n²) matrices dcor permutes (``benchmarks/bench_ci.py`` times both).
``method="chi2"``: the asymptotic test of Székely et al. (Theorem 6): n V²ₙ / S₂ against χ²₁,
computed with numpy (instant, no numba); it is conservative (p-values too large under
independence) and meant for quick screening.

Conditioning sets: with S ≠ ∅ both x and y are first residualised on S and the residuals
tested (valid when x and y depend on S additively). ``conditioning="kernel"`` (default):
Gaussian kernel ridge regression on the standardised S, median-heuristic bandwidth, ridge
chosen per variable by generalised cross-validation (one eigendecomposition per S, from a
low-rank factor — LAPACK's pivoted Cholesky — when the kernel's numerical rank is ≤ n/2); ``"linear"``: least squares on [1, S]; ``"none"``:
refuse S ≠ ∅. Eigendecompositions and residuals are kept per S in a bounded in-memory store,
so the tests of one conditioning set share them. The reported statistic is the sample distance
correlation of the (residualised) pair, in [0, 1]. Results are also cached on disk.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np
from scipy.special import chdtrc

from heuresis_env.cache import MemoCache
from heuresis_env.discovery.citests.base import CITest, sample_matrix
from heuresis_env.discovery.citests.kci import MAX_MATRICES, center_kernel, centered_range_eigen
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError

METHODS = ("permutation", "chi2")
CONDITIONING = ("kernel", "linear", "none")
#: ridge grid of the kernel regression, as multiples of n (searched by GCV)
_RIDGE_GRID = np.logspace(-6, 0, 25)
#: bytes of eigendecompositions and residuals one test object keeps in memory
_MEMORY_BYTES = 128 * 2**20
#: bump when the numbers a dcor test computes change, so stale disk-cache entries are ignored
IMPLEMENTATION_VERSION = 2


def _centered_distances(values: np.ndarray) -> tuple[np.ndarray, float]:
    """Double-centred Euclidean distance matrix and the mean distance a.. (before centring)."""
    if values.shape[1] == 1:  # a vector: |v_i − v_j| in one pass (pdist + squareform take ~8×)
        column = values[:, 0]
        distances = np.subtract.outer(column, column)
        np.abs(distances, out=distances)
    else:
        from scipy.spatial.distance import pdist, squareform  # here: 0.1–0.3 s to import

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
    return _correlation(covariance, variance_x, variance_y)


def distance_correlations(data: np.ndarray, pairs: Iterable[tuple[int, int]]) -> np.ndarray:
    """Sample distance correlation of each column pair (i, j) of ``data`` (n × d), in the
    order given: :func:`distance_correlation` of ``data[:, i]`` and ``data[:, j]``, to the
    last bit, with each column's double-centred distance matrix computed once (screening all
    pairs of d columns costs d matrices instead of d(d − 1)); at most
    :data:`_MEMORY_BYTES` of matrices are kept, the least recently used dropped first."""
    data = np.asarray(data, dtype=np.float64)
    if data.ndim != 2:
        raise DataError(f"data must be an n × d matrix, got shape {data.shape}")
    pairs = [(int(i), int(j)) for i, j in pairs]
    for i, j in pairs:
        if not (0 <= i < data.shape[1] and 0 <= j < data.shape[1]):
            raise DataError(f"column pair ({i}, {j}) is outside the data's {data.shape[1]} "
                            "columns")
    capacity = max(2, _MEMORY_BYTES // max(1, 8 * data.shape[0] ** 2))
    kept: dict[int, tuple[np.ndarray, float]] = {}

    def centred(column: int) -> tuple[np.ndarray, float]:
        if column in kept:
            kept[column] = kept.pop(column)  # most recently used last
        else:
            values = sample_matrix(data[:, column], f"column {column}", allow_constant=True)
            matrix = _centered_distances(values)[0]
            kept[column] = (matrix, float(np.vdot(matrix, matrix)) / matrix.size)
            while len(kept) > capacity:
                kept.pop(next(iter(kept)))
        return kept[column]

    out = np.empty(len(pairs))
    for row, (i, j) in enumerate(pairs):
        a, variance_a = centred(i)
        b, variance_b = centred(j)
        out[row] = _correlation(float(np.vdot(a, b)) / a.size, variance_a, variance_b)
    return out


def _correlation(covariance: float, variance_x: float, variance_y: float) -> float:
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


# ---- n V²ₙ of two vectors under many pairings, in O(n log n) each ---------------------------

def _vector_sums(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For a vector: its order (stable argsort), its centred values sorted, and per sorted
    element m_p = Σ_q max(v_p, v_q) and a_p = Σ_q |v_p − v_q| (the distance row sums)."""
    centered = values - values.mean()
    order = np.argsort(centered, kind="stable")
    ordered = centered[order]
    n = ordered.size
    tail = np.cumsum(ordered[::-1])[::-1]  # Σ_{q ≥ p} v_q
    maxima = np.arange(n) * ordered + tail
    row_sums = 2.0 * maxima - n * ordered - ordered.sum()
    return order, ordered, maxima, row_sums


def _self_statistic(ordered: np.ndarray, row_sums: np.ndarray) -> float:
    """n V²ₙ(v, v) = (Σ_ij |v_i − v_j|² − (2/n) Σ a_i² + a..²/n²) / n, with
    Σ_ij |v_i − v_j|² = 2n Σ v² − 2 (Σ v)²."""
    n = ordered.size
    squares = 2.0 * n * float(ordered @ ordered) - 2.0 * float(ordered.sum()) ** 2
    return (squares - 2.0 * float(row_sums @ row_sums) / n + float(row_sums.sum()) ** 2 / n**2) / n


def _pairing_statistics_py(xs: np.ndarray, mx: np.ndarray, ax: np.ndarray, ys: np.ndarray,
                           my: np.ndarray, by: np.ndarray, x_order: np.ndarray,
                           y_rank: np.ndarray, permutations: np.ndarray,
                           out: np.ndarray) -> None:
    """n V²ₙ of x and y paired as observed (``out[0]``), then with x permuted by each row π of
    ``permutations`` (x[π_i] paired with y_i, as dcor's permutation test; ``out[1:]``).

    xs, ys: the centred values sorted; mx, my, ax, by from :func:`_vector_sums`; ``x_order``
    sorts x, ``y_rank`` is the rank of each y. At sorted position p of x sits z_p = ys[r_p].
    With |u − v| = 2 max(u, v) − u − v: n² V² = T − (2/n) Σ a_p b_{r_p} + a.. b.. / n² and
    T = 4 MM − 4 Σ z_p m^x_p − 4 Σ x_p m^y_{r_p} + 2n Σ x_p z_p + 2 Σx Σy, where
    MM = Σ_pq max(x_p, x_q) max(z_p, z_q) = 2 Σ_q x_q (Σ_{p<q} z_p) + 2H + Σ x_p z_p and
    H = Σ_{p<q, r_p<r_q} x_q (z_q − z_p) comes from a Fenwick tree over ranks (counts and
    z-sums). Compiled by numba (:func:`_pairing_statistics_kernel`); plain Python here.
    """
    rows = permutations.shape[0] + 1
    n = xs.shape[0]
    count = np.zeros(n + 1)
    z_sum = np.zeros(n + 1)
    inverse = np.empty(n, dtype=np.int64)
    ranks = np.empty(n, dtype=np.int64)
    sum_x = 0.0
    sum_y = 0.0
    sum_ax = 0.0
    sum_by = 0.0
    for p in range(n):
        sum_x += xs[p]
        sum_y += ys[p]
        sum_ax += ax[p]
        sum_by += by[p]
    for i in range(rows):
        if i == 0:
            for p in range(n):
                ranks[p] = y_rank[x_order[p]]
        else:
            for j in range(n):
                inverse[permutations[i - 1, j]] = j
            # the y paired with the p-th smallest x is y[π⁻¹(x_order[p])]
            for p in range(n):
                ranks[p] = y_rank[inverse[x_order[p]]]
        count[:] = 0.0
        z_sum[:] = 0.0
        dominance = 0.0
        prefix_products = 0.0
        prefix_z = 0.0
        cross = 0.0
        z_mx = 0.0
        x_mz = 0.0
        ab = 0.0
        for q in range(n):
            r = ranks[q]
            z = ys[r]
            x = xs[q]
            below = 0.0
            below_z = 0.0
            j = r
            while j > 0:
                below += count[j]
                below_z += z_sum[j]
                j -= j & (-j)
            dominance += x * (z * below - below_z)
            prefix_products += x * prefix_z
            prefix_z += z
            cross += x * z
            z_mx += z * mx[q]
            x_mz += x * my[r]
            ab += ax[q] * by[r]
            j = r + 1
            while j <= n:
                count[j] += 1.0
                z_sum[j] += z
                j += j & (-j)
        max_products = 2.0 * (prefix_products + dominance) + cross
        total = (4.0 * max_products - 4.0 * z_mx - 4.0 * x_mz + 2.0 * n * cross
                 + 2.0 * sum_x * sum_y)
        out[i] = (total - 2.0 * ab / n + sum_ax * sum_by / (n * n)) / n


_compiled_pairing_statistics = None


def _pairing_statistics_kernel():
    """The compiled :func:`_pairing_statistics_py` (numba imported and the code loaded on first
    use; its machine code is cached on disk, so later processes skip compiling)."""
    global _compiled_pairing_statistics
    if _compiled_pairing_statistics is None:
        import numba  # heavy (≈1 s); only permutation tests that compute need it

        _compiled_pairing_statistics = numba.njit(cache=True, nogil=True)(
            _pairing_statistics_py)
    return _compiled_pairing_statistics


def pairing_statistics(x: np.ndarray, y: np.ndarray, permutations: np.ndarray | None = None,
                       compiled: bool = True) -> np.ndarray:
    """n V²ₙ(x, y) of two vectors, then of x permuted by each row π of ``permutations``
    (x[π_i] paired with y_i, as dcor's permutation test), in O(n log n) each.
    ``compiled=False`` runs the same loop in Python (slow; for tests)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = x.size
    x_order, xs, mx, ax = _vector_sums(x)
    y_order, ys, my, by = _vector_sums(y)
    y_rank = np.empty(n, dtype=np.int64)
    y_rank[y_order] = np.arange(n)
    if permutations is None:
        permutations = np.empty((0, n), dtype=np.int64)
    permutations = np.ascontiguousarray(permutations, dtype=np.int64)
    out = np.empty(permutations.shape[0] + 1)
    kernel = _pairing_statistics_kernel() if compiled else _pairing_statistics_py
    kernel(xs, mx, ax, ys, my, by, x_order.astype(np.int64), y_rank, permutations, out)
    return out


def vector_self_statistic(values: np.ndarray) -> float:
    """n V²ₙ(v, v) of a vector in O(n log n) (numpy only)."""
    _, ordered, _, row_sums = _vector_sums(np.asarray(values, dtype=np.float64))
    return _self_statistic(ordered, row_sums)


class DistanceCorrelation(CITest):
    """Dependence of x and y by distance correlation, after residualising on S (see module).

    Parameters: ``method`` ("permutation" | "chi2"), ``n_permutations`` (199), ``seed``
    (int ≥ 0, default 0) or ``rng`` (a ``numpy.random.Generator``, turned into a seed),
    ``conditioning`` ("kernel" | "linear" | "none").
    """

    name: ClassVar[str] = "dcor"
    disk_cache_default: ClassVar[bool] = True
    seeded: ClassVar[bool] = True

    def __init__(self, data: np.ndarray, *, disk_cache: bool | None = None, **params: Any):
        super().__init__(data, disk_cache=disk_cache, **_validated_settings(params))
        self.standardized = (self.data - self.data.mean(axis=0)) / self.data.std(axis=0, ddof=1)
        self._matrices: MemoCache[Any] = MemoCache(MAX_MATRICES, _MEMORY_BYTES)

    def cache_params(self) -> dict[str, Any]:
        return {**self.params, "implementation": IMPLEMENTATION_VERSION}

    def generator(self, x: int, y: int, s: tuple[int, ...]) -> np.random.Generator:
        """The generator of test (x, y, S): a function of (seed, x, y, S) only."""
        return np.random.default_rng([self.params["seed"], x, y, len(s), *s])

    def residuals(self, variable: int, s: tuple[int, ...]) -> np.ndarray:
        """Column ``variable`` (standardised) minus its regression on the columns s."""
        values = self.standardized[:, variable]
        if not s:
            return values
        key = ("residuals", variable, s)
        cached = self._matrices.get(key)
        if cached is None:
            cached = self._residualize(values, s)
            self._matrices.set(key, cached, cached.nbytes)
        return cached

    def _residualize(self, values: np.ndarray, s: tuple[int, ...]) -> np.ndarray:
        if self.params["conditioning"] == "linear":
            design = np.column_stack([np.ones(self.n), self.standardized[:, list(s)]])
            coefficients, *_ = np.linalg.lstsq(design, values, rcond=None)
            return values - design @ coefficients
        eigenvalues, eigenvectors = self._kernel_eigen(s)
        centered = values - values.mean()
        coordinates = eigenvectors.T @ centered
        outside = float(centered @ centered) - float(coordinates @ coordinates)  # kernel's null space
        best_shrink: np.ndarray | None = None
        best_score = math.inf
        for ridge in _RIDGE_GRID * self.n:
            shrink = ridge / (eigenvalues + ridge)  # eigenvalues of I − K(K + αI)⁻¹ on K's range
            residual_norm = max(outside, 0.0) + float(np.sum((shrink * coordinates) ** 2))
            effective_df = float(np.sum(1.0 - shrink))
            score = self.n * residual_norm / max(self.n - effective_df, 1e-12) ** 2
            if score < best_score:
                best_score, best_shrink = score, shrink
        assert best_shrink is not None  # the grid is not empty and every score is finite
        return centered - eigenvectors @ ((1.0 - best_shrink) * coordinates)

    def _kernel_eigen(self, s: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues and eigenvectors of the centred Gaussian kernel of S (its range only,
        from a pivoted Cholesky factor when the kernel has low numerical rank)."""
        key = ("eigen", s)
        cached = self._matrices.get(key)
        if cached is None:
            from scipy.spatial.distance import pdist, squareform

            points = self.standardized[:, list(s)]
            distances = pdist(points, "sqeuclidean")
            positive = distances[distances > 0]
            if positive.size == 0:
                raise DataError(f"the conditioning columns {list(s)} take a single value")
            precision = 1.0 / float(np.median(positive))
            kernel = np.exp(-0.5 * precision * squareform(distances))
            cached = centered_range_eigen(kernel, 1e-10, max_rank=self.n // 2)
            if cached is None:
                eigenvalues, eigenvectors = np.linalg.eigh(center_kernel(kernel))
                cached = (np.clip(eigenvalues, 0.0, None), eigenvectors)
            self._matrices.set(key, cached, cached[0].nbytes + cached[1].nbytes)
        return cached

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        if s and self.params["conditioning"] == "none":
            raise HeuresisError(
                "the dcor test was built with conditioning='none' and tests marginal "
                f"dependence only; got S = {list(s)} (use conditioning='kernel' or 'linear')"
            )
        residual_x, residual_y = self.residuals(x, s), self.residuals(y, s)
        if self.params["method"] == "chi2":
            statistic = distance_correlation(residual_x, residual_y)
            _, p_value = distance_chi2_test(residual_x, residual_y)
            return statistic, p_value
        generator = self.generator(x, y, s)
        permutations = np.array([generator.permutation(self.n)
                                 for _ in range(self.params["n_permutations"])])
        values = pairing_statistics(residual_x, residual_y, permutations)
        variance_x = vector_self_statistic(residual_x)
        variance_y = vector_self_statistic(residual_y)
        exceed = int(np.count_nonzero(values[1:] > values[0]))
        return (_correlation(values[0], variance_x, variance_y),
                (exceed + 1.0) / (len(permutations) + 1.0))


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
