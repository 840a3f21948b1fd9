"""The report's tables, each as data (numbers per row) and as Markdown.

Conventions (``docs/scores.md``, ``docs/reports.md``):

- the unit of every mean and every bootstrap is the **instance**: an arm's score on an
  instance is the mean over its repeats there; a cell's mean is the mean over instances;
- **paired** comparisons (Δʳ_φ, headrooms, guided − unguided, …) use the instances both arms
  ran; every interval of the report comes from one function, :func:`report_interval`
  (:func:`heuresis_env.metrics.paired_bootstrap`, 10,000 resamples by default), seeded from
  the report's seed and the values themselves, so the same data gets the same interval in
  every table (a − b mirrors b − a) and a number does not depend on what else the report
  holds;
- **errored** episodes (the policy raised, was refused a tool it needs, or could not submit
  what it computed) are left out of every mean and counted apart;
- the **reporting rule**: every cell over all episodes and over finished episodes, with the
  truncation rate. In the finished view an instance counts only its finished repeats, and an
  instance with none is left out of both sides of a comparison;
- Δʳ relative to BCA_φ in % is 100 · Δʳ / F1(BCA_φ) over the same instances.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heuresis_env.cache import stable_hash
from heuresis_env.generation.datasets import one_instance_note
from heuresis_env.metrics import BootstrapResult, paired_bootstrap
from heuresis_env.reports.coinciding import coinciding_note
from heuresis_env.reports.loading import (
    BCA,
    ORACLE,
    PC_KCI,
    Arm,
    InstanceId,
    LoadedRuns,
    pc_kci_arm,
    reference_arm,
)

ALL = "all"
MISSING = "—"
#: (arm, family or "all") → the trace viewer's URL of its episodes, or None
ViewerLink = Callable[[Arm, str], "str | None"]

# ---- formatting --------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 3) -> str:
    """A number with ``digits`` decimals; NaN and None as an em dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:.{digits}f}"


def fmt_signed(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:+.{digits}f}"


def fmt_interval(result: BootstrapResult | None, digits: int = 3) -> str:
    """``+0.012 [-0.004, +0.030]`` (mean and percentile interval)."""
    if result is None or math.isnan(result.mean):
        return MISSING
    return (f"{result.mean:+.{digits}f} [{result.low:+.{digits}f}, "
            f"{result.high:+.{digits}f}]")


def fmt_percent(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:.{digits}f}%"


def fmt_signed_percent(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:+.{digits}f}%"


def _escape(cell: str) -> str:
    return str(cell).replace("|", "\\|").replace("\n", " ")


