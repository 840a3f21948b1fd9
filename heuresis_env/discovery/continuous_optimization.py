"""The continuous-optimization reference algorithms: NOTEARS linear and NOTEARS-MLP
(:mod:`heuresis_env.discovery.notears`) as runners of :mod:`heuresis_env.discovery.algorithms`."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from heuresis_env.discovery.notears import notears_linear, notears_mlp
from heuresis_env.graphs import Graph


def _notears_extras(result: Any, names: tuple[str, ...]) -> dict[str, Any]:
    if not result.converged:
        warnings.warn(
            f"NOTEARS stopped before reaching h ≤ h_tol (h = {result.h:.3g} after "
            f"{result.n_dual_steps} dual steps, rho = {result.rho:.3g}); the weights were "
            "thresholded and pruned to a DAG", RuntimeWarning, stacklevel=2)
    edges = [{"from": names[i], "to": names[j], "weight": float(result.weights[i, j])}
             for i, j in zip(*np.nonzero(result.weights), strict=True)]
    return {"edges": edges, "h": result.h, "converged": result.converged,
            "n_dual_steps": result.n_dual_steps,
            "edges_removed_for_acyclicity": result.edges_removed_for_acyclicity}


def run_notears(data: np.ndarray, names: tuple[str, ...], params: dict[str, Any],
                seed: int) -> tuple[Graph, dict[str, Any]]:
    """NOTEARS linear with the least-squares loss. ``extras["converged"]`` says whether
    h ≤ h_tol was reached; if not, the thresholded and pruned DAG is still returned (it is
    the reference's output) with a warning in ``extras["warnings"]``."""

    result = notears_linear(data, lambda1=params["lambda1"], loss_type="l2",
                            max_iter=params["max_iter"], h_tol=params["h_tol"],
                            rho_max=params["rho_max"], w_threshold=params["w_threshold"])
    return Graph.from_dag(result.adjacency, names), _notears_extras(result, names)


def run_notears_mlp(data: np.ndarray, names: tuple[str, ...], params: dict[str, Any],
                    seed: int) -> tuple[Graph, dict[str, Any]]:
    """NOTEARS-MLP seeded from ``seed`` and limited to one thread while it runs (reproducible
    sums, no oversubscription of shared cores). ``engine="torch"`` differentiates with torch
    autograd; the default ``"numpy"`` uses hand-written gradients (BLAS products and compiled
    loops) checked against autograd to 1e-12 and runs about 2.2× faster
    (``benchmarks/bench_notears.py``)."""

    result = notears_mlp(data, hidden=params["hidden"], lambda1=params["lambda1"],
                         lambda2=params["lambda2"], max_iter=params["max_iter"],
                         h_tol=params["h_tol"], rho_max=params["rho_max"],
                         w_threshold=params["w_threshold"], seed=seed,
                         max_inner_iter=params["max_inner_iter"], num_threads=1,
                         engine=params["engine"])
    return Graph.from_dag(result.adjacency, names), _notears_extras(result, names)
