"""The report's figures as PNG files, drawn with matplotlib's object API (no pyplot, so no
global backend or figure state: safe in worker processes and servers).

Every function takes the numbers a table already computed (its ``values``), so a figure and
its table always agree, and returns the path of the PNG it wrote. A PNG is kept in the report
cache by the figure's kind and those numbers (:func:`_render`): a report rebuilt from the same
results copies it instead of drawing it again.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import io
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.cache import ResultCache, stable_hash
from heuresis_env.files import atomic_write_bytes
from heuresis_env.metrics import BootstrapResult

DPI = 110
#: policy colours: 19 hues chosen to be told apart on white (S. Trubetskoy's list of 20
#: distinct colours without its near-white beige), then repeated with hatching
PALETTE = ("#4363d8", "#e6194b", "#3cb44b", "#f58231", "#911eb4", "#42d4f4", "#f032e6",
           "#9a6324", "#469990", "#800000", "#000075", "#808000", "#bfef45", "#dcbeff",
           "#a9a9a9", "#ffe119", "#fabed4", "#aaffc3", "#ffd8b1")
#: policy markers, cycled independently of the colours (19 and 10 are coprime, so the first
#: 190 policies get distinct colour-marker pairs)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
HATCHES = ("", "//", "..", "xx", "\\\\", "oo")
EDGE = "#333333"
_COLORS = PALETTE  # single-series figures use the first colours


class PolicyStyles:
    """A colour, marker and bar hatch per arm label, fixed once for a whole report so a policy
    looks the same in every figure; a label not seen before gets the next free style."""

    def __init__(self, labels: Sequence[str] = ()):
        self._index: dict[str, int] = {}
        for label in labels:
            self._slot(label)

    def _slot(self, label: str) -> int:
        return self._index.setdefault(str(label), len(self._index))

    def color(self, label: str) -> str:
        return PALETTE[self._slot(label) % len(PALETTE)]

    def marker(self, label: str) -> str:
        return MARKERS[self._slot(label) % len(MARKERS)]

    def hatch(self, label: str) -> str:
        return HATCHES[(self._slot(label) // len(PALETTE)) % len(HATCHES)]

    @property
    def labels(self) -> list[str]:
        return list(self._index)


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def _legend_width(labels: Sequence[str], columns: int = 1) -> float:
    """Inches a figure legend of ``labels`` (font size 8) needs beside the axes."""
    longest = max((len(str(label)) for label in labels), default=0)
    return columns * (0.55 + 0.062 * longest) + 0.2


def _outside_legend(figure, axes, columns: int = 1, first: Sequence[str] = ()) -> None:
    """The axes' legend to the right of the plot, outside the data (constrained layout makes
    room for it); the labels in ``first`` (the policies) lead, in that order."""
    handles, labels = axes.get_legend_handles_labels()
    rank = {label: k for k, label in enumerate(first)}
    order = sorted(range(len(labels)), key=lambda k: (rank.get(labels[k], len(rank)), k))
    handles, labels = [handles[k] for k in order], [labels[k] for k in order]
    if handles:
        figure.legend(handles, labels, loc="outside right upper", fontsize=8, ncols=columns,
                      frameon=False)


def _legend_columns(count: int) -> int:
    return 1 if count <= 16 else 2


#: bump when any figure's drawing changes: PNGs cached for the old drawing are then ignored
FIGURE_CACHE_VERSION = 1


@functools.cache
def _matplotlib_version() -> str:
    try:
        return importlib.metadata.version("matplotlib")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _plain(value: Any) -> Any:
    """A figure's inputs as JSON values for its cache key: dataclasses field by field (with
    their type), NumPy values as numbers; anything else is a ``TypeError`` (no key from a
    ``repr`` that might not name every number plotted)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"type": type(value).__qualname__,
                "fields": {f.name: _plain(getattr(value, f.name))
                           for f in dataclasses.fields(value)}}
    if isinstance(value, np.generic | np.ndarray):
        return _plain(value.tolist())
    raise TypeError(f"a figure input of type {type(value).__name__} has no cache key")