@dataclass
class Table:
    """One table: formatted cells for reading, raw numbers per row for figures and checks."""

    key: str
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    values: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: per row, the viewer link of each cell (None: no link); the HTML page renders them
    links: list[list[str | None]] = field(default_factory=list)

    def add(self, cells: Sequence[Any], values: dict[str, Any] | None = None,
            links: Sequence[str | None] | None = None) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.key}: {len(cells)} cells for {len(self.columns)} columns")
        if links is not None and len(links) != len(cells):
            raise ValueError(f"{self.key}: {len(links)} links for {len(cells)} cells")
        self.rows.append([str(c) for c in cells])
        self.values.append(dict(values or {}))
        self.links.append(list(links) if links is not None else [None] * len(cells))

    @property
    def empty(self) -> bool:
        return not self.rows

    def to_markdown(self) -> str:
        """The table in GitHub Markdown (a pipe table)."""
        lines = ["| " + " | ".join(_escape(c) for c in self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in self.rows]
        return "\n".join(lines)


# ---- statistics ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    """What every statistic of one report shares."""

    n_resamples: int = 10_000
    confidence: float = 0.95
    seed: int = 0


def report_interval(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray | None,
                    settings: Settings) -> BootstrapResult:
    """The report's one bootstrap: the mean of ``a`` (or of ``a − b``, instance by instance)
    with its percentile interval, every table's intervals made here.

    The seed is a function of the report's seed and of the values (in instance order), so the
    same data gets the same interval wherever it appears; a paired difference is computed in
    one orientation (its first non-zero difference positive) and mirrored, so ``a − b`` and
    ``b − a`` are exact negatives of each other.
    """
    values = np.asarray(a, dtype=float)
    if b is not None:
        values = values - np.asarray(b, dtype=float)
    kept = values[~np.isnan(values)]
    nonzero = kept[kept != 0]
    sign = -1.0 if b is not None and nonzero.size and nonzero[0] < 0 else 1.0
    canonical = sign * values + 0.0  # + 0.0: no negative zero (it would hash apart)
    digest = stable_hash(["report-interval", b is not None,
                          [None if math.isnan(v) else round(float(v), 12) for v in canonical]])
    result = paired_bootstrap(canonical, n_resamples=settings.n_resamples,
                              confidence=settings.confidence,
                              seed=comparison_seed(settings.seed, digest))
    if sign > 0:
        return result
    return BootstrapResult(mean=-result.mean, low=-result.high, high=-result.low,
                           confidence=result.confidence, standard_error=result.standard_error,
                           n=result.n, n_dropped=result.n_dropped,
                           n_resamples=result.n_resamples)


def comparison_seed(seed: int, *parts: Any) -> int:
    """A seed from the report's seed and a name (the studies' and simulations' seeds)."""
    return int(stable_hash([int(seed), *[str(p) for p in parts]])[:8], 16)


@dataclass(frozen=True)
class ArmCell:
    """One arm on one family (or all): episode counts and the mean of a score, both views."""

    n_instances: int
    n_episodes: int
    n_truncated: int
    n_finished: int
    n_errors: int
    mean_all: float
    mean_finished: float
    n_instances_finished: int

    @property
    def truncation_rate(self) -> float:
        return self.n_truncated / self.n_episodes if self.n_episodes else math.nan


def _family_filter(family: str) -> str | None:
    return None if family == ALL else family


def arm_cell(arm: Arm, family: str, score: str = "f1") -> ArmCell:
    """Counts and means of ``score`` for ``arm`` on ``family`` (``"all"`` pools families)."""
    instances = arm.instances(_family_filter(family))
    episodes = arm.episodes_of(_family_filter(family))
    all_values = [arm.instance_score(i, score) for i in instances]
    finished_values = [arm.instance_score(i, score, finished_only=True) for i in instances]
    finished_values = [v for v in finished_values if not math.isnan(v)]
    all_values = [v for v in all_values if not math.isnan(v)]
    return ArmCell(
        n_instances=len(instances), n_episodes=len(episodes),
        n_truncated=sum(e.truncated for e in episodes),
        n_finished=sum(e.finished for e in episodes),
        n_errors=sum(bool(e.error) for e in episodes),
        mean_all=float(np.mean(all_values)) if all_values else math.nan,
        mean_finished=float(np.mean(finished_values)) if finished_values else math.nan,
        n_instances_finished=len(finished_values))


@dataclass(frozen=True)
class Comparison:
    """A paired comparison of arm a against arm b on their shared instances."""

    difference: BootstrapResult
    mean_a: float
    mean_b: float
    n_shared: int     # instances both arms ran
    n_only_a: int     # instances of a that b lacks (left out)

    @property
    def relative_percent(self) -> float:
        """100 · (a − b) / b over the kept instances."""
        if math.isnan(self.mean_b) or self.mean_b == 0:
            return math.nan
        return 100.0 * self.difference.mean / self.mean_b


def paired_comparison(a: Arm, b: Arm, family: str, score: str, finished_only: bool,
                      settings: Settings, repeat: int | None = None) -> Comparison:
    """mean(a − b) over the instances of ``family`` both arms ran, with a paired interval.

    ``finished_only`` takes each side's finished repeats (an instance without one is dropped
    from both sides). ``repeat`` restricts a to one repeat (Table 13).
    """
    instances_a = a.instances(_family_filter(family))
    shared_b = set(b.instances(_family_filter(family)))
    shared = [i for i in instances_a if i in shared_b]
    values_a = np.array([_score(a, i, score, finished_only, repeat) for i in shared])
    values_b = np.array([b.instance_score(i, score, finished_only) for i in shared])
    result = report_interval(values_a, values_b, settings)
    kept = ~(np.isnan(values_a) | np.isnan(values_b)) if shared else np.zeros(0, dtype=bool)
    return Comparison(
        difference=result,
        mean_a=float(values_a[kept].mean()) if kept.any() else math.nan,
        mean_b=float(values_b[kept].mean()) if kept.any() else math.nan,
        n_shared=len(shared), n_only_a=len(instances_a) - len(shared))


def _score(arm: Arm, instance: InstanceId, score: str, finished_only: bool,
           repeat: int | None) -> float:
    if repeat is None:
        return arm.instance_score(instance, score, finished_only)
    episode = arm.episodes.get((*instance, repeat))
    if episode is None or (finished_only and not episode.finished):
        return math.nan
    return episode.score(score)


def mean_interval(arm: Arm, family: str, score: str, settings: Settings,
                  finished_only: bool = False) -> BootstrapResult:
    """The mean of ``score`` over the arm's instances with a bootstrap interval."""
    values = [arm.instance_score(i, score, finished_only)
              for i in arm.instances(_family_filter(family))]
    return report_interval(values, None, settings)


# ---- the tables ---------------------------------------------------------------------------------


def policy_arms(loaded: LoadedRuns) -> list[Arm]:
    """The arms that are not reference policies (bca, oracle, pc-kci)."""
    return [a for a in loaded.arms if not a.is_reference]


def families_with_all(families: Sequence[str]) -> list[str]:
    return [*families, ALL] if len(families) > 1 else list(families)


def _views() -> tuple[tuple[str, bool], ...]:
    return (("all", False), ("finished", True))


def headline_table(loaded: LoadedRuns, settings: Settings,
                   link: ViewerLink | None = None) -> Table:
    """The headline: F1 (all episodes) of every arm per family, Δʳ_φ in parentheses; with
    ``link``, each cell links to the viewer's episodes of that arm and family."""
    families = families_with_all(loaded.families())
    counts = instance_counts(loaded)
    table = Table("headline", "Headline: adjacency F1 over all episodes (Δʳ_φ against BCA_φ)",
                  ["policy", *[f"{family} (n={counts[family]})" for family in families],
                   "truncated"])
    for arm in loaded.arms:
        bca = None if arm.policy == BCA else reference_arm(loaded.arms, BCA, arm)
        cells: list[str] = []
        values: dict[str, Any] = {"label": arm.label}
        links = [link(arm, ALL) if link else None]
        for family in families:
            cell = arm_cell(arm, family)
            links.append(link(arm, family) if link and cell.n_instances else None)
            if cell.n_instances == 0:
                cells.append(MISSING)
                continue
            text = fmt(cell.mean_all)
            values[family] = cell.mean_all
            if bca is not None:
                comparison = paired_comparison(arm, bca, family, "f1", False, settings)
                if comparison.difference.n:
                    text += f" ({fmt_signed(comparison.difference.mean)})"
                    values[f"{family}:delta"] = comparison.difference.mean
            cells.append(text)
        total = arm_cell(arm, ALL)
        cells.append(fmt_percent(100 * total.truncation_rate))
        name = arm.label
        if total.n_errors:  # marked: its means leave those episodes out
            name += f" ⚠ {total.n_errors} errored"
            values["errors"] = total.n_errors
        table.add([name, *cells], values, [*links, None])
    table.notes.append("Cells: mean adjacency F1 over instances (all episodes); in parentheses "
                       "Δʳ_φ = F1(policy) − F1(BCA_φ) on the same instances. n: instances per "
                       "family. Truncated: share of the arm's episodes that hit a budget. "
                       "'⚠ N errored': episodes whose policy raised, was refused a tool it "
                       "needs or could not submit what it computed, left out of the means.")
    coinciding = coinciding_note(loaded.arms, loaded.families())
    if coinciding:
        table.notes.append(coinciding)
    small = small_families(counts)
    if small:
        table.notes.append(small_sample_warning(small, data_table_families(loaded)))
    return table


#: below this many instances per family the report warns that its intervals are unreliable
MIN_INSTANCES = 10


def instance_counts(loaded: LoadedRuns) -> dict[str, int]:
    """Instances per family over every arm (and "all")."""
    families = loaded.families()
    counts = {family: len({i for arm in loaded.arms for i in arm.instances(family)})
              for family in families}
    counts[ALL] = sum(counts.values())
    return counts


def small_families(counts: dict[str, int]) -> dict[str, int]:
    """The families with fewer than :data:`MIN_INSTANCES` instances."""
    return {f: n for f, n in counts.items() if f != ALL and n < MIN_INSTANCES}


def data_table_families(loaded: LoadedRuns) -> set[str]:
    """The families whose instances are data tables (a user's CSV, Sachs): one table is one
    instance, generated by nothing, so neither more instances (--count) nor a salt applies."""
    return {str(key.get("family")) for run in loaded.runs for key in run.instance_keys
            if key.get("graph_model") == "data"}


def small_sample_warning(small: dict[str, int], tables: Collection[str] = ()) -> str:
    """The warning for families with few instances, in the terms of their source: more
    instances of a generated family (--count), more tables for data tables."""
    generated = {family: n for family, n in small.items() if family not in tables}
    table_names = [family for family in small if family in tables]
    parts = []
    if generated:
        listed = ", ".join(f"{family} ({n})" for family, n in generated.items())
        parts.append(f"Fewer than {MIN_INSTANCES} instances per family: {listed}. Means and "
                     "intervals over so few instances are unreliable (a bootstrap interval over "
                     "2 instances can exclude zero by chance); run more instances (--count) "
                     "before reading a gain.")
    if table_names:
        parts.append(one_instance_note(table_names) + ".")
    return " ".join(parts)


def reference_table(loaded: LoadedRuns, settings: Settings,
                    bca_algorithm: dict[str, str] | None = None) -> Table:
    """Table 6 (reference points): BCA_φ, PC-KCI, the oracle and the two headrooms."""
    families = families_with_all(loaded.families())
    table = Table("table6_references",
                  "Table 6a: reference points per family (adjacency F1, all episodes)",
                  ["family", "instances", "BCA_φ algorithm", "F1 BCA_φ [95% CI]", "F1 PC-KCI",
                   "F1 oracle", "selection headroom [95% CI]", "repair headroom [95% CI]"])
    bca, oracle = (reference_arm(loaded.arms, p) for p in (BCA, ORACLE))
    pc_kci = pc_kci_arm(loaded.arms)
    refused = sorted({arm.policy for arm, _ in loaded.refused_references})
    refused_note = (f"Refused as references (UNVERIFIED: not re-derived from their instances, "
                    f"see the warnings): {', '.join(refused)}." if refused else "")
    if bca is None and pc_kci is None and oracle is None:
        given = "were given" if not refused else "are usable"
        table.notes.append(f"No reference runs (policies bca, oracle, pc-kci) {given}, so "
                           "there are no reference points, residual gains or headrooms.")
        table.notes += [refused_note] if refused else []
        return table
    for family in families:
        present = [a for a in (bca, pc_kci, oracle) if a is not None]
        n_instances = max(len(a.instances(_family_filter(family))) for a in present)
        if n_instances == 0:
            continue
        values: dict[str, Any] = {"family": family, "instances": n_instances}
        cells = [family, str(n_instances)]
        cells.append((bca_algorithm or {}).get(family, MISSING) if family != ALL else MISSING)
        if bca is not None:
            bca_mean = mean_interval(bca, family, "f1", settings)
            values["bca"] = bca_mean.mean
            cells.append(MISSING if math.isnan(bca_mean.mean) else
                         f"{bca_mean.mean:.3f} [{bca_mean.low:.3f}, {bca_mean.high:.3f}]")
        else:
            cells.append(MISSING)
        for arm, key in ((pc_kci, "pc_kci"), (oracle, "oracle")):
            mean = arm_cell(arm, family).mean_all if arm is not None else math.nan
            values[key] = mean
            cells.append(fmt(mean))
        for a, b, key in ((bca, pc_kci, "selection_headroom"), (oracle, bca, "repair_headroom")):
            if a is None or b is None:
                cells.append(MISSING)
                continue
            comparison = paired_comparison(a, b, family, "f1", False, settings)
            values[key] = comparison.difference.mean
            values[f"{key}_interval"] = (comparison.difference.low, comparison.difference.high)
            cells.append(fmt_interval(comparison.difference))
        table.add(cells, values)
    table.notes.append("Selection headroom = F1(BCA_φ) − F1(PC-KCI); repair headroom = "
                       "F1(oracle) − F1(BCA_φ); 95% paired bootstrap intervals over instances.")
    missing = [p for p, a in ((BCA, bca), (PC_KCI, pc_kci), (ORACLE, oracle)) if a is None]
    if missing:
        table.notes.append(f"Missing reference runs: {', '.join(missing)} (their columns are "
                           f"{MISSING}).")
    table.notes += [refused_note] if refused else []
    return table


def gain_table(loaded: LoadedRuns, settings: Settings, score: str = "f1",
               key: str = "table6_policies", title: str | None = None,
               include_references: bool = False, link: ViewerLink | None = None) -> Table:
    """Table 6 (policies) or Table 7 (nSHD): each arm per family, both views, Δ against BCA_φ.

    For F1, also Δ against the oracle and Δʳ relative to F1(BCA_φ) in %.
    """
    score_name = "F1" if score == "f1" else score
    is_f1 = score == "f1"
    columns = ["policy", "family", "instances", "episodes", "truncated",
               f"{score_name} all", f"{score_name} finished",
               f"Δ{'ʳ' if is_f1 else ' ' + score_name} all [95% CI]"]
    if is_f1:
        columns.append("Δʳ all %")
    columns.append(f"Δ{'ʳ' if is_f1 else ' ' + score_name} finished [95% CI]")
    if is_f1:
        columns += ["Δʳ finished %", "F1 − oracle all [95% CI]"]
    table = Table(key, title or ("Table 6b: adjacency F1 of every policy against BCA_φ and "
                                 "the oracle"), columns)
    arms = loaded.arms if include_references else policy_arms(loaded)
    unpaired: list[str] = []
    for arm in arms:
        bca = None if arm.policy == BCA else reference_arm(loaded.arms, BCA, arm)
        oracle = reference_arm(loaded.arms, ORACLE, arm) if is_f1 else None
        for family in families_with_all(arm.families()):
            cell = arm_cell(arm, family, score)
            values: dict[str, Any] = {
                "label": arm.label, "family": family, "instances": cell.n_instances,
                "episodes": cell.n_episodes, "truncated": cell.n_truncated,
                "truncation_rate": cell.truncation_rate, "mean_all": cell.mean_all,
                "mean_finished": cell.mean_finished}
            cells = [arm.label, family, str(cell.n_instances), str(cell.n_episodes),
                     f"{cell.n_truncated} ({fmt_percent(100 * cell.truncation_rate)})",
                     fmt(cell.mean_all), fmt(cell.mean_finished)]
            for view, finished_only in _views():
                if bca is None:
                    cells.append(MISSING)
                    if is_f1:
                        cells.append(MISSING)
                    continue
                comparison = paired_comparison(arm, bca, family, score, finished_only,
                                               settings)
                if comparison.n_only_a and not finished_only:
                    unpaired.append(f"{arm.label} on {family}: {comparison.n_only_a} "
                                    f"instance(s) without a {BCA} episode")
                values[f"delta_{view}"] = comparison.difference
                values[f"relative_{view}"] = comparison.relative_percent
                cells.append(fmt_interval(comparison.difference))
                if is_f1:
                    cells.append(fmt_signed_percent(comparison.relative_percent))
            if is_f1:
                if oracle is None or arm is oracle:
                    cells.append(MISSING)
                else:
                    comparison = paired_comparison(arm, oracle, family, score, False, settings)
                    values["oracle_gap"] = comparison.difference
                    cells.append(fmt_interval(comparison.difference))
            target = link(arm, family) if link else None
            table.add(cells, values, [target, target] + [None] * (len(cells) - 2))
    if unpaired:
        table.notes.append("Left out of the paired Δ (no reference episode): "
                           + "; ".join(unpaired) + ".")
    if table.empty:
        table.notes.append("No policy runs besides the references were given.")
    table.notes.append(
        "Instances: instances the arm ran; episodes: instances × repeats. 'all' uses every "
        "episode (a truncated episode is scored on its working graph); 'finished' only the "
        "episodes that submitted, and a paired Δ then drops the instances without one from "
        "both sides. Δ = policy − BCA_φ, 95% paired bootstrap interval over instances"
        + (", % relative to F1(BCA_φ)." if is_f1 else "; lower nSHD is better."))
    return table


def nshd_table(loaded: LoadedRuns, settings: Settings,
               link: ViewerLink | None = None) -> Table:
    """Table 7: nSHD of every arm (references included) per family, both views."""
    targets = sorted({str(a.settings.get("target")) for a in loaded.arms})
    table = gain_table(loaded, settings, score="nshd", key="table7",
                       title="Table 7: nSHD (SHD / d against the true DAG) of every policy",
                       include_references=True, link=link)
    table.notes.append(f"Stated target(s) of these runs: {', '.join(targets)}. The paper's "
                       "Table 7 is on runs with target dag.")
    return table


#: the conditions Table 8 compares, and which value is "a" in a − b
CONDITION_CONTRASTS: dict[str, tuple[Any, Any, str]] = {
    "guided": (True, False, "guided − unguided"),
    "toolbox": ("full", "minimal", "full − minimal toolbox"),
}


def condition_pairs(loaded: LoadedRuns) -> list[tuple[str, Arm, Arm]]:
    """(condition, arm a, arm b) for arms of one policy that differ in exactly that condition."""
    pairs = []
    for condition, (value_a, value_b, _) in CONDITION_CONTRASTS.items():
        for a in loaded.arms:
            if a.settings.get(condition) != value_a:
                continue
            for b in loaded.arms:
                if b is a or b.settings.get(condition) != value_b or b.policy != a.policy:
                    continue
                others_a = {k: v for k, v in a.settings.items() if k != condition}
                others_b = {k: v for k, v in b.settings.items() if k != condition}
                if (others_a == others_b and a.policy_options == b.policy_options
                        and a.size == b.size):
                    pairs.append((condition, a, b))
    return pairs


def condition_table(loaded: LoadedRuns, settings: Settings) -> Table:
    """Table 8: guided vs unguided and full vs minimal toolbox, as paired differences."""
    table = Table("table8", "Table 8: guided vs unguided, full vs minimal toolbox (paired)",
                  ["policy", "contrast", "family", "instances", "F1 a", "F1 b",
                   "a − b all [95% CI]", "a − b finished [95% CI]", "recall a", "recall b",
                   "truncated a", "truncated b"])
    for condition, a, b in condition_pairs(loaded):
        contrast = CONDITION_CONTRASTS[condition][2]
        shared_families = [f for f in a.families() if f in set(b.families())]
        for family in families_with_all(shared_families):
            all_view = paired_comparison(a, b, family, "f1", False, settings)
            finished_view = paired_comparison(a, b, family, "f1", True, settings)
            recall = paired_comparison(a, b, family, "recall", False, settings)
            cell_a, cell_b = arm_cell(a, family), arm_cell(b, family)
            table.add([a.policy, contrast, family, str(all_view.n_shared),
                       fmt(all_view.mean_a), fmt(all_view.mean_b),
                       fmt_interval(all_view.difference), fmt_interval(finished_view.difference),
                       fmt(recall.mean_a), fmt(recall.mean_b),
                       fmt_percent(100 * cell_a.truncation_rate),
                       fmt_percent(100 * cell_b.truncation_rate)],
                      {"policy": a.policy, "condition": condition, "contrast": contrast,
                       "family": family, "label_a": a.label, "label_b": b.label,
                       "all": all_view.difference, "finished": finished_view.difference})
    if table.empty:
        table.notes.append("No pair of runs of one policy differing only in guided or only in "
                           "toolbox was given; run the same policy under both conditions "
                           "(e.g. with and without --guided) to fill this table.")
    else:
        table.notes.append("a and b are runs of one policy differing only in the named "
                           "condition; differences are paired over their shared instances.")
    return table


def repeats_table(loaded: LoadedRuns, settings: Settings,
                  link: ViewerLink | None = None) -> Table:
    """Table 13: every repeat separately, with truncation counts and Δʳ_φ per repeat."""
    table = Table("table13", "Table 13: repeats, with truncation counts",
                  ["policy", "family", "repeat", "episodes", "step budget", "wall time",
                   "errors", "finished", "F1 all", "F1 finished", "Δʳ all [95% CI]"])
    for arm in loaded.arms:
        bca = None if arm.policy == BCA else reference_arm(loaded.arms, BCA, arm)
        for family in families_with_all(arm.families()):
            for repeat in arm.repeats():
                episodes = [e for e in arm.episodes_of(_family_filter(family))
                            if e.repeat == repeat]
                if not episodes:
                    continue
                all_f1 = [e.score("f1") for e in episodes if not e.error]
                finished_f1 = [e.score("f1") for e in episodes if e.finished and not e.error]
                delta = MISSING
                values: dict[str, Any] = {"label": arm.label, "family": family,
                                          "repeat": repeat}
                if bca is not None:
                    comparison = paired_comparison(arm, bca, family, "f1", False, settings,
                                                   repeat=repeat)
                    delta = fmt_interval(comparison.difference)
                    values["delta_all"] = comparison.difference
                reasons = [e.termination_reason for e in episodes]
                table.add([arm.label, family, str(repeat), str(len(episodes)),
                           str(reasons.count("step_budget")), str(reasons.count("wall_time")),
                           str(sum(bool(e.error) for e in episodes)),
                           str(sum(e.finished for e in episodes)),
                           fmt(finite_mean(all_f1)), fmt(finite_mean(finished_f1)),
                           delta], values,
                          [link(arm, family) if link else None] + [None] * 10)
    table.notes.append("Step budget / wall time: episodes truncated by that budget; errors: "
                       "episodes whose policy raised, was refused a tool it needs or could not "
                       "submit what it computed (left out of the F1 means); finished: "
                       "submitted before any budget ran out.")
    return table


def cost_table(loaded: LoadedRuns, settings: Settings,
               link: ViewerLink | None = None) -> Table:
    """Tokens and cost per episode and F1 per dollar, for arms that report usage."""
    table = Table("table12_cost", "Cost and tokens per episode (language-model policies)",
                  ["policy", "family", "episodes", "prompt tokens / episode",
                   "completion tokens / episode", "cost / episode ($)", "total cost ($)",
                   "F1 all", "F1 per dollar", "Δʳ per dollar", "API retries / episode"])
    for arm in loaded.arms:
        if not any(e.has_usage for e in arm.episodes.values()):
            continue
        bca = None if arm.policy == BCA else reference_arm(loaded.arms, BCA, arm)
        for family in families_with_all(arm.families()):
            episodes = [e for e in arm.episodes_of(_family_filter(family)) if e.has_usage]
            if not episodes:
                continue
            prompt = _mean([e.prompt_tokens for e in episodes])
            completion = _mean([e.completion_tokens for e in episodes])
            costs = [e.cost_usd for e in episodes if e.cost_usd is not None]
            cost = _mean(costs)
            retries = _mean([e.api_retries for e in episodes])
            f1 = arm_cell(arm, family).mean_all
            per_dollar = f1 / cost if cost and not math.isnan(cost) else math.nan
            gain_per_dollar = math.nan
            if bca is not None and cost and not math.isnan(cost):
                gain = paired_comparison(arm, bca, family, "f1", False,
                                         settings).difference.mean
                gain_per_dollar = gain / cost
            table.add([arm.label, family, str(len(episodes)), fmt(prompt, 0),
                       fmt(completion, 0), fmt(cost, 4), fmt(float(sum(costs)), 2) if costs
                       else MISSING, fmt(f1), fmt(per_dollar, 2), fmt_signed(gain_per_dollar, 2),
                       fmt(retries, 2)],
                      {"label": arm.label, "family": family, "cost": cost, "f1": f1,
                       "f1_per_dollar": per_dollar, "prompt_tokens": prompt,
                       "completion_tokens": completion},
                      [link(arm, family) if link else None] * 2 + [None] * 9)
    if table.empty:
        table.notes.append("No run reports tokens or cost (no language-model policy among the "
                           "inputs).")
    else:
        table.notes.append("F1 per dollar = mean F1 / mean cost per episode; Δʳ per dollar = "
                           "Δʳ_φ / mean cost per episode.")
    return table


def _mean(values: Sequence[float | int | None]) -> float:
    kept = [float(v) for v in values if v is not None]
    return float(np.mean(kept)) if kept else math.nan


def finite_mean(values: Sequence[float]) -> float:
    """Mean of the finite values; nan (without a warning) when there is none — e.g. the
    episodes of a data table given without a graph, which have no F1."""
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan
