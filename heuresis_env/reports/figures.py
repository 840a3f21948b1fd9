"""The report's figures as PNG files, drawn with matplotlib's object API (no pyplot, so no
global backend or figure state: safe in worker processes and servers).

Every function takes the numbers a table already computed (its ``values``), so a figure and
its table always agree, and returns the path of the PNG it wrote.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.metrics import BootstrapResult

DPI = 110
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def _save(figure, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=DPI)
    return path


def _nan(value: Any) -> float:
    return math.nan if value is None else float(value)


def _error_bars(results: Sequence[BootstrapResult | None]) -> tuple[np.ndarray, np.ndarray]:
    means = np.array([math.nan if r is None else r.mean for r in results])
    lows = np.array([math.nan if r is None else r.low for r in results])
    highs = np.array([math.nan if r is None else r.high for r in results])
    return means, np.vstack([means - lows, highs - means])


def figure6_f1(policy_rows: Sequence[dict[str, Any]], reference_rows: Sequence[dict[str, Any]],
               families: Sequence[str], path: Path) -> Path:
    """Figure 6 (left): mean F1 (all episodes) per family for every policy, with BCA_φ,
    PC-KCI and the oracle as markers."""
    labels = list(dict.fromkeys(r["label"] for r in policy_rows))
    figure = _figure(max(6.0, 1.3 * len(families) + 2), 4.0)
    axes = figure.add_subplot()
    x = np.arange(len(families))
    width = 0.8 / max(len(labels), 1)
    for k, label in enumerate(labels):
        means = []
        for family in families:
            found = [r for r in policy_rows if r["label"] == label and r["family"] == family]
            means.append(_nan(found[0]["mean_all"]) if found else math.nan)
        axes.bar(x - 0.4 + width * (k + 0.5), means, width, label=label,
                 color=_COLORS[k % len(_COLORS)])
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
    axes.legend(fontsize=8, ncols=2, loc="lower left")
    axes.grid(axis="y", alpha=0.3)
    return _save(figure, path)


def figure6_gains(policy_rows: Sequence[dict[str, Any]],
                  reference_rows: Sequence[dict[str, Any]], families: Sequence[str],
                  path: Path) -> Path:
    """Figure 6 (right): Δʳ_φ with 95% paired intervals, against the two headrooms (below 0:
    PC-KCI's level, −selection headroom; above: the oracle's, +repair headroom)."""
    labels = list(dict.fromkeys(r["label"] for r in policy_rows))
    figure = _figure(max(6.0, 1.3 * len(families) + 2), 4.0)
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
        axes.errorbar(x - 0.3 + offset * (k + 0.5), means, yerr=errors, fmt="o", capsize=3,
                      color=_COLORS[k % len(_COLORS)], label=label)
    axes.axhline(0, color="k", linewidth=0.8)
    axes.set_xticks(x, families)
    axes.set_ylabel("Δʳ_φ = F1 − F1(BCA_φ)")
    axes.set_title("Residual gain with 95% paired intervals")
    axes.legend(fontsize=8, loc="best")
    axes.grid(axis="y", alpha=0.3)
    return _save(figure, path)


def figure7_conditions(condition_rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Figure 7: paired differences between conditions (guided − unguided, full − minimal)
    per family, with 95% intervals."""
    contrasts = list(dict.fromkeys((r["policy"], r["contrast"]) for r in condition_rows))
    families = list(dict.fromkeys(r["family"] for r in condition_rows))
    figure = _figure(max(6.0, 1.3 * len(families) + 2), 4.0)
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
        axes.errorbar(x - 0.35 + offset * (k + 0.5), means, yerr=errors, fmt="s", capsize=3,
                      color=_COLORS[k % len(_COLORS)], label=f"{policy}: {contrast}")
    axes.axhline(0, color="k", linewidth=0.8)
    axes.set_xticks(x, families)
    axes.set_ylabel("difference in adjacency F1")
    axes.set_title("Conditions: paired differences (all episodes)")
    axes.legend(fontsize=8)
    axes.grid(axis="y", alpha=0.3)
    return _save(figure, path)


def figure_reporting_rule(policy_rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """F1 over all episodes against F1 over finished episodes, per policy and family; the
    colour is the truncation rate. Points off the diagonal break the reporting rule."""
    rows = [r for r in policy_rows if r.get("family") != "all"]
    figure = _figure(5.0, 4.4)
    axes = figure.add_subplot()
    all_f1 = np.array([_nan(r["mean_all"]) for r in rows])
    finished_f1 = np.array([_nan(r["mean_finished"]) for r in rows])
    rates = np.array([_nan(r["truncation_rate"]) for r in rows])
    points = axes.scatter(all_f1, finished_f1, c=rates, cmap="viridis", vmin=0, vmax=1,
                          edgecolors="k", s=40)
    axes.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle="--")
    axes.set_xlim(0, 1.02)
    axes.set_ylim(0, 1.02)
    axes.set_xlabel("F1, all episodes")
    axes.set_ylabel("F1, finished episodes")
    axes.set_title("Reporting rule: all vs finished")
    figure.colorbar(points, ax=axes, label="truncation rate")
    return _save(figure, path)


def figure_signals(results: dict[str, Any], path: Path) -> Path:
    """Appendix F: AUC of each deletion signal with its instance-bootstrap interval."""
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
    return _save(figure, path)


def figure_proposition(rows: Sequence[Any], path: Path) -> Path:
    """The proposition: AUC of the p-value-only ranker against the noncentrality μ, the exact
    curve and the band ½ ± ½·sup|Λ − 1|."""
    figure = _figure(6.0, 4.0)
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
    axes.legend(fontsize=8, loc="upper left")
    axes.grid(alpha=0.3)
    return _save(figure, path)


def figure_cost(cost_rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """Mean F1 against mean cost per episode for language-model policies (per family)."""
    rows = [r for r in cost_rows if r.get("family") != "all"]
    labels = list(dict.fromkeys(r["label"] for r in rows))
    figure = _figure(6.0, 4.0)
    axes = figure.add_subplot()
    for k, label in enumerate(labels):
        mine = [r for r in rows if r["label"] == label]
        axes.scatter([_nan(r["cost"]) for r in mine], [_nan(r["f1"]) for r in mine],
                     color=_COLORS[k % len(_COLORS)], label=label)
        for r in mine:
            axes.annotate(r["family"], (_nan(r["cost"]), _nan(r["f1"])), fontsize=7,
                          xytext=(3, 3), textcoords="offset points")
    axes.set_xlabel("mean cost per episode ($)")
    axes.set_ylabel("adjacency F1 (all episodes)")
    axes.set_title("F1 against cost")
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
    return _save(figure, path)
