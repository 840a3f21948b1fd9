"""Pairwise direction evidence: additive-noise models with HSIC, and pairwise LiNGAM ratios.

Two kinds of evidence for the direction of an edge x — y, both bivariate (other variables
are ignored, so a confounded or multi-parent pair can mislead either of them):

- **Additive-noise model (ANM)** (Hoyer et al. 2009): if y = f(x) + e with e ⟂ x, the
  residual of a flexible regression of y on x is independent of x, while in the backward
  direction it is not (except in the linear-Gaussian case, where both directions fit).
  Independence is measured by the HSIC test with a gamma approximation (Gretton et al. 2008).
- **Pairwise LiNGAM likelihood ratio** (Hyvärinen & Smith 2013): for a *linear* relation with
  non-Gaussian variables, the log-likelihood ratio of x → y against y → x; positive favours
  x → y. It is about 0 for Gaussian data, where the direction is not identifiable.

:func:`orientation_probe` bundles both for the environment's ``orientation_probe`` tool;
:func:`orient_skeleton_pairwise` orients a whole skeleton with the ANM evidence (the "anm"
reference algorithm).
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from heuresis_env.discovery.citests.base import sample_matrix
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError

#: regressors available to :func:`anm_direction`
ANM_REGRESSORS = ("spline", "gp")
#: approximations available to :func:`pairwise_lingam_ratio`
LINGAM_MEASURES = ("entropy", "tanh", "skew")


# ---- input checks ------------------------------------------------------------------------

def _as_vector(values: np.ndarray, label: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1:
        raise DataError(f"{label} must be one variable (a 1-D array), got shape {a.shape}")
    return sample_matrix(a, label)[:, 0]


def _check_pair(x: np.ndarray, y: np.ndarray, min_rows: int) -> None:
    if x.shape[0] != y.shape[0]:
        raise DataError(f"x has {x.shape[0]} rows and y has {y.shape[0]}; they must match")
    if x.shape[0] < min_rows:
        raise DataError(f"{x.shape[0]} rows given; at least {min_rows} are needed")


# ---- HSIC ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class HSICResult:
    """HSIC independence test: ``statistic`` is n·HSIC_b (Gretton's test statistic)."""

    statistic: float
    p_value: float
    n: int


def _gaussian_gram(a: np.ndarray) -> np.ndarray:
    """Gaussian kernel matrix with the median heuristic: k = exp(−‖u−v‖² / median ‖u−v‖²).

    This is Gretton's choice σ² = ½·median of the squared pairwise distances with
    k = exp(−‖u−v‖²/(2σ²)).
    """
    sq = np.sum(a * a, axis=1)
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (a @ a.T), 0.0)
    upper = dist2[np.triu_indices_from(dist2, k=1)]
    positive = upper[upper > 0]
    median = float(np.median(positive)) if positive.size else 1.0
    return np.exp(-dist2 / median)


def _center(k: np.ndarray) -> np.ndarray:
    """H K H with H = I − 11ᵀ/n, without forming H."""
    row = k.mean(axis=0)
    return k - row[None, :] - row[:, None] + row.mean()


