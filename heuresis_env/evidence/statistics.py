"""Pair statistics: cheap evidence about every pair and variable, at any size, for models
trained on tens of thousands of simulated instances.

The evidence grid (:mod:`.grid`) reads PC-KCI's run, which costs seconds per instance at
d = 10, n = 600 and is out of reach at d = 50, n = 2,000; a model trained on a stream of
instances of every size needs evidence that costs a fraction of a second. The pair statistics
are that evidence: every feature is computed from the data alone, in closed form or with a
few vectorized regressions, plus two cheap searches (PC with Fisher-z and BOSS). A model
reads them beside the rows themselves (``agents.amortized``).

The features are declared once, in **blocks** (:data:`STATISTICS_BLOCKS`, the machinery of
:mod:`.features`): each block names its pair features (cell ``[i, j]`` of a d × d matrix; a
*symmetric* one is equal in both cells, an *ordered* one is about i → j) and its node
features, and computes them as named matrices. The feature lists, the arrays' channel order
and the text table all derive from the declarations, so a feature is added in one place.

- **correlations**: |Pearson r|, |partial r| given all other columns (the precision matrix),
  the same on the columns' normal scores; per node the linear R², skewness and excess
  kurtosis.
- **fisherz_screen**: −log10 of Fisher-z's p at the empty set and of the *largest* p over every
  conditioning set of at most one and at most two other variables (in closed form from the
  correlation matrix by the partial-correlation recursion), on the data and on its normal
  scores.
- **pc_fisherz**: PC with Fisher-z (α = 0.05): kept, level and −log10 p of the deletion, and
  the CPDAG's arrow i → j; per node the degree. A search that would compute more than
  :data:`PC_FISHERZ_TEST_BUDGET` tests (a hub with dozens of neighbours makes the conditioning
  sets explode: minutes and many GB) is run again capped at the deepest level it completed
  within the budget; the budget cannot bind below 18 variables (at most C(d, 2)·2^(d−2)
  distinct tests), so every instance of the benchmark's sizes is unchanged. (The largest
  search of the first 5,100 instances of the wide stream: 5.4 million tests, 235 s, 6.8 GB;
  a collider of 21 parents among 47 variables grew past 13 GB in minutes before it was
  stopped.)
- **kernel**: −log10 p of two random-Fourier-feature dependence statistics on the normal
  scores — the marginal one (RIT's statistic with each variable's features whitened, χ² with
  k² degrees of freedom) and a *partial* one given every other variable (the canonical
  correlations of the two variables' feature blocks given all other blocks, from the inverse
  of one regularised covariance); per node the nonlinear R² from all other variables.
- **asymmetry** (ordered), on the standardized data winsorized at 5 sd (not on normal scores:
  a rank transform of the effect breaks the additive-noise structure): the Gaussian
  log-likelihood gain of predicting j from i (ridge on i and :data:`ASYMMETRY_FEATURES`
  random Fourier features of it, the penalty chosen per target by generalised
  cross-validation; nats per row), and −log10 p of the dependence between i and the residual
  of that fit — an additive-noise model i → j leaves a residual independent of i, the
  reverse fit does not (RESIT's reasoning, Peters et al. 2014).
- **boss**: BOSS's output (BIC, the instance seed): adjacency and the arrow i → j; per node
  whether it ran.

Missing entries are 0 (a pair PC kept has no deletion p-value; a failed search has no
adjacency), with the ``kept`` flags and ``boss_ran`` telling them apart. Cost at d = 10,
n = 600: tens of milliseconds plus BOSS; at d = 50, n = 2,000 about a second plus BOSS
(``benchmarks/bench_statistics.py``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import chdtrc, log_ndtr

from heuresis_env.discovery.algorithms import run_algorithm
from heuresis_env.discovery.citests.fisherz import FisherZ
from heuresis_env.discovery.pc import PCResult, pc
from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.evidence.features import (
    EvidenceContext,
    FeatureBlock,
    FeatureGrid,
    GridFeature,
    GridLayout,
    TextColumn,
    node_features,
    pair_features,
    run_blocks,
    stack,
)
from heuresis_env.evidence.store import cached_evidence
from heuresis_env.seeding import instance_rng, int31_seed

__all__ = ["PairStatistics", "STATISTICS_BLOCKS", "STATISTICS_NODE_FEATURE_NAMES",
           "STATISTICS_PAIR_FEATURE_NAMES", "STATISTICS_PAIR_FEATURES",
           "STATISTICS_NODE_FEATURES", "STATISTICS_VERSION", "StatisticsBlock",
           "compute_pair_statistics", "pair_statistics"]

#: bump when any computation changes (enters the cache key and the models' records)
STATISTICS_VERSION = 2  # 2: the asymmetry block on the winsorized data, GCV fits
#: −log10 p-values are capped here
LOG_P_CAP = 30.0
#: random Fourier features per variable in the kernel statistics
KERNEL_FEATURES = 5
#: PC-Fisher-z's level
ALPHA = 0.05
#: the most CI tests PC-Fisher-z's search may compute (see the module docstring)
PC_FISHERZ_TEST_BUDGET = 6_000_000


@dataclass
class _Context(EvidenceContext):
    """What the blocks share: the data, its normal scores, and values derived once."""

    rng: np.random.Generator
    searches: bool

    def draws(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The instance's shared random-feature draws (w, b) of ``count`` features."""
        return self.once(f"draws{count}", lambda: (self.rng.normal(size=count),
                                                   self.rng.uniform(0, 2 * np.pi, size=count)))

    @property
    def features(self) -> list[np.ndarray]:
        """Each variable's whitened random Fourier features of its normal scores (n × k)."""
        return self.once("features", lambda: [
            _whiten(_fourier(self.scores[:, [v]], self.draws(KERNEL_FEATURES)))
            for v in range(self.d)])