def _render(path: Path, kind: str, inputs: Any, draw: Callable[[], Any],
            styles: PolicyStyles | None = None) -> Path:
    """``draw()``'s figure as the PNG ``path``, kept in the report cache by ``kind``, the
    figure's ``inputs`` (the numbers it plots), the styles' labels and matplotlib's version:
    a report rebuilt from the same results copies the PNG and does not import matplotlib. The
    labels that drawing gave a style to are kept with it and given theirs again on a copy,
    so the later figures of the report look the same either way."""
    path = Path(path)
    before = None if styles is None else styles.labels
    try:
        key: str | None = stable_hash(["report-figure", kind, FIGURE_CACHE_VERSION, DPI,
                                       _matplotlib_version(), before, _plain(inputs)])
    except TypeError:  # inputs without a key: drawn every time
        key = None
    cache = ResultCache("report-figures")
    entry = None if key is None else cache.get(key)
    if (isinstance(entry, dict) and isinstance(entry.get("png"), bytes)
            and isinstance(entry.get("labels"), list)):
        if styles is not None:
            for label in entry["labels"]:
                styles.color(label)
    else:
        buffer = io.BytesIO()
        draw().savefig(buffer, format="png", dpi=DPI)
        entry = {"png": buffer.getvalue(), "labels": [] if styles is None else styles.labels}
        if key is not None:
            cache.set(key, entry)
    atomic_write_bytes(path, entry["png"])
    return path


def _nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def _error_bars(results: Sequence[BootstrapResult | None]) -> tuple[np.ndarray, np.ndarray]:
    means = np.array([math.nan if r is None else r.mean for r in results])
    lows = np.array([math.nan if r is None else r.low for r in results])
    highs = np.array([math.nan if r is None else r.high for r in results])
    return means, np.vstack([means - lows, highs - means])


def _styles(styles: PolicyStyles | None, labels: Sequence[str]) -> PolicyStyles:
    return styles if styles is not None else PolicyStyles(labels)


def draw_figure6_f1(policy_rows: Sequence[dict[str, Any]],
                    reference_rows: Sequence[dict[str, Any]], families: Sequence[str],
                    styles: PolicyStyles | None = None):
    """Figure 6 (left) as a matplotlib figure: mean F1 (all episodes) per family for every
    policy, with BCA_φ, PC-KCI and the oracle as markers; the legend beside the axes."""
    labels = list(dict.fromkeys(r["label"] for r in policy_rows))
    styles = _styles(styles, labels)
    entries = [*labels, "BCA_φ", "PC-KCI", "oracle"]
    columns = _legend_columns(len(entries))
    figure = _figure(max(5.0, 1.1 * len(families) + 1.6) + _legend_width(entries, columns),
                     4.2)
    axes = figure.add_subplot()
    x = np.arange(len(families))
    width = 0.8 / max(len(labels), 1)
    for k, label in enumerate(labels):
        means = []
        for family in families:
            found = [r for r in policy_rows if r["label"] == label and r["family"] == family]
            means.append(_nan(found[0]["mean_all"]) if found else math.nan)
        axes.bar(x - 0.4 + width * (k + 0.5), means, width, label=label,
                 color=styles.color(label), hatch=styles.hatch(label), edgecolor=EDGE,
                 linewidth=0.4)
    markers = (("bca", "BCA_φ", "k", "_"), ("pc_kci", "PC-KCI", "#555555", "x"),
               ("oracle", "oracle", "#b8860b", "*"))
    for key, name, color, marker in markers:
        ys = []
        for family in families:
            found = [r for r in reference_rows if r.get("family") == family]
            ys.append(_nan(found[0].get(key)) if found else math.nan)
        if not np.all(np.isnan(ys)):
            axes.scatter(x, ys, color=color, marker=marker, s=160 if marker == "_" else 50,
                         linewidths=2.5, label=name, zorder=3)
    axes.set_xticks(x, families)
    axes.set_ylabel("adjacency F1 (all episodes)")
    axes.set_ylim(0, 1.05)
    axes.set_title("Adjacency F1 per family")
    axes.grid(axis="y", alpha=0.3)
    _outside_legend(figure, axes, columns, first=labels)
    return figure


def figure6_f1(policy_rows: Sequence[dict[str, Any]], reference_rows: Sequence[dict[str, Any]],
               families: Sequence[str], path: Path,
               styles: PolicyStyles | None = None) -> Path:
    """Figure 6 (left) as a PNG (see :func:`draw_figure6_f1`)."""
    return _render(path, "figure6_f1", [policy_rows, reference_rows, families],
                   lambda: draw_figure6_f1(policy_rows, reference_rows, families, styles), styles)


