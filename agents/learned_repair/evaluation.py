"""The learned repair scored offline: each instance repaired by the expected-F1 rule from its
repair table and hidden record (the decisions the policy makes in an episode), summarised
with paired intervals against PC-KCI and BCA_φ."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.learned_repair.rule import adjacency_f1, expected_f1_selection
from heuresis_env.errors import HeuresisError
from heuresis_env.metrics import paired_bootstrap
from heuresis_env.studies import STUDY_FEATURES, PairRecord, study

__all__ = ["BCA_FILE", "InstanceOutcome", "algorithm_f1", "bca_choices", "compare_with_rl",
           "comparison_table", "evaluate_split", "evaluation_table", "repair_outcomes",
           "summarize"]

#: the shipped BCA_φ selection at d = 10, n = 600 (written by `heuresis baselines --json`)
BCA_FILE = (Path(__file__).resolve().parents[2] / "baselines" / "data"
            / "bca_selection_d10_n600.json")


@dataclass
class InstanceOutcome:
    """One instance repaired by the rule: F1 before and after, and what changed."""

    instance: str
    family: str
    f1_start: float
    f1_repaired: float
    f1_best_cut: float  # the same ranking cut at the best size in hindsight
    f1_oracle: float    # every wrong deletion restored (the ideal oracle)
    restored: int
    restored_true: int
    removed: int
    removed_false: int
    wrong_deletions: int
    false_keeps: int
    threshold: float


def repair_outcomes(records: Sequence[PairRecord], probabilities: Sequence[float]
                    ) -> list[InstanceOutcome]:
    """Apply the expected-F1 rule instance by instance and score the result."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    by_instance: dict[str, list[int]] = {}
    for position, record in enumerate(records):
        by_instance.setdefault(record.instance, []).append(position)
    out = []
    for instance, rows in by_instance.items():
        kept = np.array([records[r].kept for r in rows])
        truth = np.array([records[r].true_edge for r in rows])
        q = probabilities[rows]
        selected, _, threshold = expected_f1_selection(q)
        order = np.argsort(-q, kind="stable")
        best_cut = max(adjacency_f1(np.isin(np.arange(len(q)), order[:m]), truth)
                       for m in range(len(q) + 1))
        out.append(InstanceOutcome(
            instance=instance, family=records[rows[0]].family,
            f1_start=adjacency_f1(kept, truth), f1_repaired=adjacency_f1(selected, truth),
            f1_best_cut=best_cut, f1_oracle=adjacency_f1(kept | truth, truth),
            restored=int(np.sum(selected & ~kept)), restored_true=int(np.sum(selected & ~kept & truth)),
            removed=int(np.sum(~selected & kept)), removed_false=int(np.sum(~selected & kept & ~truth)),
            wrong_deletions=int(np.sum(~kept & truth)), false_keeps=int(np.sum(kept & ~truth)),
            threshold=float(threshold)))
    return out


def summarize(outcomes: Sequence[InstanceOutcome], n_resamples: int = 10_000) -> dict[str, Any]:
    """Mean F1s, the paired interval of repaired − start, and restore/remove precision."""
    start = [o.f1_start for o in outcomes]
    gain = paired_bootstrap([o.f1_repaired for o in outcomes], start, n_resamples=n_resamples)
    best = paired_bootstrap([o.f1_best_cut for o in outcomes], start, n_resamples=n_resamples)
    restored = sum(o.restored for o in outcomes)
    removed = sum(o.removed for o in outcomes)
    wrong = sum(o.wrong_deletions for o in outcomes)
    false_keeps = sum(o.false_keeps for o in outcomes)
    return {
        "instances": len(outcomes),
        "f1_start": float(np.mean(start)),
        "f1_repaired": float(np.mean([o.f1_repaired for o in outcomes])),
        "f1_oracle": float(np.mean([o.f1_oracle for o in outcomes])),
        "gain": [gain.mean, gain.low, gain.high],
        "gain_best_cut": [best.mean, best.low, best.high],
        "restored": restored,
        "restore_precision": (sum(o.restored_true for o in outcomes) / restored
                              if restored else float("nan")),
        "restore_recall": (sum(o.restored_true for o in outcomes) / wrong
                           if wrong else float("nan")),
        "removed": removed,
        "remove_precision": (sum(o.removed_false for o in outcomes) / removed
                             if removed else float("nan")),
        "remove_recall": (sum(o.removed_false for o in outcomes) / false_keeps
                          if false_keeps else float("nan")),
    }


