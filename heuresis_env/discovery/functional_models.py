"""The reference algorithms that orient edges by a functional causal model: DirectLiNGAM
(linear, non-Gaussian noise) and ANM (additive noise, HSIC) on PC-KCI's skeleton (runners of
:mod:`heuresis_env.discovery.algorithms`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from heuresis_env.discovery.algorithms import require_nonsingular
from heuresis_env.discovery.orientation import orient_skeleton_pairwise
from heuresis_env.discovery.pc import pc
from heuresis_env.graphs import Graph, pdag_to_graph


def run_direct_lingam(data: np.ndarray, names: tuple[str, ...], params: dict[str, Any],
                      seed: int) -> tuple[Graph, dict[str, Any]]:
    """``lingam.DirectLiNGAM``; edge i → j when |B[j, i]| > threshold.

    lingam's ``adjacency_matrix_`` B has B[j, i] ≠ 0 for i → j (row = effect). Its
    coefficients are already pruned by adaptive lasso, so the default threshold 0 keeps
    every nonzero coefficient.
    """
    require_nonsingular(data, names, "DirectLiNGAM")
    import lingam

    model = lingam.DirectLiNGAM(random_state=seed, measure=params["measure"])
    model.fit(data)
    weights = np.asarray(model.adjacency_matrix_, dtype=np.float64).T  # [i, j] for i → j
    adjacency = np.abs(weights) > params["threshold"]
    np.fill_diagonal(adjacency, False)
    edges = [{"from": names[i], "to": names[j], "weight": float(weights[i, j])}
             for i, j in zip(*np.nonzero(adjacency), strict=True)]
    return Graph.from_dag(adjacency, names), {
        "causal_order": [names[i] for i in model.causal_order_],
        "edges": edges,
    }


def run_anm(data: np.ndarray, names: tuple[str, ...], params: dict[str, Any],
            seed: int) -> tuple[Graph, dict[str, Any]]:
    """PC-KCI's skeleton, each edge oriented by a bivariate additive-noise model with HSIC.

    See :func:`heuresis_env.discovery.orientation.orient_skeleton_pairwise` for the decision rule and
    how directed cycles are broken; PC's own v-structure orientations are not used.
    """

    # only the skeleton is used: the single-set rule asks for no CI test beyond the skeleton's
    skeleton_run = pc(data, names=names, ci_test="kci", alpha=params["alpha"],
                      variant=params["variant"], orientation="single")
    pdag, evidence = orient_skeleton_pairwise(
        data, skeleton_run.skeleton.skeleton(), np.random.default_rng(seed),
        regressor=params["regressor"], alpha=params["hsic_alpha"], margin=params["margin"],
        max_rows=params["max_rows"],
    )
    orientation = [
        {"x": names[e.x], "y": names[e.y], "p_value_x_to_y": e.p_value_x_to_y,
         "p_value_y_to_x": e.p_value_y_to_x, "direction": e.direction,
         "undirected_to_break_cycle": e.undirected_to_break_cycle}
        for e in evidence
    ]
    return pdag_to_graph(pdag, names), {"orientation": orientation,
                                        "n_tests": skeleton_run.n_tests}
