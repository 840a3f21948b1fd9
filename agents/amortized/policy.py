"""The amortized policies.

The first model's (``amortized-v1``, ``amortized-repair-v1``): call the ``evidence_grid`` tool
once and score every pair with the grid model; the guided one edits PC-KCI's output towards the
expected-F1 selection, the unguided one submits the selection itself.

The directed model's (``amortized-v2``, ``amortized-repair-v2``): call ``pair_statistics``
(when the model reads them) and ``sample_rows`` (up to 1,000 rows: every row of a table of at
most 1,000), compute the model's P(i → j) as :func:`agents.amortized.inference.edge_probabilities`
does (test-time augmentation over row subsamples), decode it into a DAG (or, with the target
``cpdag``, a partly directed graph) and submit it; the guided one first sets PC-KCI's working
graph to it (``set_graph``, orientations included) and then submits — 3 or 4 steps, whatever
d is. ``amortized`` and ``amortized-repair`` name the shipped default (see
:data:`DEFAULT_VERSION`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.amortized.directed import AviciModel, DirectedModel, load_directed
from agents.amortized.evaluation import select_edges
from agents.amortized.inference import decode, probabilities_from_rows
from agents.amortized.model import GridModel, load_model
from agents.learned_repair import repair_plan
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import EvidenceGrid
from heuresis_env.graphs import GraphError, topological_order
from heuresis_env.policy import Policy

__all__ = ["AmortizedPolicy", "AmortizedRepairPolicy", "DEFAULT_VERSION",
           "DirectedPolicy", "DirectedRepairPolicy", "SHIPPED_DIRECTED", "SHIPPED_MODEL",
           "load_amortized", "load_amortized_repair", "load_directed_policy",
           "load_directed_repair_policy"]

#: the first model shipped with the package (agents/data/amortized; see its README.md)
SHIPPED_MODEL = Path(__file__).resolve().parents[1] / "data" / "amortized"
#: the directed model shipped with the package (agents/data/amortized_v2)
SHIPPED_DIRECTED = Path(__file__).resolve().parents[1] / "data" / "amortized_v2"
#: which design ``amortized`` and ``amortized-repair`` run: since 2026-12-07 the second model's
#: frozen design (the first model's skeleton, the directed model's arrows), which met the rule
#: fixed with it on the test split and two salted ones (docs/amortized.md); ``amortized-v1``
#: and ``amortized-repair-v1`` keep the first model by name
DEFAULT_VERSION = "v2"
#: rows a directed policy asks for (the sample_rows tool's cap)
ROWS_ASKED = 1_000


class _GridPolicy(Policy):
    """Reads the grid (step 1), plans (from its result), then acts on the plan."""

    interface = "text"

    def __init__(self, model: GridModel, record: dict[str, Any] | None = None):
        self.model = model
        self.record = record or {}
        self._plan: list[dict[str, Any]] = []
        self._stage = "read"
        self.decisions: list[dict[str, Any]] = []
        self.expected_f1 = float("nan")

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self._plan, self._stage, self.decisions = [], "read", []

    def probabilities(self, data: dict[str, Any]) -> tuple[EvidenceGrid, np.ndarray]:
        grid = EvidenceGrid.from_rows(data.get("rows") or [], data.get("nodes") or [])
        return grid, self.model.probabilities(grid.pairs, grid.nodes)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self._stage == "read":
            self._stage = "plan"
            return {"tool": "evidence_grid", "args": {}}
        if self._stage == "plan":
            self._stage = "act"
            if info.get("error") is not None:
                raise HeuresisError(f"{self.name}: the evidence_grid tool failed: "
                                    f"{info['error']}")
            grid, q = self.probabilities(info.get("data") or {})
            left = int(np.asarray(observation["budget_left"]).reshape(-1)[0])
            self._plan = self.plan(grid, q)[:max(left - 1, 0)]
            if not self._plan or self._plan[-1].get("tool") != "submit":
                self._plan.append({"tool": "submit", "args": {}})
        if self._plan:
            return self._plan.pop(0)
        return {"tool": "submit", "args": {}}

    def plan(self, grid: EvidenceGrid, q: np.ndarray) -> list[dict[str, Any]]:
        raise NotImplementedError

    def transcript(self) -> list[dict[str, Any]] | None:
        return [{"decisions": self.decisions, "expected_f1": self.expected_f1,
                 "model": self.record.get("provenance", {}).get("name", "")}]


class AmortizedRepairPolicy(_GridPolicy):
    """Guided: restores the selected pairs PC-KCI deleted and removes the kept pairs not
    selected (most confident first, as ``learned-repair``), then submits."""

    name = "amortized-repair"

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if not info.get("guided", self.settings.guided):
            raise HeuresisError("amortized-repair edits PC-KCI's output: run it in the guided "
                                "condition (guided=True); the unguided policy is 'amortized'")
        super().reset(observation, info)

    def plan(self, grid: EvidenceGrid, q: np.ndarray) -> list[dict[str, Any]]:
        kept = grid.pair("pc_kci_kept") > 0.5
        upper = list(zip(*np.triu_indices(grid.d, 1), strict=True))
        made = repair_plan([(grid.names[i], grid.names[j]) for i, j in upper],
                           [bool(kept[i, j]) for i, j in upper], [q[i, j] for i, j in upper])
        self.decisions, self.expected_f1 = made.decisions, made.expected_f1
        return made.edits


class AmortizedPolicy(_GridPolicy):
    """Unguided: submits the model's expected-F1 selection in one step. An edge PC-KCI's CPDAG
    orients keeps that direction, the rest are undirected; when the episode's target is a DAG,
    every edge is oriented along one order (PC-KCI's arrows first, then column order)."""

    name = "amortized"

    def plan(self, grid: EvidenceGrid, q: np.ndarray) -> list[dict[str, Any]]:
        selected, self.expected_f1 = select_edges(q)
        # the grid's pc_kci_arrow[i, j] is j → i: its transpose is PC-KCI's directed adjacency
        arrows = (grid.pair("pc_kci_arrow") > 0.5).T & selected
        names = grid.names
        self.decisions = [{"pair": [names[i], names[j]], "probability": float(q[i, j]),
                           "selected": bool(selected[i, j])}
                          for i, j in zip(*np.triu_indices(grid.d, 1), strict=True)]
        dag = str(getattr(self.settings, "target", "none")) == "dag"
        rank = {v: k for k, v in enumerate(topological_order(_acyclic(arrows)))} if dag else {}
        edges = []
        for i, j in zip(*np.nonzero(np.triu(selected, 1)), strict=True):
            if dag:
                a, b = (i, j) if rank[i] < rank[j] else (j, i)
                edges.append(f"{names[a]} --> {names[b]}")
            elif arrows[i, j]:
                edges.append(f"{names[i]} --> {names[j]}")
            elif arrows[j, i]:
                edges.append(f"{names[j]} --> {names[i]}")
            else:
                edges.append(f"{names[i]} --- {names[j]}")
        return [{"tool": "submit", "args": {"edges": edges}}]


def _acyclic(arrows: np.ndarray) -> np.ndarray:
    """``arrows`` with each arrow that would close a directed cycle dropped (column order)."""
    kept = np.zeros_like(arrows, dtype=bool)
    for i, j in zip(*np.nonzero(arrows), strict=True):
        kept[i, j] = True
        try:
            topological_order(kept)
        except GraphError:
            kept[i, j] = False
    return kept


class DirectedPolicy(Policy):
    """Unguided: reads the pair statistics and the rows, submits the directed model's graph."""

    name = "amortized-v2"
    interface = "text"

    def __init__(self, model: DirectedModel | AviciModel, record: dict[str, Any] | None = None,
                 skeleton: str = "f1", tta: int = 4, first_model: GridModel | None = None):
        if skeleton not in ("f1", "shd", "first-model"):
            raise HeuresisError(f"skeleton must be f1, shd or first-model, got {skeleton!r}")
        if skeleton == "first-model" and first_model is None:
            first_model, _ = load_model(SHIPPED_MODEL)
        self.model = model
        self.record = record or {}
        self.skeleton = skeleton
        self.tta = int(tta)
        self.first_model = first_model
        self._reads_statistics = isinstance(model, DirectedModel) and model.config.statistics
        self.reset(None, {})

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self._stage = "grid" if self.skeleton == "first-model" else (
            "statistics" if self._reads_statistics else "rows")
        self._statistics: dict[str, Any] | None = None
        self._given: np.ndarray | None = None
        self._plan: list[dict[str, Any]] = []
        self.decisions: list[dict[str, Any]] = []

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self._stage == "grid":  # the first model decides adjacency from the grid
            self._stage = "statistics" if self._reads_statistics else "rows"
            return {"tool": "evidence_grid", "args": {}}
        if self._stage == "statistics":
            if self.first_model is not None and self._given is None:
                self._given = self._first_skeleton(info)
            self._stage = "rows"
            return {"tool": "pair_statistics", "args": {}}
        if self._stage == "rows":
            if self._reads_statistics:
                self._statistics = self._read(info, "pair_statistics")
            elif self.first_model is not None and self._given is None:
                self._given = self._first_skeleton(info)
            self._stage = "plan"
            return {"tool": "sample_rows", "args": {"count": ROWS_ASKED}}
        if self._stage == "plan":
            self._stage = "act"
            rows = self._read(info, "sample_rows")
            names = tuple(rows["names"])
            p = probabilities_from_rows(self.model, np.asarray(rows["rows"], dtype=np.float64),
                                        names, self._statistics, tta=self.tta)
            target = str(getattr(self.settings, "target", "none"))
            decoded = decode(p, "f1" if self.skeleton == "first-model" else self.skeleton,
                             "cpdag" if target == "cpdag" else "dag",
                             exclusive=isinstance(self.model, DirectedModel), given=self._given)
            edges = decoded.graph(names).to_text().splitlines() if decoded.skeleton.any() else []
            self.decisions = [{"pair": [names[i], names[j]],
                               "forward": float(p[i, j]), "backward": float(p[j, i])}
                              for i, j in zip(*np.triu_indices(len(names), 1), strict=True)]
            self._plan = self.plan(edges)
        if self._plan:
            return self._plan.pop(0)
        return {"tool": "submit", "args": {}}

    def plan(self, edges: list[str]) -> list[dict[str, Any]]:
        return [{"tool": "submit", "args": {"edges": edges}}]

    def _first_skeleton(self, info: dict[str, Any]) -> np.ndarray:
        """The first model's expected-F1 selection from the evidence grid's rows."""
        assert self.first_model is not None
        data = self._read(info, "evidence_grid")
        grid = EvidenceGrid.from_rows(data.get("rows") or [], data.get("nodes") or [])
        selected, _ = select_edges(self.first_model.probabilities(grid.pairs, grid.nodes))
        return selected

    def _read(self, info: dict[str, Any], tool: str) -> dict[str, Any]:
        if info.get("error") is not None:
            raise HeuresisError(f"{self.name}: the {tool} tool failed: {info['error']}")
        data = info.get("data") or {}
        if not isinstance(data, dict):
            raise HeuresisError(f"{self.name}: the {tool} tool returned no data")
        return data

    def transcript(self) -> list[dict[str, Any]] | None:
        return [{"decisions": self.decisions,
                 "model": self.record.get("provenance", {}).get("name", "")}]


class DirectedRepairPolicy(DirectedPolicy):
    """Guided: sets PC-KCI's working graph to the directed model's graph, then submits."""

    name = "amortized-repair-v2"

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if info and not info.get("guided", self.settings.guided):
            raise HeuresisError("amortized-repair edits PC-KCI's output: run it in the guided "
                                "condition (guided=True); the unguided policy is 'amortized'")
        super().reset(observation, info)

    def plan(self, edges: list[str]) -> list[dict[str, Any]]:
        return [{"tool": "set_graph", "args": {"edges": edges}}, {"tool": "submit", "args": {}}]


def _load(cls: type[_GridPolicy], path: str | Path | None) -> _GridPolicy:
    model, record = load_model(SHIPPED_MODEL if path is None else path)
    return cls(model, record)


def _load_directed(cls: type[DirectedPolicy], path: str | Path | None, name: str,
                   skeleton: str, tta: int | str) -> DirectedPolicy:
    where = Path(SHIPPED_DIRECTED if path is None else path)
    if path is None and not (where / "model.json").exists():
        raise HeuresisError(f"no directed model is shipped yet ({where}); train one "
                            "(docs/amortized.md) and pass its folder as the policy's path")
    model, record = load_directed(where)
    policy = cls(model, record, skeleton=skeleton, tta=int(tta))
    policy.name = name
    return policy


def load_directed_policy(path: str | Path | None = None, skeleton: str = "first-model",
                         tta: int | str = 4) -> DirectedPolicy:
    """The ``amortized-v2`` policy (entry point), with the shipped directed model unless
    ``path``: by default the first model decides adjacency (``skeleton=first-model``, the
    design study's choice on dev) and the directed model orients; ``skeleton=f1`` or ``shd``
    lets the directed model decide both."""
    return _load_directed(DirectedPolicy, path, "amortized-v2", skeleton, tta)


def load_directed_repair_policy(path: str | Path | None = None, skeleton: str = "first-model",
                                tta: int | str = 4) -> DirectedPolicy:
    """The ``amortized-repair-v2`` policy (entry point): as ``amortized-v2``, guided."""
    return _load_directed(DirectedRepairPolicy, path, "amortized-repair-v2", skeleton, tta)


def load_amortized_v1(path: str | Path | None = None) -> Policy:
    """The first model's unguided policy under its own name."""
    policy = _load(AmortizedPolicy, path)
    policy.name = "amortized-v1"
    return policy


def load_amortized_repair_v1(path: str | Path | None = None) -> Policy:
    """The first model's guided policy under its own name."""
    policy = _load(AmortizedRepairPolicy, path)
    policy.name = "amortized-repair-v1"
    return policy


def load_amortized_repair(path: str | Path | None = None, skeleton: str = "first-model",
                          tta: int | str = 4) -> Policy:
    """The ``amortized-repair`` policy (entry point): the default version's guided policy
    (``path``, ``skeleton`` and ``tta`` as for ``amortized-repair-v2``; ``path`` alone for
    the first model)."""
    if DEFAULT_VERSION == "v2":
        return _load_directed(DirectedRepairPolicy, path, "amortized-repair", skeleton, tta)
    return _load(AmortizedRepairPolicy, path)


def load_amortized(path: str | Path | None = None, skeleton: str = "first-model",
                   tta: int | str = 4) -> Policy:
    """The ``amortized`` policy (entry point): the default version's unguided policy."""
    if DEFAULT_VERSION == "v2":
        return _load_directed(DirectedPolicy, path, "amortized", skeleton, tta)
    return _load(AmortizedPolicy, path)
