"""``build_report``: run directories in, ``report.md``, ``report.html``, ``tables.json`` and
``figures/*.png`` out — the paper's Tables 4, 6, 7, 8, 13, the cost table, Figures 6 and 7,
and Appendix F (see ``docs/reports.md`` for every convention)."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.files import atomic_write_bytes, output_directory
from heuresis_env.generation.families import expand_families
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.generation.salts import sealing_salt
from heuresis_env.metrics import BootstrapResult
from heuresis_env.progress import progress_bar
from heuresis_env.reports import figures, tables, trace_tables
from heuresis_env.reports.coinciding import COINCIDING
from heuresis_env.reports.document import (
    BulletList,
    Document,
    FigureBlock,
    Heading,
    Paragraph,
    Section,
    TableBlock,
    to_markdown,
)
from heuresis_env.reports.experiments import experiments_table
from heuresis_env.reports.html import to_html
from heuresis_env.reports.loading import (
    BCA,
    GUIDED_START,
    PC_KCI,
    Arm,
    LoadedRuns,
    load_probe,
    load_runs,
    reference_arm,
    run_names,
)
from heuresis_env.reports.questions import question_blocks
from heuresis_env.reports.tables import Settings, Table, fmt
from heuresis_env.studies.deletion_signals import (
    SIGNALS,
    PropositionRow,
    SignalStudy,
    cached_proposition_simulation,
    deletion_records,
    parse_signal_request,
    signal_study,
)
from heuresis_env.studies.provenance import (
    EpisodeProvenance,
    ProvenanceCell,
    algorithm_calls,
    episode_provenance,
    provenance_cell,
)
from heuresis_env.threads import ForkedCall

FIGURES_DIR = "figures"


@dataclass
class ReportSummary:
    """What :func:`build_report` wrote, and the headline table as text."""

    out_dir: Path
    markdown_path: Path
    html_path: Path
    json_path: Path
    figure_paths: list[Path]
    tables: dict[str, Table]
    headline: str
    warnings: list[str] = field(default_factory=list)
    #: the line printed under the headline: the rows that coincide and why ("" when none do)
    headline_note: str = ""
    seconds: float = 0.0
    signal_study: SignalStudy | None = None
    proposition: list[PropositionRow] = field(default_factory=list)


def _json_value(value: Any) -> Any:
    if isinstance(value, BootstrapResult):
        return {"mean": _json_value(value.mean), "low": _json_value(value.low),
                "high": _json_value(value.high), "n": value.n, "n_dropped": value.n_dropped,
                "confidence": value.confidence}
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, np.generic):
        return _json_value(value.item())
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, str | int | bool) or value is None:
        return value
    return str(value)


def _tables_json(document_tables: Sequence[Table], settings: Settings) -> dict[str, Any]:
    return {"settings": {"n_resamples": settings.n_resamples,
                         "confidence": settings.confidence, "seed": settings.seed},
            "tables": {t.key: {"title": t.title, "columns": t.columns, "rows": t.rows,
                               "values": [_json_value({k: v for k, v in row.items()
                                                       if k != "cell"})
                                          for row in t.values],
                               "notes": t.notes}
                       for t in document_tables}}


def _runs_paragraphs(loaded: LoadedRuns) -> list[str]:
    items = []
    for arm in loaded.arms:
        episodes = len(arm.episodes)
        expected = sum(run.expected_episodes for run in arm.runs)
        settings = ", ".join(f"{k}={v}" for k, v in sorted(arm.settings.items()))
        runs = ", ".join(str(run.path) for run in arm.runs)
        options = f"; options {json.dumps(arm.policy_options, sort_keys=True)}" \
            if arm.policy_options else ""
        items.append(f"{arm.label}: {episodes}/{expected} episodes, families "
                     f"{', '.join(arm.families()) or '(none)'}; {settings}{options}; runs: "
                     f"{runs}")
    return items


def _signal_instances(requests: Sequence[str], loaded: LoadedRuns) -> list:
    """The instances of every ``FAMILY[/SPLIT]:COUNT`` request, with the runs' size."""

    first = loaded.runs[0]
    d, n = first.config.get("d", 10), first.config.get("n", 600)  # None: each family's own
    instances = []
    for request in requests:
        family, split, count = parse_signal_request(request)
        families = expand_families(family)
        if split == "test" and sealing_salt("test") is None and first.config.get("salt_digest"):
            raise HeuresisError("the runs used a sealed test split; set $HEURESIS_TEST_SALT "
                                "to compute deletion signals on its instances")
        for name in families:
            instances += [generate_instance(InstanceKey(name, split, index, d=d, n=n))
                          for index in range(count)]
    return instances


def sealing_text(loaded: LoadedRuns) -> str:
    """Whether the runs' test split was sealed with a secret salt ("" for the dev split)."""
    if loaded.runs[0].split != "test":
        return ""
    # a data table is one fixed instance: nothing to regenerate, and no salt applies to it
    generated = [run for run in loaded.runs
                 if any(key.get("graph_model") != "data" for key in run.instance_keys)]
    if not generated:
        return "data tables only (the test salt does not apply to tables)"
    unsealed = [str(run.path) for run in generated if not run.config.get("salt_digest")]
    unverified = getattr(loaded, "unverified", [])
    if not unsealed and unverified:
        return ("sealed with a secret salt, but **unverified**: $HEURESIS_TEST_SALT was not "
                f"their salt here, so the seals and scores of {len(unverified)} run(s) "
                "could not be checked")
    if not unsealed:
        return "sealed with a secret salt ($HEURESIS_TEST_SALT)"
    which = (f"for any of the {len(unsealed)} runs" if len(unsealed) == len(generated)
             else f"for {', '.join(unsealed)}")
    return (f"not sealed ($HEURESIS_TEST_SALT was not set {which}): its instances are public, "
            "so a policy could have regenerated them; set a secret salt for numbers that "
            "compare policies")


def viewer_links(loaded: LoadedRuns, viewer: str) -> tables.ViewerLink:
    """Links from the report's cells to the trace viewer: the episodes of one policy on one
    family; an arm whose policy has other arms (another condition) is named by its runs (the
    viewer's run names, made the same way from the same paths)."""
    names = dict(zip((str(run.path) for run in loaded.runs),
                     run_names([run.path for run in loaded.runs]), strict=True))
    arms_of: dict[str, int] = {}
    for arm in loaded.arms:
        arms_of[arm.policy] = arms_of.get(arm.policy, 0) + 1

    def link(arm: Arm, family: str) -> str:
        params = {"policy": arm.policy}
        if family != tables.ALL:
            params["family"] = family
        if arms_of[arm.policy] > 1:
            params["run"] = ",".join(names[str(run.path)] for run in arm.runs)
        return f"{viewer}#{urlencode(params)}"

    return link


def build_report(run_dirs: Sequence[str | os.PathLike], out_dir: str | os.PathLike, *,
                 allow_mixed: bool = False, deletion_signals: Sequence[str] = (),
                 n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                 trace_analysis: bool = True, proposition_kept: int = 2000,
                 progress: bool = False, viewer: str | None = None,
                 probe_dirs: Sequence[str | os.PathLike] = ()) -> ReportSummary:
    """Write the report of ``run_dirs`` into ``out_dir`` and return what was written.

    ``allow_mixed`` accepts runs with different budgets in one table (labels then show the
    differing settings); ``deletion_signals`` adds Appendix F's signal study on
    ``FAMILY[/SPLIT]:COUNT`` instances; ``trace_analysis`` (Table 4) re-runs the algorithms the
    traces called (cached); ``proposition_kept`` is the number of simulated recorded p-values
    per class and effect size. Intervals: ``n_resamples`` paired bootstrap resamples, seeded
    from ``seed``. Question runs (``task="qa"``) make the question section
    (:mod:`heuresis_env.reports.questions`); given alone, they make the whole report.
    ``viewer`` is the URL of the trace viewer's ``index.html`` (relative to ``out_dir``, e.g.
    ``../viewer/index.html``): the tables' cells then link to the episodes behind them.
    ``probe_dirs`` (written by ``heuresis probe``) add the name-only probe's
    table.
    """
    started = time.perf_counter()
    loaded = load_runs(run_dirs, allow_mixed=allow_mixed)
    settings = Settings(n_resamples=n_resamples, confidence=confidence, seed=seed)
    out = output_directory(out_dir, "report directory")
    figure_dir = output_directory(out / FIGURES_DIR, "figure directory")
    if not loaded.runs:
        return _question_report(loaded, out, settings, started)
    warnings = list(loaded.warnings)
    unscored = sorted({e.family for run in loaded.runs for e in run.episodes
                       if not e.ground_truth})
    if unscored:
        warnings.append(f"no ground truth for {', '.join(unscored)} (data tables given without "
                        "a graph): their episodes ran and submitted graphs (in each run's "
                        "results.jsonl), but have no scores, so their cells are empty")
    small = tables.small_families(tables.instance_counts(loaded))
    if small:
        warnings.append(tables.small_sample_warning(small, tables.data_table_families(loaded)))
    sealing = sealing_text(loaded)
    if sealing.startswith("not sealed"):
        warnings.append(f"The test split was {sealing}.")
    families = loaded.families()
    with_all = tables.families_with_all(families)
    # Table 4 re-reads every trace and re-runs (from cache) the algorithms it called: seconds
    # of work that needs nothing from the tables before it, so it runs in a forked process
    # (where forking is safe) while this one computes the bootstrap tables and figures
    provenance_arms = [arm for arm in loaded.arms
                       if arm.trace_count() and arm.policy not in (PC_KCI, GUIDED_START)]
    provenance_call = (ForkedCall(_provenance_cells, provenance_arms, families, progress)
                       if trace_analysis else None)

    document = Document("Heuresis report")
    configuration = Section("Configuration", [Paragraph(
        f"Built {time.strftime('%Y-%m-%d %H:%M:%S %z')} from {len(loaded.runs)} run "
        f"director{'y' if len(loaded.runs) == 1 else 'ies'} ({len(loaded.arms)} arms) on the "
        f"{loaded.runs[0].split} split{'' if not sealing else ', ' + sealing}. Intervals: "
        f"{confidence:.0%} bootstrap over instances, {n_resamples} resamples, one function "
        f"seeded from seed {seed} and the data (the same data gets the same interval in every "
        "table). Every cell is given over all episodes and over finished episodes, with the "
        "truncation rate (the reporting rule); errored episodes are left out of the means."),
        BulletList(_runs_paragraphs(loaded))])
    styles = figures.PolicyStyles([arm.label for arm in loaded.arms])
    link = viewer_links(loaded, viewer) if viewer else None

    headline = tables.headline_table(loaded, settings, link)
    document.add(Heading("Headline"))
    document.add(TableBlock(headline))

    # ---- Table 6 / Figure 6 ----------------------------------------------------------------
    bca_arm = reference_arm(loaded.arms, BCA)
    bca_algorithm: dict[str, str] = {}
    if bca_arm is not None and trace_analysis:

        try:
            bca_algorithm = bca_algorithms(bca_arm)
        except HeuresisError as exc:  # an unreadable trace costs this column, not the report
            warnings.append(f"BCA_φ algorithms not read from the bca traces: {exc}")
    references = tables.reference_table(loaded, settings, bca_algorithm)
    policies = tables.gain_table(loaded, settings, link=link)
    figure_paths = []
    reference_rows = references.values
    policy_rows = policies.values
    if policy_rows or reference_rows:  # the headline figure, right under the headline table
        path = figures.figure6_f1(policy_rows, reference_rows, with_all,
                                  figure_dir / "figure6_f1.png", styles)
        figure_paths.append(path)
        document.add(FigureBlock(path, "Figure 6 (left): adjacency F1 per family, all "
                                       "episodes; markers: BCA_φ, PC-KCI, oracle."))
    warnings_position = len(document.blocks)  # filled in at the end, with later warnings too
    document.add(Heading("Table 6 / Figure 6: adjacency F1 against BCA_φ and the oracle"))
    document.add(TableBlock(references))
    document.add(TableBlock(policies))
    if policy_rows and any("delta_all" in r for r in policy_rows):
        path = figures.figure6_gains(policy_rows, reference_rows, with_all,
                                     figure_dir / "figure6_residual_gain.png", styles)
        figure_paths.append(path)
        document.add(FigureBlock(path, "Figure 6 (right): Δʳ_φ with 95% paired intervals; "
                                       "bars: −selection headroom (down to PC-KCI) and repair "
                                       "headroom (up to the oracle)."))
    rule_rows = [{"label": arm.label, "family": family, "mean_all": cell.mean_all,
                  "mean_finished": cell.mean_finished, "truncation_rate": cell.truncation_rate}
                 for arm in loaded.arms for family in arm.families()
                 for cell in [tables.arm_cell(arm, family)]]
    if rule_rows:
        path = figures.figure_reporting_rule(rule_rows, figure_dir / "figure_reporting_rule.png",
                                             styles)
        figure_paths.append(path)
        document.add(FigureBlock(path, "Reporting rule: F1 over all vs over finished episodes "
                                       "for every policy (marker) and family (colour: "
                                       "truncation rate); off-diagonal points mean the two "
                                       "views differ."))

    # ---- Table 7 -----------------------------------------------------------------------------
    document.add(Heading("Table 7: nSHD"))
    document.add(TableBlock(tables.nshd_table(loaded, settings, link)))

    # ---- Table 4 -----------------------------------------------------------------------------
    document.add(Heading("Table 4: where the added edges came from"))
    if provenance_call is not None:
        try:
            cells = provenance_call.result()
        except HeuresisError as exc:  # e.g. a sealed test split without its salt
            warnings.append(f"Table 4 skipped: {exc}")
            document.add(Paragraph(f"Skipped: {exc}"))
        else:
            provenance = trace_tables.provenance_table(cells, settings)
            if provenance.empty:
                provenance.notes.append("No run has traces with a final graph.")
            document.add(TableBlock(provenance))
            document.add(TableBlock(trace_tables.repair_table(cells, settings)))
    else:
        document.add(Paragraph("Skipped (trace analysis turned off)."))

    # ---- Table 8 / Figure 7 ------------------------------------------------------------------
    conditions = tables.condition_table(loaded, settings)
    document.add(Heading("Figure 7 / Table 8: guided vs unguided, full vs minimal toolbox"))
    document.add(TableBlock(conditions))
    if not conditions.empty:
        path = figures.figure7_conditions(conditions.values,
                                          figure_dir / "figure7_conditions.png", styles)
        figure_paths.append(path)
        document.add(FigureBlock(path, "Figure 7: paired differences between conditions, all "
                                       "episodes, 95% intervals."))

    # ---- experiments (issue 44) ------------------------------------------------------------
    experiments = experiments_table(loaded, settings)
    if not experiments.empty:
        document.add(Heading("Experiments: F1 and SHD against rows spent"))
        document.add(TableBlock(experiments))
        path = figures.figure_experiments(experiments.values,
                                          figure_dir / "figure_experiments.png", styles)
        figure_paths.append(path)
        document.add(FigureBlock(path, "F1 and SHD against the rows of experiments spent, 95% "
                                       "intervals; dashed: arms without experiments."))

    # ---- cost --------------------------------------------------------------------------------
    cost = tables.cost_table(loaded, settings, link)
    document.add(Heading("Cost and tokens (language-model policies)"))
    document.add(TableBlock(cost))
    if not cost.empty:
        path = figures.figure_cost(cost.values, figure_dir / "figure_cost.png", styles)
        figure_paths.append(path)
        document.add(FigureBlock(path, "Mean adjacency F1 against mean cost per episode."))

    # ---- Table 13 ----------------------------------------------------------------------------
    document.add(Heading("Table 13: repeats and truncation"))
    document.add(TableBlock(tables.repeats_table(loaded, settings, link)))

    # ---- Appendix F --------------------------------------------------------------------------
    document.add(Heading("Appendix F: telling wrong deletions from right ones"))
    study = None
    if deletion_signals:
        instances = _signal_instances(deletion_signals, loaded)
        records = []
        for instance in progress_bar(instances, show=progress, desc="Appendix F (deletions)",
                                     leave=False):
            records += deletion_records(instance)
        study = signal_study(records, n_resamples=n_resamples, confidence=confidence,
                             seed=tables.comparison_seed(seed, "deletion_signals"))
        document.add(TableBlock(signal_table(study, deletion_signals)))
        if not math.isnan(next(iter(study.results.values())).auc):
            path = figures.figure_signals(study.results, figure_dir / "appendixF_signals.png")
            figure_paths.append(path)
            document.add(FigureBlock(path, "AUC of each signal for telling PC-KCI's wrong "
                                           "deletions from right ones (95% intervals, "
                                           "resampling instances)."))
    else:
        document.add(Paragraph("The signal study runs on request: heuresis report … "
                               "--deletion-signals FAMILY[/SPLIT]:COUNT."))
    n_rows = int(loaded.runs[0].config.get("n") or 600)
    rows = cached_proposition_simulation(
        n=n_rows, kept_per_class=proposition_kept,
        seed=tables.comparison_seed(seed, "proposition"))
    document.add(TableBlock(proposition_table(rows, n_rows)))
    path = figures.figure_proposition(rows, figure_dir / "appendixF_proposition.png")
    figure_paths.append(path)
    document.add(FigureBlock(path, "The proposition: the AUC of a ranker that sees only the "
                                   "recorded p-value tends to ½ as the effect size (power) "
                                   "vanishes, inside ½ ± ½·sup|Λ − 1|."))

    for number, directory in enumerate(probe_dirs):
        probe = load_probe(directory)
        document.add(Heading("Name-only probe"))
        document.add(Paragraph(
            f"The model {probe['backend']} `{probe['model']}` saw only variable names, no data "
            f"(seed {probe['seed']}; {directory}). Networks: adjacency F1 of its edge list and "
            "orientation accuracy (of the true edges it joined, the share oriented the true "
            "way); Tübingen pairs: accuracy with a 95% Wilson interval. Controls: names "
            "replaced by indices in random order, and Heuresis instances whose variables never "
            "had names."))
        table = Table(f"probe_{number}", "Name-only probe", list(probe["table"]["columns"]))
        for row in probe["table"]["rows"]:
            table.add(row)
        document.add(TableBlock(table))

    if warnings:
        document.blocks.insert(warnings_position, Section(
            f"Warnings ({len(warnings)})", [BulletList(list(warnings))]))

    if loaded.question_runs:
        for block in question_blocks(loaded.question_runs, settings)[0]:
            document.add(block)
    document.add(configuration)

    # ---- write -------------------------------------------------------------------------------
    markdown_path, html_path, json_path = _write_document(document, out, settings)
    return ReportSummary(
        out_dir=out, markdown_path=markdown_path, html_path=html_path, json_path=json_path,
        figure_paths=figure_paths, tables={t.key: t for t in document.tables()},
        headline=headline.to_markdown(), warnings=warnings,
        headline_note=next((n for n in headline.notes if n.startswith(COINCIDING)), ""),
        seconds=time.perf_counter() - started, signal_study=study, proposition=rows)


def _write_document(document: Document, out: Path, settings: Settings
                    ) -> tuple[Path, Path, Path]:
    """Write ``report.md``, ``report.html`` and ``tables.json``; returns their paths."""
    markdown_path, html_path, json_path = out / "report.md", out / "report.html", \
        out / "tables.json"
    _write_text(markdown_path, to_markdown(document, out))
    _write_text(html_path, to_html(document))
    _write_text(json_path, json.dumps(_tables_json(document.tables(), settings), indent=1,
                                      allow_nan=False) + "\n")
    return markdown_path, html_path, json_path


def _question_report(loaded: LoadedRuns, out: Path, settings: Settings,
                     started: float) -> ReportSummary:
    """The report of question runs alone: the question section, with its accuracy per level
    as the headline."""
    document = Document("Heuresis report: questions")
    split = loaded.question_runs[0].split
    document.add(Paragraph(
        f"Built {time.strftime('%Y-%m-%d %H:%M:%S %z')} from {len(loaded.question_runs)} "
        f"question run director{'y' if len(loaded.question_runs) == 1 else 'ies'} on the "
        f"{split} split. Accuracy intervals: {settings.confidence:.0%} Wilson intervals over "
        f"questions; F1 intervals: bootstrap over questions, {settings.n_resamples} resamples, "
        f"seed {settings.seed}."))
    if loaded.warnings:
        document.add(Heading("Warnings"))
        document.add(BulletList(list(loaded.warnings)))
    blocks, headline = question_blocks(loaded.question_runs, settings)
    for block in blocks:
        document.add(block)
    markdown_path, html_path, json_path = _write_document(document, out, settings)
    return ReportSummary(
        out_dir=out, markdown_path=markdown_path, html_path=html_path, json_path=json_path,
        figure_paths=[], tables={t.key: t for t in document.tables()},
        headline=headline.to_markdown(), warnings=list(loaded.warnings),
        seconds=time.perf_counter() - started)


def _write_text(path: Path, text: str) -> None:
    """Write atomically (temporary file + rename, the user's umask), so a reader never sees
    half a report."""
    atomic_write_bytes(path, text.encode("utf-8"))


def signal_table(study: SignalStudy, requests: Sequence[str]) -> Table:
    """Appendix F's table: each signal's AUC with its interval."""
    table = Table("appendixF_signals",
                  f"Appendix F: AUC of signals for wrong vs right deletions of PC-KCI "
                  f"({', '.join(requests)}: {len(study.instances)} instances, {study.n_wrong} "
                  f"wrong and {study.n_right} right deletions)",
                  ["signal", "uses only the p-value", "direction", "deletions scored", "AUC",
                   "95% CI", "what it is"])
    for signal in SIGNALS:
        result = study.results[signal.name]
        table.add([signal.name, "yes" if signal.p_value_only else "no",
                   "higher → wrong" if signal.higher_means_wrong else "lower → wrong",
                   str(result.n_positive + result.n_negative), fmt(result.auc),
                   f"[{fmt(result.low)}, {fmt(result.high)}]", signal.description],
                  {"signal": signal.name, "auc": result.auc, "low": result.low,
                   "high": result.high, "n_positive": result.n_positive,
                   "n_negative": result.n_negative})
    table.notes.append("AUC: probability that a wrong deletion (a true edge PC-KCI deleted) "
                       "scores above a right one, ties ½; each direction is fixed in advance. "
                       "Intervals resample instances (cluster bootstrap).")
    return table