def draw_figure6_gains(policy_rows: Sequence[dict[str, Any]],
                       reference_rows: Sequence[dict[str, Any]], families: Sequence[str],
                       styles: PolicyStyles | None = None):
    """Figure 6 (right): Δʳ_φ with 95% paired intervals, against the two headrooms (below 0:
    PC-KCI's level, −selection headroom; above: the oracle's, +repair headroom)."""
    labels = list(dict.fromkeys(r["label"] for r in policy_rows))
    styles = _styles(styles, labels)
    entries = [*labels, "−selection headroom (PC-KCI)", "repair headroom (oracle)"]
    columns = _legend_columns(len(entries))
    figure = _figure(max(5.0, 1.1 * len(families) + 1.6) + _legend_width(entries, columns),
                     4.2)
    axes = figure.add_subplot()
    x = np.arange(len(families))
    for family_position, family in enumerate(families):
        found = [r for r in reference_rows if r.get("family") == family]
        if not found:
            continue
        selection = _nan(found[0].get("selection_headroom"))
        repair = _nan(found[0].get("repair_headroom"))
        if not math.isnan(selection):
            axes.bar(family_position, -selection, 0.9, color="#dddddd",
                     label="−selection headroom (PC-KCI)" if family_position == 0 else None)
        if not math.isnan(repair):
            axes.bar(family_position, repair, 0.9, color="#f3e3b0",
                     label="repair headroom (oracle)" if family_position == 0 else None)
    offset = 0.6 / max(len(labels), 1)
    for k, label in enumerate(labels):
        results = []
        for family in families:
            found = [r for r in policy_rows if r["label"] == label and r["family"] == family]
            results.append(found[0].get("delta_all") if found else None)
        means, errors = _error_bars(results)
        axes.errorbar(x - 0.3 + offset * (k + 0.5), means, yerr=errors,
                      fmt=styles.marker(label), capsize=3, color=styles.color(label),
                      markeredgecolor=EDGE, markeredgewidth=0.5, label=label)
    axes.axhline(0, color="k", linewidth=0.8)
    axes.set_xticks(x, families)
    axes.set_ylabel("Δʳ_φ = F1 − F1(BCA_φ)")
    axes.set_title("Residual gain with 95% paired intervals")
    axes.grid(axis="y", alpha=0.3)
    _outside_legend(figure, axes, columns, first=labels)
    return figure


def figure6_gains(policy_rows: Sequence[dict[str, Any]],
                  reference_rows: Sequence[dict[str, Any]], families: Sequence[str],
                  path: Path, styles: PolicyStyles | None = None) -> Path:
    """Figure 6 (right) as a PNG (see :func:`draw_figure6_gains`)."""
    return _render(path, "figure6_gains", [policy_rows, reference_rows, families],
                   lambda: draw_figure6_gains(policy_rows, reference_rows, families, styles),
                   styles)


def draw_figure7_conditions(condition_rows: Sequence[dict[str, Any]],
                            styles: PolicyStyles | None = None):
    """Figure 7: paired differences between conditions (guided − unguided, full − minimal)
    per family, with 95% intervals; a policy keeps its colour, the contrast sets the marker."""
    contrasts = list(dict.fromkeys((r["policy"], r["contrast"]) for r in condition_rows))
    families = list(dict.fromkeys(r["family"] for r in condition_rows))
    styles = _styles(styles, [policy for policy, _ in contrasts])
    contrast_names = list(dict.fromkeys(contrast for _, contrast in contrasts))
    entries = [f"{policy}: {contrast}" for policy, contrast in contrasts]
    columns = _legend_columns(len(entries))
    figure = _figure(max(5.0, 1.1 * len(families) + 1.6) + _legend_width(entries, columns),
                     4.2)
    axes = figure.add_subplot()
    x = np.arange(len(families))
    offset = 0.7 / max(len(contrasts), 1)
    for k, (policy, contrast) in enumerate(contrasts):
        results = []
        for family in families:
            found = [r for r in condition_rows if (r["policy"], r["contrast"]) == (policy, contrast)
                     and r["family"] == family]
            results.append(found[0]["all"] if found else None)
        means, errors = _error_bars(results)
        axes.errorbar(x - 0.35 + offset * (k + 0.5), means, yerr=errors,
                      fmt=MARKERS[contrast_names.index(contrast) % len(MARKERS)], capsize=3,
                      color=styles.color(policy), markeredgecolor=EDGE, markeredgewidth=0.5,
                      label=f"{policy}: {contrast}")
    axes.axhline(0, color="k", linewidth=0.8)
    axes.set_xticks(x, families)
    axes.set_ylabel("difference in adjacency F1")
    axes.set_title("Conditions: paired differences (all episodes)")
    axes.grid(axis="y", alpha=0.3)
    _outside_legend(figure, axes, columns)
    return figure


def figure7_conditions(condition_rows: Sequence[dict[str, Any]], path: Path,
                       styles: PolicyStyles | None = None) -> Path:
    """Figure 7 as a PNG (see :func:`draw_figure7_conditions`)."""
    return _render(path, "figure7_conditions", condition_rows,
                   lambda: draw_figure7_conditions(condition_rows, styles), styles)


