"""Policies for episodes with an experiment budget (``docs/experiments.md``), on the text view:

- ``random-int``: experiments on random targets (randomized, ``rows`` rows each, until the
  budget is spent), then GIES over every regime, submitted (``finish="gies"``); with
  ``finish="orient"`` it orients PC-KCI's graph from the experiments as ``active-int`` does,
  so that the two differ only in how targets are chosen;
- ``active-int``: PC-KCI's CPDAG on the observational rows, then experiments on the variable
  with the most unresolved edges (the active-learning heuristic of He & Geng 2008 and
  Hauser & Bühlmann 2014, "intervene where the equivalence class is least resolved"), each
  experiment orienting its target's edges from which neighbours responded; stops when every
  edge is resolved or the budget is spent;
- ``rl-int``: as ``active-int``, with a MaskablePPO network (:mod:`agents.experiments.rl`)
  choosing the next target or to stop.

Every decision reads tool results only (``info["data"]``), never the truth.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.experiments.orienting import (
    Orientation,
    edge_list,
    most_unresolved,
    responses,
)
from heuresis_env.budgets import DEFAULT_ROWS_PER_EXPERIMENT
from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import Graph
from heuresis_env.policy import Policy
from heuresis_env.seeding import text_seed

__all__ = ["ActiveIntPolicy", "ExperimentPolicy", "RandomIntPolicy", "active_int_policy",
           "random_int_policy"]

FINISHES = ("gies", "orient")
#: the graph memory name of the GIES output random-int submits
GIES_NAME = "gies_output"


def _check_rows(rows: Any) -> int:
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 10:
        raise HeuresisError(f"rows (per experiment) must be an integer ≥ 10, got {rows!r}")
    return rows


class ExperimentPolicy(Policy):
    """Start from an observational algorithm's CPDAG, run experiments chosen by
    :meth:`choose`, orient from their responses, submit. Subclasses choose."""

    name = "experiments"

    def __init__(self, rows: int = DEFAULT_ROWS_PER_EXPERIMENT, start: str = "pc-kci",
                 method: str = "kci"):
        self.rows = _check_rows(rows)
        self.start = str(start)
        self.method = str(method)
        self._reset_state()

    def _reset_state(self) -> None:
        self._phase = "start"
        self._names: list[str] = []
        self._orientation: Orientation | None = None
        self._experiments_left = 0
        self._failure: str | None = None
        self._pending_target: int | None = None
        self._log: list[dict[str, Any]] = []

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self._reset_state()
        self._names = [str(n) for n in info.get("names") or []]
        budget = int(info.get("experiment_rows") or self.settings.experiments or 0)
        self._experiments_left = budget // self.rows
        self._seed = text_seed(str(info.get("sha256", "")) + self.name)

    # ---- the decision -------------------------------------------------------------------
    def choose(self, orientation: Orientation) -> int | None:
        """The next target, or None to stop experimenting."""
        raise NotImplementedError

    # ---- driving the tools -------------------------------------------------------------
    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        steps_left = int(np.asarray(observation.get("budget_left", [2]))[0])
        if self._phase == "start":
            self._phase = "read_start"
            return {"tool": "run_algorithm", "args": {"name": self.start,
                                                      "data": "observational"}}
        if self._phase == "read_start":
            if info.get("error") or "graph" not in (info.get("data") or {}):
                self._failure = f"{self.start} failed: {info.get('error')}"
                return {"tool": "submit", "args": {}}
            self._orientation = Orientation(Graph.from_dict(info["data"]["graph"]))
            self._phase = "experiments"
        elif self._phase == "experiments" and self._pending_target is not None:
            self._read_experiment(info)
        assert self._orientation is not None
        if self._experiments_left > 0 and steps_left > 1:
            target = self.choose(self._orientation)
            if target is not None:
                self._pending_target = target
                self._experiments_left -= 1
                return self._intervene(target)
        return {"tool": "submit", "args": {"edges": edge_list(self._orientation.graph())}}

    def _intervene(self, target: int) -> dict[str, Any]:
        return {"tool": "intervene", "args": {"target": self._names[target], "n": self.rows,
                                              "method": self.method}}

    def _read_experiment(self, info: dict[str, Any]) -> None:
        target, self._pending_target = self._pending_target, None
        data = info.get("data") or {}
        if info.get("error") or "columns" not in data:
            self._failure = f"an experiment was refused: {info.get('error')}"
            self._experiments_left = 0
            return
        assert self._orientation is not None and target is not None
        responded = responses(data["columns"], self._names)
        self._orientation.record(target, responded)
        self._log.append({"target": self._names[target],
                          "responded": sorted(self._names[j] for j, r in responded.items()
                                              if r)})

    def failure(self) -> str | None:
        return self._failure

    def transcript(self) -> list[dict[str, Any]] | None:
        return list(self._log)


class ActiveIntPolicy(ExperimentPolicy):
    """Experiments where the current graph has the most unresolved edges."""

    name = "active-int"

    def choose(self, orientation: Orientation) -> int | None:
        return most_unresolved(orientation)


class RandomIntPolicy(ExperimentPolicy):
    """Experiments on random targets (without repeating one until every variable had one);
    then GIES over every regime (``finish="gies"``) or PC-KCI's graph oriented from the
    responses (``finish="orient"``)."""

    name = "random-int"

    def __init__(self, rows: int = DEFAULT_ROWS_PER_EXPERIMENT, finish: str = "gies",
                 start: str = "pc-kci", method: str = "kci", seed: int = 0):
        if finish not in FINISHES:
            raise HeuresisError(f"finish must be one of {', '.join(FINISHES)}, got {finish!r}")
        super().__init__(rows, start, method)
        self.finish = finish
        self.seed = int(seed)
        self._order: list[int] = []

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        rng = np.random.default_rng([self._seed, self.seed])
        d = len(self._names)
        rounds = -(-max(self._experiments_left, 1) // max(d, 1))
        self._order = [int(t) for _ in range(rounds) for t in rng.permutation(d)]
        if self.finish == "gies":
            self._phase = "gies_experiments"

    def choose(self, orientation: Orientation) -> int | None:
        return self._order.pop(0) if self._order else None

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self.finish == "orient":
            return super().act(observation, info)
        steps_left = int(np.asarray(observation.get("budget_left", [4]))[0])
        if self._phase == "gies_experiments":
            if self._pending_target is not None:
                self._pending_target = None
                if info.get("error"):
                    self._failure = f"an experiment was refused: {info.get('error')}"
                    self._experiments_left = 0
            if self._experiments_left > 0 and steps_left > 3 and self._order:
                target = self._order.pop(0)
                self._pending_target = target
                self._experiments_left -= 1
                self._log.append({"target": self._names[target]})
                return self._intervene(target)
            self._phase = "gies"
            return {"tool": "run_algorithm", "args": {"name": "gies", "save_as": GIES_NAME}}
        if self._phase == "gies":
            if info.get("error"):
                self._failure = f"gies failed: {info.get('error')}"
                return {"tool": "submit", "args": {}}
            self._phase = "submit"
            return {"tool": "load_graph", "args": {"name": GIES_NAME}}
        return {"tool": "submit", "args": {}}


def random_int_policy(rows: int = DEFAULT_ROWS_PER_EXPERIMENT, finish: str = "gies",
                      start: str = "pc-kci", method: str = "kci",
                      seed: int = 0) -> RandomIntPolicy:
    """The ``random-int`` entry point."""
    return RandomIntPolicy(rows, finish, start, method, seed)


def active_int_policy(rows: int = DEFAULT_ROWS_PER_EXPERIMENT, start: str = "pc-kci",
                      method: str = "kci") -> ActiveIntPolicy:
    """The ``active-int`` entry point."""
    return ActiveIntPolicy(rows, start, method)
