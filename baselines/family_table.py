"""The per-family reference table: every algorithm, BCA_φ, the oracle, merge*, headrooms.

``compute_family_table`` runs (or reads from the cache) every algorithm on a split's
instances in parallel worker processes, selects BCA_φ on development instances and reports
everything on the requested split with 95% paired bootstrap intervals over instances.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from baselines.merges import best_k, merge_k
from baselines.oracle import ideal_oracle
from baselines.reference import REFERENCE_ALGORITHMS, reference_record
from baselines.selection import select_bca
from heuresis_env.console import text_table
from heuresis_env.generation import SPLIT_SIZES, InstanceKey, generate_instance
from heuresis_env.graphs import Graph
from heuresis_env.metrics import paired_bootstrap, score_graph
from heuresis_env.threads import limit_threads


@dataclass
class Cell:
    """Mean of a score over instances with a 95% bootstrap interval (paired where a difference)."""

    mean: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float], reference: Sequence[float] | None = None,
           seed: int = 0, n_resamples: int = 10_000) -> Cell:
        boot = paired_bootstrap(np.asarray(values, float),
                                None if reference is None else np.asarray(reference, float),
                                n_resamples=n_resamples, seed=seed)
        return cls(float(boot.mean), float(boot.low), float(boot.high), int(boot.n))

    def __str__(self) -> str:
        return f"{self.mean:6.3f} [{self.low:6.3f}, {self.high:6.3f}]"


@dataclass
class AlgorithmRow:
    name: str
    f1: Cell
    nshd: Cell
    failures: int
    mean_seconds: float


@dataclass
class FamilyTable:
    family: str
    split: str
    n_instances: int
    selection_split: str
    selection_instances: int
    algorithms: list[AlgorithmRow]
    bca: str
    bca_dev_f1: float
    bca_f1: Cell
    oracle_f1: Cell
    merge_star_k: int
    merge_star_f1: Cell
    selection_headroom: Cell  # F1(BCA) − F1(PC-KCI), paired
    repair_headroom: Cell  # F1(oracle) − F1(BCA), paired
    dev_means: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _job(args: tuple[dict, str]) -> tuple[str, str, dict | None, float, str | None, dict | None]:
    """Worker: one (instance, algorithm) → scores. Instances are regenerated from their key."""
    key_dict, algorithm = args
    instance = generate_instance(InstanceKey.from_dict(key_dict))
    record = reference_record(instance, algorithm)
    result = record.result
    oracle_scores = None
    if algorithm == "pc-kci" and record.ok:

        oracle_scores = score_graph(ideal_oracle(instance), instance.record.dag)
    return (instance.key.slug, algorithm, record.scores, float(result.get("runtime_seconds", 0.0)),
            result.get("error"), oracle_scores)


def _init_worker() -> None:
    limit_threads()


def run_jobs(keys: Sequence[InstanceKey], algorithms: Sequence[str], workers: int = 1,
             progress: Callable[[int], None] | None = None) -> dict[tuple[str, str], tuple]:
    """Run every (instance, algorithm) pair; returns {(slug, algorithm): (scores, seconds, error, oracle)}."""
    jobs = [(k.to_dict(), a) for k in keys for a in algorithms]
    out: dict[tuple[str, str], tuple] = {}
    if workers <= 1:
        limit_threads()
        results = map(_job, jobs)
        for r in results:
            out[(r[0], r[1])] = r[2:]
            if progress:
                progress(1)
        return out
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker) as pool:
        for r in pool.map(_job, jobs, chunksize=1):
            out[(r[0], r[1])] = r[2:]
            if progress:
                progress(1)
    return out


def _f1(scores: dict | None) -> float:
    return 0.0 if scores is None else float(np.nan_to_num(scores["f1"], nan=0.0))


def _nshd(scores: dict | None, d: int) -> float:
    # a failed run is scored as the empty graph would be: SHD = number of true edges (≈ d) → use 1.0
    return 1.0 if scores is None else float(scores["nshd"])


def compute_family_table(family: str, split: str = "test", count: int | None = None,
                         algorithms: Sequence[str] = REFERENCE_ALGORITHMS,
                         selection_count: int | None = None, workers: int = 1,
                         d: int = 10, n: int = 600, n_resamples: int = 10_000,
                         progress: Callable[[int], None] | None = None,
                         merge_graphs: bool = True) -> FamilyTable:
    """Everything ``heuresis baselines`` prints for one family."""

    algorithms = list(dict.fromkeys(["pc-kci", *algorithms]))  # PC-KCI is needed for oracle/headroom
    count = SPLIT_SIZES[split] if count is None else count
    selection_count = SPLIT_SIZES["dev"] if selection_count is None else selection_count
    keys = [InstanceKey(family, split, i, d=d, n=n) for i in range(count)]
    dev_keys = keys if split == "dev" and selection_count == count else [
        InstanceKey(family, "dev", i, d=d, n=n) for i in range(selection_count)]
    all_keys = list(dict.fromkeys(keys + dev_keys))
    results = run_jobs(all_keys, algorithms, workers, progress)

    def column(ks: Sequence[InstanceKey], alg: str, what: Callable[[dict | None], float]) -> list[float]:
        return [what(results[(k.slug, alg)][0]) for k in ks]

    dev_f1 = {a: column(dev_keys, a, _f1) for a in algorithms}
    bca = select_bca(dev_f1)
    rows = []
    for a in algorithms:
        f1 = column(keys, a, _f1)
        nshd = column(keys, a, lambda s: _nshd(s, d))
        failures = sum(results[(k.slug, a)][2] is not None for k in keys)
        seconds = float(np.mean([results[(k.slug, a)][1] for k in keys]))
        rows.append(AlgorithmRow(a, Cell.of(f1, n_resamples=n_resamples),
                                 Cell.of(nshd, n_resamples=n_resamples), failures, seconds))
    pc_kci = column(keys, "pc-kci", _f1)
    bca_f1 = column(keys, bca, _f1)
    oracle = [_f1(results[(k.slug, "pc-kci")][3]) for k in keys]

    merge_k_star, merge_values = 1, [0.0] * len(keys)
    if merge_graphs:
        per_instance, truths = [], []
        for k in keys:
            inst = generate_instance(k)
            graphs = []
            for a in algorithms:
                rec = reference_record(inst, a)
                res = rec.graph_result()
                graphs.append(res.graph if res.ok else Graph(inst.names))
            per_instance.append(graphs)
            truths.append(inst.record.dag)
        merge_k_star, _ = best_k(per_instance, truths, lambda g, t: _f1(score_graph(g, t)))
        merge_values = [_f1(score_graph(merge_k(gs, merge_k_star), t))
                        for gs, t in zip(per_instance, truths, strict=True)]

    return FamilyTable(
        family=family, split=split, n_instances=len(keys), selection_split="dev",
        selection_instances=len(dev_keys), algorithms=rows, bca=bca,
        bca_dev_f1=float(np.mean(dev_f1[bca])),
        bca_f1=Cell.of(bca_f1, n_resamples=n_resamples),
        oracle_f1=Cell.of(oracle, n_resamples=n_resamples),
        merge_star_k=merge_k_star, merge_star_f1=Cell.of(merge_values, n_resamples=n_resamples),
        selection_headroom=Cell.of(bca_f1, pc_kci, n_resamples=n_resamples),
        repair_headroom=Cell.of(oracle, bca_f1, n_resamples=n_resamples),
        dev_means={a: float(np.mean(v)) for a, v in dev_f1.items()},
    )


def format_family_table(table: FamilyTable) -> str:
    """The table as plain text (what ``heuresis baselines`` prints)."""
    rows = [[row.name, row.f1, row.nshd, row.failures, f"{row.mean_seconds:.2f}"]
            for row in table.algorithms]
    rows += [[f"BCA = {table.bca}", table.bca_f1, f"(dev mean F1 {table.bca_dev_f1:.3f})", "",
              ""],
             ["oracle", table.oracle_f1, "(PC-KCI + wrongly deleted true edges)", "", ""],
             [f"merge* (k={table.merge_star_k})", table.merge_star_f1, "(best k in hindsight)",
              "", ""]]
    lines = [
        f"family {table.family} — {table.split} split, {table.n_instances} instances; "
        f"BCA selected on {table.selection_instances} {table.selection_split} instances",
        text_table(["algorithm", "adjacency F1 [95% CI]", "nSHD [95% CI]", "fail", "s/inst"],
                   rows, align="<<<>>", indent="  "),
        f"  selection headroom F1(BCA) − F1(PC-KCI): {table.selection_headroom}",
        f"  repair headroom    F1(oracle) − F1(BCA): {table.repair_headroom}",
    ]
    return "\n".join(lines)