def draw_figure_reporting_rule(policy_rows: Sequence[dict[str, Any]],
                               styles: PolicyStyles | None = None):
    """F1 over all episodes against F1 over finished episodes, per policy (marker) and family;
    the colour is the truncation rate. Points off the diagonal break the reporting rule."""
    rows = [r for r in policy_rows if r.get("family") != "all"]
    labels = list(dict.fromkeys(r["label"] for r in rows))
    styles = _styles(styles, labels)
    columns = _legend_columns(len(labels))
    figure = _figure(5.6 + _legend_width(labels, columns), 4.4)
    axes = figure.add_subplot()
    points = None
    for label in labels:
        mine = [r for r in rows if r["label"] == label]
        points = axes.scatter([_nan(r["mean_all"]) for r in mine],
                              [_nan(r["mean_finished"]) for r in mine],
                              c=[_nan(r["truncation_rate"]) for r in mine], cmap="viridis",
                              vmin=0, vmax=1, marker=styles.marker(label), edgecolors="k",
                              s=42, label=label)
    axes.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--")
    axes.set_xlim(0, 1.02)
    axes.set_ylim(0, 1.02)
    axes.set_xlabel("F1, all episodes")
    axes.set_ylabel("F1, finished episodes")
    axes.set_title("Reporting rule: all vs finished")
    if points is not None:
        figure.colorbar(points, ax=axes, label="truncation rate")
    handles, names = axes.get_legend_handles_labels()
    if handles:
        legend = figure.legend(handles, names, loc="outside right upper", fontsize=8,
                               ncols=columns, frameon=False)
        for handle in legend.legend_handles:  # the marker, not a truncation colour
            handle.set_facecolor("#bbbbbb")
    return figure


def figure_reporting_rule(policy_rows: Sequence[dict[str, Any]], path: Path,
                          styles: PolicyStyles | None = None) -> Path:
    """The reporting-rule figure as a PNG (see :func:`draw_figure_reporting_rule`)."""
    return _render(path, "figure_reporting_rule", policy_rows,
                   lambda: draw_figure_reporting_rule(policy_rows, styles), styles)


def figure_signals(results: dict[str, Any], path: Path) -> Path:
    """Appendix F: AUC of each deletion signal with its instance-bootstrap interval."""
    return _render(path, "appendixF_signals", results, lambda: draw_figure_signals(results))


def draw_figure_signals(results: dict[str, Any]):
    """Appendix F's signals figure as a matplotlib figure (see :func:`figure_signals`)."""
    names = list(results)
    figure = _figure(6.5, 0.45 * len(names) + 1.5)
    axes = figure.add_subplot()
    y = np.arange(len(names))[::-1]
    auc = np.array([results[n].auc for n in names])
    errors = np.vstack([auc - np.array([results[n].low for n in names]),
                        np.array([results[n].high for n in names]) - auc])
    axes.errorbar(auc, y, xerr=errors, fmt="o", capsize=3, color=_COLORS[0])
    axes.axvline(0.5, color="k", linewidth=0.8, linestyle="--")
    axes.set_yticks(y, names)
    axes.set_xlim(0, 1)
    axes.set_xlabel("AUC for telling wrong from right deletions")
    axes.set_title("Deletion signals (95% instance-bootstrap intervals)")
    axes.grid(axis="x", alpha=0.3)
    return figure


def figure_proposition(rows: Sequence[Any], path: Path) -> Path:
    """The proposition: AUC of the p-value-only ranker against the noncentrality μ, the exact
    curve and the band ½ ± ½·sup|Λ − 1|."""
    return _render(path, "appendixF_proposition", rows, lambda: draw_figure_proposition(rows))


