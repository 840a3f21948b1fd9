"""The per-family reference table: every algorithm, BCA_φ, the oracle, merge*, headrooms.

``compute_family_table`` runs (or reads from the cache) every algorithm on a split's
instances in parallel worker processes, selects BCA_φ on development instances and reports
everything on the requested split with 95% paired bootstrap intervals over instances.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import numpy as np

from baselines.merges import best_k, merge_k
from baselines.oracle import ideal_oracle
from baselines.reference import (
    REFERENCE_ALGORITHMS,
    cached_reference_record,
    reference_cache_key,
    reference_record,
)
from baselines.selection import select_bca
from heuresis_env.cache import ResultCache
from heuresis_env.console import text_table
from heuresis_env.errors import HeuresisError
from heuresis_env.generation import SPLIT_SIZES, InstanceKey, generate_instance
from heuresis_env.graphs import Graph
from heuresis_env.metrics import paired_bootstrap, score_graph
from heuresis_env.threads import limit_threads, parallel_map


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


#: a run is also stopped after this many times its budget in wall time (a stuck run uses
#: no CPU time)
WALL_FACTOR = 20
#: the start of the error of a run stopped (or not started) because of the time budget
OVER_BUDGET = "over budget"


def over_budget(error: str | None) -> bool:
    """Whether a job's error says it was stopped by, or skipped because of, the budget."""
    return error is not None and error.startswith(OVER_BUDGET)


def _budget_cache() -> ResultCache:
    """Runs stopped by a budget: {"budget": seconds} under the run's reference cache key, so a
    warm run does not retry them unless its budget is larger."""
    return ResultCache("reference-budget")


def _outcome(instance: Any, record: Any) -> tuple[str, str, dict | None, float, str | None,
                                                  dict | None]:
    result = record.result
    oracle_scores = None
    if record.algorithm == "pc-kci" and record.ok:

        oracle_scores = score_graph(ideal_oracle(instance), instance.record.dag)
    return (instance.key.slug, record.algorithm, record.scores,
            float(result.get("runtime_seconds", 0.0)), result.get("error"), oracle_scores)


def _cached_job(key: InstanceKey, algorithm: str, budget: float) -> tuple | None:
    """What :func:`_job` would return, read from the caches only (None: it has to run): the
    cached record, else a stop by an earlier budget at least as large."""
    instance = generate_instance(key)
    record = cached_reference_record(instance, algorithm)
    if record is not None:
        return _outcome(instance, record)
    stopped = _budget_cache().get(reference_cache_key(instance, algorithm))
    if stopped is not None and float(stopped["budget"]) >= budget:
        return (key.slug, algorithm, None, float(stopped["budget"]),
                f"{OVER_BUDGET}: over {float(stopped['budget']):g} s (an earlier run)", None)
    return None


def _job(args: tuple) -> tuple[str, str, dict | None, float, str | None, dict | None]:
    """Worker: one (instance, algorithm) → scores. Instances are regenerated from their key."""
    key_dict, algorithm = args[0], args[1]
    instance = generate_instance(InstanceKey.from_dict(key_dict))
    return _outcome(instance, reference_record(instance, algorithm))


def _job_name(job: tuple) -> str:
    return f"{job[1]} on {InstanceKey.from_dict(job[0]).slug}"


def run_jobs(keys: Sequence[InstanceKey], algorithms: Sequence[str], workers: int = 1,
             progress: Callable[[int], None] | None = None,
             budget: float | None = None) -> dict[tuple[str, str], tuple]:
    """Run every (instance, algorithm) pair; returns {(slug, algorithm): (scores, seconds, error, oracle)}.

    ``budget`` (CPU seconds per run) runs them under :func:`run_budgeted` instead."""
    if budget is not None:
        return run_budgeted([(k, a) for k in keys for a in algorithms], budget, workers,
                            progress)
    jobs = [(k.to_dict(), a) for k in keys for a in algorithms]
    out: dict[tuple[str, str], tuple] = {}
    if workers <= 1 or len(jobs) <= 1:
        limit_threads()  # the jobs run in this process, as a worker would run them
    for r in parallel_map(_job, jobs, workers, describe=_job_name):
        out[(r[0], r[1])] = r[2:]
        if progress:
            progress(1)
    return out


