"""Sortability diagnostics: how much of the causal order a simple score of each column reveals.

Both measures follow the reference code of Reisach et al. — ``varsortability`` in
github.com/Scriddie/Varsortability (``src/varsortability.py``) and ``order_alignment``,
``var_sortability`` and ``r2_sortability`` in CausalDisco's ``CausalDisco/analytics.py``
(github.com/CausalDisco/CausalDisco):

- for every length k = 1 .. d − 1, every ordered pair (i, j) joined by a directed path of
  length k counts once (the nonzero entries of the k-th *boolean* power of the adjacency
  matrix — the reference code multiplies boolean matrices, so two paths of the same length
  between a pair count once, and paths of different lengths count separately);
- a path from i to j counts 1 when the score increases strictly along it
  (score_j − score_i > tol), 1/2 when the scores tie (|score_j − score_i| ≤ tol), 0 otherwise;
- the sortability is the counted total divided by the number of paths: 1 means the score
  sorts every path in causal order, 0.5 is chance, and ``nan`` is returned for a graph
  without edges.

Ties counting 1/2 is CausalDisco's convention (the original Varsortability script counts
them 0); with it, standardized data — where every variance is 1 up to rounding — has
varsortability 0.5, the chance level the paper claims standardization brings.
"""

from __future__ import annotations

import math

import numpy as np

from heuresis_env.errors import DataError, HeuresisError


def _check(X: np.ndarray, dag_adjacency: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    data = np.asarray(X, dtype=np.float64)
    adjacency = np.asarray(dag_adjacency) != 0
    if data.ndim != 2:
        raise DataError(f"X must be a 2-D array (rows × columns), got shape {data.shape}")
    d = data.shape[1]
    if adjacency.shape != (d, d):
        raise HeuresisError(f"dag_adjacency has shape {adjacency.shape}; X has {d} columns, "
                            f"so it must be ({d}, {d})")
    if not np.all(np.isfinite(data)):
        raise DataError("X has NaN or infinite values")
    return data, adjacency


def order_alignment(dag_adjacency: np.ndarray, scores: np.ndarray, tol: float = 0.0) -> float:
    """Fraction of directed paths along which ``scores`` increase (ties count 1/2).

    ``dag_adjacency[i, j]`` nonzero means i → j. Counting follows CausalDisco's
    ``order_alignment`` (pairs joined by a path, once per path length 1 .. d − 1; see the
    module docstring).
    """
    adjacency = np.asarray(dag_adjacency) != 0
    scores = np.asarray(scores, dtype=np.float64).reshape(1, -1)
    if adjacency.ndim != 2 or adjacency.shape != (scores.size, scores.size):
        raise HeuresisError(f"dag_adjacency has shape {adjacency.shape}; need "
                            f"({scores.size}, {scores.size}) for {scores.size} scores")
    if not (math.isfinite(tol) and tol >= 0):
        raise HeuresisError(f"tol must be a non-negative number, got {tol!r}")
    differences = scores - scores.T  # [i, j] = score_j − score_i
    increasing = differences > tol
    tied = np.abs(differences) <= tol
    edges = adjacency.astype(np.int64)
    reachable = adjacency.copy()  # pairs joined by a path of the current length
    n_paths = 0
    n_aligned = 0.0
    for _ in range(len(adjacency) - 1):
        n_paths += int(reachable.sum())
        n_aligned += int(reachable[increasing].sum()) + 0.5 * int(reachable[tied].sum())
        reachable = (reachable.astype(np.int64) @ edges) > 0
        if not reachable.any():
            break
    return float(n_aligned / n_paths) if n_paths else float("nan")


def varsortability(X: np.ndarray, dag_adjacency: np.ndarray, tol: float = 1e-9) -> float:
    """Varsortability (Reisach, Seiler & Weichwald 2021, "Beware of the simulated DAG!").

    The fraction of directed paths along which the marginal variance strictly increases,
    ties (|Δvar| ≤ ``tol``) counting 1/2. Near 1 for raw linear-Gaussian data with ER graphs
    and unit-scale weights; 0.5 after standardization. ``nan`` for a graph without edges.
    """
    data, adjacency = _check(X, dag_adjacency)
    return order_alignment(adjacency, np.var(data, axis=0), tol=tol)


def r2_coefficients(X: np.ndarray) -> np.ndarray:
    """R² of regressing each column on all the others (with intercept).

    Computed as 1 − 1/diag(C⁻¹) from the correlation matrix C, as in CausalDisco's
    ``r2coeff``; when C is singular, by least squares column by column.
    """
    data = np.asarray(X, dtype=np.float64)
    d = data.shape[1]
    if d < 2:
        return np.zeros(d)
    with np.errstate(all="ignore"):
        correlation = np.corrcoef(data, rowvar=False)
    if np.all(np.isfinite(correlation)):
        try:
            precision = np.linalg.inv(correlation)
            r2 = 1.0 - 1.0 / np.diag(precision)
            if np.all(np.isfinite(r2)) and np.all(np.diag(precision) > 0):
                return r2
        except np.linalg.LinAlgError:
            pass
    centered = data - data.mean(axis=0)
    r2 = np.zeros(d)
    for k in range(d):
        others = np.delete(centered, k, axis=1)
        target = centered[:, k]
        total = float(target @ target)
        if total == 0:
            continue
        coefficients, *_ = np.linalg.lstsq(others, target, rcond=None)
        residual = target - others @ coefficients
        r2[k] = 1.0 - float(residual @ residual) / total
    return r2


def r2_sortability(X: np.ndarray, dag_adjacency: np.ndarray, tol: float = 0.0) -> float:
    """R²-sortability (Reisach, Tami, Seiler, Weichwald & Weichwald 2023, "A scale-invariant
    sorting criterion to find a causal order in additive noise models").

    As :func:`varsortability` with each column's R² on all other columns as the score; it
    does not change when columns are rescaled, so standardization does not remove it.
    """
    data, adjacency = _check(X, dag_adjacency)
    return order_alignment(adjacency, r2_coefficients(data), tol=tol)
