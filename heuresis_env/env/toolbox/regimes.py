"""An episode's data regimes: the observational table (regime 0) and the rows of each
experiment (regime k for the k-th ``intervene`` call), under a budget of rows.

The rows come from the referee's laboratory (:func:`heuresis_env.generation.experiments.
make_laboratory`), a closure over the hidden SCM: this object holds the rows it returned and
how they were asked for, never the SCM. Tools read the regimes through :meth:`Regimes.pooled`
(every row with its regime label) and :meth:`Regimes.block` (one regime's rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.generation.experiments import Laboratory, check_experiment


class ExperimentBudgetError(HeuresisError):
    """An experiment asked for more rows than the episode's experiment budget has left."""


@dataclass(frozen=True)
class Regime:
    """One regime: its label (0 observational), the target and value of its experiment
    (None for the observational rows; a target with value None is a randomized
    experiment) and its rows (read-only)."""

    index: int
    target: str | None
    value: float | None
    rows: np.ndarray

    @property
    def n(self) -> int:
        return int(self.rows.shape[0])

    def describe(self) -> str:
        if self.target is None:
            return "observational"
        setting = "randomized" if self.value is None else f"{self.value:g}"
        return f"do({self.target} = {setting})"

    def to_dict(self) -> dict[str, Any]:
        return {"regime": self.index, "target": self.target, "value": self.value,
                "rows": self.n}


class Regimes:
    """The observational rows and the experiments of one episode, with the row budget."""

    def __init__(self, observational: np.ndarray, names: Sequence[str], budget: int,
                 laboratory: Laboratory | None):
        if laboratory is None:
            raise HeuresisError("experiments need the structural causal model behind the data; "
                                "this instance is a data table, which has none (pass "
                                "experiments=0)")
        self.names = tuple(names)
        self.budget = int(budget)
        self._laboratory = laboratory
        self.regimes: list[Regime] = [Regime(0, None, None, observational)]
        self._pooled: tuple[np.ndarray, np.ndarray] | None = None
        #: per experiment, the columns' responses (``intervene``'s tests), for the other tools
        self.responses: dict[int, dict[str, dict[str, Any]]] = {}
        #: results computed on the regimes so far (keys end with the number of experiments)
        self.memo: dict[tuple, Any] = {}

    @property
    def rows_used(self) -> int:
        return sum(r.n for r in self.regimes[1:])

    @property
    def rows_left(self) -> int:
        return self.budget - self.rows_used

    @property
    def n_experiments(self) -> int:
        return len(self.regimes) - 1

    def run(self, target: int, value: float | None, n: int) -> Regime:
        """Draw the next experiment (its rows from the laboratory) and keep it as a regime;
        more rows than the budget has left is an :class:`ExperimentBudgetError`, and nothing
        is drawn."""
        check_experiment(len(self.names), target, value, n)
        if n > self.rows_left:
            raise ExperimentBudgetError(
                f"the experiment asks for {n} rows and the experiment budget has "
                f"{self.rows_left} of {self.budget} left ({self.rows_used} spent in "
                f"{self.n_experiments} experiment(s)); ask for at most {self.rows_left} rows"
                + ("" if self.rows_left else ", or submit"))
        ordinal = len(self.regimes)
        rows = self._laboratory(ordinal, int(target), None if value is None else float(value),
                                int(n))
        regime = Regime(ordinal, self.names[int(target)],
                        None if value is None else float(value), rows)
        self.regimes.append(regime)
        self._pooled = None
        return regime

    def block(self, index: int) -> Regime:
        if isinstance(index, bool) or not isinstance(index, int | np.integer) \
                or not 0 <= index < len(self.regimes):
            raise HeuresisError(f"no regime {index!r}: regimes are 0 (observational) to "
                                f"{len(self.regimes) - 1}")
        return self.regimes[int(index)]

    def pooled(self) -> tuple[np.ndarray, np.ndarray]:
        """Every row (observational first, then each experiment's, in order) and its regime
        label (0 observational, k the k-th experiment); both read-only."""
        if self._pooled is None:
            rows = np.vstack([r.rows for r in self.regimes])
            labels = np.concatenate([np.full(r.n, r.index, dtype=np.int64)
                                     for r in self.regimes])
            rows.flags.writeable = False
            labels.flags.writeable = False
            self._pooled = (rows, labels)
        return self._pooled

    def intervened(self) -> list[list[int]]:
        """Per regime, the column indices it intervened on ([] for the observational rows):
        the form GIES and JCI take."""
        return [[] if r.target is None else [self.names.index(r.target)]
                for r in self.regimes]

    def summary(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.regimes]


# ---- CI tests over the regimes ------------------------------------------------------------------

#: what a data tool may read in an episode with experiments: every row with the regime as a
#: context variable (``pooled``), the original table (``observational``), or one regime (k)
ROW_CHOICES = ("pooled", "observational")


def regime_data(regimes: Regimes, which: str | int) -> tuple[np.ndarray, int]:
    """The table a CI test runs on for ``which`` and its number of context columns: pooled
    (every row, then one 0/1 column per experiment marking its rows — the regime as a
    context variable, as joint causal inference does), or one regime's rows (no context)."""
    if which == "pooled":
        rows, labels = regimes.pooled()
        k = regimes.n_experiments
        if k == 0:
            return rows, 0
        context = (labels[:, None] == np.arange(1, k + 1)[None, :]).astype(np.float64)
        return np.hstack([rows, context]), k
    if which == "observational":
        return regimes.block(0).rows, 0
    return regimes.block(int(which)).rows, 0


def constant_columns(table: np.ndarray, columns: Sequence[int]) -> list[int]:
    """The columns among ``columns`` that hold one value only (a target held fixed)."""
    return [c for c in columns if np.ptp(table[:, c]) == 0.0]
