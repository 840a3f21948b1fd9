"""Kernel conditional-independence test (KCI; Zhang, Peters, Janzing & Schölkopf, UAI 2011).

Numerically equivalent to causal-learn's ``CIT(data, "kci")`` with its default settings
(``KCI_UInd`` for S = ∅, ``KCI_CInd`` otherwise, gamma null approximation), but built to
be fast when one dataset is tested many times, as in PC:

* data are z-scored once (ddof = 1, as causal-learn and the original Matlab code);
* 1-D Gaussian kernels (a variable alone: every kernel of the unconditional test, and
  y's kernel in the conditional one) are kept as centred low-rank factors F with
  H K H ≈ F Fᵀ (pivoted Cholesky to a residual diagonal of 1e-13; rank ≈ 30 at n = 600),
  cached per variable and width, so an unconditional test costs O(n r²);
* Gaussian kernels of several columns are element-wise products of the columns' own
  kernels (cached per column and width), so no test evaluates an exponential of n² terms;
* per conditioning set S, the residual-maker R_z = ε (H K_z H + ε I)⁻¹ (ε = 1e-3) is
  computed once: as a low-rank correction R_z = I − U D Uᵀ when K_z has numerical rank
  ≤ n/2 (typical for |S| ≤ 2; LAPACK's pivoted Cholesky finds the rank), else densely by
  Cholesky; residualised kernels R_z K R_z are cached per (variable, S) in a
  least-recently-used store (``memory_mb``);
* the gamma approximation's mean and variance come from W = K̃_x ∘ K̃_y, the element-wise
  product of the residualised kernels (mean = tr W, variance = 2 ‖W‖²_F), with no
  eigendecomposition. A conditional test then costs at most two n × n products (x's
  kernel on [x, ½ z] is kept dense) plus O(n² r) for y.

The last point is exact for the gamma moments, whereas causal-learn first drops the
eigen-components of K̃_x and K̃_y below 1e-5 × the largest eigenvalue. The two differ by
that truncation only: |Δp| is typically 1e-6–7e-5 (measured up to ≈1e-4 at n = 600,
|S| = 4). ``truncate_spectrum=True`` reproduces the truncation too (two eigendecompositions
per test, as in causal-learn) when agreement to rounding error is wanted.

Kernel widths follow causal-learn: ``est_width="empirical"`` (default; fixed widths by n),
``"median"`` (median pairwise distance; computed on all rows, whereas causal-learn
subsamples 1000 rows with the global RNG when n > 1000) or ``"manual"`` (``kwidthx``,
``kwidthy``, ``kwidthz``: kernel standard deviations). ``width_scale`` (ours; default 1)
multiplies every kernel standard deviation the rule gives, e.g. ``est_width="median",
width_scale=0.5`` for half the median heuristic (the repair evidence tests other widths so).
Only Gaussian kernels and the gamma approximation are supported; other causal-learn options
raise :class:`HeuresisError`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.linalg
from scipy.special import gammaincc

from heuresis_env.cache import MemoCache
from heuresis_env.discovery.citests.base import CITest
from heuresis_env.errors import HeuresisError, UnknownNameError

#: ridge ε of the kernel regression on the conditioning set (causal-learn's epsilon_x/y)
EPSILON = 1e-3
#: causal-learn drops eigenvalues of the residualised kernels below this × the largest
EIGEN_THRESHOLD = 1e-5
#: pivoted-Cholesky stopping tolerance on a Gaussian kernel's residual diagonal (diagonal 1)
LOW_RANK_TOLERANCE = 1e-13
#: most kernel matrices one test object keeps in memory (the byte budget binds first)
MAX_MATRICES = 100_000
#: bump when the numbers a KCI computes change, so stale disk-cache entries are ignored
IMPLEMENTATION_VERSION = 2

_SUPPORTED_PARAMETERS = (
    "kernelX", "kernelY", "kernelZ", "est_width", "kwidthx", "kwidthy", "kwidthz",
    "approx", "use_gp", "truncate_spectrum", "memory_mb", "width_scale",
)
_UNSUPPORTED_PARAMETERS = {
    "null_ss": "null_ss sizes the simulated null of approx=False, which is not supported",
    "nullss": "nullss sizes the simulated null of approx=False, which is not supported",
    "polyd": "polyd is the degree of the polynomial kernel; only Gaussian kernels are supported",
}


def hsic_empirical_width(n: int) -> float:
    """causal-learn's empirical kernel width (σ) for the unconditional test at sample size n."""
    return 0.8 if n < 200 else 0.5 if n < 1200 else 0.3