def proposition_table(rows: Sequence[PropositionRow], n: int) -> Table:
    """The proposition's check: AUC of −p as the effect size shrinks, against the bounds."""
    table = Table("appendixF_proposition",
                  f"Proposition: a p-value-only ranker under vanishing power (Fisher-z, n = {n}, "
                  "α = 0.05; both classes conditioned on p > α)",
                  ["μ", "δ", "power β_δ", "kept wrong / right", "AUC simulated [95% CI]",
                   "AUC exact", "|AUC − ½| exact", "TV", "½·sup|Λ − 1|"])
    for row in rows:
        table.add([fmt(row.noncentrality, 2), fmt(row.effect_size, 4), fmt(row.power),
                   f"{row.n_wrong} / {row.n_right}",
                   f"{fmt(row.auc_simulated)} [{fmt(row.auc_low)}, {fmt(row.auc_high)}]",
                   fmt(row.auc_exact), fmt(abs(row.auc_exact - 0.5)),
                   fmt(row.total_variation), fmt(row.half_sup_bound)],
                  {"noncentrality": row.noncentrality, "effect_size": row.effect_size,
                   "auc_simulated": row.auc_simulated, "auc_exact": row.auc_exact,
                   "total_variation": row.total_variation, "bound": row.half_sup_bound})
    table.notes.append("Wrong deletions: a pair with true correlation δ (μ = √(n−3)·atanh δ) "
                       "whose test still returned p > α; right deletions: a true null. The "
                       "ranker scores −p. The proposition: |AUC − ½| ≤ TV ≤ ½·sup|Λ − 1| → 0 "
                       "as δ → 0.")
    return table


__all__ = ["ReportSummary", "build_report", "proposition_table", "signal_table"]


# ---- Table 4 per arm ------------------------------------------------------------------------

def _provenance_cells(arms: Sequence[Arm], families: Sequence[str],
                      progress: bool) -> list[list[ProvenanceCell]]:
    """Table 4's cells of each arm (:func:`arm_provenance`), with a progress bar if asked."""
    return [arm_provenance(arm, families)
            for arm in progress_bar(arms, show=progress, desc="Table 4 (traces)", leave=False)]


def arm_provenance(arm: Arm, families: Sequence[str]) -> list[ProvenanceCell]:
    """Table 4's cells of one arm: one per family it ran, then "all"."""
    by_family: dict[str, list[EpisodeProvenance]] = {}
    missing: dict[str, int] = {}
    run_of = {str(run.path): run for run in arm.runs}
    for episode in arm.episodes_of():
        item = episode_provenance(run_of[str(episode.run_path)], episode)
        if item is None:
            missing[episode.family] = missing.get(episode.family, 0) + 1
            continue
        by_family.setdefault(episode.family, []).append(item)
    cells = [provenance_cell(arm.label, family, by_family.get(family, []),
                             missing.get(family, 0))
             for family in families if family in by_family or family in missing]
    everything = [p for family in families for p in by_family.get(family, [])]
    if len(cells) > 1:
        cells.append(provenance_cell(arm.label, "all", everything, sum(missing.values())))
    return cells


def bca_algorithms(arm: Arm) -> dict[str, str]:
    """Family → the algorithm(s) the BCA policy's traces called (its BCA_φ), when recorded."""
    names: dict[str, list[str]] = {}
    for episode in arm.episodes_of():
        if episode.trace_path is None or not episode.trace_path.is_file():
            continue
        for call in algorithm_calls(episode.trace_path):
            found = names.setdefault(episode.family, [])
            if call.name not in found:
                found.append(call.name)
    return {family: ", ".join(found) for family, found in names.items()}