def draw_figure_proposition(rows: Sequence[Any]):
    """The proposition's figure as a matplotlib figure (see :func:`figure_proposition`)."""
    figure = _figure(6.4, 4.8)
    axes = figure.add_subplot()
    mu = np.array([r.noncentrality for r in rows])
    order = np.argsort(mu)
    mu = mu[order]
    simulated = np.array([r.auc_simulated for r in rows])[order]
    low = np.array([r.auc_low for r in rows])[order]
    high = np.array([r.auc_high for r in rows])[order]
    exact = np.array([r.auc_exact for r in rows])[order]
    bound = np.minimum(np.array([r.half_sup_bound for r in rows])[order], 0.5)
    total_variation = np.array([r.total_variation for r in rows])[order]
    axes.fill_between(mu, 0.5 - bound, 0.5 + bound, color="#f3e3b0",
                      label="½ ± ½·sup|Λ − 1| (clipped to [0, 1])")
    axes.fill_between(mu, 0.5 - total_variation, np.minimum(0.5 + total_variation, 1.0),
                      color="#e0c060", alpha=0.6, label="½ ± TV")
    axes.plot(mu, exact, color="k", label="exact AUC")
    axes.errorbar(mu, simulated, yerr=np.vstack([simulated - low, high - simulated]), fmt="o",
                  capsize=3, color=_COLORS[1], label="simulated AUC (95% CI)")
    axes.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
    axes.set_xlabel("noncentrality μ = √(n−3)·atanh δ (effect size of the wrong deletions)")
    axes.set_ylabel("AUC of the ranker −p")
    axes.set_ylim(0, 1)
    axes.set_title("p-value-only rankers approach AUC ½ as power vanishes")
    axes.grid(alpha=0.3)
    handles, names = axes.get_legend_handles_labels()
    figure.legend(handles, names, loc="outside lower center", fontsize=8, ncols=2,
                  frameon=False)
    return figure


def draw_figure_cost(cost_rows: Sequence[dict[str, Any]], styles: PolicyStyles | None = None):
    """Mean F1 against mean cost per episode for language-model policies (per family)."""
    rows = [r for r in cost_rows if r.get("family") != "all"]
    labels = list(dict.fromkeys(r["label"] for r in rows))
    styles = _styles(styles, labels)
    columns = _legend_columns(len(labels))
    figure = _figure(5.2 + _legend_width(labels, columns), 4.0)
    axes = figure.add_subplot()
    for label in labels:
        mine = [r for r in rows if r["label"] == label]
        axes.scatter([_nan(r["cost"]) for r in mine], [_nan(r["f1"]) for r in mine],
                     color=styles.color(label), marker=styles.marker(label), edgecolors=EDGE,
                     linewidths=0.5, label=label)
        for r in mine:
            axes.annotate(r["family"], (_nan(r["cost"]), _nan(r["f1"])), fontsize=7,
                          xytext=(3, 3), textcoords="offset points")
    axes.set_xlabel("mean cost per episode ($)")
    axes.set_ylabel("adjacency F1 (all episodes)")
    axes.set_title("F1 against cost")
    axes.grid(alpha=0.3)
    _outside_legend(figure, axes, columns)
    return figure


def figure_cost(cost_rows: Sequence[dict[str, Any]], path: Path,
                styles: PolicyStyles | None = None) -> Path:
    """The cost figure as a PNG (see :func:`draw_figure_cost`)."""
    return _render(path, "figure_cost", cost_rows, lambda: draw_figure_cost(cost_rows, styles),
                   styles)


def draw_figure_experiments(rows: Sequence[dict[str, Any]], styles: PolicyStyles | None = None):
    """F1 and SHD against the rows of experiments spent: a line per policy over its budgets,
    the observational arms (no budget) as dashed horizontal lines."""
    labels = list(dict.fromkeys(r["label"] for r in rows))
    styles = _styles(styles, labels)
    columns = _legend_columns(len(labels))
    figure = _figure(9.0 + _legend_width(labels, columns), 3.8)
    for position, (score, title) in enumerate((("f1", "adjacency F1"), ("shd", "SHD"))):
        axes = figure.add_subplot(1, 2, position + 1)
        for label in labels:
            mine = sorted((r for r in rows if r["label"] == label), key=lambda r: r["budget"])
            color = styles.color(label)
            if all(r["budget"] == 0 for r in mine):
                axes.axhline(_nan(mine[0][score]), color=color, linestyle="--", linewidth=1,
                             label=label)
                continue
            x = [_nan(r["rows_spent"]) for r in mine]
            y = [_nan(r[score]) for r in mine]
            low = [_nan(r[f"{score}_low"]) for r in mine]
            high = [_nan(r[f"{score}_high"]) for r in mine]
            axes.plot(x, y, color=color, marker=styles.marker(label), label=label)
            axes.fill_between(x, low, high, color=color, alpha=0.15)
        axes.set_xlabel("rows of experiments spent (mean per episode)")
        axes.set_ylabel(title)
        axes.grid(alpha=0.3)
    _outside_legend(figure, figure.axes[-1], columns)
    return figure


def figure_experiments(rows: Sequence[dict[str, Any]], path: Path,
                       styles: PolicyStyles | None = None) -> Path:
    """The experiments figure as a PNG (see :func:`draw_figure_experiments`)."""
    return _render(path, "figure_experiments", rows,
                   lambda: draw_figure_experiments(rows, styles), styles)
