"""What a tool sees during an episode: the data, the working graph, the graph memory (and in a
question episode the public question and the answer given).

The hidden record (true DAG, SCM, deletion labels) is deliberately absent: tools can only
reach what is computable from the data, so no tool can leak the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from heuresis_env.discovery.citests import available_ci_tests, make_ci_test
from heuresis_env.discovery.citests.base import CI_TESTS, ci_test_class
from heuresis_env.env.toolbox.regimes import Regimes, constant_columns, regime_data
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import Edge, EdgeMark, Graph
from heuresis_env.seeding import MAX_INT31, instance_seed, int31_seed

if TYPE_CHECKING:
    from heuresis_env.discovery.citests.base import CIResult, CITest
    from heuresis_env.evidence import EvidenceProvider
    from heuresis_env.questions import PublicQuestion

TARGETS = ("none", "cpdag", "dag")

#: CI "tests" that answer from the true graph: never offered to an agent
ORACLE_CI_TESTS = ("dsep",)


def agent_ci_tests() -> list[str]:
    """The CI-test methods the ``ci_test`` tool offers (every registered test but oracles)."""

    return [name for name in available_ci_tests() if name not in ORACLE_CI_TESTS]


class EpisodeState:
    """The mutable context of one episode that tools read and edit.

    ``call_number`` is the current step (1 for the first action); random tools draw from
    :meth:`rng`, a generator derived from the instance seed and the call number, so replaying
    the same actions on the same instance reproduces every output.
    """

    def __init__(self, data: np.ndarray, names: Sequence[str], sha256: str, *,
                 guided: bool = False, target: str = "none", toolbox: str = "full",
                 evidence: EvidenceProvider | None = None,
                 working_graph: Graph | None = None, question: PublicQuestion | None = None,
                 regimes: Regimes | None = None):
        if target not in TARGETS:
            raise UnknownNameError("target", target, TARGETS)
        data = np.asarray(data, dtype=np.float64)
        if data.flags.writeable:  # an instance's X is already read-only; anything else is copied
            data = data.copy()
            data.flags.writeable = False
        self.data = data
        self.names: tuple[str, ...] = tuple(names)
        if data.ndim != 2 or data.shape[1] != len(self.names):
            raise HeuresisError(f"data of shape {data.shape} does not match "
                                f"{len(self.names)} names")
        self.n, self.d = data.shape
        self.column_index = {name: i for i, name in enumerate(self.names)}
        self.sha256 = sha256
        self.seed = instance_seed(sha256)
        self.guided = bool(guided)
        self.target = target
        self.toolbox = toolbox
        self.evidence = evidence
        self.working_graph = working_graph.copy() if working_graph is not None \
            else Graph(self.names)
        if self.working_graph.names != self.names:
            raise HeuresisError("the starting graph's variables differ from the data's")
        self.memory: dict[str, Graph] = {}
        self.call_number = 0
        self._ci_tests: dict[str, CITest] = {}
        self.sandbox: Any = None  # created on the first run_code call
        # question episodes: the public question, and the answer (by column position) once given
        self.question = question
        self.answer: Any = None
        # episodes with an experiment budget: the observational rows and each experiment's
        self.regimes = regimes
        self._regime_tests: dict[tuple, CITest] = {}

    # ---- names ----------------------------------------------------------------------------

    def require_evidence(self) -> EvidenceProvider:
        """The episode's evidence provider (PC-KCI's start, the pair and repair tables)."""
        if self.evidence is None:
            raise HeuresisError("this episode state has no evidence provider (build it with "
                                "evidence=EvidenceProvider(...))")
        return self.evidence

    def require_regimes(self) -> Regimes:
        """The episode's regimes (an error in an episode without an experiment budget)."""
        if self.regimes is None:
            raise HeuresisError("this episode has no experiment budget; experiments need the "
                                "-int ids or experiments=ROWS")
        return self.regimes

    def variable(self, name: str) -> int:
        """Column index of a variable name; unknown names list the known ones."""
        try:
            return self.column_index[name]
        except (KeyError, TypeError):
            raise UnknownNameError("variable", name, self.names) from None

    def variables(self, names: Sequence[str]) -> list[int]:
        indices = [self.variable(n) for n in names]
        if len(set(indices)) != len(indices):
            repeated = sorted({n for n in names if list(names).count(n) > 1})
            raise HeuresisError(f"variables listed more than once: {repeated}")
        return indices

    # ---- randomness -----------------------------------------------------------------------
    def rng(self) -> np.random.Generator:
        """The generator of the current call: instance seed + call number."""
        return np.random.default_rng(
            np.random.SeedSequence(self.seed, spawn_key=(int(self.call_number),)))

    def call_seed(self) -> int:
        """An integer seed for the current call (for libraries that take integers)."""
        return int(self.rng().integers(0, MAX_INT31))

    # ---- shared computations ---------------------------------------------------------------
    def ci_test(self, method: str) -> CITest:
        """The episode's CI test object for ``method`` (its cache persists across calls).

        Randomized tests (``CITest.seeded``) are seeded per instance, so repeating a test
        returns the same answer.
        """
        tester = self._ci_tests.get(method)
        if tester is None:

            if method not in CI_TESTS or method in ORACLE_CI_TESTS:
                raise UnknownNameError("CI test", method, agent_ci_tests())
            params: dict[str, Any] = {}
            if ci_test_class(method).seeded:
                params["seed"] = int31_seed(self.sha256)
            tester = make_ci_test(method, self.data, **params)
            self._ci_tests[method] = tester
        return tester

    def regime_test(self, method: str, which: str | int, i: int, j: int,
                    given: Sequence[int]) -> tuple[CIResult, int, bool]:
        """Test x ⊥ y | given on the rows ``which`` selects (see
        :func:`~heuresis_env.env.toolbox.regimes.regime_data`): the result, the rows tested
        and whether the regime entered as a context variable. Without experiments (or
        ``"pooled"`` before any) it is :meth:`ci_test` on the data, with its caches."""
        regimes = self.regimes
        if regimes is None or which == "observational" or (
                which == "pooled" and regimes.n_experiments == 0):
            if which not in ("pooled", "observational"):
                raise HeuresisError(f"no regime {which!r}: this episode has the observational "
                                    "rows only")
            tester = self.ci_test(method)
            return tester.test(i, j, list(given)), tester.n, False
        if method not in CI_TESTS or method in ORACLE_CI_TESTS:
            raise UnknownNameError("CI test", method, agent_ci_tests())
        params: dict[str, Any] = {"disk_cache": False}
        if ci_test_class(method).seeded:
            params["seed"] = int31_seed(self.sha256)
        if which == "pooled":
            key = (method, regimes.n_experiments)
            table, n_context = regime_data(regimes, which)
            tester = self._regime_tests.get(key) or make_ci_test(method, table, **params)
            self._regime_tests[key] = tester
            context = list(range(self.d, self.d + n_context))
            return tester.test(i, j, [*given, *context]), tester.n, True
        regime = regimes.block(int(which))
        columns = [i, j, *given]
        fixed = constant_columns(regime.rows, columns)
        if fixed:
            raise HeuresisError(
                f"{', '.join(self.names[c] for c in fixed)} is held fixed in regime {which} "
                f"({regime.describe()}), so it cannot be tested on that regime's rows alone; "
                "use data=\"pooled\"")
        tester = make_ci_test(method, regime.rows[:, columns], **params)
        result = tester.test(0, 1, list(range(2, len(columns))))
        return result._replace(x=min(i, j), y=max(i, j)), tester.n, False

    # ---- graph helpers -------------------------------------------------------------------
    def edge_text(self, i: int, j: int, graph: Graph | None = None) -> str | None:
        """The edge between columns i and j as text (``X1 --> X2``), or None."""
        graph = self.working_graph if graph is None else graph
        edge = graph.edge(self.names[i], self.names[j])
        if edge is None:
            return None
        if edge.mark_u == EdgeMark.ARROW and edge.mark_v != EdgeMark.ARROW:
            edge = Edge(edge.v, edge.u, edge.mark_v, edge.mark_u)  # arrowheads point right
        return str(edge)

    def directed_matrix(self, graph: Graph | None = None) -> np.ndarray:
        graph = self.working_graph if graph is None else graph
        marks = graph.marks
        return (marks == EdgeMark.ARROW) & (marks.T == EdgeMark.TAIL)
