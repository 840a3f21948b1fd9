"""What a run did: episodes per family, mean F1 (a question run: the share of correct answers)
over all and over finished episodes, truncations, and the errored episodes with their reasons
(left out of the means, as the reports do)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heuresis_env.console import text_table


@dataclass
class FamilySummary:
    """One family's episodes in a run: mean F1 over all and over finished ones, truncation.

    In a question run ``mean_f1`` and ``mean_f1_finished`` hold the share of correct answers.
    Errored episodes (a policy that raised, was refused a tool it needs or could not submit
    what it computed) are counted in ``errors`` and left out of both means.
    """

    family: str
    episodes: int
    finished: int
    truncated: int
    errors: int
    mean_f1: float
    mean_f1_finished: float
    unscored: int = 0  # episodes on a data table without a true graph (scores None)

    @property
    def truncation_rate(self) -> float:
        return self.truncated / self.episodes if self.episodes else math.nan


@dataclass
class RunSummary:
    """What ``evaluate`` did and the run's per-family results (all its finished episodes)."""

    out_dir: Path
    policy: str
    split: str
    backend: str
    workers: int
    total_episodes: int
    resumed: int
    ran: int
    seconds: float
    families: list[FamilySummary]
    overall: FamilySummary
    accepted_differences: list[str] = field(default_factory=list)
    score_label: str = "F1"
    #: (reason, how many episodes) of the errored episodes, most frequent first
    error_reasons: list[tuple[str, int]] = field(default_factory=list)
    #: what the policy said about how it ran (e.g. a condition it was not trained in)
    notes: list[str] = field(default_factory=list)

    @property
    def all_errored(self) -> bool:
        """True when the run has episodes and every one errored: nothing in it can be scored
        (``heuresis evaluate`` then exits non-zero)."""
        return self.overall.episodes > 0 and self.overall.errors == self.overall.episodes

    def to_text(self) -> str:
        """A plain-text table: per family, episodes, mean F1 (all, finished), truncation."""
        def f1(value: float) -> str:
            return "-" if math.isnan(value) else f"{value:.3f}"

        lines = [f"run {self.out_dir}: policy {self.policy}, {self.split} split, "
                 f"{self.total_episodes} episodes ({self.ran} run now, {self.resumed} resumed) "
                 f"in {self.seconds:.1f} s on {self.backend} backend × {self.workers}"]
        for difference in self.accepted_differences:
            lines.append(f"  config changed under --force: {difference}")
        label = "acc." if self.score_label == "accuracy" else self.score_label
        rows = []
        for row in [*self.families, self.overall]:
            rate = "-" if math.isnan(row.truncation_rate) else \
                f"{100 * row.truncation_rate:.0f}%"
            note = ""
            if row.unscored:
                note = ("no ground truth: graphs submitted, not scored"
                        if row.unscored == row.episodes else
                        f"({row.unscored} episodes without ground truth)")
            rows.append([row.family, row.episodes, f1(row.mean_f1), f1(row.mean_f1_finished),
                         row.finished, rate, row.errors, note])
        lines.append(text_table(["family", "episodes", f"{label} all", f"{label} fin.",
                                 "finished", "truncated", "errors", ""], rows,
                                align="<>>>>>><"))
        if self.error_reasons:
            total = sum(count for _, count in self.error_reasons)
            lines.append(f"errors: {total} episode{'s' if total != 1 else ''}, left out of "
                         "the means:")
            lines += [f"  {count} × {reason}" for reason, count in self.error_reasons]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def error_reasons(records: Sequence[Mapping[str, Any]], limit: int = 10,
                  width: int = 300) -> list[tuple[str, int]]:
    """The errors of ``records`` as (reason, count), most frequent first: at most ``limit``
    distinct reasons (the rest counted in one line), each cut at ``width`` characters."""
    counts: dict[str, int] = {}
    for record in records:
        error = record.get("error")
        if error is not None:
            text = " ".join(str(error).split())
            text = text if len(text) <= width else text[:width - 1] + "…"
            counts[text] = counts.get(text, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if len(ranked) > limit:
        rest = sum(count for _, count in ranked[limit - 1:])
        ranked = [*ranked[:limit - 1], (f"({len(ranked) - limit + 1} other reasons)", rest)]
    return ranked


def run_notes(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The distinct notes the policy left on its episodes, in order."""
    notes = [str(n) for r in records for n in (r.get("notes") or []) if isinstance(n, str)]
    return list(dict.fromkeys(notes))


def summarize_family(family: str, records: Sequence[Mapping[str, Any]],
                     score: str = "f1") -> FamilySummary:
    """Per-family figures of the reporting rule: all episodes, finished ones, truncation
    (``score``: the mean taken, F1 or a question run's ``correct``); the means leave errored
    episodes out."""
    f1 = [math.nan if r.get("error") is not None else _float(r.get("scores", {}).get(score))
          for r in records]
    finished = [x for x, r in zip(f1, records) if r.get("finished")]
    return FamilySummary(family=family, episodes=len(records), finished=len(finished),
                         truncated=sum(bool(r.get("truncated")) for r in records),
                         errors=sum(r.get("error") is not None for r in records),
                         mean_f1=_mean(f1), mean_f1_finished=_mean(finished),
                         unscored=sum(r.get("ground_truth") is False for r in records))