def hsic_test(a: np.ndarray, b: np.ndarray, *, max_rows: int = 1000,
              rng: np.random.Generator | None = None) -> HSICResult:
    """HSIC test of a ⟂ b with Gaussian kernels (median heuristic) and a gamma null.

    Follows Gretton et al. (2008): the statistic n·HSIC_b is compared with a gamma
    distribution whose mean and variance are estimated under independence. With more than
    ``max_rows`` rows, a random subset of ``max_rows`` rows (drawn from ``rng``, default
    ``default_rng(0)``) is used, because the cost grows as n².
    """
    a_mat, b_mat = sample_matrix(a, "a"), sample_matrix(b, "b")
    _check_pair(a_mat, b_mat, min_rows=6)
    if max_rows < 6:
        raise HeuresisError(f"max_rows must be at least 6, got {max_rows}")
    n = a_mat.shape[0]
    if n > max_rows:
        rng = np.random.default_rng(0) if rng is None else rng
        keep = np.sort(rng.choice(n, size=max_rows, replace=False))
        a_mat, b_mat, n = a_mat[keep], b_mat[keep], max_rows
    kernel_a, kernel_b = _gaussian_gram(a_mat), _gaussian_gram(b_mat)
    product = _center(kernel_a) * _center(kernel_b)
    statistic = float(product.sum()) / n

    variance_terms = (product / 6.0) ** 2
    variance = (variance_terms.sum() - np.trace(variance_terms)) / (n * (n - 1))
    variance *= 72.0 * (n - 4) * (n - 5) / (n * (n - 1) * (n - 2) * (n - 3))
    mu_a = (kernel_a.sum() - np.trace(kernel_a)) / (n * (n - 1))
    mu_b = (kernel_b.sum() - np.trace(kernel_b)) / (n * (n - 1))
    mean = (1.0 + mu_a * mu_b - mu_a - mu_b) / n
    if not (variance > 0 and mean > 0):
        # numerically degenerate kernels (near-constant input): no dependence can be shown
        return HSICResult(statistic, 1.0, n)
    from scipy.special import gammaincc

    shape = mean * mean / variance
    scale = variance * n / mean
    p_value = float(gammaincc(shape, statistic / scale))  # the gamma survival function
    return HSICResult(statistic, min(max(p_value, 0.0), 1.0), n)


# ---- regressions for the additive-noise model ----------------------------------------------

def _penalized_spline_residuals(cause: np.ndarray, effect: np.ndarray, n_knots: int = 20,
                                degree: int = 3) -> np.ndarray:
    """Residuals of a cubic P-spline fit of effect on cause (Eilers & Marx 1996).

    Interior knots at quantiles of the cause, a second-difference penalty on the
    coefficients, and the penalty weight chosen by generalized cross-validation over a
    log grid. Falls back to a straight line when the cause has too few distinct values.
    """
    from scipy.interpolate import BSpline

    n = cause.shape[0]
    interior = np.unique(np.quantile(cause, np.linspace(0.0, 1.0, n_knots)[1:-1]))
    lo, hi = float(cause.min()), float(cause.max())
    interior = interior[(interior > lo) & (interior < hi)]
    if interior.size < 2 or np.unique(cause).size < degree + 3:
        slope, intercept = np.polyfit(cause, effect, 1)
        return effect - (slope * cause + intercept)
    knots = np.concatenate([[lo] * (degree + 1), interior, [hi] * (degree + 1)])
    basis = BSpline.design_matrix(cause, knots, degree).toarray()
    n_basis = basis.shape[1]
    difference = np.diff(np.eye(n_basis), n=2, axis=0)
    penalty = difference.T @ difference
    gram = basis.T @ basis
    moment = basis.T @ effect
    best: tuple[float, np.ndarray] | None = None
    for lam in np.logspace(-6, 6, 49):
        system = gram + lam * penalty
        try:
            coefficients = np.linalg.solve(system, moment)
            effective_df = float(np.trace(np.linalg.solve(system, gram)))
        except np.linalg.LinAlgError:
            continue
        residual = effect - basis @ coefficients
        if effective_df >= n - 1:
            continue
        gcv = n * float(residual @ residual) / (n - effective_df) ** 2
        if best is None or gcv < best[0]:
            best = (gcv, residual)
    if best is None:
        slope, intercept = np.polyfit(cause, effect, 1)
        return effect - (slope * cause + intercept)
    return best[1]


