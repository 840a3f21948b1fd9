"""The experiment tool: ``intervene`` draws fresh rows from the hidden model under do(), on
the referee's side, under the episode's budget of rows (``docs/experiments.md``).

The rows join the episode as a new regime (:mod:`.regimes`); the result says which columns
respond to the experiment — the target's descendants — through the one CI-test interface,
with Holm's correction over the columns (:func:`shift_tests`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from heuresis_env.budgets import DEFAULT_ROWS_PER_EXPERIMENT
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.citests.base import ci_test_class
from heuresis_env.env.toolbox.regimes import Regime, Regimes
from heuresis_env.env.toolbox.registry import (
    RLSpec,
    Tool,
    ToolArgs,
    ToolResult,
    VariableName,
    register_tool,
)
from heuresis_env.env.toolbox.state import EpisodeState, agent_ci_tests
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.experiments import MAX_EXPERIMENT_ROWS, MAX_INTERVENTION_VALUE
from heuresis_env.seeding import text_seed

#: level of the "moved" decision, after Holm's correction over the columns
SHIFT_ALPHA = 0.05
#: the fewest rows an experiment draws (a two-sample test needs some)
MIN_EXPERIMENT_ROWS = 10


class InterveneArgs(ToolArgs):
    target: VariableName
    value: float | None = Field(
        None, ge=-MAX_INTERVENTION_VALUE, le=MAX_INTERVENTION_VALUE, description=(
            "the value the target is set to, in the data's standardized units (sd of the "
            "column); null: each row's value drawn from the target's own observational "
            "distribution (a randomized experiment)"))
    n: int = Field(DEFAULT_ROWS_PER_EXPERIMENT, ge=MIN_EXPERIMENT_ROWS, le=MAX_EXPERIMENT_ROWS,
                   description="rows to draw; they count against the experiment budget")
    method: str = Field("fisherz", max_length=32, description=(
        "the CI test of each column against the regime indicator (a two-sample test): "
        "fisherz (a shift of the mean), kci (any change of distribution), or another of "
        + ", ".join(agent_ci_tests())))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error control), in input order."""
    order = np.argsort(p_values, kind="stable")
    m = len(p_values)
    adjusted = np.empty(m)
    running = 0.0
    for rank, k in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[k]))
        adjusted[k] = running
    return adjusted.tolist()


