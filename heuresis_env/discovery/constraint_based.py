"""The constraint-based reference algorithms: our PC with its deletion log (Fisher-z or KCI)
and causal-learn's FCI calling our CI tests (runners of :mod:`heuresis_env.discovery.algorithms`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from heuresis_env.discovery.algorithms import Runner
from heuresis_env.discovery.causallearn_bridge import (
    CAUSAL_LEARN_ADAPTER,
    graph_from_causallearn,
    register_causallearn_adapter,
    silenced_stdout,
)
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.pc import pc
from heuresis_env.graphs import Graph


def _pc_runner(ci_test: str) -> Runner:
    def run(data: np.ndarray, names: tuple[str, ...], params: dict[str, Any],
            seed: int) -> tuple[Graph, dict[str, Any]]:
        result = pc(data, names=names, ci_test=ci_test, alpha=params["alpha"],
                    variant=params["variant"], max_depth=params["max_depth"],
                    orientation=params["orientation"])
        return result.graph, {
            "deletion_log": [d.to_dict() for d in result.deletion_log],
            "n_tests": result.n_tests,
            "ci_test": result.ci_test,
            "orientation": {"rule": result.orientation,
                            "triples": [t.to_dict() for t in result.triples],
                            "n_tests": result.n_orientation_tests},
        }

    return run


run_pc_fisherz = _pc_runner("fisherz")
#: exact KCI up to kci-auto's threshold (2,000 rows: the same tests and cache entries as
#: before), RCoT above it, where exact KCI does not fit; extras["ci_test"] says which ran
run_pc_kci = _pc_runner("kci-auto")


def run_fci(data: np.ndarray, names: tuple[str, ...], params: dict[str, Any],
            seed: int) -> tuple[Graph, dict[str, Any]]:
    """causal-learn FCI with a Heuresis CI test (Fisher-z or KCI); returns a PAG."""
    from causallearn.search.ConstraintBased.FCI import fci

    register_causallearn_adapter()
    tester = make_ci_test(params["test"], data)
    with silenced_stdout():
        general_graph, _ = fci(data, CAUSAL_LEARN_ADAPTER, float(params["alpha"]),
                               depth=int(params["depth"]), verbose=False, show_progress=False,
                               node_names=list(names), ci_test=tester)
    return graph_from_causallearn(general_graph, names), {"n_tests": tester.n_cached}