def _gp_residuals(cause: np.ndarray, effect: np.ndarray, rng: np.random.Generator,
                  max_fit_rows: int = 500) -> np.ndarray:
    """Residuals of Gaussian-process regression (RBF + white noise, hyperparameters by
    marginal likelihood), fitted on at most ``max_fit_rows`` rows drawn from ``rng``."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    n = cause.shape[0]
    fit = np.arange(n) if n <= max_fit_rows else np.sort(rng.choice(n, max_fit_rows, replace=False))
    kernel = (ConstantKernel(1.0, (1e-3, 1e4)) * RBF(1.0, (1e-2, 1e2))
              + WhiteKernel(0.1, (1e-6, 1e1)))
    model = GaussianProcessRegressor(kernel=kernel, normalize_y=True, n_restarts_optimizer=0)
    with warnings.catch_warnings():
        # a hyperparameter at its bound is a valid fit here (e.g. a near-noiseless map)
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(cause[fit, None], effect[fit])
    return effect - model.predict(cause[:, None])


def _residuals(cause: np.ndarray, effect: np.ndarray, regressor: str,
               rng: np.random.Generator) -> np.ndarray:
    if regressor == "spline":
        return _penalized_spline_residuals(cause, effect)
    if regressor == "gp":
        return _gp_residuals(cause, effect, rng)
    raise UnknownNameError("ANM regressor", regressor, ANM_REGRESSORS)


@dataclass(frozen=True)
class ANMResult:
    """HSIC tests of residual ⟂ cause in both directions.

    ``p_value_x_to_y`` tests the model y = f(x) + e (residual of y on x against x);
    a large p-value means the model fits. Statistics are HSIC's n·HSIC_b.
    """

    p_value_x_to_y: float
    p_value_y_to_x: float
    statistic_x_to_y: float
    statistic_y_to_x: float
    regressor: str
    n: int

    def direction(self, alpha: float = 0.05, margin: float = 0.05) -> str | None:
        """"x->y", "y->x" or None (undecided); see :func:`anm_decision`."""
        return anm_decision(self.p_value_x_to_y, self.p_value_y_to_x, alpha, margin)


def anm_decision(p_value_x_to_y: float, p_value_y_to_x: float, alpha: float = 0.05,
                 margin: float = 0.05) -> str | None:
    """Choose the direction whose residual looks more independent of its cause.

    Undecided (None) when both directions are rejected (the larger p-value is ≤ ``alpha``:
    no additive-noise model fits, e.g. a confounded or multi-parent pair) or when the two
    p-values differ by less than ``margin`` (e.g. both fit, as in the linear-Gaussian case).
    """
    high = max(p_value_x_to_y, p_value_y_to_x)
    if high <= alpha or abs(p_value_x_to_y - p_value_y_to_x) < margin:
        return None
    return "x->y" if p_value_x_to_y > p_value_y_to_x else "y->x"


def anm_direction(x: np.ndarray, y: np.ndarray, rng: np.random.Generator | None = None, *,
                  regressor: str = "spline", max_rows: int = 1000) -> ANMResult:
    """Fit an additive-noise model both ways and test each residual against its cause.

    Both variables are standardized first. ``regressor`` is "spline" (a cubic P-spline with
    the smoothing weight chosen by generalized cross-validation; fast, the default) or "gp"
    (Gaussian-process regression as in Hoyer et al. 2009; slower). ``rng`` (default
    ``default_rng(0)``) draws the rows HSIC and the GP use when there are too many.
    """
    if regressor not in ANM_REGRESSORS:
        raise UnknownNameError("ANM regressor", regressor, ANM_REGRESSORS)
    xv, yv = _as_vector(x, "x"), _as_vector(y, "y")
    _check_pair(xv[:, None], yv[:, None], min_rows=10)
    rng = np.random.default_rng(0) if rng is None else rng
    xs = (xv - xv.mean()) / xv.std()
    ys = (yv - yv.mean()) / yv.std()
    residual_y = _residuals(xs, ys, regressor, rng)
    residual_x = _residuals(ys, xs, regressor, rng)
    forward = _hsic_or_independent(residual_y, xs, max_rows, rng)
    backward = _hsic_or_independent(residual_x, ys, max_rows, rng)
    return ANMResult(forward.p_value, backward.p_value, forward.statistic, backward.statistic,
                     regressor, int(xs.shape[0]))


def _hsic_or_independent(residual: np.ndarray, cause: np.ndarray, max_rows: int,
                         rng: np.random.Generator) -> HSICResult:
    """HSIC of residual and cause; a residual that is exactly constant is a perfect fit."""
    if np.ptp(residual) <= 1e-12 * max(1.0, float(np.abs(cause).max())):
        return HSICResult(0.0, 1.0, int(residual.shape[0]))
    return hsic_test(residual, cause, max_rows=max_rows, rng=rng)


# ---- pairwise LiNGAM likelihood ratios -----------------------------------------------------

def _maxent_entropy(u: np.ndarray) -> float:
    """Differential entropy of a standardized sample by Hyvärinen's (1998) maximum-entropy
    approximation, with the constants of Hyvärinen's ``mentappr``."""
    k_cosh, k_gauss, gamma = 79.047, 7.4129, 0.37457
    negentropy = (k_cosh * (np.mean(np.log(np.cosh(u))) - gamma) ** 2
                  + k_gauss * np.mean(u * np.exp(-(u ** 2) / 2)) ** 2)
    return float(0.5 * (1 + math.log(2 * math.pi)) - negentropy)


