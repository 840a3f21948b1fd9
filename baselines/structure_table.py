"""The BNLearn tables: the suite table (PC-Fisher-z, PC-KCI, GES and the oracle on each
anonymized network, and the share of the oracle's gain over PC-KCI that GES recovers) and the
shelf table (every reference algorithm, BCA_φ and the oracle on the seven networks of the
appendix; PC-Fisher-z, PC-KCI and GES under a time budget, and the oracle, on the four larger
ones).

The share of a network is (F1(GES) − F1(PC-KCI)) / (F1(oracle) − F1(PC-KCI)) on the mean
adjacency F1 over its instances: 1 when GES gains all that repairing PC-KCI's wrong deletions
could, 0 when it gains nothing, negative when it is worse than PC-KCI. Its 95% interval
resamples the instances (the same resample for the three algorithms).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from baselines.family_table import Cell, over_budget, run_budgeted, run_jobs
from baselines.reference import REFERENCE_ALGORITHMS
from baselines.selection import select_bca
from heuresis_env.console import text_table
from heuresis_env.errors import HeuresisError
from heuresis_env.generation import FAMILY_GROUPS, STRUCTURE_FAMILIES, InstanceKey, get_family
from heuresis_env.seeding import text_seed

#: the algorithms of the suite table, in its column order
SUITE_ALGORITHMS = ("pc-fisherz", "pc-kci", "ges")
#: the shelf: the seven networks of the appendix get every reference algorithm and BCA_φ ...
SHELF_FULL = FAMILY_GROUPS["bnlearn"]
#: ... the four larger ones the suite's algorithms under the budget
SHELF_LARGE = FAMILY_GROUPS["bnlearn-large"]
#: default budget of one algorithm run in the shelf table, in CPU seconds
SHELF_BUDGET = 120.0


@dataclass
class NetworkRow:
    family: str
    d: int
    n_edges: int
    n_instances: int
    f1: dict[str, Cell]  # algorithm (and "oracle") → mean F1 with its interval
    gain_oracle: float  # F1(oracle) − F1(PC-KCI)
    gain_ges: float  # F1(GES) − F1(PC-KCI)
    share: float  # gain_ges / gain_oracle (nan when the oracle gains nothing)
    share_low: float
    share_high: float
    failures: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _share(ges: np.ndarray, kci: np.ndarray, oracle: np.ndarray) -> float:
    gain = float(np.mean(oracle) - np.mean(kci))
    return float(np.mean(ges) - np.mean(kci)) / gain if gain > 0 else math.nan


def share_interval(ges: np.ndarray, kci: np.ndarray, oracle: np.ndarray, seed: int,
                   n_resamples: int = 10_000) -> tuple[float, float]:
    """95% percentile interval of the share over instance resamples (nan where undefined)."""
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(ges), size=(n_resamples, len(ges)))
    gains = oracle[index].mean(1) - kci[index].mean(1)
    shares = np.where(gains > 0, (ges[index].mean(1) - kci[index].mean(1)) /
                      np.where(gains > 0, gains, 1.0), np.nan)
    shares = shares[np.isfinite(shares)]
    if shares.size < n_resamples / 2:  # the oracle gains nothing in most resamples
        return math.nan, math.nan
    low, high = np.percentile(shares, [2.5, 97.5])
    return float(low), float(high)


def compute_suite_table(families: Sequence[str] = STRUCTURE_FAMILIES, split: str = "test",
                        count: int = 10, n: int | None = None, workers: int = 1,
                        n_resamples: int = 10_000,
                        progress: Callable[[int], None] | None = None,
                        budget: float | None = None) -> list[NetworkRow]:
    """Run (or read from the cache) the suite's algorithms on ``count`` instances per network
    (``budget``: seconds per run, see :func:`baselines.family_table.run_budgeted`; a run over
    it counts as a failure)."""
    rows = []
    for family in families:
        structure = get_family(family).structure
        keys = [InstanceKey(family, split, i, n=n) for i in range(count)]
        results = run_jobs(keys, SUITE_ALGORITHMS, workers, progress, budget=budget)

        def f1(scores: dict | None) -> float:
            return 0.0 if scores is None else float(np.nan_to_num(scores["f1"], nan=0.0))

        columns = {a: np.array([f1(results[(k.slug, a)][0]) for k in keys])
                   for a in SUITE_ALGORITHMS}
        columns["oracle"] = np.array([f1(results[(k.slug, "pc-kci")][3]) for k in keys])
        failures = {a: sum(results[(k.slug, a)][2] is not None for k in keys)
                    for a in SUITE_ALGORITHMS}
        ges, kci, oracle = columns["ges"], columns["pc-kci"], columns["oracle"]
        low, high = share_interval(ges, kci, oracle, text_seed(f"bnlearn-share:{family}"),
                                   n_resamples)
        rows.append(NetworkRow(
            family=family, d=keys[0].d,
            n_edges=0 if structure is None else len(structure.edges), n_instances=count,
            f1={name: Cell.of(values, n_resamples=n_resamples)
                for name, values in columns.items()},
            gain_oracle=float(oracle.mean() - kci.mean()),
            gain_ges=float(ges.mean() - kci.mean()),
            share=_share(ges, kci, oracle), share_low=low, share_high=high,
            failures=failures))
    return rows


def format_suite_table(rows: Sequence[NetworkRow], split: str, n: int) -> str:
    """The table ``heuresis baselines --suite bnlearn`` prints."""
    cells = []
    for row in rows:
        share = ("n/a (oracle gains nothing)" if math.isnan(row.share) else
                 f"{row.share:.0%}" + ("" if math.isnan(row.share_low) else
                                       f" [{row.share_low:.0%}, {row.share_high:.0%}]"))
        failed = {a: k for a, k in row.failures.items() if k}
        cells.append([row.family, row.d, row.n_edges, row.n_instances,
                      *(f"{row.f1[a].mean:.3f} [{row.f1[a].low:.2f}, {row.f1[a].high:.2f}]"
                        for a in (*SUITE_ALGORITHMS, "oracle")),
                      share + (f"  failures: {failed}" if failed else "")])
    lines = [f"BNLearn structures, anonymized, linear-Gaussian data ({split} split, n = {n}): "
             "mean adjacency F1 [95% interval]",
             text_table(["network", "d", "arcs", "inst", "PC-Fisher-z", "PC-KCI", "GES",
                         "oracle", "GES share of oracle gain"], cells, align="<>>><<<<<")]
    lines.append("share = (F1(GES) − F1(PC-KCI)) / (F1(oracle) − F1(PC-KCI)); oracle = PC-KCI "
                 "with every wrongly deleted true edge restored")
    return "\n".join(lines)


@dataclass
class ShelfRow:
    """One network of the shelf: each algorithm's mean adjacency F1 and SHD over the test
    instances (None when it was not run: over the budget on the first instance), BCA_φ
    (selected on as many dev instances; the seven networks only), the oracle, the headrooms
    and GES's share of the oracle's gain over PC-KCI."""

    family: str
    d: int
    n_edges: int
    n_instances: int
    algorithms: list[str]
    f1: dict[str, float | None]
    shd: dict[str, float | None]
    failures: dict[str, int]  # runs that failed (scored as the empty graph would be)
    over_budget: dict[str, int]  # test runs stopped or skipped by the budget
    seconds: dict[str, float]  # summed run time of its runs, test and dev (cached: as run)
    bca: str | None
    bca_dev_f1: float | None
    oracle_f1: float | None
    oracle_shd: float | None
    selection_headroom: float | None  # F1(BCA_φ) − F1(PC-KCI)
    repair_headroom: float | None  # F1(oracle) − F1(BCA_φ)
    ges_share: float | None  # (F1(GES) − F1(PC-KCI)) / (F1(oracle) − F1(PC-KCI))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def compute_shelf_table(full: Sequence[str] = SHELF_FULL, large: Sequence[str] = SHELF_LARGE,
                        count: int = 5, n: int | None = None, workers: int = 1,
                        budget: float = SHELF_BUDGET,
                        progress: Callable[[int], None] | None = None) -> list[ShelfRow]:
    """The shelf: on each network of ``full`` every reference algorithm on ``count`` test
    and ``count`` dev instances (BCA_φ is selected on the dev ones); on each of ``large``
    PC-Fisher-z, PC-KCI and GES on ``count`` test instances. Every run has ``budget`` CPU
    seconds (:func:`baselines.family_table.run_budgeted`); all jobs share one pool, and the
    cache makes a second run read everything back."""
    if count < 1:
        raise HeuresisError(f"count must be at least 1, got {count}")
    for family in (*full, *large):
        if get_family(family).structure is None:
            raise HeuresisError(f"{family!r} has no fixed structure: the shelf takes the "
                                f"BNLearn families ({', '.join(STRUCTURE_FAMILIES)})")
    plan: dict[str, tuple[list[InstanceKey], list[InstanceKey], tuple[str, ...]]] = {}
    for family in full:
        plan[family] = ([InstanceKey(family, "test", i, n=n) for i in range(count)],
                        [InstanceKey(family, "dev", i, n=n) for i in range(count)],
                        REFERENCE_ALGORITHMS)
    for family in large:
        if family not in plan:
            plan[family] = ([InstanceKey(family, "test", i, n=n) for i in range(count)], [],
                            SUITE_ALGORITHMS)
    # the small networks first, and per network its test instances before its dev ones
    jobs = [(key, algorithm) for test, dev, algorithms in plan.values()
            for key in (*test, *dev) for algorithm in algorithms]
    results = run_budgeted(jobs, budget, workers, progress)
    rows = []
    for family, (test, dev, algorithms) in plan.items():
        structure = get_family(family).structure
        assert structure is not None

        def runs(keys: Sequence[InstanceKey], algorithm: str) -> list[tuple]:
            return [results[(k.slug, algorithm)] for k in keys]

        f1: dict[str, float | None] = {}
        shd: dict[str, float | None] = {}
        failures, stopped, seconds = {}, {}, {}
        for algorithm in algorithms:
            done = runs(test, algorithm)
            stopped[algorithm] = sum(over_budget(r[2]) for r in done)
            failures[algorithm] = sum(r[2] is not None and not over_budget(r[2]) for r in done)
            seconds[algorithm] = float(sum(r[1] for r in (*done, *runs(dev, algorithm))))
            if stopped[algorithm] == len(done):
                f1[algorithm] = shd[algorithm] = None  # not run (> budget)
                continue
            # a failed or stopped run is scored as the empty graph would be
            f1[algorithm] = _mean([0.0 if r[0] is None else
                                   float(np.nan_to_num(r[0]["f1"], nan=0.0)) for r in done])
            shd[algorithm] = _mean([len(structure.edges) if r[0] is None else
                                    float(r[0]["shd"]) for r in done])
        bca = bca_dev = None
        if dev:
            dev_f1 = {a: [0.0 if r[0] is None else float(np.nan_to_num(r[0]["f1"], nan=0.0))
                          for r in runs(dev, a)]
                      for a in algorithms if not all(over_budget(r[2]) for r in runs(dev, a))}
            if dev_f1:  # else every algorithm was over the budget
                bca = select_bca(dev_f1)
                bca_dev = _mean(dev_f1[bca])
        oracle = oracle_shd = None
        kci_runs = runs(test, "pc-kci")
        if all(r[3] is not None for r in kci_runs):
            oracle = _mean([float(r[3]["f1"]) for r in kci_runs])
            oracle_shd = _mean([float(r[3]["shd"]) for r in kci_runs])
        kci, ges = f1.get("pc-kci"), f1.get("ges")
        bca_f1 = None if bca is None else f1[bca]
        share = None
        if oracle is not None and kci is not None and ges is not None and oracle > kci:
            share = (ges - kci) / (oracle - kci)
        rows.append(ShelfRow(
            family=family, d=structure.d, n_edges=len(structure.edges), n_instances=len(test),
            algorithms=list(algorithms), f1=f1, shd=shd, failures=failures,
            over_budget=stopped, seconds=seconds, bca=bca, bca_dev_f1=bca_dev,
            oracle_f1=oracle, oracle_shd=oracle_shd,
            selection_headroom=None if bca_f1 is None or kci is None else bca_f1 - kci,
            repair_headroom=None if bca_f1 is None or oracle is None else oracle - bca_f1,
            ges_share=share))
    return rows


def _f1_shd(row: ShelfRow, algorithm: str) -> str:
    if algorithm not in row.f1:
        return "—"
    if row.f1[algorithm] is None:
        return "not run (> budget)"
    text = f"{row.f1[algorithm]:.3f} / {row.shd[algorithm]:.1f}"
    notes = [f"{k} failed" for k in [row.failures[algorithm]] if k] + \
        [f"{k} over budget" for k in [row.over_budget[algorithm]] if k]
    return text + (f" ({', '.join(notes)})" if notes else "")


def format_shelf_table(rows: Sequence[ShelfRow], n: int, budget: float) -> str:
    """The tables ``heuresis baselines --suite shelf`` prints: scores, then seconds."""
    algorithms = list(dict.fromkeys(a for row in rows for a in row.algorithms))
    count = max((row.n_instances for row in rows), default=0)
    lines = [f"The BNLearn shelf, anonymized, linear-Gaussian data (n = {n}, {count} test "
             f"instances per network; BCA_φ selected on as many dev instances; budget "
             f"{budget:g} CPU s per run): mean adjacency F1 / mean SHD"]
    for algorithm_part in (algorithms[:5], algorithms[5:]):
        if not algorithm_part:
            continue
        lines.append(text_table(
            ["network", "d", "arcs", *algorithm_part],
            [[row.family, row.d, row.n_edges, *(_f1_shd(row, a) for a in algorithm_part)]
             for row in rows], align="<>>" + "<" * len(algorithm_part)))
        lines.append("")

    def number(value: float | None, form: str) -> str:
        return "—" if value is None else format(value, form)

    lines.append(text_table(
        ["network", "BCA_φ (dev F1)", "F1(BCA_φ)", "oracle F1 / SHD", "sel. headroom",
         "rep. headroom", "GES share"],
        [[row.family,
          "—" if row.bca is None else f"{row.bca} ({row.bca_dev_f1:.3f})",
          number(None if row.bca is None else row.f1[row.bca], ".3f"),
          "not run (PC-KCI > budget)" if row.oracle_f1 is None else
          f"{row.oracle_f1:.3f} / {row.oracle_shd:.1f}",
          number(row.selection_headroom, "+.3f"), number(row.repair_headroom, "+.3f"),
          number(None if row.ges_share is None else 100 * row.ges_share, ".0f") +
          ("" if row.ges_share is None else "%")] for row in rows],
        align="<<><>><"))
    lines.append("oracle = PC-KCI with every wrongly deleted true edge restored; selection "
                 "headroom F1(BCA_φ) − F1(PC-KCI); repair headroom F1(oracle) − F1(BCA_φ); "
                 "GES share = (F1(GES) − F1(PC-KCI)) / (F1(oracle) − F1(PC-KCI))")
    lines.append("")
    lines.append("Seconds per network and algorithm (run times of the test and dev runs "
                 "summed, as recorded when they ran; a stopped run counts its budget):")
    lines.append(text_table(
        ["network", *algorithms, "total"],
        [[row.family, *(f"{row.seconds[a]:.0f}" if a in row.seconds else "—"
                        for a in algorithms), f"{sum(row.seconds.values()):.0f}"]
         for row in rows]))
    return "\n".join(lines)