#: what a budgeted worker imports before it says "ready": the runners and the libraries they
#: import on first use (causal-learn's searches, lingam, torch), about 1-3 s
_WORKER_IMPORTS = (
    "heuresis_env.discovery.constraint_based", "heuresis_env.discovery.score_based",
    "heuresis_env.discovery.functional_models", "heuresis_env.discovery.continuous_optimization",
    "causallearn.search.ConstraintBased.FCI", "causallearn.search.ScoreBased.GES",
    "causallearn.search.PermutationBased.GRaSP", "causallearn.search.PermutationBased.BOSS",
    "lingam", "torch",
)


def _serve(connection: Connection) -> None:
    """A budgeted worker: says "ready" once its imports are done (the budget of its first job
    does not pay for them), then runs the jobs it is sent, one at a time, until sent None."""
    limit_threads()
    import importlib

    for module in _WORKER_IMPORTS:
        try:
            importlib.import_module(module)
        except ImportError:  # an optional extra missing: its algorithm fails when run
            pass
    connection.send("ready")
    while True:
        job = connection.recv()
        if job is None:
            return
        try:
            connection.send(_job(job))
        except Exception as exc:  # noqa: BLE001 - reported as the job's failure
            connection.send((InstanceKey.from_dict(job[0]).slug, job[1], None, 0.0,
                             f"{type(exc).__name__}: {exc}", None))


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; else None)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Worker:
    def __init__(self, context: Any):
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.ready = False
        self.job: tuple[InstanceKey, str] | None = None
        self.started = 0.0  # wall clock when the job was sent
        self.cpu_start: float | None = None  # the worker's CPU seconds then

    def used(self) -> float:
        """Seconds the current job has used: CPU time where the system tells it (so that
        other load on the machine does not count), else wall time."""
        cpu = _cpu_seconds(self.process.pid) if self.process.pid else None
        if cpu is None or self.cpu_start is None:
            return time.monotonic() - self.started
        return cpu - self.cpu_start

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.connection.send(None)
            except OSError:
                self.process.kill()
        self.process.join(timeout=10)
        self.connection.close()