def bca_choices(path: str | Path) -> dict[str, str]:
    """BCA_φ per family from a ``heuresis baselines --json`` file (baselines/data/...)."""
    tables = json.loads(Path(path).read_text(encoding="utf-8"))["tables"]
    return {table["family"]: table["bca"] for table in tables}


def algorithm_f1(records: Sequence[PairRecord], algorithm: str) -> dict[str, float]:
    """Each instance's adjacency F1 of one reference algorithm's output, read from the repair
    table (``pc-kci`` is PC-KCI's own output, the ``kept`` column)."""
    name = "kept" if algorithm == "pc-kci" else f"keeps_{algorithm.replace('-', '_')}"
    if name not in STUDY_FEATURES:
        raise HeuresisError(f"{algorithm!r} is not a column of the repair table")
    column = STUDY_FEATURES.index(name)
    by_instance: dict[str, tuple[list[float], list[bool]]] = {}
    for record in records:
        values, truth = by_instance.setdefault(record.instance, ([], []))
        values.append(record.values[column])
        truth.append(record.true_edge)
    out = {}
    for instance, (values, truth) in by_instance.items():
        if np.any(np.isnan(values)):
            raise HeuresisError(f"{algorithm} did not run on {instance}; no F1 to compare")
        out[instance] = adjacency_f1(np.array(values) == 1, np.array(truth))
    return out


def evaluate_split(model: Any, families: Sequence[str], split: str = "test", count: int = 32,
                   salt: str | None = None, bca: dict[str, str] | None = None,
                   n_resamples: int = 10_000, progress=None, d: int = 10,
                   n: int = 600) -> dict[str, Any]:
    """The repaired F1 against PC-KCI and BCA_φ on ``count`` instances of each family.

    Computed from each instance's repair table and hidden record, the same decisions the
    ``learned-repair`` policy makes in an episode (a test checks that the two agree).
    """
    out: dict[str, Any] = {"split": split, "salted": salt is not None, "count": count,
                           "families": {}}
    for family in families:
        records, _ = study([family], range(count), split, salt, progress=progress, d=d, n=n)
        outcomes = repair_outcomes(records, model.predict_records(records))
        row = summarize(outcomes, n_resamples)
        repaired = [o.f1_repaired for o in outcomes]
        choice = (bca or {}).get(family, "pc-kci")
        bca_f1 = algorithm_f1(records, choice)
        versus_bca = paired_bootstrap(repaired, [bca_f1[o.instance] for o in outcomes],
                                      n_resamples=n_resamples)
        row.update(bca=choice, f1_bca=float(np.mean(list(bca_f1.values()))),
                   gain_vs_bca=[versus_bca.mean, versus_bca.low, versus_bca.high],
                   per_instance=[{"instance": o.instance, "f1_start": o.f1_start,
                                  "f1_repaired": o.f1_repaired, "f1_bca": bca_f1[o.instance],
                                  "restored": o.restored, "restored_true": o.restored_true,
                                  "removed": o.removed, "removed_false": o.removed_false}
                                 for o in outcomes])
        out["families"][family] = row
    everything = [r for row in out["families"].values() for r in row["per_instance"]]
    if everything:
        pooled = paired_bootstrap([r["f1_repaired"] for r in everything],
                                  [r["f1_bca"] for r in everything], n_resamples=n_resamples)
        out["all_families_gain_vs_bca"] = [pooled.mean, pooled.low, pooled.high]
    return out


def evaluation_table(result: dict[str, Any]) -> str:
    """A markdown table of :func:`evaluate_split`'s result, one row per family."""
    lines = ["| family | PC-KCI | BCA_φ | learned-repair | Δ vs PC-KCI [95%] | Δʳ vs BCA_φ [95%] "
             "| restored (true) | removed (false) | oracle |", "|---" * 9 + "|"]
    for family, row in result["families"].items():
        gain, versus = row["gain"], row["gain_vs_bca"]
        restored_true = sum(r["restored_true"] for r in row["per_instance"])
        removed_false = sum(r["removed_false"] for r in row["per_instance"])
        lines.append(
            f"| {family} | {row['f1_start']:.3f} | {row['bca']} {row['f1_bca']:.3f} | "
            f"{row['f1_repaired']:.3f} | {gain[0]:+.3f} [{gain[1]:+.3f}, {gain[2]:+.3f}] | "
            f"{versus[0]:+.3f} [{versus[1]:+.3f}, {versus[2]:+.3f}] | {row['restored']} "
            f"({restored_true}) | {row['removed']} ({removed_false}) | {row['f1_oracle']:.3f} |")
    pooled = result.get("all_families_gain_vs_bca")
    if pooled:
        lines.append(f"\nAll families, Δʳ vs BCA_φ: {pooled[0]:+.3f} [{pooled[1]:+.3f}, "
                     f"{pooled[2]:+.3f}] ({result['count']} instances per family, "
                     f"split {result['split']}{', salted' if result['salted'] else ''}).")
    return "\n".join(lines)