def kci_empirical_width(n: int) -> float:
    """causal-learn's empirical kernel width (σ) for the conditional test at sample size n."""
    return 1.2 if n < 200 else 0.7 if n < 1200 else 0.4


def median_precision(points: np.ndarray) -> float:
    """Kernel precision 1/σ² with σ = √2 × the median non-zero pairwise distance."""
    from scipy.spatial.distance import pdist  # here: scipy.spatial costs 0.1–0.3 s to import

    distances = pdist(points, "euclidean")
    distances = distances[distances > 0]
    if distances.size == 0:
        raise HeuresisError("the median kernel width is undefined: all rows are identical")
    return 1.0 / (2.0 * float(np.median(distances)) ** 2)


def gaussian_kernel(points: np.ndarray, precision: float) -> np.ndarray:
    """K_ij = exp(−½ · precision · ‖p_i − p_j‖²), as causal-learn's GaussianKernel."""
    from scipy.spatial.distance import pdist, squareform

    kernel = squareform(pdist(points, "sqeuclidean"))
    kernel *= -0.5 * precision
    np.exp(kernel, out=kernel)
    return kernel


def center_kernel(kernel: np.ndarray) -> np.ndarray:
    """H K H with H = I − 11ᵀ/n, in place (K symmetric)."""
    column_means = kernel.mean(axis=0)
    kernel -= column_means[None, :]
    kernel -= column_means[:, None]
    kernel += column_means.mean()
    return kernel


def gamma_p_value(statistic: float, mean: float, variance: float) -> float:
    """Upper tail of the gamma law with the given mean and variance, at ``statistic``."""
    if not (mean > 0 and variance > 0):
        return 1.0
    shape = mean * mean / variance
    scale = variance / mean
    return float(gammaincc(shape, max(statistic, 0.0) / scale))


def pivoted_cholesky(
    points: np.ndarray, precision: float, tolerance: float, max_rank: int
) -> np.ndarray | None:
    """Low-rank L with K ≈ L Lᵀ for the Gaussian kernel K of ``points`` (residual diagonal
    ≤ tolerance), computing only the pivot columns of K; None if the rank exceeds max_rank."""
    n = points.shape[0]
    residual_diagonal = np.ones(n)  # a Gaussian kernel's diagonal
    factor = np.empty((n, max_rank))
    for k in range(max_rank):
        pivot = int(np.argmax(residual_diagonal))
        pivot_value = residual_diagonal[pivot]
        if pivot_value <= tolerance:
            return factor[:, :k]
        offsets = points - points[pivot]
        column = np.exp(-0.5 * precision * np.einsum("ij,ij->i", offsets, offsets))
        column -= factor[:, :k] @ factor[pivot, :k]
        column /= math.sqrt(pivot_value)
        factor[:, k] = column
        residual_diagonal -= column * column
    return factor if residual_diagonal.max(initial=0.0) <= tolerance else None


def centered_range_eigen(kernel: np.ndarray, tolerance: float, max_rank: int
                         ) -> tuple[np.ndarray, np.ndarray] | None:
    """Eigenvalues and orthonormal eigenvectors of H K H on its numerical range, for a
    positive semi-definite (uncentred) ``kernel`` K whose rank — LAPACK's pivoted Cholesky
    with residual diagonal ≤ ``tolerance`` — is at most ``max_rank``; else None.

    With K ≈ F Fᵀ (F = P Lᵣ, centred), the eigenvectors are F v / √λ from the r × r matrix
    FᵀF: cheaper than an SVD of F. Those of λ < 1e-14 λ_max would be inaccurate and are left
    out (callers give them no weight)."""
    n = kernel.shape[0]
    cholesky, pivots, rank, _ = scipy.linalg.lapack.dpstrf(kernel, tol=tolerance, lower=1)
    if rank > max_rank:
        return None
    factor = np.empty((n, rank))
    factor[pivots - 1] = np.tril(cholesky[:, :rank])  # P Lᵣ: K ≈ F Fᵀ
    factor -= factor.mean(axis=0)  # H K H ≈ (H F)(H F)ᵀ
    eigenvalues, vectors = np.linalg.eigh(factor.T @ factor)
    keep = eigenvalues > eigenvalues[-1] * 1e-14
    eigenvalues = eigenvalues[keep]
    return eigenvalues, factor @ (vectors[:, keep] / np.sqrt(eigenvalues))