def pairwise_lingam_ratio(x: np.ndarray, y: np.ndarray, method: str = "entropy") -> float:
    """Hyvärinen & Smith's (2013) likelihood ratio of x → y against y → x; positive ⇒ x → y.

    It assumes a linear relation and non-Gaussian variables (about 0 for Gaussian data).
    Methods (those of Hyvärinen's ``pwling``):

    - "entropy" (general): H(y) − H(x) + H(r_x|y) − H(r_y|x), each entropy by the
      maximum-entropy approximation of the standardized variable; the same measure as
      DirectLiNGAM's ``pwling``.
    - "tanh": ρ·mean(x·tanh(y) − tanh(x)·y), a first-order approximation for sparse
      (super-Gaussian) variables.
    - "skew": ρ·mean(x²·y − x·y²) after making both skewnesses positive, for skewed
      variables.
    """
    if method not in LINGAM_MEASURES:
        raise UnknownNameError("pairwise LiNGAM measure", method, LINGAM_MEASURES)
    xv, yv = _as_vector(x, "x"), _as_vector(y, "y")
    _check_pair(xv[:, None], yv[:, None], min_rows=10)
    xs = (xv - xv.mean()) / xv.std()
    ys = (yv - yv.mean()) / yv.std()
    rho = float(np.mean(xs * ys))
    if method == "entropy":
        residual_y = ys - rho * xs
        residual_x = xs - rho * ys
        if min(residual_x.std(), residual_y.std()) <= 1e-12:
            return 0.0  # deterministic linear relation: the ratio is undefined
        return (_maxent_entropy(ys) - _maxent_entropy(xs)
                + _maxent_entropy(residual_x / residual_x.std())
                - _maxent_entropy(residual_y / residual_y.std()))
    if method == "tanh":
        return rho * float(np.mean(xs * np.tanh(ys) - np.tanh(xs) * ys))
    # standardized, so the skewness is the mean cube
    xs = xs * (np.sign(np.mean(xs ** 3)) or 1.0)
    ys = ys * (np.sign(np.mean(ys ** 3)) or 1.0)
    rho = float(np.mean(xs * ys))
    return rho * float(np.mean(xs ** 2 * ys - xs * ys ** 2))


# ---- the probe and the skeleton orientation -------------------------------------------------

def orientation_probe(data_x: np.ndarray, data_y: np.ndarray,
                      rng: np.random.Generator | None = None, *, regressor: str = "spline",
                      alpha: float = 0.05, margin: float = 0.05,
                      max_rows: int = 1000) -> dict[str, Any]:
    """All pairwise direction evidence for one pair, as a JSON-ready dict.

    ``anm`` holds both HSIC tests and the :func:`anm_decision` at ``alpha``/``margin``;
    ``pairwise_lingam`` holds the three likelihood-ratio measures (positive ⇒ x → y) and the
    direction the "entropy" one favours (only meaningful for linear non-Gaussian pairs);
    ``pearson_r`` is given so a reader can judge linearity and strength.
    """
    xv, yv = _as_vector(data_x, "x"), _as_vector(data_y, "y")
    anm = anm_direction(xv, yv, rng, regressor=regressor, max_rows=max_rows)
    ratios = {m: pairwise_lingam_ratio(xv, yv, m) for m in LINGAM_MEASURES}
    entropy_ratio = ratios["entropy"]
    return {
        "n": int(xv.shape[0]),
        "pearson_r": float(np.corrcoef(xv, yv)[0, 1]),
        "anm": {**asdict(anm), "alpha": alpha, "margin": margin,
                "direction": anm.direction(alpha, margin)},
        "pairwise_lingam": {**ratios,
                            "direction": None if entropy_ratio == 0
                            else ("x->y" if entropy_ratio > 0 else "y->x")},
    }


