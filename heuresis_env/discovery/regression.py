"""Nonparametric regression for regression-based tests and local scores, with cross-fitting.

The regressor is ridge regression on the inputs and on random Fourier features of a Gaussian
kernel of each input alone (:data:`ADDITIVE_FEATURES` each; bandwidth the median pairwise
distance, :func:`~heuresis_env.discovery.citests.rcit.fourier_features`): an approximate
additive kernel ridge regression, its penalty chosen per fit by generalised cross-validation
over :data:`PENALTIES` from one eigendecomposition. ``features`` > 0 adds that many features
of all inputs jointly (interactions); by default they are left out: on simulated data
(600 rows) 60 joint features made adding an irrelevant input cost 0.02–0.12 nats per row of
held-out log-likelihood against 0.005–0.02 for the additive model, while a weak true edge
(r = 0.15) gains about 0.004. It fits a linear relation as well as a smooth nonlinear one and costs a few
milliseconds at n = 600, so a whole instance's regressions take seconds.

Every column is first replaced by its normal scores (:func:`normal_scores`): conditional
independence is invariant under monotone maps of each variable, and on heavy-tailed columns
(the ``wild`` family) a raw regression extrapolates a few extreme rows so badly that one
held-out row can cost more log-likelihood than all the others gain. Scores, log-likelihoods
and residuals are those of the normal-scored variables.

Cross-fitting: the rows are split once into ``folds`` parts (a seeded permutation); every
row's prediction comes from the fit on the other parts. :class:`CrossFitter` holds the split
and the feature maps of one dataset, so every regression on it uses the same folds (the
generalised covariance measure multiplies two residual vectors row by row).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heuresis_env.discovery.citests.rcit import fourier_features, median_bandwidth
from heuresis_env.errors import HeuresisError

#: random Fourier features of all inputs jointly (for two or more inputs; 0: an additive model)
RANDOM_FEATURES = 0
#: random Fourier features of each input alone (the additive part)
ADDITIVE_FEATURES = 10
#: ridge penalties tried by generalised cross-validation (inputs and target standardized)
PENALTIES = tuple(float(v) for v in np.logspace(-2, 3, 11))
#: default number of cross-fitting folds
FOLDS = 5


@dataclass(frozen=True)
class CrossFit:
    """Out-of-fold predictions of one target from one input set, and their noise level.

    ``residuals[k]`` = target − prediction for row k, predicted by the fit that did not see
    it; ``noise_variance[f]`` is the residual variance of fold f's fit on its own training
    rows (RSS / (rows − effective degrees of freedom)).
    """

    residuals: np.ndarray
    noise_variance: np.ndarray
    fold_of_row: np.ndarray

    def log_likelihood(self) -> float:
        """Mean held-out Gaussian log-likelihood per row (nats), each row under its fold's
        noise variance."""
        variance = self.noise_variance[self.fold_of_row]
        return float(np.mean(-0.5 * np.log(2 * math.pi * variance)
                             - self.residuals ** 2 / (2 * variance)))


def _ridge_gcv(features: np.ndarray, target: np.ndarray, test: np.ndarray
               ) -> tuple[np.ndarray, float]:
    """Fit ridge on (features, target) with the GCV-best penalty; predict ``test``.

    Features and target are centred on the training rows (an unpenalised intercept).
    Returns (test predictions, training noise variance).
    """
    mean_x, mean_y = features.mean(axis=0), target.mean()
    centred, centred_y = features - mean_x, target - mean_y
    fit = _GCVFit.solve(centred.T @ centred, centred.T @ centred_y,
                        float(centred_y @ centred_y), features.shape[0])
    predictions = (test - mean_x) @ fit.coefficients() + mean_y
    return predictions, fit.noise_variance


def ridge_gcv_noise_variance(gram: np.ndarray, cross: np.ndarray, total: float,
                             rows: int) -> float:
    """The training noise variance, RSS / (rows − effective degrees of freedom − 1), of the
    GCV-best ridge fit of a centred target on centred features, from the features' Gram
    matrix ``gram`` = FᵀF, ``cross`` = Fᵀy and ``total`` = yᵀy (no rows needed: fits on
    sub-blocks of one design reuse its Gram matrix)."""
    return _GCVFit.solve(np.asarray(gram, dtype=np.float64), np.asarray(cross, dtype=np.float64),
                         float(total), int(rows)).noise_variance


@dataclass(frozen=True)
class _GCVFit:
    """A ridge fit at the penalty of :data:`PENALTIES` with the smallest GCV score, solved
    from the Gram matrix's eigendecomposition (FᵀF = V S² Vᵀ, so Vᵀ Fᵀ y = S Uᵀ y)."""

    vectors: np.ndarray
    squared: np.ndarray
    projected: np.ndarray
    penalty: float
    noise_variance: float

    @classmethod
    def solve(cls, gram: np.ndarray, cross: np.ndarray, total: float, rows: int) -> _GCVFit:
        squared, vectors = np.linalg.eigh(gram)
        keep = squared > 1e-10 * max(float(squared[-1]), 1e-300)
        squared, vectors = squared[keep], vectors[:, keep]
        projected = (vectors.T @ cross) / np.sqrt(squared)
        outside = float(total - projected @ projected)  # the part no penalty can fit
        best = None
        for penalty in PENALTIES:
            shrink = squared / (squared + penalty)
            residual_sum = float(np.sum(((1 - shrink) * projected) ** 2)) + max(outside, 0.0)
            dof = float(shrink.sum())
            score = rows * residual_sum / max(rows - dof, 1.0) ** 2
            if best is None or score < best[0]:
                best = (score, penalty, residual_sum, dof)
        assert best is not None  # the penalty grid is never empty
        _, penalty, residual_sum, dof = best
        variance = max(residual_sum / max(rows - dof - 1.0, 1.0), 1e-8)
        return cls(vectors, squared, projected, penalty, variance)

    def coefficients(self) -> np.ndarray:
        return self.vectors @ (np.sqrt(self.squared) / (self.squared + self.penalty)
                               * self.projected)