#: a group of features computed together (the machinery of :mod:`.features`)
StatisticsBlock = FeatureBlock


# ---- helpers ----------------------------------------------------------------------------------

def _log_p_normal(z: np.ndarray) -> np.ndarray:
    """−log10 of the two-sided normal p-value of z, capped at :data:`LOG_P_CAP`."""
    log_p = (math.log(2.0) + log_ndtr(-np.abs(z))) / -math.log(10.0)
    return np.clip(np.nan_to_num(log_p, nan=0.0), 0.0, LOG_P_CAP)


def _log_p_chi2(statistic: np.ndarray, dof: float | np.ndarray) -> np.ndarray:
    p = chdtrc(dof, np.maximum(statistic, 0.0))
    return np.clip(-np.log10(np.maximum(p, 10.0 ** -LOG_P_CAP)), 0.0, LOG_P_CAP)


def _fisher_z(r: np.ndarray, n: int, size: int) -> np.ndarray:
    r = np.clip(r, -1 + 1e-12, 1 - 1e-12)
    return np.arctanh(r) * math.sqrt(max(n - size - 3, 1))


def _fourier(column: np.ndarray, draws: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """√2 cos(w x / h + b) for the shared draws (w ~ N(0, 1), b ~ U[0, 2π)) of one instance,
    h the column's median pairwise distance (over its first 500 rows). Every variable uses
    the same draws, so permuting the variables permutes the features with them."""
    x = column.reshape(-1, 1)
    sample = x[: min(len(x), 500), 0]
    distances = np.abs(sample[:, None] - sample[None, :])
    bandwidth = float(np.median(distances[distances > 0])) if np.any(distances > 0) else 1.0
    weights, phases = draws
    return math.sqrt(2.0) * np.cos(x @ (weights[None, :] / bandwidth) + phases[None, :])


def _whiten(features: np.ndarray) -> np.ndarray:
    """Centred features times the inverse square root of their covariance (rank-safe)."""
    centred = features - features.mean(axis=0)
    covariance = centred.T @ centred / max(len(centred) - 1, 1)
    values, vectors = np.linalg.eigh(covariance)
    keep = values > 1e-8 * max(float(values[-1]), 1e-300)
    return centred @ (vectors[:, keep] / np.sqrt(values[keep]))


def _correlation(data: np.ndarray) -> np.ndarray:
    correlation = np.corrcoef(data, rowvar=False)
    return np.nan_to_num(correlation, nan=0.0)


def _partial(correlation: np.ndarray) -> np.ndarray:
    precision = np.linalg.pinv(correlation)
    scale = np.sqrt(np.clip(np.diag(precision), 1e-12, None))
    partial = -precision / np.outer(scale, scale)
    np.fill_diagonal(partial, 0.0)
    return np.clip(partial, -1.0, 1.0)


# ---- the blocks -------------------------------------------------------------------------------

def _correlations(c: _Context) -> dict[str, np.ndarray]:
    out = {}
    for prefix, values in (("", c.data), ("rank_", c.scores)):
        correlation = c.once(f"{prefix}corr", functools.partial(_correlation, values))
        absolute = np.abs(correlation)
        np.fill_diagonal(absolute, 0.0)
        out[f"abs_{prefix}r"] = absolute
        out[f"abs_{prefix}partial_r"] = np.abs(_partial(correlation))
    precision_diagonal = np.diag(np.linalg.pinv(c.once("corr", lambda: _correlation(c.data))))
    out["r2_linear"] = np.clip(1.0 - 1.0 / np.maximum(precision_diagonal, 1e-12), 0.0, 1.0)
    centred = c.data - c.data.mean(axis=0)
    spread = centred.std(axis=0)
    spread[spread == 0] = 1.0
    out["skewness"] = np.mean((centred / spread) ** 3, axis=0)
    out["excess_kurtosis"] = np.mean((centred / spread) ** 4, axis=0) - 3.0
    return out


def fisherz_screen(correlation: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """−log10 Fisher-z p at ∅, and of the largest p over every set of ≤ 1 and ≤ 2 other
    variables, for every pair, in closed form: r_ij·k = (r_ij − r_ik r_jk) / √((1 − r_ik²)(1 −
    r_jk²)) and the same recursion once more for a second variable (O(d⁴) arithmetic, no test
    calls; equal to the tests' values up to rounding, a test checks it)."""
    d = correlation.shape[0]
    r = np.clip(correlation, -1 + 1e-12, 1 - 1e-12)
    empty = _log_p_normal(_fisher_z(r, n, 0))
    if d < 3:
        empty = np.triu(empty, 1) + np.triu(empty, 1).T
        return empty, empty.copy(), empty.copy()
    # first[i, j, k] = r_ij·k
    rik = r[:, None, :]
    rjk = r[None, :, :]
    denominator = np.sqrt(np.clip((1 - rik ** 2) * (1 - rjk ** 2), 1e-24, None))
    first = np.clip((r[:, :, None] - rik * rjk) / denominator, -1 + 1e-12, 1 - 1e-12)
    index = np.arange(d)
    invalid1 = (index[None, None, :] == index[:, None, None]) | \
        (index[None, None, :] == index[None, :, None])
    smallest1 = np.where(invalid1, np.inf, np.abs(first)).min(axis=2)
    smallest2 = np.full((d, d), np.inf)
    if d >= 4:
        for k in range(d):
            a = first[:, :, k]  # r_·· given k
            ail = a[:, None, :]
            ajl = a[None, :, :]
            denominator = np.sqrt(np.clip((1 - ail ** 2) * (1 - ajl ** 2), 1e-24, None))
            second = np.abs((a[:, :, None] - ail * ajl) / denominator)  # [i, j, l]
            bad = invalid1 | (index[None, None, :] == k)
            bad = bad | (index[:, None, None] == k) | (index[None, :, None] == k)
            smallest2 = np.minimum(smallest2, np.where(bad, np.inf, second).min(axis=2))
    smallest2 = np.clip(smallest2, 0.0, 1 - 1e-12)
    smallest1 = np.clip(smallest1, 0.0, 1 - 1e-12)
    level1 = np.minimum(empty, _log_p_normal(_fisher_z(smallest1, n, 1)))
    level2 = level1 if d < 4 else np.minimum(level1, _log_p_normal(_fisher_z(smallest2, n, 2)))
    # each pair once (the upper triangle), mirrored: exactly symmetric, diagonal 0
    return tuple(np.triu(m, 1) + np.triu(m, 1).T for m in (empty, level1, level2))


def _screen(c: _Context) -> dict[str, np.ndarray]:
    empty, max1, max2 = fisherz_screen(c.once("corr", lambda: _correlation(c.data)), c.n)
    rank = fisherz_screen(c.once("rank_corr", lambda: _correlation(c.scores)), c.n)[2]
    return {"fz_logp_empty": empty, "fz_logp_max1": max1, "fz_logp_max2": max2,
            "rank_fz_logp_max2": rank}


def _log_p(p: float) -> float:
    if not math.isfinite(p):
        return 0.0
    return min(-math.log10(max(p, 10.0 ** -LOG_P_CAP)), LOG_P_CAP)


class _OverBudget(Exception):
    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.level = level


class _BudgetedFisherZ(FisherZ):
    """Fisher-z that refuses to compute more than ``budget`` tests (raising the level of the
    refused one); ``budget=None`` lifts the limit."""

    def __init__(self, data: np.ndarray, budget: int | None) -> None:
        super().__init__(data)
        self.budget = budget

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        if self.budget is not None and self.n_computed >= self.budget:
            raise _OverBudget(len(s))
        return super()._compute(x, y, s)


def _budgeted_pc(data: np.ndarray, names: Sequence[str], budget: int) -> PCResult:
    """PC-Fisher-z, uncapped when it needs at most ``budget`` tests; otherwise capped at the
    deepest level it completed (levels below the refused test's, whose tests are reused)."""
    tester = _BudgetedFisherZ(data, budget)
    try:
        return pc(None, names, ci_test=tester, alpha=ALPHA)
    except _OverBudget as over:
        tester.budget = None
        return pc(None, names, ci_test=tester, alpha=ALPHA, max_depth=max(over.level - 1, 0))


def _pc_fisherz(c: _Context) -> dict[str, np.ndarray]:
    d = c.d
    column = {name: k for k, name in enumerate(c.names)}
    level, log_p = np.zeros((d, d)), np.zeros((d, d))
    try:
        run = _budgeted_pc(c.data, c.names, PC_FISHERZ_TEST_BUDGET)
    except DataError:  # numerically singular data: PC-Fisher-z refuses it; nothing kept
        zero = np.zeros((d, d))
        return {"pc_fz_kept": zero, "pc_fz_level": level, "pc_fz_logp": log_p,
                "pc_fz_arrow": zero.copy(), "pc_fz_degree": np.zeros(d)}
    for deletion in run.deletion_log:
        i, j = column[deletion.x], column[deletion.y]
        level[i, j] = level[j, i] = deletion.level
        log_p[i, j] = log_p[j, i] = _log_p(deletion.p_value)
    kept = run.skeleton.skeleton().astype(np.float64)
    return {"pc_fz_kept": kept, "pc_fz_level": level, "pc_fz_logp": log_p,
            "pc_fz_arrow": run.graph.directed_adjacency().astype(np.float64),
            "pc_fz_degree": kept.sum(axis=1) / max(d - 1, 1)}


def _kernel(c: _Context) -> dict[str, np.ndarray]:
    d, n = c.d, c.n
    blocks = c.features
    sizes = [b.shape[1] for b in blocks]
    design = np.hstack(blocks)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    covariance = design.T @ design / max(n - 1, 1)
    marginal = np.zeros((d, d))
    for i, j in itertools.combinations(range(d), 2):
        block = covariance[starts[i]:starts[i + 1], starts[j]:starts[j + 1]]
        marginal[i, j] = marginal[j, i] = _log_p_chi2(np.asarray(n * np.sum(block ** 2)),
                                                      sizes[i] * sizes[j])
    # partial: the covariance of blocks i and j given all others is the inverse of the
    # precision's (i, j) sub-block; ridge-regularised so that k·d features never exceed rows
    ridge = max(1e-3, design.shape[1] / max(n, 1) * 0.1)
    precision = np.linalg.inv(covariance + ridge * np.eye(design.shape[1]))
    partial = np.zeros((d, d))
    dof_rows = max(n - design.shape[1], 10)
    for i, j in itertools.combinations(range(d), 2):
        index = np.r_[starts[i]:starts[i + 1], starts[j]:starts[j + 1]]
        conditional = np.linalg.inv(precision[np.ix_(index, index)])
        a = sizes[i]
        left = _inverse_sqrt(conditional[:a, :a])
        right = _inverse_sqrt(conditional[a:, a:])
        canonical = left @ conditional[:a, a:] @ right
        partial[i, j] = partial[j, i] = _log_p_chi2(
            np.asarray(dof_rows * np.sum(canonical ** 2)), sizes[i] * sizes[j])
    # nonlinear R² of each variable from every other block (the same precision)
    scores = c.scores
    r2 = np.zeros(d)
    for v in range(d):
        others = np.r_[0:starts[v], starts[v + 1]:design.shape[1]]
        if others.size == 0:
            continue
        gram = covariance[np.ix_(others, others)] + ridge * np.eye(others.size)
        cross = design[:, others].T @ scores[:, v] / max(n - 1, 1)
        explained = float(cross @ np.linalg.solve(gram, cross))
        r2[v] = min(max(explained / max(float(np.var(scores[:, v], ddof=1)), 1e-12), 0.0), 1.0)
    return {"kernel_logp_marginal": marginal, "kernel_logp_partial": partial,
            "r2_nonlinear": r2}


def _inverse_sqrt(matrix: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    values = np.maximum(values, 1e-10)
    return (vectors / np.sqrt(values)) @ vectors.T


def _batched_whiten(features: np.ndarray) -> np.ndarray:
    """:func:`_whiten` of each ``features[:, j, :]`` at once ((n, m, k) → (n, m, k))."""
    centred = features - features.mean(axis=0)
    covariance = np.einsum("njk,njl->jkl", centred, centred) / max(len(centred) - 1, 1)
    values, vectors = np.linalg.eigh(covariance)
    values = np.maximum(values, 1e-8 * np.maximum(values[:, -1:], 1e-300))
    return np.einsum("njk,jkl->njl", centred, vectors / np.sqrt(values)[:, None, :])


#: ridge penalties tried (by generalised cross-validation, per target) in the asymmetry fits
_PENALTIES = np.logspace(-3, 2, 11)
#: random Fourier features of the input in the asymmetry fits (besides the input itself)
ASYMMETRY_FEATURES = 20
#: the asymmetry block reads the data winsorized at this many standard deviations
_WINSOR = 5.0


def _gcv_residuals(inputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Residuals of every target column regressed on ``inputs`` by ridge, each target at its
    own GCV-best penalty (one eigendecomposition for all targets; centred columns)."""
    n = inputs.shape[0]
    squared, vectors = np.linalg.eigh(inputs.T @ inputs)
    keep = squared > 1e-10 * max(float(squared[-1]), 1e-300)
    squared, vectors = squared[keep], vectors[:, keep]
    projected = (vectors.T @ (inputs.T @ targets)) / np.sqrt(squared)[:, None]  # (p, m)
    outside = np.maximum(np.sum(targets ** 2, axis=0) - np.sum(projected ** 2, axis=0), 0.0)
    best_score = np.full(targets.shape[1], np.inf)
    best_shrink = np.zeros((squared.size, targets.shape[1]))
    for penalty in _PENALTIES:
        shrink = squared / (squared + penalty)
        residual_sum = np.sum(((1 - shrink)[:, None] * projected) ** 2, axis=0) + outside
        score = n * residual_sum / max(n - float(shrink.sum()), 1.0) ** 2
        better = score < best_score
        best_score = np.where(better, score, best_score)
        best_shrink[:, better] = shrink[:, None]
    coefficients = vectors @ (best_shrink / np.sqrt(squared)[:, None] * projected)
    return targets - inputs @ coefficients


def _asymmetry(c: _Context) -> dict[str, np.ndarray]:
    d, n = c.d, c.n
    # the standardized data, winsorized (not the normal scores: a rank transform of the
    # effect would break the additive-noise structure this block reads)
    values = np.clip(c.data, -_WINSOR, _WINSOR)
    values = (values - values.mean(axis=0)) / np.maximum(values.std(axis=0), 1e-12)
    totals = np.var(values, axis=0, ddof=1)
    gain = np.zeros((d, d))
    dependence = np.zeros((d, d))
    # one unit-bandwidth random-feature map for every standardized input and residual
    weights, phases = c.draws(KERNEL_FEATURES)

    def mapped(columns: np.ndarray) -> np.ndarray:
        return _batched_whiten(math.sqrt(2.0) * np.cos(columns[:, :, None] * weights + phases))

    inputs_mapped = mapped(values)  # (n, d, k)
    for i in range(d):
        design = np.column_stack([values[:, i], _fourier(values[:, [i]],
                                                         c.draws(ASYMMETRY_FEATURES))])
        design = design - design.mean(axis=0)
        residuals = _gcv_residuals(design, values)  # (n, d): every target fitted on i
        variances = np.maximum(np.var(residuals, axis=0, ddof=1), 1e-12)
        gain[i] = 0.5 * np.log(totals / variances)
        own = inputs_mapped[:, i, :]
        cross = np.einsum("nk,njl->jkl", own, mapped(residuals / np.sqrt(variances))
                          ) / max(n - 1, 1)
        dependence[i] = _log_p_chi2(n * np.sum(cross ** 2, axis=(1, 2)),
                                    own.shape[1] * KERNEL_FEATURES)
    np.fill_diagonal(gain, 0.0)
    np.fill_diagonal(dependence, 0.0)
    return {"gain_alone": gain, "anm_residual_logp": dependence}


def _boss(c: _Context) -> dict[str, np.ndarray]:
    d = c.d
    result = run_algorithm("boss", c.data, c.names, {}, None, int31_seed(c.sha256))
    graph = result.full_graph(c.names) if result.ok else None
    if graph is None:
        zero = np.zeros((d, d))
        return {"boss_adj": zero, "boss_arrow": zero.copy(), "boss_ran": np.zeros(d)}
    return {"boss_adj": graph.skeleton().astype(np.float64),
            "boss_arrow": graph.directed_adjacency().astype(np.float64),
            "boss_ran": np.ones(d)}


def _f(name: str, symmetric: bool, description: str) -> GridFeature:
    return GridFeature(name, symmetric, description)


#: the blocks, in channel order
STATISTICS_BLOCKS: tuple[StatisticsBlock, ...] = (
    StatisticsBlock("correlations", (
        _f("abs_r", True, "|Pearson r|"),
        _f("abs_partial_r", True, "|partial r| given every other column"),
        _f("abs_rank_r", True, "|Pearson r| of the normal scores"),
        _f("abs_rank_partial_r", True, "|partial r| of the normal scores given all others"),
    ), (
        _f("r2_linear", False, "linear R^2 from every other column"),
        _f("skewness", False, "sample skewness"),
        _f("excess_kurtosis", False, "sample excess kurtosis"),
    ), _correlations),
    StatisticsBlock("fisherz_screen", (
        _f("fz_logp_empty", True, "-log10 Fisher-z p at the empty set"),
        _f("fz_logp_max1", True, "-log10 of the largest Fisher-z p over |S| <= 1"),
        _f("fz_logp_max2", True, "-log10 of the largest Fisher-z p over |S| <= 2"),
        _f("rank_fz_logp_max2", True, "the same on the normal scores"),
    ), (), _screen),
    StatisticsBlock("pc_fisherz", (
        _f("pc_fz_kept", True, "PC-Fisher-z keeps the pair"),
        _f("pc_fz_level", True, "|S| of PC-Fisher-z's deletion (0 if kept)"),
        _f("pc_fz_logp", True, "-log10 p of PC-Fisher-z's deletion (0 if kept)"),
        _f("pc_fz_arrow", False, "PC-Fisher-z's CPDAG has i -> j"),
    ), (
        _f("pc_fz_degree", False, "degree in PC-Fisher-z's output / (d - 1)"),
    ), _pc_fisherz),
    StatisticsBlock("kernel", (
        _f("kernel_logp_marginal", True, "-log10 p of a random-feature dependence test"),
        _f("kernel_logp_partial", True, "-log10 p of the random-feature partial dependence "
                                        "given every other variable"),
    ), (
        _f("r2_nonlinear", False, "R^2 from every other variable's random features"),
    ), _kernel),
    StatisticsBlock("asymmetry", (
        _f("gain_alone", False, "log-likelihood gain (nats/row) of predicting j from i"),
        _f("anm_residual_logp", False, "-log10 p of dependence between i and the residual "
                                       "of j's regression on i"),
    ), (), _asymmetry),
    StatisticsBlock("boss", (
        _f("boss_adj", True, "BOSS's output has the pair adjacent"),
        _f("boss_arrow", False, "BOSS's output has i -> j"),
    ), (
        _f("boss_ran", False, "BOSS ran (its columns are valid)"),
    ), _boss, search=True),
)
STATISTICS_PAIR_FEATURES = pair_features(STATISTICS_BLOCKS)
STATISTICS_NODE_FEATURES = node_features(STATISTICS_BLOCKS)
STATISTICS_PAIR_FEATURE_NAMES = tuple(f.name for f in STATISTICS_PAIR_FEATURES)
STATISTICS_NODE_FEATURE_NAMES = tuple(f.name for f in STATISTICS_NODE_FEATURES)


def _default_column(feature: GridFeature, is_pair: bool) -> TextColumn:
    if is_pair and not feature.symmetric:
        return TextColumn(f"  {feature.name}(->,<-)", "  {:.3g},{:.3g}")
    return TextColumn(f"  {feature.name}", "  {:.3g}")


@dataclass(frozen=True)
class PairStatistics(FeatureGrid):
    """One instance's statistics: ``pairs[i, j, c]`` is pair feature c of (i, j) (diagonal
    0), ``nodes[i, c]`` node feature c of variable i, ``seconds`` each block's CPU seconds."""

    PAIR_FEATURES: ClassVar[tuple[GridFeature, ...]] = STATISTICS_PAIR_FEATURES
    NODE_FEATURES: ClassVar[tuple[GridFeature, ...]] = STATISTICS_NODE_FEATURES
    #: every feature a column headed by its name, values to three significant digits
    LAYOUT: ClassVar[GridLayout] = GridLayout("pair", "{}", "variable", "{}", _default_column)

    def table_text(self, pairs: Sequence[tuple[int, int]] | None = None) -> str:
        """A row per unordered pair (every feature, ordered ones as i→j / j→i), then a row
        per variable; the columns are the declarations' names."""
        return self.text(pairs)


def compute_pair_statistics(data: np.ndarray, names: Sequence[str], sha256: str,
                            searches: bool = True) -> PairStatistics:
    """Compute one instance's statistics (the module docstring), BLAS on one thread.
    ``searches=False`` leaves BOSS's block at 0 (its ``boss_ran`` flag tells)."""
    from threadpoolctl import threadpool_limits

    data = np.asarray(data, dtype=np.float64)
    n, d = data.shape
    if d < 2 or n < 10:
        raise HeuresisError(f"pair statistics need at least 2 variables and 10 rows, got "
                            f"{d} and {n}")
    context = _Context(data, tuple(names), sha256, instance_rng(sha256, "pair-statistics"),
                       searches)
    with threadpool_limits(limits=1, user_api="blas"):
        computed = run_blocks(STATISTICS_BLOCKS, context, "statistics",
                              skip=lambda block: block.search and not searches)
    values = dict(computed.values)
    for feature in STATISTICS_PAIR_FEATURES:  # exactly symmetric: the upper triangle, mirrored
        if feature.symmetric and feature.name in values:
            matrix = np.asarray(values[feature.name], dtype=np.float64)
            values[feature.name] = np.triu(matrix, 1) + np.triu(matrix, 1).T
    pairs = stack(values, STATISTICS_PAIR_FEATURES, (d, d))
    nodes = stack(values, STATISTICS_NODE_FEATURES, (d,))
    index = np.arange(d)
    pairs[index, index, :] = 0.0
    return PairStatistics(tuple(names), sha256, np.nan_to_num(pairs).astype(np.float32),
                          np.nan_to_num(nodes).astype(np.float32), computed.cpu_seconds)


def pair_statistics(data: np.ndarray, names: Sequence[str], sha256: str,
                    searches: bool = True) -> PairStatistics:
    """The cached statistics of an instance (computed once per instance)."""
    return cached_evidence(sha256, "pair_statistics",
                           {"version": STATISTICS_VERSION, "names": list(names),
                            "searches": bool(searches)},
                           lambda: compute_pair_statistics(data, names, sha256, searches))
