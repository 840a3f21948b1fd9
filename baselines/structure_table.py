"""The BNLearn suite table: PC-Fisher-z, PC-KCI, GES and the oracle on each anonymized network,
and the share of the oracle's gain over PC-KCI that GES recovers.

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

from baselines.family_table import Cell, run_jobs
from heuresis_env.console import text_table
from heuresis_env.generation import STRUCTURE_FAMILIES, InstanceKey, get_family
from heuresis_env.seeding import text_seed

#: the algorithms of the suite table, in its column order
SUITE_ALGORITHMS = ("pc-fisherz", "pc-kci", "ges")


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
                        progress: Callable[[int], None] | None = None) -> list[NetworkRow]:
    """Run (or read from the cache) the suite's algorithms on ``count`` instances per network."""
    rows = []
    for family in families:
        structure = get_family(family).structure
        keys = [InstanceKey(family, split, i, n=n) for i in range(count)]
        results = run_jobs(keys, SUITE_ALGORITHMS, workers, progress)

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
