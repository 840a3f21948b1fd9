"""The two amortized policies: both call the ``evidence_grid`` tool once and score every pair
with the grid model; ``amortized-repair`` (guided) edits PC-KCI's output towards the
expected-F1 selection, ``amortized`` (unguided) submits the selection itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.amortized.evaluation import select_edges
from agents.amortized.model import GridModel, load_model
from agents.learned_repair import repair_plan
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import EvidenceGrid
from heuresis_env.graphs import GraphError, topological_order
from heuresis_env.policy import Policy

__all__ = ["AmortizedPolicy", "AmortizedRepairPolicy", "SHIPPED_MODEL",
           "load_amortized", "load_amortized_repair"]

#: the model shipped with the package (agents/data/amortized; see its README.md)
SHIPPED_MODEL = Path(__file__).resolve().parents[1] / "data" / "amortized"


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


def _load(cls: type[_GridPolicy], path: str | Path | None) -> _GridPolicy:
    model, record = load_model(SHIPPED_MODEL if path is None else path)
    return cls(model, record)


def load_amortized_repair(path: str | Path | None = None) -> _GridPolicy:
    """The ``amortized-repair`` policy (entry point), with the shipped model unless ``path``."""
    return _load(AmortizedRepairPolicy, path)


def load_amortized(path: str | Path | None = None) -> _GridPolicy:
    """The ``amortized`` policy (entry point), with the shipped model unless ``path``."""
    return _load(AmortizedPolicy, path)

