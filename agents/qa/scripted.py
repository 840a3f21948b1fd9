"""``qa-tools``: a deterministic tool policy for question episodes, after CausalAgent's tools.

One short, fixed chain of tool calls per kind of question, through the environment's actions
(so it is timed, traced and budgeted like any agent):

- independence (IT, CIT, MCIT): ``ci_test`` of x and y given exactly the question's
  conditioning set; "yes" when the p-value exceeds ``alpha``. ``ci_method`` is one test
  (``fisherz`` as CausalAgent, ``kci``, ...) or, by default, ``fisherz+kci``: both tests,
  "yes" only when both p-values exceed ``alpha``/2 (Bonferroni) — linear and non-linear
  dependence both count. The default was chosen on the dev split's variable-level
  questions (share correct over six families: Fisher-z 0.839, KCI 0.867, both 0.894);
- edges (CAUSE, COL, CONF): PC (``pc_algorithm``) saved in the graph memory, then the edge
  query on it — ``direct_cause`` (an undirected edge: ``orientation_probe``'s additive-noise
  verdict, then its LiNGAM verdict, else "yes"), ``collider`` (yes only for an unshielded
  collider, as the question asks), ``confounder``;
- graphs (TOTAL, PARTIAL): PC on all variables, or on the question's subset alone (the other
  columns left out, as the question states), answered with its edges;
- effects (ATE): ``estimate_effect`` by back-door linear regression on the named covariates,
  or when none are named on the parents and undirected neighbours of x in PC's output; the
  slope times (b − a).

A tool that fails, or a budget about to run out, makes it answer at once with its default
("no", 0, or the empty graph).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import Graph
from heuresis_env.policy import Policy

#: the graph-memory name of PC's output
PC_GRAPH = "pc"
CI_METHODS = ("fisherz", "kci", "rcit", "rcot", "dcor")
#: the default: Fisher-z and KCI, each at alpha / 2
COMBINED = "fisherz+kci"


def _answer(value: Any) -> dict[str, Any]:
    return {"tool": "answer", "args": {"answer": value}}


def _budget_left(observation: Any) -> int:
    try:
        return int(np.asarray(observation["budget_left"]).reshape(-1)[0])
    except (KeyError, TypeError, IndexError):
        return 1_000_000


class QuestionToolPolicy(Policy):
    """The ``qa-tools`` policy (see the module docstring)."""

    interface = "text"

    def __init__(self, ci_method: str = COMBINED, alpha: float = 0.05,
                 pc_algorithm: str = "pc-fisherz", name: str = "qa-tools"):
        if ci_method not in (*CI_METHODS, COMBINED):
            raise UnknownNameError("CI test", ci_method, (*CI_METHODS, COMBINED))
        if not (isinstance(alpha, int | float) and 0 < alpha < 1):
            raise HeuresisError(f"alpha must be a number in (0, 1), got {alpha!r}")
        self.ci_method, self.alpha, self.pc_algorithm = ci_method, float(alpha), pc_algorithm
        self.name = name
        self._question: dict[str, Any] = {}
        self._plan: list = []

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        question = info.get("question")
        if not isinstance(question, dict):
            raise HeuresisError("qa-tools answers questions: run it on question episodes "
                                "(task='qa', e.g. Heuresis-qa-lg-v0)")
        self._question = question
        self._plan = list(self._steps(question))

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        step = self._plan.pop(0) if self._plan else None
        if step is None or info.get("error") is not None or _budget_left(observation) <= 1:
            self._plan = []
            return _answer(self._default())
        if not callable(step):
            return step
        data = info.get("data")
        return step(data if isinstance(data, dict) else {})

    # ---- the chains -----------------------------------------------------------------------
    def _steps(self, question: dict[str, Any]) -> list:
        kind = question["kind"]
        x, y = question.get("x_name"), question.get("y_name")
        if kind in ("independence", "conditional_independence",
                    "multi_conditional_independence"):
            methods = self.ci_method.split("+")
            level = self.alpha / len(methods)
            p_values: list[float] = []

            def test(method: str):
                def step(data: dict[str, Any]) -> dict[str, Any]:
                    if "p_value" in data:
                        p_values.append(float(data["p_value"]))
                    return {"tool": "ci_test", "args": {
                        "x": x, "y": y, "given": question["given_names"], "method": method}}
                return step

            def decide(data: dict[str, Any]) -> dict[str, Any]:
                p_values.append(float(data["p_value"]))
                return _answer("yes" if min(p_values) > level else "no")

            return [test(method) for method in methods] + [decide]
        if kind in ("direct_cause", "collider", "confounding"):
            query = {"direct_cause": "direct_cause", "collider": "collider",
                     "confounding": "confounder"}[kind]
            return [self._pc(save=True),
                    {"tool": query, "args": {"x": x, "y": y, "graph": PC_GRAPH}},
                    self._edge_answer]
        if kind == "whole_graph":
            return [self._pc(), lambda data: _answer(_edges(data))]
        if kind == "partial_graph":
            return [self._pc(variables=question["subset_names"]),
                    lambda data: _answer(_edges(data))]
        if kind == "average_effect":
            if question.get("adjust_for_names") is not None:
                return [self._effect(question["adjust_for_names"]), self._effect_answer]
            return [self._pc(), lambda data: self._effect(_possible_parents(data, x, y)),
                    self._effect_answer]
        raise HeuresisError(f"qa-tools has no chain for questions of kind {kind!r}")

    def _pc(self, save: bool = False, variables: list[str] | None = None) -> dict[str, Any]:
        args: dict[str, Any] = {"name": self.pc_algorithm}
        if save:
            args["save_as"] = PC_GRAPH
        if variables is not None:
            args["variables"] = list(variables)
        return {"tool": "run_algorithm", "args": args}

    def _effect(self, covariates: list[str]) -> dict[str, Any]:
        question = self._question
        return {"tool": "estimate_effect", "args": {
            "treatment": question["x_name"], "outcome": question["y_name"],
            "covariates": list(covariates), "method": "ols"}}

    def _effect_answer(self, data: dict[str, Any]) -> dict[str, Any]:
        question = self._question
        return _answer(float(data["effect"]) * (float(question["high"])
                                                - float(question["low"])))

    def _edge_answer(self, data: dict[str, Any]) -> dict[str, Any]:
        kind = self._question["kind"]
        if kind == "collider":
            return _answer("yes" if data.get("colliders") and not data.get("shielded")
                           else "no")
        if kind == "direct_cause" and data.get("answer") == "undetermined":
            question = self._question
            self._plan = [self._probe_answer]
            return {"tool": "orientation_probe", "args": {"x": question["x_name"],
                                                          "y": question["y_name"]}}
        return _answer("yes" if data.get("answer") == "yes" else "no")

    @staticmethod
    def _probe_answer(data: dict[str, Any]) -> dict[str, Any]:
        for verdict in (data.get("anm", {}).get("direction"),
                        data.get("pairwise_lingam", {}).get("direction")):
            if verdict is not None:
                return _answer("yes" if verdict == "x->y" else "no")
        return _answer("yes")  # adjacent with no direction evidence: x --> y is as likely

    def _default(self) -> Any:
        answer_type = self._question.get("answer_type")
        return {"yes_no": "no", "number": 0.0}.get(answer_type, [])


def _edges(data: dict[str, Any]) -> list[str]:
    """An algorithm output's edges as the answer tool reads them (only the chosen variables
    have edges in a partial run)."""
    return [str(edge) for edge in Graph.from_dict(data["graph"]).edges()]


def _possible_parents(data: dict[str, Any], x: str, y: str) -> list[str]:
    """Parents and undirected neighbours of x in an algorithm's output, y excluded."""
    graph = Graph.from_dict(data["graph"])
    i = graph.index(x)
    possible = graph.directed_adjacency()[:, i] | graph.undirected_adjacency()[:, i]
    return [graph.names[k] for k in np.flatnonzero(possible) if graph.names[k] != y]


def question_tool_policy(ci_method: str = COMBINED, alpha: float = 0.05,
                         pc_algorithm: str = "pc-fisherz") -> QuestionToolPolicy:
    """Entry-point factory of :class:`QuestionToolPolicy` (policy ``qa-tools``)."""
    return QuestionToolPolicy(ci_method, alpha, pc_algorithm)
