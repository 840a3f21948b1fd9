"""Offline evaluation of the grid model: what the two policies submit, scored per instance.

For each instance the model gives q = P(adjacent) for every pair; the expected-F1 rule
(:func:`agents.learned_repair.expected_f1_selection`) picks the edge set. ``amortized``
submits that set; ``amortized-repair`` reaches the same skeleton by editing PC-KCI's output
(restoring the selected pairs PC-KCI deleted, removing the kept pairs not selected), which
the step budget never limits at d = 10 (at most 45 edits in 50 steps) — so both have the same
adjacency F1, computed here from the grid alone; the episodes' own scores are checked against
this in the tests. PC-KCI, BCA_φ (read from the grid's algorithm columns) and the ideal
oracle (PC-KCI with every wrong deletion restored) are scored on the same instances.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.amortized.dataset import ExampleSet
from agents.amortized.model import GridModel
from agents.learned_repair import BCA_FILE, adjacency_f1, bca_choices, expected_f1_selection
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import GRID_PAIR_FEATURE_NAMES
from heuresis_env.metrics import paired_bootstrap

__all__ = ["InstanceScore", "bca_column", "cost_table", "outcome_table", "score_examples",
           "select_edges", "summarize_scores", "write_scores"]

#: grid columns holding a reference algorithm's adjacency
_ALGORITHM_COLUMNS = {"pc-kci": "pc_kci_kept", "pc-fisherz": "pc_fz_kept", "boss": "boss_adj",
                      "grasp": "grasp_adj", "ges": "ges_adj"}


def bca_column(algorithm: str) -> str:
    """The grid column holding ``algorithm``'s adjacency (BCA_φ's output)."""
    try:
        return _ALGORITHM_COLUMNS[algorithm]
    except KeyError:
        raise HeuresisError(f"BCA {algorithm!r} has no column in the evidence grid; known: "
                            f"{sorted(_ALGORITHM_COLUMNS)}") from None


def select_edges(q: np.ndarray) -> tuple[np.ndarray, float]:
    """The expected-F1 edge set of one instance: (d, d) symmetric bool, and the expected F1."""
    d = q.shape[0]
    upper = np.triu_indices(d, 1)
    chosen, f1_star, _ = expected_f1_selection(q[upper])
    selected = np.zeros((d, d), dtype=bool)
    selected[upper] = chosen
    return selected | selected.T, f1_star


@dataclass(frozen=True)
class InstanceScore:
    family: str
    split: str
    index: int
    pc_kci: float
    bca: float
    bca_algorithm: str
    amortized: float
    oracle: float
    expected_f1: float
    best_cut: float  # F1 of the model's ranking cut at the best size in hindsight
    restored: int
    restored_true: int
    removed: int
    removed_false: int


def _f1(adjacency: np.ndarray, truth: np.ndarray) -> float:
    upper = np.triu_indices(truth.shape[0], 1)
    return adjacency_f1(adjacency[upper] > 0, truth[upper] > 0)


def score_examples(model: GridModel, examples: ExampleSet,
                   bca: Mapping[str, str] | None = None) -> list[InstanceScore]:
    """Score the model's selection, PC-KCI, BCA_φ and the oracle on every example."""
    bca = dict(bca) if bca is not None else bca_choices(BCA_FILE)
    q_all = model.probabilities(examples.pairs, examples.nodes)
    kci = GRID_PAIR_FEATURE_NAMES.index("pc_kci_kept")
    truth_all = examples.skeleton
    out = []
    for k in range(len(examples)):
        family = str(examples.family[k])
        truth = truth_all[k]
        start = examples.pairs[k, :, :, kci] > 0.5
        selected, f1_star = select_edges(q_all[k])
        algorithm = bca.get(family, "pc-kci")
        reference = examples.pairs[k, :, :, GRID_PAIR_FEATURE_NAMES.index(bca_column(algorithm))]
        upper = np.triu(np.ones_like(start, dtype=bool), 1)
        restored = selected & ~start & upper
        removed = start & ~selected & upper
        iu = np.triu_indices(truth.shape[0], 1)
        ranked = truth[iu][np.argsort(-q_all[k][iu], kind="stable")] > 0
        hits = np.cumsum(ranked)
        sizes = np.arange(1, ranked.size + 1)
        best_cut = float(np.max(2 * hits / (sizes + ranked.sum()), initial=0.0)) \
            if ranked.any() else 1.0
        out.append(InstanceScore(
            family=family, split=str(examples.split[k]), index=int(examples.index[k]),
            pc_kci=_f1(start, truth), bca=_f1(reference > 0.5, truth), bca_algorithm=algorithm,
            amortized=_f1(selected, truth), oracle=_f1(start | (truth > 0), truth),
            expected_f1=float(f1_star), best_cut=best_cut, restored=int(restored.sum()),
            restored_true=int((restored & (truth > 0)).sum()), removed=int(removed.sum()),
            removed_false=int((removed & (truth == 0)).sum())))
    return out