@dataclass(frozen=True)
class Gram:
    """A symmetric positive semi-definite n × n matrix: ``dense``, or ``factor`` F with F Fᵀ."""

    dense: np.ndarray | None = None
    factor: np.ndarray | None = None

    @property
    def low_rank(self) -> np.ndarray:
        """F of a factored Gram matrix (an error on a dense one)."""
        assert self.factor is not None, "a dense Gram matrix has no factor"
        return self.factor

    @property
    def matrix(self) -> np.ndarray:
        """The dense matrix of a dense Gram matrix (an error on a factored one)."""
        assert self.dense is not None, "a factored Gram matrix is not stored dense"
        return self.dense

    @property
    def nbytes(self) -> int:
        return (self.dense if self.dense is not None else self.low_rank).nbytes

    def full(self) -> np.ndarray:
        return self.dense if self.dense is not None else self.low_rank @ self.low_rank.T

    def diagonal(self) -> np.ndarray:
        if self.dense is not None:
            return self.dense.diagonal()
        return np.einsum("ij,ij->i", self.low_rank, self.low_rank)

    def truncated(self) -> Gram:
        """Without the eigen-components below 1e-5 × the largest eigenvalue (causal-learn)."""
        if self.factor is not None:
            vectors, singular_values, _ = np.linalg.svd(self.factor, full_matrices=False)
            eigenvalues = singular_values**2
        else:
            eigenvalues, vectors = np.linalg.eigh(0.5 * (self.matrix + self.matrix.T))
        keep = eigenvalues > eigenvalues.max() * EIGEN_THRESHOLD
        return Gram(factor=vectors[:, keep] * np.sqrt(eigenvalues[keep]))


def centered_gaussian_gram(points: np.ndarray, precision: float, low_rank: bool,
                           max_rank: int | None = None) -> Gram:
    """H K H for the Gaussian kernel K of ``points``; as a centred low-rank factor when
    ``low_rank`` and K's numerical rank is at most ``max_rank`` (default n/4), else dense."""
    if low_rank:
        limit = points.shape[0] // 4 if max_rank is None else max_rank
        factor = pivoted_cholesky(points, precision, LOW_RANK_TOLERANCE, limit)
        if factor is not None:
            return Gram(factor=factor - factor.mean(axis=0))
    return Gram(dense=center_kernel(gaussian_kernel(points, precision)))


