"""The experiments section of a report (issue 44, ``docs/experiments.md``): adjacency F1, SHD
and orientation accuracy against the rows of experiments spent, one curve per policy, beside the observational
references (BCA_φ, the oracle, any arm run without an experiment budget).

An arm's point is (mean rows spent per episode, mean score over its instances) with the
report's bootstrap interval; the arms of one policy at several budgets make its curve.
"""

from __future__ import annotations

import math

import numpy as np

from heuresis_env.reports.loading import Arm, LoadedRuns
from heuresis_env.reports.tables import Settings, Table, fmt, fmt_interval, report_interval


def budget(arm: Arm) -> int:
    """The arm's experiment budget in rows (0: observational)."""
    return int(arm.settings.get("experiments") or 0)


def curve_name(arm: Arm) -> str:
    """The curve an arm belongs to: its label without the budget's part."""
    label = arm.label
    for part in (f"{budget(arm)} experiment rows, ", f", {budget(arm)} experiment rows",
                 f" [{budget(arm)} experiment rows]", f"{budget(arm)} experiment rows"):
        label = label.replace(part, "")
    return label.replace(" []", "").strip()


def rows_spent(arm: Arm) -> float:
    """Mean rows of experiments an episode of the arm drew (0 without a budget)."""
    spent = [e.experiment_rows or 0 for e in arm.episodes_of() if not e.error]
    return float(np.mean(spent)) if spent else math.nan


def experiments_table(loaded: LoadedRuns, settings: Settings) -> Table:
    """One row per arm when some arm had an experiment budget (empty otherwise): its budget,
    the rows it spent, and its F1 and SHD over every family's instances."""
    table = Table("experiments", "Experiments: F1 and SHD against rows spent",
                  ["policy", "experiment budget (rows)", "rows spent (mean)", "F1", "SHD",
                   "orientation", "instances"])
    if not any(budget(arm) for arm in loaded.arms):
        return table
    arms = sorted(loaded.arms, key=lambda a: (budget(a) > 0, curve_name(a), budget(a)))
    for arm in arms:
        instances = arm.instances()
        f1 = report_interval([arm.instance_score(i, "f1") for i in instances], None, settings)
        shd = report_interval([arm.instance_score(i, "shd") for i in instances], None,
                              settings)
        # orientation accuracy: the share of the true edges found that are oriented right (a
        # score result lines hold since issue 44; nan for lines written before it)
        orientation = report_interval([arm.instance_score(i, "orientation") for i in instances],
                                      None, settings)
        spent = rows_spent(arm)
        table.add([curve_name(arm), budget(arm), fmt(spent, 0), fmt_interval(f1),
                   fmt_interval(shd, 2), fmt_interval(orientation), len(instances)],
                  {"label": curve_name(arm), "arm": arm.label, "budget": budget(arm),
                   "rows_spent": spent, "f1": f1.mean, "f1_low": f1.low, "f1_high": f1.high,
                   "shd": shd.mean, "shd_low": shd.low, "shd_high": shd.high,
                   "orientation": orientation.mean,
                   "reference": arm.is_reference, "instances": len(instances)})
    table.notes.append(
        "Arms without an experiment budget (rows spent 0) are the observational references; "
        "a policy run at several budgets draws a curve. Paired comparisons on the same "
        "instances: heuresis report's gain tables, or benchmarks/bench_experiments.py.")
    return table
