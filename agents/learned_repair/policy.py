"""The ``learned-repair`` policy: reads the ``repair_evidence`` table, scores every pair with
the classifier and edits PC-KCI's output by the expected-F1 rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.learned_repair.classifier import MODEL_FEATURES, RepairClassifier, load_classifier
from agents.learned_repair.rule import repair_plan
from heuresis_env.errors import HeuresisError
from heuresis_env.policy import Policy

__all__ = ["LearnedRepairPolicy", "load_learned_repair"]


class LearnedRepairPolicy(Policy):
    """Reads the ``repair_evidence`` table (guided condition), scores every pair with the
    classifier, and edits PC-KCI's output by the expected-F1 rule, then submits.

    Steps: one for the table, one per edit (most confident first: the largest |q − F1*/2|),
    one to submit; edits that the step budget cannot hold are dropped.
    """

    name = "learned-repair"
    interface = "text"

    def __init__(self, model: RepairClassifier):
        self.model = model
        self._plan: list[dict[str, Any]] = []
        self._stage = "read"
        self.decisions: list[dict[str, Any]] = []

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if not info.get("guided", self.settings.guided):
            raise HeuresisError("learned-repair edits PC-KCI's output: run it in the guided "
                                "condition (guided=True)")
        self._plan, self._stage, self.decisions = [], "read", []
        self.family = str((info.get("instance") or {}).get("family", ""))

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self._stage == "read":
            self._stage = "plan"
            return {"tool": "repair_evidence", "args": {}}
        if self._stage == "plan":
            self._stage = "edit"
            rows = (info.get("data") or {}).get("rows") or []
            if info.get("error") is None and rows:
                self._plan = self._decide(rows)
            left = int(np.asarray(observation["budget_left"]).reshape(-1)[0])
            self._plan = self._plan[:max(left - 1, 0)]
        if self._plan:
            return self._plan.pop(0)
        self._stage = "done"
        return {"tool": "submit", "args": {}}

    def _decide(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        x = np.array([[np.nan if row[f] is None else row[f] for f in MODEL_FEATURES]
                      for row in rows], dtype=np.float64)
        q = self.model.probabilities(x, [self.family] * len(rows))
        plan = repair_plan([tuple(row["pair"]) for row in rows],
                           [bool(row["kept"]) for row in rows], q)
        self.decisions += plan.decisions
        self.expected_f1, self.threshold = plan.expected_f1, plan.threshold
        return plan.edits

    def transcript(self) -> list[dict[str, Any]] | None:
        return [{"decisions": self.decisions}]


def load_learned_repair(path: str | Path | None = None) -> LearnedRepairPolicy:
    """The ``learned-repair`` policy (entry point), with the shipped model unless ``path``."""
    return LearnedRepairPolicy(load_classifier(path))
