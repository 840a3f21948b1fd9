"""The local screen: a nonlinear conditional-independence test of every pair given every small
conditioning set drawn from the pair's neighbourhood, and the colliders it implies.

The pair statistics (:mod:`.statistics`) test a pair nonlinearly only marginally and given
*every* other variable at once; PC-KCI, whose evidence makes the first amortized model's
skeleton the stronger one on nonlinear families, tests it given *small* sets. The local screen
is that evidence at a cost a training stream can afford, in the spirit of SEA (Wu et al.
2024/25: classical estimates on many small variable subsets, aggregated by an axial
transformer): for each pair (i, j),

1. its **candidates**: the ``candidates`` other variables most dependent on both (ranked by the
   smaller of the two marginal statistics; at d ≤ ``candidates`` + 2 every other variable);
2. the random-feature test of i and j given S, for S = ∅ and every subset of the candidates
   of at most ``max_size`` variables (d = 10: 93 sets per pair): a *tested* variable is its
   normal score and :data:`TESTED_FEATURES` random Fourier features of it, whitened; a
   *conditioning* variable its normal score and :data:`CONDITIONING_FEATURES` features (the
   tested draws first, so the tested features lie in the span regressed out; the draws shared
   by all variables, so permuting variables permutes the features); the residual covariance
   of the two tested blocks given S's conditioning blocks comes from the features'
   covariances, and Bartlett's χ² of the squared canonical correlations (k_i·k_j degrees of
   freedom) is the statistic — an approximate KCI (Strobl et al.'s RCIT in closed form; it is
   loose where a relation is nearly deterministic, a finite basis leaving part of
   E[φ(x) | S] unexplained);
3. per pair, −log10 of the **largest p** over the sets of size ≤ 1, ≤ 2 and ≤ 3 (PC keeps a
   pair only when every such test rejects), and the **best separating set** (the set of the
   largest p);
4. **collider votes**: for every pair (i, j) the screen separates (largest p ≥ α) and every k
   outside its separating set that the screen keeps adjacent to both i and j, a vote for
   i → k and j → k (PC's orientation rule for an unshielded triple); cell (i, k) holds the
   votes for i → k over d − 2.

It reads at most :data:`LOCAL_SCREEN_ROWS` rows (the first ones; rows of the benchmark's
generator are exchangeable) at float16 precision — exactly what a stream shard stores, so a
model trained on shards sees at inference what it saw in training. Cost (one core, the sets
batched per size): about 0.2 s at d = 10 and 3 s at d = 50 (``benchmarks/bench_discover.py``
with a model that reads it; docs/amortized.md).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from heuresis_env.discovery.regression import normal_scores
from heuresis_env.errors import DataError
from heuresis_env.evidence.statistics import _fourier, _log_p_chi2, _whiten

__all__ = ["LOCAL_SCREEN_FEATURES", "LOCAL_SCREEN_ORDERED", "LOCAL_SCREEN_ROWS",
           "LOCAL_SCREEN_VERSION", "local_screen", "screen_rows"]

#: bump when the computation changes (a model records it; stored screens carry it)
LOCAL_SCREEN_VERSION = 1
#: the most rows the screen reads (= the rows a stream shard stores)
LOCAL_SCREEN_ROWS = 512
#: the screen's channels, in order
LOCAL_SCREEN_FEATURES = ("local_logp_max1", "local_logp_max2", "local_logp_max3",
                         "local_collider")
#: the channels about i → j (the others are symmetric)
LOCAL_SCREEN_ORDERED = ("local_collider",)
#: random Fourier features of a tested variable (beside its normal score)
TESTED_FEATURES = 2
#: random Fourier features of a conditioning variable (beside its normal score; the tested
#: ones' draws first): a richer basis for what is regressed out, as in Strobl et al.'s RCIT
CONDITIONING_FEATURES = 10
ALPHA = 0.05
_RIDGE = 1e-6
_CHUNK = 256  # pairs per batch


def screen_rows(data: np.ndarray) -> np.ndarray:
    """The rows the screen reads: the first ``LOCAL_SCREEN_ROWS``, standardized per column,
    at float16 precision (a shard's stored rows)."""
    data = np.asarray(data, dtype=np.float64)[:LOCAL_SCREEN_ROWS]
    centred = data - data.mean(axis=0)
    spread = centred.std(axis=0)
    spread[spread == 0] = 1.0
    return (centred / spread).astype(np.float16).astype(np.float64)


def _blocks(rows: np.ndarray, draws: tuple[np.ndarray, np.ndarray]
            ) -> tuple[np.ndarray, np.ndarray]:
    """(r, d, 1 + f) whitened [normal score, f random Fourier features of it] per variable
    (the f ``draws`` shared by all variables), zero-padded where a variable has fewer (a
    discrete one; a constant one has none), and each variable's real count."""
    r, d = rows.shape
    count = len(draws[0])
    varying = np.ptp(rows, axis=0) > 0
    scores = np.zeros_like(rows)
    scores[:, varying] = normal_scores(rows[:, varying])
    blocks = np.zeros((r, d, 1 + count))
    counts = np.zeros(d, dtype=np.int64)
    for v in np.flatnonzero(varying):
        features = _whiten(np.column_stack([scores[:, v], _fourier(scores[:, [v]], draws)]))
        blocks[:, v, :features.shape[1]] = features
        counts[v] = features.shape[1]
    return blocks, counts


def _inverse_sqrt(matrices: np.ndarray) -> np.ndarray:
    values, vectors = np.linalg.eigh((matrices + np.swapaxes(matrices, -1, -2)) / 2)
    scale = np.where(values > 1e-8, 1.0 / np.sqrt(np.maximum(values, 1e-8)), 0.0)
    return (vectors * scale[..., None, :]) @ np.swapaxes(vectors, -1, -2)


@dataclass(frozen=True)
class _Covariances:
    """The features' covariances: tested–tested (d, k, d, k), tested–conditioning
    (d, k, d, K) and conditioning–conditioning (d, K, d, K), and the rows."""

    tt: np.ndarray
    tc: np.ndarray
    cc: np.ndarray
    rows: int

    @classmethod
    def of(cls, tested: np.ndarray, conditioning: np.ndarray) -> _Covariances:
        r = tested.shape[0]
        return cls(np.einsum("rak,rbl->akbl", tested, tested) / (r - 1),
                   np.einsum("rak,rbl->akbl", tested, conditioning) / (r - 1),
                   np.einsum("rak,rbl->akbl", conditioning, conditioning) / (r - 1), r)


def _gather(cov: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """(b, |left|·k, |right|·l) blocks of a (d, k, d, l) covariance for index rows (b, ·)."""
    block = cov[left[:, :, None], :, right[:, None, :], :]  # (b, L, R, k, l)
    b, lc, rc, k, m = block.shape
    return block.transpose(0, 1, 3, 2, 4).reshape(b, lc * k, rc * m)


def _statistics(cov: _Covariances, pairs: np.ndarray, sets: np.ndarray) -> np.ndarray:
    """Bartlett's statistic of each pair (P, 2) given each of its sets (P, m, s): the squared
    canonical correlations of the pair's tested features after regressing out the set's
    conditioning features."""
    k = cov.tt.shape[1]
    p_count, m, s = sets.shape
    a = np.repeat(pairs[:, None, :], m, axis=1).reshape(p_count * m, 2)
    flat = sets.reshape(p_count * m, s)
    aa = _gather(cov.tt, a, a)
    if s:
        ac = _gather(cov.tc, a, flat)
        cc = _gather(cov.cc, flat, flat) + _RIDGE * np.eye(s * cov.cc.shape[1])
        aa = aa - ac @ np.linalg.solve(cc, np.swapaxes(ac, 1, 2))
    left = _inverse_sqrt(aa[:, :k, :k])
    right = _inverse_sqrt(aa[:, k:, k:])
    canonical = left @ aa[:, :k, k:] @ right
    dof_rows = max(cov.rows - 1 - s * cov.cc.shape[1] - (2 * k + 1) / 2, 10.0)
    return (dof_rows * np.sum(canonical ** 2, axis=(1, 2))).reshape(p_count, m)


def local_screen(data: np.ndarray, candidates: int = 8, max_size: int = 3, seed: int = 0
                 ) -> np.ndarray:
    """(d, d, 4) the screen's channels (:data:`LOCAL_SCREEN_FEATURES`) of a table (its first
    :data:`LOCAL_SCREEN_ROWS` rows, see :func:`screen_rows`)."""
    rows = screen_rows(data)
    r, d = rows.shape
    if d < 2:
        raise DataError(f"the local screen needs at least 2 variables, got {d}")
    if r < 20:
        raise DataError(f"the local screen needs at least 20 rows, got {r}")
    rng = np.random.default_rng(seed)
    draws = (rng.normal(size=CONDITIONING_FEATURES),
             rng.uniform(0, 2 * np.pi, size=CONDITIONING_FEATURES))
    tested, counts = _blocks(rows, (draws[0][:TESTED_FEATURES], draws[1][:TESTED_FEATURES]))
    conditioning, _ = _blocks(rows, draws)  # the tested features' span and more
    cov = _Covariances.of(tested, conditioning)
    dof = np.outer(counts, counts).astype(np.float64)
    pairs = np.array(list(itertools.combinations(range(d), 2)), dtype=np.int64)
    empty = _statistics(cov, pairs, np.zeros((len(pairs), 1, 0), dtype=np.int64))[:, 0]
    marginal = np.zeros((d, d))
    marginal[pairs[:, 0], pairs[:, 1]] = empty
    marginal += marginal.T
    c = min(candidates, d - 2)
    # log p per pair: best (largest p = smallest log p) per level, and the separating set
    log_p = _log_p_chi2(empty, np.maximum(dof[pairs[:, 0], pairs[:, 1]], 1.0))
    best = np.stack([log_p] * 3, axis=1)  # levels ≤ 1, ≤ 2, ≤ 3
    separating = np.full((len(pairs), max(max_size, 1)), -1, dtype=np.int64)
    best_all = log_p.copy()
    if c > 0:
        # candidates: the other variables ranked by min(dependence on i, dependence on j)
        ranking = np.minimum(marginal[pairs[:, 0]], marginal[pairs[:, 1]])
        ranking[np.arange(len(pairs)), pairs[:, 0]] = -np.inf
        ranking[np.arange(len(pairs)), pairs[:, 1]] = -np.inf
        chosen = np.argsort(-ranking, axis=1, kind="stable")[:, :c]
        for size in range(1, min(max_size, c) + 1):
            combos = np.array(list(itertools.combinations(range(c), size)), dtype=np.int64)
            for lo in range(0, len(pairs), _CHUNK):
                part = slice(lo, lo + _CHUNK)
                sets = chosen[part][:, combos]  # (P, m, size)
                stat = _statistics(cov, pairs[part], sets)
                pair_dof = np.maximum(dof[pairs[part, 0], pairs[part, 1]], 1.0)
                level = _log_p_chi2(stat, pair_dof[:, None])
                arg = np.argmin(level, axis=1)
                lowest = level[np.arange(len(level)), arg]
                for depth in range(size - 1, 3):
                    best[part, depth] = np.minimum(best[part, depth], lowest)
                better = lowest < best_all[part]
                rows_better = np.flatnonzero(better) + lo
                best_all[part] = np.where(better, lowest, best_all[part])
                separating[rows_better] = -1
                separating[rows_better, :size] = sets[better, arg[better]]
    out = np.zeros((d, d, len(LOCAL_SCREEN_FEATURES)))
    for depth in range(3):
        out[pairs[:, 0], pairs[:, 1], depth] = best[:, depth]
        out[pairs[:, 1], pairs[:, 0], depth] = best[:, depth]
    # collider votes from the deepest level's decisions
    threshold = -math.log10(ALPHA)
    adjacent = np.zeros((d, d), dtype=bool)
    adjacent[pairs[:, 0], pairs[:, 1]] = best_all >= threshold
    adjacent |= adjacent.T
    votes = np.zeros((d, d))
    for (i, j), sep, kept in zip(pairs, separating, best_all >= threshold):
        if kept:
            continue
        for k in np.flatnonzero(adjacent[i] & adjacent[j]):
            if k not in sep:
                votes[i, k] += 1
                votes[j, k] += 1
    out[..., 3] = votes / max(d - 2, 1)
    return out.astype(np.float32)