def normal_scores(data: np.ndarray) -> np.ndarray:
    """Each column replaced by the standard-normal quantiles of its ranks, Φ⁻¹(rank/(n+1))
    (ties get their mean rank)."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    ranks = rankdata(data, axis=0)
    scores = ndtri(ranks / (data.shape[0] + 1))
    return (scores - scores.mean(axis=0)) / scores.std(axis=0, ddof=1)


class CrossFitter:
    """Cross-fitted nonparametric regressions on one dataset's normal scores (one split, one
    feature map per input set, results kept per (target, inputs))."""

    def __init__(self, data: np.ndarray, rng: np.random.Generator, folds: int = FOLDS,
                 features: int = RANDOM_FEATURES):
        data = np.asarray(data, dtype=np.float64)
        if data.ndim != 2:
            raise HeuresisError(f"data must be an n × d matrix, got shape {data.shape}")
        if isinstance(folds, bool) or not isinstance(folds, int) or not 2 <= folds <= data.shape[0]:
            raise HeuresisError(f"folds must be an integer in 2..n, got {folds!r}")
        spread = data.std(axis=0, ddof=1)
        if np.any(spread == 0) or not np.all(np.isfinite(data)):
            raise HeuresisError("regression needs finite, non-constant columns")
        self.data = normal_scores(data)
        self.n = data.shape[0]
        self.folds = folds
        self.features = int(features)
        self._seed = int(rng.integers(0, 2**31 - 1))
        self.fold_of_row = np.empty(self.n, dtype=np.int64)
        self.fold_of_row[rng.permutation(self.n)] = np.arange(self.n) % folds
        self._maps: dict[tuple[int, ...], np.ndarray] = {}
        self._fits: dict[tuple[int, tuple[int, ...]], CrossFit] = {}

    def design(self, inputs: tuple[int, ...]) -> np.ndarray:
        """The inputs' columns, :data:`ADDITIVE_FEATURES` random Fourier features of each
        input alone, and ``features`` of all inputs jointly (seeded by the set)."""
        design = self._maps.get(inputs)
        if design is None:
            points = self.data[:, list(inputs)]
            parts = [points]
            for k, variable in enumerate(inputs):
                alone = points[:, [k]]
                random = np.random.default_rng([self._seed, 1, variable])
                parts.append(fourier_features(alone, ADDITIVE_FEATURES, median_bandwidth(alone),
                                              random))
            if len(inputs) > 1 and self.features:
                random = np.random.default_rng([self._seed, len(inputs), *inputs])
                parts.append(fourier_features(points, self.features, median_bandwidth(points),
                                              random))
            design = self._maps[inputs] = np.hstack(parts)
        return design

    def fit(self, target: int, inputs: Sequence[int]) -> CrossFit:
        """Out-of-fold residuals of column ``target`` regressed on the columns ``inputs``."""
        inputs = tuple(sorted(int(v) for v in inputs))
        if target in inputs:
            raise HeuresisError(f"the target column {target} is among the inputs {list(inputs)}")
        key = (int(target), inputs)
        fit = self._fits.get(key)
        if fit is not None:
            return fit
        y = self.data[:, target]
        residuals = np.empty(self.n)
        variances = np.empty(self.folds)
        design = self.design(inputs) if inputs else None
        for fold in range(self.folds):
            held = self.fold_of_row == fold
            train = ~held
            if design is None:
                mean = y[train].mean()
                residuals[held] = y[held] - mean
                variances[fold] = max(float(y[train].var(ddof=1)), 1e-8)
                continue
            predictions, variances[fold] = _ridge_gcv(design[train], y[train], design[held])
            residuals[held] = y[held] - predictions
        fit = self._fits[key] = CrossFit(residuals, variances, self.fold_of_row)
        return fit

    def log_likelihood_gain(self, target: int, inputs: Sequence[int], added: int) -> float:
        """Held-out log-likelihood per row gained by adding column ``added`` to ``inputs``
        when predicting ``target`` (positive: the added column helps)."""
        base = tuple(v for v in inputs if v != added)
        return self.fit(target, base + (added,)).log_likelihood() - \
            self.fit(target, base).log_likelihood()


def generalised_covariance_measure(fitter: CrossFitter, x: int, y: int,
                                   conditioning: Sequence[int]) -> tuple[float, float]:
    """GCM test of x ⟂ y | S (Shah & Peters 2020) with cross-fitted residuals: the statistic
    T = √n · mean(r_x r_y) / sd(r_x r_y), two-sided normal p-value. Returns (|T|, p)."""
    rx = fitter.fit(x, conditioning).residuals
    ry = fitter.fit(y, conditioning).residuals
    products = rx * ry
    spread = float(products.std())
    if spread == 0:
        return 0.0, 1.0
    statistic = abs(math.sqrt(products.size) * float(products.mean()) / spread)
    return statistic, math.erfc(statistic / math.sqrt(2.0))