def compare_with_rl(result: dict[str, Any], rl_report: dict[str, Any],
                    n_resamples: int = 10_000) -> dict[str, Any]:
    """An RL policy's test F1s (a ``heuresis train`` report, one family or ``all``) beside
    :func:`evaluate_split`'s result on the same instances, paired by instance: the RL policy
    against PC-KCI, BCA_φ and ``learned-repair``, per family and pooled."""
    per_family = rl_report.get("per_family") or {
        rl_report["family"]: {"policy_f1": rl_report["policy_f1"],
                              "start_f1": rl_report["start_f1"]}}
    indices = list(rl_report["test_indices"])
    out: dict[str, Any] = {"families": {}}
    pooled: dict[str, list[float]] = {"rl": [], "pc-kci": [], "bca": [], "learned": []}
    for family, rl in per_family.items():
        row = result["families"].get(family)
        if row is None:
            raise HeuresisError(f"the evaluation has no {family!r}; it has "
                                f"{sorted(result['families'])}")
        by_index = {int(r["instance"].rsplit("/", 1)[1]): r for r in row["per_instance"]}
        missing = [k for k in indices if k not in by_index]
        if missing:
            raise HeuresisError(f"{family}: test instances {missing} of the RL report are not "
                                "in the evaluation; evaluate with a larger --count")
        rows = [by_index[k] for k in indices]
        start = [r["f1_start"] for r in rows]
        if not np.allclose(start, rl["start_f1"]):
            raise HeuresisError(f"{family}: PC-KCI's F1 differs between the RL report and the "
                                "repair tables; they were computed on different guided starts")
        columns = {"rl": list(rl["policy_f1"]), "pc-kci": start,
                   "bca": [r["f1_bca"] for r in rows],
                   "learned": [r["f1_repaired"] for r in rows]}
        entry: dict[str, Any] = {name: float(np.mean(v)) for name, v in columns.items()}
        entry["bca_name"] = row["bca"]
        for other in ("pc-kci", "bca", "learned"):
            diff = paired_bootstrap(columns["rl"], columns[other], n_resamples=n_resamples)
            entry[f"rl_vs_{other}"] = [diff.mean, diff.low, diff.high]
            pooled[other] += columns[other]
        pooled["rl"] += columns["rl"]
        out["families"][family] = entry
    for other in ("pc-kci", "bca", "learned"):
        diff = paired_bootstrap(pooled["rl"], pooled[other], n_resamples=n_resamples)
        out[f"all_rl_vs_{other}"] = [diff.mean, diff.low, diff.high]
    out["instances_per_family"] = len(indices)
    return out


def comparison_table(comparison: dict[str, Any]) -> str:
    """A markdown table of :func:`compare_with_rl`'s result."""
    def interval(v: list[float]) -> str:
        return f"{v[0]:+.3f} [{v[1]:+.3f}, {v[2]:+.3f}]"

    lines = ["| family | PC-KCI | BCA_φ | learned-repair | RL | RL − PC-KCI [95%] | "
             "RL − BCA_φ [95%] | RL − learned-repair [95%] |", "|---" * 8 + "|"]
    for family, e in comparison["families"].items():
        lines.append(f"| {family} | {e['pc-kci']:.3f} | {e['bca_name']} {e['bca']:.3f} | "
                     f"{e['learned']:.3f} | {e['rl']:.3f} | {interval(e['rl_vs_pc-kci'])} | "
                     f"{interval(e['rl_vs_bca'])} | {interval(e['rl_vs_learned'])} |")
    lines.append(f"| all (pooled) | | | | | {interval(comparison['all_rl_vs_pc-kci'])} | "
                 f"{interval(comparison['all_rl_vs_bca'])} | "
                 f"{interval(comparison['all_rl_vs_learned'])} |")
    return "\n".join(lines)
