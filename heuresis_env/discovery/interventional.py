"""The interventional reference algorithms: they read the rows of several regimes — the
observational table and each experiment's rows — knowing which columns each experiment set
(:class:`~heuresis_env.discovery.algorithms.Interventions`). Runners of
:mod:`heuresis_env.discovery.algorithms`:

- ``gies``: greedy interventional equivalence search (Hauser & Bühlmann 2012) as the ``gies``
  package implements it (Gamella & Kolotuhina), with the Gaussian BIC score; it returns the
  interventional essential graph, where an experiment orients the edges it identifies;
- ``jci-pc``: joint causal inference (Mooij, Magliacane & Claassen 2020) with PC: causal-learn's
  PC over the rows and one 0/1 context variable per experiment, the context variables
  exogenous (background knowledge forbids every edge into them), so an edge from a context
  variable into a system variable, and Meek's rules after it, orient the system's edges.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from heuresis_env.discovery.algorithms import AlgorithmFailure, Interventions, require_nonsingular
from heuresis_env.discovery.causallearn_bridge import (
    CAUSAL_LEARN_ADAPTER,
    graph_from_causallearn,
    register_causallearn_adapter,
    silenced_stdout,
)
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.graphs import EdgeMark, Graph


def _regime_blocks(data: np.ndarray, interventions: Interventions
                   ) -> tuple[list[np.ndarray], list[list[int]]]:
    """The rows of each regime that has rows, and its targets (GIES's ``data`` and ``I``)."""
    blocks, targets = [], []
    for regime, regime_targets in enumerate(interventions.targets):
        rows = data[interventions.labels == regime]
        if len(rows):
            blocks.append(np.ascontiguousarray(rows))
            targets.append(sorted(regime_targets))
    return blocks, targets


def pdag_graph(adjacency: np.ndarray, names: tuple[str, ...]) -> Graph:
    """A graph from a PDAG adjacency (``[i, j]`` = 1 for i → j; both set for i — j)."""
    adjacency = np.asarray(adjacency) != 0
    d = len(names)
    marks = np.zeros((d, d), dtype=np.int8)
    for i in range(d):
        for j in range(i + 1, d):
            forward, backward = adjacency[i, j], adjacency[j, i]
            if forward and backward:
                marks[i, j] = marks[j, i] = EdgeMark.TAIL
            elif forward:
                marks[i, j], marks[j, i] = EdgeMark.ARROW, EdgeMark.TAIL
            elif backward:
                marks[j, i], marks[i, j] = EdgeMark.ARROW, EdgeMark.TAIL
    return Graph(names, marks)


def run_gies(data: np.ndarray, names: tuple[str, ...], params: dict[str, Any], seed: int,
             interventions: Interventions) -> tuple[Graph, dict[str, Any]]:
    """GIES with the Gaussian BIC score, ``lambda_value`` × log(n) per parameter as GES's
    causal-learn-compatible penalty (0.5: the standard BIC)."""
    import gies
    from gies.scores.gauss_int_l0_pen import GaussIntL0Pen

    require_nonsingular(data, names, "GIES")
    blocks, targets = _regime_blocks(data, interventions)
    n = sum(len(b) for b in blocks)
    score = GaussIntL0Pen(blocks, targets, lmbda=float(params["lambda_value"]) * math.log(n))
    with silenced_stdout():
        adjacency, total = gies.fit(score, A0=None, phases=["forward", "backward", "turning"],
                                    iterate=True)
    return pdag_graph(adjacency, names), {
        "score": float(total), "regimes": len(blocks),
        "targets": [[names[t] for t in ts] for ts in targets]}


def run_jci_pc(data: np.ndarray, names: tuple[str, ...], params: dict[str, Any], seed: int,
               interventions: Interventions) -> tuple[Graph, dict[str, Any]]:
    """PC (causal-learn) over the rows and one context indicator per experiment, every edge
    into a context variable forbidden; the graph returned is over the system variables."""
    from causallearn.search.ConstraintBased.PC import pc as causallearn_pc
    from causallearn.utils.PCUtils.BackgroundKnowledge import BackgroundKnowledge

    experiments = [k for k in range(1, len(interventions.targets))
                   if np.any(interventions.labels == k)]
    context = np.column_stack([(interventions.labels == k).astype(np.float64)
                               for k in experiments]) if experiments else np.empty(
        (len(data), 0))
    augmented = np.hstack([data, context])
    context_names = [f"C{k}" for k in experiments]
    all_names = [*names, *context_names]
    register_causallearn_adapter()
    tester = make_ci_test(params["test"], augmented, disk_cache=False)
    with silenced_stdout():
        # causal-learn's nodes are named X1..Xm in column order while the knowledge is built
        from causallearn.graph.GraphNode import GraphNode

        nodes = [GraphNode(f"X{k + 1}") for k in range(len(all_names))]
        knowledge = BackgroundKnowledge()
        d = len(names)
        for c in range(d, len(all_names)):
            for other in range(len(all_names)):
                if other != c:
                    knowledge.add_forbidden_by_node(nodes[other], nodes[c])
        result = causallearn_pc(augmented, float(params["alpha"]), CAUSAL_LEARN_ADAPTER,
                                stable=True, background_knowledge=knowledge, verbose=False,
                                show_progress=False, ci_test=tester)
    if result.G.graph.shape[0] != len(all_names):
        raise AlgorithmFailure("causal-learn's PC returned a graph of the wrong size")
    full = graph_from_causallearn(_renamed(result.G, all_names), tuple(all_names))
    marks = full.marks[:d, :d].copy()
    context_edges = [f"{all_names[c]} --> {names[j]}" for c in range(d, len(all_names))
                     for j in range(d) if full.marks[c, j] != EdgeMark.NONE]
    return Graph(names, marks), {"context_edges": context_edges, "n_tests": tester.n_computed,
                                 "context_variables": context_names}


def _renamed(general_graph: Any, names: list[str]) -> Any:
    """causal-learn's graph with its nodes renamed to ``names`` (in column order)."""
    for node, name in zip(general_graph.get_nodes(), names, strict=True):
        node.set_name(name)
    return general_graph