def summarize_scores(scores: Sequence[InstanceScore], seed: int = 0,
                     n_resamples: int = 10_000) -> dict[str, Any]:
    """Means and paired 95% bootstrap intervals against PC-KCI and BCA_φ, per family and
    over all (the same seed for every interval)."""
    groups: dict[str, list[InstanceScore]] = {}
    for score in scores:
        groups.setdefault(score.family, []).append(score)
    groups["all"] = list(scores)
    out: dict[str, Any] = {}
    for name, group in groups.items():
        amortized = np.array([s.amortized for s in group])
        pc_kci = np.array([s.pc_kci for s in group])
        bca = np.array([s.bca for s in group])
        versus_pc = paired_bootstrap(amortized, pc_kci, n_resamples=n_resamples, seed=seed)
        versus_bca = paired_bootstrap(amortized, bca, n_resamples=n_resamples, seed=seed)
        out[name] = {
            "instances": len(group), "pc_kci": float(pc_kci.mean()), "bca": float(bca.mean()),
            "bca_algorithm": sorted({s.bca_algorithm for s in group}),
            "amortized": float(amortized.mean()),
            "oracle": float(np.mean([s.oracle for s in group])),
            "best_cut": float(np.mean([s.best_cut for s in group])),
            "delta_pc_kci": [versus_pc.mean, versus_pc.low, versus_pc.high],
            "delta_bca": [versus_bca.mean, versus_bca.low, versus_bca.high],
            "restored": sum(s.restored for s in group),
            "restored_true": sum(s.restored_true for s in group),
            "removed": sum(s.removed for s in group),
            "removed_false": sum(s.removed_false for s in group)}
    return out


def transfer_summary(held_out: Sequence[InstanceScore], all_families: Sequence[InstanceScore],
                     seed: int = 0, n_resamples: int = 10_000) -> dict[str, Any]:
    """Leave-one-family-out on one family: the model trained without the family
    (``held_out``) against PC-KCI, BCA_φ and the model trained with it (``all_families``), on
    the same instances (paired 95% bootstrap intervals, one seed)."""
    if [(s.family, s.index) for s in held_out] != [(s.family, s.index) for s in all_families]:
        raise HeuresisError("leave-one-family-out scores must cover the same instances in the "
                            "same order")
    without = np.array([s.amortized for s in held_out])
    with_family = np.array([s.amortized for s in all_families])
    pc_kci = np.array([s.pc_kci for s in held_out])
    bca = np.array([s.bca for s in held_out])
    row: dict[str, Any] = {"instances": len(held_out), "pc_kci": float(pc_kci.mean()),
                           "bca": float(bca.mean()), "without": float(without.mean()),
                           "with": float(with_family.mean())}
    for name, other in (("delta_pc_kci", pc_kci), ("delta_bca", bca),
                        ("delta_with", with_family)):
        result = paired_bootstrap(without, other, n_resamples=n_resamples, seed=seed)
        row[name] = [result.mean, result.low, result.high]
    return row


def transfer_table(rows: Mapping[str, Mapping[str, Any]]) -> str:
    """A Markdown table of :func:`transfer_summary` rows, one per held-out family."""
    lines = ["| held-out family | n | PC-KCI | BCA_φ | trained with it | trained without it "
             "| without − PC-KCI [95%] | without − BCA_φ [95%] | without − with [95%] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        lines.append(
            f"| {name} | {row['instances']} | {row['pc_kci']:.3f} | {row['bca']:.3f} | "
            f"{row['with']:.3f} | {row['without']:.3f} | {_interval(row['delta_pc_kci'])} | "
            f"{_interval(row['delta_bca'])} | {_interval(row['delta_with'])} |")
    return "\n".join(lines)


def _interval(values: Sequence[float]) -> str:
    mean, low, high = values
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def outcome_table(summary: Mapping[str, Any]) -> str:
    """A Markdown table of :func:`summarize_scores`' output."""
    lines = ["| family | n | PC-KCI | BCA_φ | amortized | Δ vs PC-KCI [95%] | Δʳ vs BCA_φ [95%] "
             "| restored (true) | removed (false) | best cut | oracle |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in summary.items():
        lines.append(
            f"| {name} | {row['instances']} | {row['pc_kci']:.3f} | "
            f"{'/'.join(row['bca_algorithm'])} {row['bca']:.3f} | {row['amortized']:.3f} | "
            f"{_interval(row['delta_pc_kci'])} | {_interval(row['delta_bca'])} | "
            f"{row['restored']} ({row['restored_true']}) | {row['removed']} "
            f"({row['removed_false']}) | {row.get('best_cut', float('nan')):.3f} | "
            f"{row['oracle']:.3f} |")
    return "\n".join(lines)


def write_scores(path: str | Path, scores: Sequence[InstanceScore],
                 extra: Mapping[str, Any] | None = None) -> None:
    Path(path).write_text(json.dumps({**(extra or {}),
                                      "scores": [asdict(s) for s in scores]}, indent=1) + "\n",
                          encoding="utf-8")


#: the grid's parts, in the order computed (``pc_kci_wall``: PC-KCI's own run, the guided start)
COST_PARTS = ("pc_kci_wall", "correlations", "fisherz_screen", "pc_fisherz", "pc_kci_read",
              "algorithms", "regressions")


def cost_table(examples: ExampleSet) -> str:
    """Seconds per instance of each part of the grid (CPU, but PC-KCI's wall time), per family:
    mean, median and maximum, and the grid's total without PC-KCI."""
    parts = list(examples.seconds_parts)
    columns = [p for p in COST_PARTS if p in parts]
    grid = [p for p in columns if p != "pc_kci_wall"]
    lines = ["| family | instances | " + " | ".join(columns) + " | grid without PC-KCI (mean / "
             "median / max) |", "|---|---|" + "---|" * (len(columns) + 1)]
    for family in [*sorted(set(examples.family.tolist())), "all"]:
        mask = np.ones(len(examples), bool) if family == "all" else examples.family == family
        seconds = examples.seconds[mask]
        cells = [f"{np.nanmean(seconds[:, parts.index(p)]):.3f}" for p in columns]
        total = np.nansum(seconds[:, [parts.index(p) for p in grid]], axis=1)
        lines.append(f"| {family} | {int(mask.sum())} | " + " | ".join(cells) +
                     f" | {total.mean():.2f} / {np.median(total):.2f} / {total.max():.2f} |")
    return "\n".join(lines)