@dataclass(frozen=True)
class PairOrientation:
    """The ANM evidence behind one skeleton edge (column indices ``x < y``)."""

    x: int
    y: int
    p_value_x_to_y: float
    p_value_y_to_x: float
    direction: str | None  # "x->y", "y->x" or None
    undirected_to_break_cycle: bool = False


def edges_on_cycles(directed: np.ndarray) -> np.ndarray:
    """Boolean matrix of the directed edges i → j that lie on a directed cycle."""
    directed = np.asarray(directed, dtype=bool)
    reach = directed.copy()
    for k in range(reach.shape[0]):  # transitive closure (Warshall)
        reach |= reach[:, [k]] & reach[[k], :]
    return directed & reach.T


def break_directed_cycles(pdag: np.ndarray,
                          strength: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Make the weakest oriented edge on a directed cycle undirected until none is left.

    ``pdag[i, j] and not pdag[j, i]`` is i → j; ``strength[i, j]`` (symmetric) is the
    evidence for the orientation of the pair, the smallest going first (ties: lowest index
    pair). Returns the new PDAG and the pairs ``(i, j)``, ``i < j``, made undirected.
    """
    p = np.asarray(pdag, dtype=bool).copy()
    weights = np.asarray(strength, dtype=np.float64)
    undirected_pairs: list[tuple[int, int]] = []
    while True:
        on_cycle = edges_on_cycles(p & ~p.T)
        if not on_cycle.any():
            return p, undirected_pairs
        _, a, b = min((float(weights[a, b]), min(a, b), max(a, b))
                      for a, b in zip(*np.nonzero(on_cycle), strict=True))
        p[a, b] = p[b, a] = True
        undirected_pairs.append((int(a), int(b)))


def orient_skeleton_pairwise(data: np.ndarray, skeleton: np.ndarray,
                             rng: np.random.Generator | None = None, *,
                             regressor: str = "spline", alpha: float = 0.05,
                             margin: float = 0.05,
                             max_rows: int = 1000) -> tuple[np.ndarray, list[PairOrientation]]:
    """Orient every skeleton edge by the bivariate ANM test; returns a PDAG and the evidence.

    Each edge is oriented on its own by :func:`anm_decision` (undecided edges stay
    undirected). Pairwise decisions can form directed cycles; they are broken by making the
    weakest oriented edge on a cycle undirected (the one with the smallest p-value gap,
    ties by index) until the directed part is acyclic. The PDAG is a boolean matrix,
    ``P[i, j] and not P[j, i]`` for i → j and both for i — j, as in :mod:`heuresis_env.graphs`.
    """
    x_all = np.asarray(data, dtype=np.float64)
    s = np.asarray(skeleton, dtype=bool)
    if s.shape != (x_all.shape[1], x_all.shape[1]):
        raise HeuresisError(f"skeleton has shape {s.shape}, data has {x_all.shape[1]} columns")
    rng = np.random.default_rng(0) if rng is None else rng
    s = s | s.T
    pdag = s.copy()
    evidence: dict[tuple[int, int], PairOrientation] = {}
    gaps = np.zeros(s.shape)
    for i, j in itertools.combinations(range(s.shape[0]), 2):
        if not s[i, j]:
            continue
        result = anm_direction(x_all[:, i], x_all[:, j], rng, regressor=regressor,
                               max_rows=max_rows)
        direction = result.direction(alpha, margin)
        evidence[(i, j)] = PairOrientation(i, j, result.p_value_x_to_y, result.p_value_y_to_x,
                                           direction)
        gaps[i, j] = gaps[j, i] = abs(result.p_value_x_to_y - result.p_value_y_to_x)
        if direction == "x->y":
            pdag[j, i] = False
        elif direction == "y->x":
            pdag[i, j] = False
    pdag, undirected_pairs = break_directed_cycles(pdag, gaps)
    for a, b in undirected_pairs:
        old = evidence[(a, b)]
        evidence[(a, b)] = PairOrientation(a, b, old.p_value_x_to_y, old.p_value_y_to_x,
                                           None, undirected_to_break_cycle=True)
    return pdag, [evidence[key] for key in sorted(evidence)]
