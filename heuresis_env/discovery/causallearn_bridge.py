"""causal-learn seen from Heuresis: its graphs converted to ours, our CI tests offered to its
constraint searches, and its habits contained (prints swallowed, its global ``random``
seeded for a run and restored)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from heuresis_env.discovery.algorithms import AlgorithmFailure
from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import EdgeMark, Graph

_CAUSAL_LEARN_MARKS = {-1: EdgeMark.TAIL, 0: EdgeMark.NONE, 1: EdgeMark.ARROW, 2: EdgeMark.CIRCLE}


def graph_from_causallearn(general_graph: Any, names: Sequence[str]) -> Graph:
    """Convert a causal-learn ``GeneralGraph`` to a :class:`Graph` over ``names``.

    causal-learn stores ``graph[i, j]`` = the endpoint at *i's* end of the edge i–j (TAIL −1,
    ARROW 1, CIRCLE 2); ours stores the mark at *j's* end in ``marks[i, j]``, so the matrix
    is transposed. Nodes are matched by name. Doubled edges (causal-learn's TAIL_AND_ARROW /
    ARROW_AND_ARROW codes) have no single-edge form and fail the conversion.
    """
    endpoint_matrix = np.asarray(general_graph.graph)
    node_names = [str(n) for n in general_graph.get_node_names()]
    if sorted(node_names) != sorted(names):
        raise AlgorithmFailure(f"graph nodes {node_names} do not match variables {list(names)}")
    unknown = set(np.unique(endpoint_matrix).tolist()) - set(_CAUSAL_LEARN_MARKS)
    if unknown:
        raise AlgorithmFailure(
            f"causal-learn graph has endpoint codes {sorted(unknown)} (doubled edges) "
            "that a single-edge graph cannot hold"
        )
    order = [node_names.index(n) for n in names]
    ours = endpoint_matrix[np.ix_(order, order)].T
    marks = np.zeros(ours.shape, dtype=np.int8)
    for code, mark in _CAUSAL_LEARN_MARKS.items():
        marks[ours == code] = mark
    return Graph(names, marks)


@contextlib.contextmanager
def silenced_stdout() -> Iterator[None]:
    """Swallow what a library prints (causal-learn's FCI prints every "visible" edge even
    with ``verbose=False``), so tool output and CLI JSON stay clean."""
    with contextlib.redirect_stdout(io.StringIO()):
        yield


@contextlib.contextmanager
def seeded_python_random(seed: int) -> Iterator[None]:
    """Seed Python's ``random`` module for the block and restore its state afterwards.

    causal-learn's GRaSP and BOSS shuffle with the global ``random`` module; this makes
    their runs reproducible without leaving the global state changed.
    """
    import random

    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


#: the name under which :func:`register_causallearn_adapter` registers our CI tests
CAUSAL_LEARN_ADAPTER = "heuresis-citest"


def register_causallearn_adapter() -> None:
    """Let causal-learn's constraint searches call a Heuresis :class:`CITest`.

    Registered with causal-learn's ``register_ci_test`` under ``"heuresis-citest"``; the
    search passes ``ci_test=<CITest>`` through to the adapter. Our Fisher-z equals
    causal-learn's, and our KCI is the fast, disk-cached equivalent of causal-learn's.
    """
    from causallearn.utils import cit

    if CAUSAL_LEARN_ADAPTER in cit._custom_ci_tests:
        return

    class HeuresisCITAdapter(cit.CIT_Base):
        def __init__(self, data: np.ndarray, ci_test: Any = None, **kwargs: Any):
            super().__init__(data, **kwargs)
            if ci_test is None:
                raise HeuresisError("the heuresis-citest adapter needs ci_test=<CITest>")
            self.ci_test = ci_test
            self.method = ci_test.name

        def __call__(self, X: Any, Y: Any, condition_set: Any = None) -> float:  # noqa: N803
            conditioning = [] if condition_set is None else [int(v) for v in condition_set]
            return self.ci_test.test(int(X), int(Y), conditioning).p_value

        def __deepcopy__(self, memo: dict) -> HeuresisCITAdapter:
            # causal-learn's PC deep-copies its graph, test included: share the test (and
            # its cache, which holds a lock) instead
            return self

    cit.register_ci_test(CAUSAL_LEARN_ADAPTER, HeuresisCITAdapter)