def shift_tests(regimes: Regimes, regime: Regime, method: str,
                seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per column, whether it responds to the experiment, with its mean and sd in the regime
    (observational: 0 and 1). A descendant of the target responds, a non-descendant does not
    (faithfulness aside):

    - at a fixed value, the column's distribution shifts: a test of (column ⊥ regime
      indicator) on the observational rows and the regime's rows (a two-sample test); the
      target itself is reported as set;
    - randomized (value null), the target varies independently of its causes, so only its
      descendants still depend on it: a test of (column ⊥ target) on the regime's rows.
    """
    if method not in agent_ci_tests():
        raise HeuresisError(f"unknown CI test {method!r}; one of {', '.join(agent_ci_tests())}")
    rows = regime.rows
    d = len(regimes.names)
    target = regimes.names.index(regime.target) if regime.target is not None else -1
    params: dict[str, Any] = {"disk_cache": False}
    if ci_test_class(method).seeded:
        params["seed"] = int(seed)
    if regime.value is None:
        tester = make_ci_test(method, rows, **params)
    else:
        observational = regimes.block(0).rows
        indicator = np.concatenate([np.zeros(len(observational)), np.ones(len(rows))])
        tester = make_ci_test(method, np.column_stack([np.vstack([observational, rows]),
                                                       indicator]), **params)
    columns: dict[str, dict[str, Any]] = {}
    tested: list[str] = []
    for j, name in enumerate(regimes.names):
        entry: dict[str, Any] = {"mean": float(rows[:, j].mean()), "sd": float(rows[:, j].std())}
        if j == target:
            entry["set"] = True
        else:
            result = tester.test(j, target if regime.value is None else d, [])
            entry.update(statistic=float(result.statistic), p_value=float(result.p_value))
            tested.append(name)
        columns[name] = entry
    for name, adjusted in zip(tested, holm([columns[c]["p_value"] for c in tested]),
                              strict=True):
        columns[name]["p_holm"] = adjusted
        columns[name]["moved"] = adjusted <= SHIFT_ALPHA
    return columns


def _intervene(state: EpisodeState, args: InterveneArgs) -> ToolResult:
    regimes = state.require_regimes()
    target = state.variable(args.target)
    if args.method not in agent_ci_tests():
        raise HeuresisError(f"unknown CI test {args.method!r}; one of "
                            f"{', '.join(agent_ci_tests())}")
    regime = regimes.run(target, args.value, args.n)
    columns = shift_tests(regimes, regime, args.method,
                          text_seed(f"{state.sha256}:{regime.index}"))
    regimes.responses[regime.index] = columns
    moved = [name for name, entry in columns.items() if entry.get("moved")]
    lines = [f"Experiment {regime.index}: {regime.describe()}, {regime.n} new rows (regime "
             f"{regime.index}). Experiment budget: {regimes.rows_used} of {regimes.budget} "
             f"rows spent, {regimes.rows_left} left.",
             (f"Each column against the observational rows ({regimes.block(0).n}), by "
              f"{args.method} on (column, regime indicator)" if regime.value is not None else
              f"Each column against the randomized target on the experiment's rows, by "
              f"{args.method}: a column that still depends on the target is its descendant")
             + f"; p_holm: Holm-corrected over the columns; moved: p_holm <= {SHIFT_ALPHA}.",
             f"{'column':<8} {'mean':>7} {'sd':>6} {'p-value':>9} {'p_holm':>9}  moved"]
    for name, entry in columns.items():
        if entry.get("set"):
            lines.append(f"{name:<8} {entry['mean']:>7.3f} {entry['sd']:>6.3f} "
                         f"{'(the target)':>20}")
            continue
        lines.append(f"{name:<8} {entry['mean']:>7.3f} {entry['sd']:>6.3f} "
                     f"{entry['p_value']:>9.3g} {entry['p_holm']:>9.3g}  "
                     f"{'yes' if entry['moved'] else 'no'}")
    lines.append(f"Moved: {', '.join(moved) if moved else 'none'}. The rows join the data "
                 "as a regime: ci_test, run_algorithm (gies, jci-pc) and run_code read them.")
    data = {"regime": regime.index, "target": regime.target, "value": regime.value,
            "n": regime.n, "method": args.method, "rows_used": regimes.rows_used,
            "rows_left": regimes.rows_left, "columns": columns, "moved": moved}
    return ToolResult(text="\n".join(lines), data=data)


def _rl_intervene_args(state: EpisodeState, i: int, j: int) -> dict[str, Any]:
    """The RL view's experiment on variable i: a randomized experiment of the RL view's
    rows (:data:`DEFAULT_ROWS_PER_EXPERIMENT`, or the budget when it is smaller)."""
    regimes = state.require_regimes()
    return {"target": state.names[i], "value": None,
            "n": max(MIN_EXPERIMENT_ROWS, min(DEFAULT_ROWS_PER_EXPERIMENT, regimes.budget)),
            "method": "fisherz"}


register_tool(Tool(
    name="intervene",
    description="Run an experiment: draw n fresh rows from the hidden causal model with the "
                "target set by intervention, do(target = value), and add them to the data as "
                "a new regime (value null: each row's value drawn from the target's own "
                "distribution, a randomized experiment). Shows which columns respond, i.e. "
                "the target's descendants. Costs n rows of the experiment budget and one step.",
    args_model=InterveneArgs, run=_intervene, category="experiment", experiments_only=True,
    rl=RLSpec("intervene", "variable", make_args=_rl_intervene_args)))