def run_budgeted(jobs: Sequence[tuple[InstanceKey, str]], budget: float, workers: int = 1,
                 progress: Callable[[int], None] | None = None) -> dict[tuple[str, str], tuple]:
    """Run (instance, algorithm) jobs in ``workers`` worker processes, stopping any run that
    takes more than ``budget`` CPU seconds (its worker is killed and replaced). CPU time (user
    + system, read from ``/proc``; wall time where there is none) does not grow with other
    load on a shared machine, as wall time does; the workers run one thread each. A run is
    also stopped after ``WALL_FACTOR`` × ``budget`` seconds of wall time.

    The jobs of one family and algorithm form a group that runs in order, one job at a time:
    at its first run over the budget the group's later jobs are not run (the algorithm does
    not fit on that network at this budget; instances of a fixed structure differ only in
    their weights), so a group costs at most one stopped run. Which runs are reported thus
    depends only on each run's own CPU time, not on the number of workers or the order the
    pool happens to finish them, and a warm run (read from the cache in the same order)
    reports what the cold one did. Groups run side by side: every group's first job comes
    first, then the next job of the group with the most work expected to remain (its last
    run's seconds × the jobs left), so long groups do not start last.

    A stopped run is remembered in the cache (``reference-budget``), so a second run with the
    same or a smaller budget reads it back instead of trying again; completed runs are cached
    as always, so an interrupted run resumes where it stopped. Returns what :func:`run_jobs`
    does; the error of a stopped or skipped run starts with :data:`OVER_BUDGET`."""
    if not budget > 0:
        raise HeuresisError(f"the budget must be a positive number of seconds, got {budget!r}")
    if workers < 1:
        raise HeuresisError(f"workers must be at least 1, got {workers!r}")
    groups: dict[tuple[str, str], list[tuple[InstanceKey, str]]] = {}
    for key, algorithm in dict.fromkeys(jobs):
        groups.setdefault((key.family, algorithm), []).append((key, algorithm))
    ready = [members[0] for members in groups.values()]  # each group's lead job first
    held = {group: members[1:] for group, members in groups.items()}
    expected: dict[tuple[InstanceKey, str], float] = {}  # a follower's group's remaining work
    out: dict[tuple[str, str], tuple] = {}
    context = multiprocessing.get_context("spawn")
    pool: list[_Worker] = []  # started when a job is not in the cache
    uncached: set[tuple[InstanceKey, str]] = set()

    def finish(job: tuple[InstanceKey, str], result: tuple) -> None:
        out[(job[0].slug, job[1])] = result
        if progress:
            progress(1)
        group = (job[0].family, job[1])
        followers = held.pop(group, [])
        if over_budget(result[2]):
            for key, algorithm in followers:
                out[(key.slug, algorithm)] = (
                    None, 0.0, f"{OVER_BUDGET}: not run, {job[0].slug} took over {budget:g} s",
                    None)
                if progress:
                    progress(1)
        elif followers:
            held[group] = followers[1:]
            expected[followers[0]] = float(result[1]) * len(followers)
            ready.append(followers[0])
            # leads (not in ``expected``) first, then the most remaining work; stable
            ready.sort(key=lambda j: -expected.get(j, float("inf")))

    def replace(worker: _Worker) -> None:
        worker.stop(kill=True)
        pool[pool.index(worker)] = _Worker(context)

    try:
        while ready or any(w.job is not None for w in pool):
            # answer from the cache what it can, until the front of the queue holds a job
            # for every worker that the cache cannot answer
            checked = 0
            while checked < len(ready) and checked < workers:
                job = ready[checked]
                if job in uncached:
                    checked += 1
                    continue
                answer = _cached_job(job[0], job[1], budget)
                if answer is None:
                    uncached.add(job)
                    checked += 1
                else:
                    ready.pop(checked)
                    finish(job, answer[2:])
            if checked and len(pool) < workers:
                pool.extend(_Worker(context) for _ in range(min(checked, workers) - len(pool)))
            for worker in pool:
                if worker.ready and worker.job is None and ready:
                    worker.job = ready.pop(0)
                    worker.started = time.monotonic()
                    worker.cpu_start = _cpu_seconds(worker.process.pid or 0)
                    worker.connection.send((worker.job[0].to_dict(), worker.job[1]))
            busy = [w for w in pool if w.job is not None]
            starting = [w for w in pool if not w.ready]
            if not busy and not starting:
                continue
            # CPU time is polled: look again within a second, or at the first possible end
            timeout = min((max(0.0, min(1.0, budget - w.used())) for w in busy), default=None)
            done = wait([w.connection for w in (*busy, *starting)], timeout=timeout)
            for worker in starting:
                if worker.connection in done:
                    try:
                        worker.ready = worker.connection.recv() == "ready"
                    except EOFError:
                        raise HeuresisError("a budgeted worker process failed to start "
                                            f"(exit code {worker.process.exitcode})") from None
            for worker in busy:
                job = worker.job
                assert job is not None
                if worker.connection in done:
                    try:
                        result = worker.connection.recv()
                    except EOFError:  # the worker died (e.g. out of memory)
                        code = worker.process.exitcode
                        replace(worker)
                        finish(job, (None, 0.0, f"the worker process died (exit code {code})",
                                     None))
                        continue
                    worker.job = None
                    finish(job, result[2:])
                elif (worker.used() > budget
                      or time.monotonic() - worker.started > WALL_FACTOR * budget):
                    replace(worker)
                    # a run that ended while the budget was being checked is in the cache
                    answer = _cached_job(job[0], job[1], budget)
                    if answer is not None:
                        finish(job, answer[2:])
                        continue
                    instance = generate_instance(job[0])
                    _budget_cache().set(reference_cache_key(instance, job[1]),
                                        {"budget": float(budget)})
                    finish(job, (None, float(budget), f"{OVER_BUDGET}: stopped after "
                                 f"{budget:g} s", None))
    finally:
        for worker in pool:
            worker.stop(kill=worker.job is not None)
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