@dataclass(frozen=True)
class ResidualMaker:
    """R_z = ε (H K_z H + ε I)⁻¹ for one conditioning set: dense, or I − Q Uᵀ (low rank)."""

    dense: np.ndarray | None = None
    basis: np.ndarray | None = None  # U, n × r, orthonormal columns
    scaled_basis: np.ndarray | None = None  # Q = U diag(λ / (λ + ε))

    @property
    def nbytes(self) -> int:
        parts = (self.dense, self.basis, self.scaled_basis)
        return sum(p.nbytes for p in parts if p is not None)

    @property
    def low_rank(self) -> tuple[np.ndarray, np.ndarray]:
        """(U, Q) of the low-rank form (an error on the dense one)."""
        assert self.basis is not None and self.scaled_basis is not None, "a dense residual maker"
        return self.basis, self.scaled_basis

    @property
    def rank(self) -> int:
        """Rank of the correction I − R_z (n for the dense form)."""
        return self.dense.shape[0] if self.dense is not None else self.low_rank[0].shape[1]

    def residualize(self, gram: Gram) -> Gram:
        """R_z K R_z, in the same form as K."""
        if gram.factor is not None:
            factor = gram.factor
            if self.dense is not None:
                return Gram(factor=self.dense @ factor)
            basis, scaled_basis = self.low_rank
            return Gram(factor=factor - scaled_basis @ (basis.T @ factor))
        kernel = gram.matrix
        if self.dense is not None:
            return Gram(dense=self.dense @ (kernel @ self.dense))
        # (I − Q Uᵀ) K (I − U Qᵀ) = K − Q Tᵀ − T Qᵀ with G = K U, T = G − ½ Q (Uᵀ G)
        u, q = self.low_rank
        g = kernel @ u
        t = g - 0.5 * (q @ (u.T @ g))
        return Gram(dense=kernel - np.hstack([q, t]) @ np.hstack([t, q]).T)

    @classmethod
    def build(cls, kernel: np.ndarray) -> ResidualMaker:
        """From the (uncentred) Gaussian kernel K_z of the conditioning set, overwritten.

        Low rank when K_z's numerical rank r (LAPACK's pivoted Cholesky, residual diagonal
        ≤ 1e-13) is at most n/2: residualizing a dense kernel then costs ≈ 6n²r flops against
        4n³ for the dense form. The eigenvectors come from the r × r Gram matrix FᵀF.
        """
        n = kernel.shape[0]
        low_rank = centered_range_eigen(kernel, LOW_RANK_TOLERANCE, n // 2)
        if low_rank is not None:
            # the eigenvectors left out by centered_range_eigen enter R_z with weight
            # λ / (λ + ε) < 1e-9
            eigenvalues, basis = low_rank
            return cls(basis=basis, scaled_basis=basis * (eigenvalues / (eigenvalues + EPSILON)))
        regularized = center_kernel(kernel)
        regularized.flat[:: n + 1] += EPSILON
        cholesky, info = scipy.linalg.lapack.dpotrf(regularized, lower=0)
        if info == 0:
            inverse, info = scipy.linalg.lapack.dpotri(cholesky, lower=0)
        if info == 0:
            dense = np.triu(inverse)
            dense += np.triu(inverse, 1).T
            dense *= EPSILON
        else:  # not numerically positive definite: causal-learn's pseudo-inverse
            dense = EPSILON * np.linalg.pinv(regularized)
        return cls(dense=dense)

    @classmethod
    def from_points(cls, points: np.ndarray, precision: float) -> ResidualMaker:
        """For the Gaussian kernel of the conditioning set's ``points`` (n × |S|)."""
        return cls.build(gaussian_kernel(points, precision))


class KCI(CITest):
    """KCI with causal-learn's defaults and p-values (gamma approximation), reusing work
    across tests on one dataset. Results are also cached on disk (they are slow to compute).

    Parameters (causal-learn's names): ``kernelX``, ``kernelY``, ``kernelZ`` ("Gaussian"
    only), ``est_width`` ("empirical" | "median" | "manual"), ``kwidthx``, ``kwidthy``,
    ``kwidthz`` (required for "manual"), ``approx`` (True only), ``use_gp`` (False only).
    Ours: ``truncate_spectrum`` (drop eigenvalues below 1e-5 × max as causal-learn does;
    slower), ``memory_mb`` (budget of the in-memory matrix cache; not part of results),
    ``width_scale`` (multiplies every kernel width; enters the cache key only when ≠ 1).
    """

    name: ClassVar[str] = "kci"
    disk_cache_default: ClassVar[bool] = True

    def __init__(self, data: np.ndarray, *, disk_cache: bool | None = None, **params: Any):
        settings = _validated_settings(params)
        self.memory_mb: float = settings.pop("memory_mb")
        super().__init__(data, disk_cache=disk_cache, **settings)
        self.standardized = (self.data - self.data.mean(axis=0)) / self.data.std(axis=0, ddof=1)
        self._matrices: MemoCache[Any] = MemoCache(MAX_MATRICES, int(self.memory_mb * 2**20))
        self._buffers: tuple[np.ndarray, np.ndarray] | None = None

    def cache_params(self) -> dict[str, Any]:
        return {**self.params, "implementation": IMPLEMENTATION_VERSION}

    def clear_memory(self) -> None:
        """Drop the cached kernel matrices (results stay cached)."""
        self._matrices.clear()

    def _cached(self, key: Hashable, build: Any) -> Any:
        value = self._matrices.get(key)
        if value is None:
            value = build()
            self._matrices.set(key, value, value.nbytes)
        return value

    # -- kernels --------------------------------------------------------------------------

    def _precision(self, points: np.ndarray, width_param: str, conditioning_size: int) -> float:
        """1/σ² by causal-learn's rule (σ × ``width_scale``); ``conditioning_size`` 0 means the
        unconditional test."""
        return self._rule_precision(points, width_param, conditioning_size) / (
            self.params.get("width_scale", 1.0) ** 2)

    def _rule_precision(self, points: np.ndarray, width_param: str,
                        conditioning_size: int) -> float:
        rule = self.params["est_width"]
        if rule == "manual":
            return 1.0 / self.params[width_param] ** 2
        if rule == "median":
            return median_precision(points)
        if conditioning_size == 0:
            return 1.0 / hsic_empirical_width(self.n) ** 2 * points.shape[1]
        return 1.0 / kci_empirical_width(self.n) ** 2 / conditioning_size

    def _unconditional_gram(self, variable: int, width_param: str) -> Gram:
        def build() -> Gram:
            # causal-learn sets the median width from the raw (unscaled) data here
            precision = self._precision(self.data[:, [variable]], width_param, 0)
            return centered_gaussian_gram(self.standardized[:, [variable]], precision, low_rank=True)

        role = width_param if self.params["est_width"] == "manual" else None
        return self._cached(("unconditional", variable, role), build)

    def _residual_maker(self, s: tuple[int, ...]) -> ResidualMaker:
        def build() -> ResidualMaker:
            precision = self._precision(self.standardized[:, list(s)], "kwidthz", len(s))
            return ResidualMaker.build(self._product_kernel(s, precision))

        return self._cached(("residual-maker", s), build)

    def _residualized_x(self, x: int, s: tuple[int, ...]) -> Gram:
        """R_z K_x R_z with K_x the kernel on [x, ½ z] (causal-learn's KCI_CInd)."""

        def build() -> Gram:
            points = np.hstack([self.standardized[:, [x]], 0.5 * self.standardized[:, list(s)]])
            precision = self._precision(points, "kwidthx", len(s))
            # [x, z] kernels have high numerical rank: the dense form is cheaper. A Gaussian
            # kernel of stacked coordinates is the element-wise product of theirs, so the
            # kernels of x and of ½ z are kept and shared by the tests that use them.
            kernel = self._product_kernel(s, 0.25 * precision)
            kernel *= self._column_kernel(x, precision)
            return self._residual_maker(s).residualize(Gram(dense=center_kernel(kernel)))

        return self._cached(("residualized-x", x, s), build)

    def _column_kernel(self, variable: int, precision: float) -> np.ndarray:
        """The (uncentred) Gaussian kernel of one standardized column, cached (read only)."""
        return self._cached(("kernel", variable, precision), lambda: gaussian_kernel(
            self.standardized[:, [variable]], precision))

    def _product_kernel(self, columns: tuple[int, ...], precision: float) -> np.ndarray:
        """The Gaussian kernel of several columns, a new array: the element-wise product of
        the columns' own kernels (exp of a sum), which the tests of a level share."""
        kernel = self._column_kernel(columns[0], precision).copy()
        for variable in columns[1:]:
            kernel *= self._column_kernel(variable, precision)
        return kernel

    def _residualized_y(self, y: int, s: tuple[int, ...]) -> Gram:
        """R_z K_y R_z with K_y the kernel on y alone (its width depends on |S| only)."""

        def build() -> Gram:
            points = self.standardized[:, [y]]
            precision = self._precision(points, "kwidthy", len(s))
            gram = self._cached(
                ("y", y, precision),
                lambda: centered_gaussian_gram(points, precision, low_rank=True),
            )
            return self._residual_maker(s).residualize(gram)

        return self._cached(("residualized-y", y, s), build)

    # -- tests ----------------------------------------------------------------------------

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        statistic, mean, variance = self.moments(x, y, s)
        return statistic, gamma_p_value(statistic, mean, variance)

    def moments(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float, float]:
        """The statistic and the mean and variance of its gamma null (x < y, S sorted and
        validated): what the p-value is computed from, and what :class:`BlockKCI` sums."""
        if not s:
            return self._unconditional(x, y)
        kx = self._residualized_x(x, s)
        ky = self._residualized_y(y, s)
        kx_full, ky_full = kx.full(), self._full(ky, 0)
        statistic = float(np.vdot(kx_full, ky_full))
        if self.params["truncate_spectrum"]:
            kx_full, ky_full = kx.truncated().full(), ky.truncated().full()
        # mean tr(K̃x ∘ K̃y) from the diagonals; the product in a reused buffer
        mean = float(kx_full.diagonal() @ ky_full.diagonal())
        product = np.multiply(kx_full, ky_full, out=self._buffer(1))
        variance = 2.0 * float(np.vdot(product, product))
        return statistic, mean, variance

    def _buffer(self, which: int) -> np.ndarray:
        """One of two n × n work matrices of this object (fewer fresh pages per test)."""
        if self._buffers is None:
            self._buffers = (np.empty((self.n, self.n)), np.empty((self.n, self.n)))
        return self._buffers[which]

    def _full(self, gram: Gram, which: int) -> np.ndarray:
        """``gram`` as a dense matrix, a factor's F Fᵀ written into work buffer ``which``."""
        if gram.dense is not None:
            return gram.dense
        return np.matmul(gram.low_rank, gram.low_rank.T, out=self._buffer(which))

    def _unconditional(self, x: int, y: int) -> tuple[float, float, float]:
        """HSIC V-statistic tr(K̃x K̃y) with causal-learn's gamma moments
        (mean tr K̃x · tr K̃y / n, variance 2 ‖K̃x‖² ‖K̃y‖² / n²)."""
        kx = self._unconditional_gram(x, "kwidthx")
        ky = self._unconditional_gram(y, "kwidthy")
        if kx.factor is not None and ky.factor is not None:
            statistic = _frobenius_squared(kx.factor.T @ ky.factor)
            sum_squares_x = _frobenius_squared(kx.factor.T @ kx.factor)
            sum_squares_y = _frobenius_squared(ky.factor.T @ ky.factor)
        else:
            kx_full, ky_full = kx.full(), ky.full()
            statistic = float(np.vdot(kx_full, ky_full))
            sum_squares_x = float(np.vdot(kx_full, kx_full))
            sum_squares_y = float(np.vdot(ky_full, ky_full))
        mean = float(kx.diagonal().sum() * ky.diagonal().sum()) / self.n
        variance = 2.0 * sum_squares_x * sum_squares_y / self.n**2
        return statistic, mean, variance


def _frobenius_squared(matrix: np.ndarray) -> float:
    return float(np.vdot(matrix, matrix))


def _validated_settings(params: dict[str, Any]) -> dict[str, Any]:
    """Normalize KCI parameters (with defaults); reject unknown and unsupported ones."""
    for name in params:
        if name in _UNSUPPORTED_PARAMETERS:
            raise HeuresisError(f"KCI parameter {name!r} is not supported: {_UNSUPPORTED_PARAMETERS[name]}")
        if name not in _SUPPORTED_PARAMETERS:
            raise UnknownNameError("KCI parameter", name, _SUPPORTED_PARAMETERS)
    for kernel_param in ("kernelX", "kernelY", "kernelZ"):
        value = params.get(kernel_param, "Gaussian")
        if value != "Gaussian":
            raise HeuresisError(
                f"KCI {kernel_param}={value!r} is not supported: only 'Gaussian' kernels "
                "(causal-learn's default) are implemented"
            )
    if params.get("approx", True) is not True:
        raise HeuresisError(
            "KCI approx=False (a simulated spectral null, drawn from the global RNG in "
            "causal-learn) is not supported; use approx=True, the gamma approximation"
        )
    if params.get("use_gp", False) is not False:
        raise HeuresisError("KCI use_gp=True (Gaussian-process kernel widths) is not supported")
    est_width = params.get("est_width", "empirical")
    if est_width not in ("empirical", "median", "manual"):
        raise UnknownNameError("KCI est_width", est_width, ("empirical", "median", "manual"))
    widths: dict[str, float | None] = {}
    for width_param in ("kwidthx", "kwidthy", "kwidthz"):
        value = params.get(width_param)
        if est_width == "manual":
            if value is None:
                raise HeuresisError(
                    f"KCI est_width='manual' needs {width_param} (a kernel standard deviation > 0); "
                    "give kwidthx, kwidthy and kwidthz"
                )
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise HeuresisError(f"KCI {width_param} must be a number > 0, got {value!r}")
            widths[width_param] = float(value)
        elif value is not None:
            raise HeuresisError(f"KCI {width_param} is used only with est_width='manual'")
        else:
            widths[width_param] = None
    truncate = params.get("truncate_spectrum", False)
    if not isinstance(truncate, bool):
        raise HeuresisError(f"KCI truncate_spectrum must be True or False, got {truncate!r}")
    memory_mb = params.get("memory_mb", 256)
    if isinstance(memory_mb, bool) or not isinstance(memory_mb, int | float) or memory_mb < 0:
        raise HeuresisError(f"KCI memory_mb must be a number ≥ 0, got {memory_mb!r}")
    width_scale = params.get("width_scale", 1.0)
    if (isinstance(width_scale, bool) or not isinstance(width_scale, int | float)
            or not math.isfinite(width_scale) or not width_scale > 0):
        raise HeuresisError(f"KCI width_scale must be a finite number > 0, got {width_scale!r}")
    # width_scale = 1 is left out of the settings, so the cache keys of default tests stay
    scaled = {} if float(width_scale) == 1.0 else {"width_scale": float(width_scale)}
    return {
        "est_width": est_width,
        **widths,
        "truncate_spectrum": truncate,
        "memory_mb": float(memory_mb),
        **scaled,
    }
