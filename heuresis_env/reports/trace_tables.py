"""The report's tables read from traces: where a policy's edges came from (Table 4,
:mod:`heuresis_env.studies.provenance`) and how it repaired PC-KCI's output (Table 4b), one
row per policy and family."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heuresis_env.reports.tables import (
    MISSING,
    Settings,
    Table,
    finite_mean,
    fmt,
    fmt_interval,
    report_interval,
)


def provenance_table(cells_by_arm: Sequence[Sequence[Any]], settings: Settings) -> Table:
    """Table 4: the edges each policy added to PC-KCI's output, and the best merge of the
    outputs it called."""
    table = Table("table4", "Table 4: edges added to PC-KCI's output, and merge* of the called "
                  "outputs", ["policy", "family", "episodes", "algorithm calls / episode",
                              "added edges", "added, true", "added in no called output",
                              "of those, true", "merge* k", "F1 merge*", "F1 policy",
                              "policy − merge* [95% CI]", "F1 PC-KCI"])
    for cells in cells_by_arm:
        for cell in cells:
            if cell.n_episodes == 0:
                continue
            difference = None
            if cell.merge_instances:
                difference = report_interval(cell.policy_instance_f1,
                                             cell.merge_instance_f1, settings)
            table.add([cell.label, cell.family, str(cell.n_episodes),
                       fmt(cell.n_calls / cell.n_episodes, 1), str(cell.n_added),
                       str(cell.n_added_true), str(cell.n_added_unexplained),
                       str(cell.n_added_unexplained_true),
                       MISSING if cell.merge_k is None else str(cell.merge_k),
                       fmt(cell.merge_f1), fmt(cell.policy_f1_on_merge_episodes),
                       fmt_interval(difference), fmt(cell.pc_kci_f1)],
                      {"label": cell.label, "family": cell.family, "cell": cell,
                       "difference": difference})
    table.notes.append(
        "Added edges: pairs adjacent in the final graph but not in PC-KCI's output (α = 0.05), "
        "summed over episodes; 'true' ones are edges of the hidden DAG. 'In no called output': "
        "in none of the outputs of the run_algorithm calls in the episode's trace (re-run with "
        "the tool's seed). merge*: merge_k of the episode's full-variable outputs with k chosen "
        "in hindsight per policy and family (episodes with fewer outputs merge all of them); F1 "
        "merge* and F1 policy are over the episodes with at least one full-variable output.")
    return table


def repair_table(cells_by_arm: Sequence[Sequence[Any]], settings: Settings) -> Table:
    """Table 4b: what each policy changed in PC-KCI's output and how much of it was right —
    the precision and recall of its restores and removals, and its F1 against PC-KCI's."""
    table = Table("table4_repairs", "Table 4b: repairs of PC-KCI's output (precision and "
                  "recall of the restored and removed pairs)",
                  ["policy", "family", "episodes", "restored (true)", "restore precision",
                   "restore recall", "removed (false)", "removal precision", "removal recall",
                   "F1 policy", "F1 PC-KCI", "policy − PC-KCI [95% CI]"])
    for cells in cells_by_arm:
        for cell in cells:
            if cell.n_episodes == 0:
                continue
            difference = report_interval(cell.final_instance_f1, cell.pc_kci_instance_f1,
                                         settings)
            table.add([cell.label, cell.family, str(cell.n_episodes),
                       f"{cell.n_added} ({cell.n_added_true})", fmt(cell.restore_precision, 2),
                       fmt(cell.restore_recall, 2), f"{cell.n_removed} ({cell.n_removed_false})",
                       fmt(cell.removal_precision, 2), fmt(cell.removal_recall, 2),
                       fmt(finite_mean(cell.final_instance_f1)),
                       fmt(finite_mean(cell.pc_kci_instance_f1)), fmt_interval(difference)],
                      {"label": cell.label, "family": cell.family, "cell": cell,
                       "difference": difference})
    table.notes.append(
        "Against PC-KCI's output (α = 0.05), summed over episodes: restored = pairs adjacent in "
        "the final graph but not in PC-KCI's output (true: edges of the hidden DAG); restore "
        "recall = true restored / true edges PC-KCI lacks; removed = pairs of PC-KCI's output "
        "the final graph lacks (false: not edges of the hidden DAG); removal recall = false "
        "removed / PC-KCI's false adjacencies. policy − PC-KCI: adjacency F1, 95% paired "
        "bootstrap over instances. Every arm with traces is listed; for a repair policy in the "
        "guided condition these are its edits of its starting graph.")
    return table
