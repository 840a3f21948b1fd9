"""How cost grows with d and n, every cell measured: PC with the kernel test, the RL view's
evidence, a scratchpad episode and the main job at d ∈ {10, 20, 50, 100} × n ∈ {600, 2000,
10000}, each with its memory peak; and the same job on a local Ray cluster of several raylets
against the local process pool.

The table (default mode). Cells run small to large (by n² · d); each measurement of a cell
runs in its own subprocess (a fresh ``HEURESIS_CACHE_DIR`` per cell, one BLAS thread, ``nice``
as the parent), killed with its process tree when it exceeds ``--budget`` seconds — reported
as "> budget" with the partial figures it wrote (tests done so far), never extrapolated — or
stopped by ``--memory-limit-gb`` (an address-space limit per process; a ``MemoryError`` is
reported as such). Results are appended to ``OUT/cells.jsonl`` as each measurement ends: a
rerun with the same options skips what is there (resume).

* **pc**: our PC on one ``--family`` dev instance with the kernel test ``--ci-test`` (default
  ``auto``: the registered ``kci-auto`` when it exists, else exact ``kci`` for n ≤ 2000 and
  ``rcot`` above), no disk cache. Its output is saved for the evidence measurement.
* **evidence**: the RL view's pair evidence, ``compute_pair_evidence`` given the pc
  measurement's output (PC-Fisher-z, a KCI test per pair at its deleting set, 30 bootstrap
  PC-Fisher-z runs, distance correlations) — the call a cold RL-view reset makes on this
  branch after the guided start. Not run when pc did not finish (it needs its output).
* **episode**: one episode of the ``scratchpad`` router (40 steps, wall cap = the budget).
* **job**: the main job, ``heuresis evaluate --policy pc-kci --family FAMILY --split dev
  --count JOB_COUNT --workers JOB_WORKERS --d D --n N`` (the real command, its workers and
  policy processes included).

Memory peak: the largest resident set of the measurement's process tree, the larger of (a) the
sum of the RSS of the subprocess and all its descendants, sampled from ``/proc`` every 0.2 s
(a spike shorter than that can be missed), and (b) the subprocess's own ``ru_maxrss`` from
``wait4`` (exact, itself only). For the one-process measurements (pc, evidence, episode) (b)
is the figure; for the job, (a).

Exponents: least squares of log time on log n and log d over the cells that finished.

The Ray comparison (``--ray-cluster N``): the job ``heuresis evaluate --policy RAY_POLICY
--family FAMILY --split dev --count RAY_COUNT --n RAY_N --workers RAY_WORKERS``, run as the
real command (a) on the local process pool and (b) with ``--backend ray --address`` on a local
Ray cluster of N raylets started here (``ray.cluster_utils.Cluster``: a head and N − 1 worker
nodes, the RAY_WORKERS CPUs spread over them), each with a cold cache, in the same run; the
results files are compared line by line (timing fields aside), and the raylet that hosted each
episode's actor is read from ``/proc`` while the job runs.

    python benchmarks/bench_scaling.py --out runs/scaling                      # the table
    python benchmarks/bench_scaling.py --out runs/scaling --d 10,20 --n 600    # a corner
    python benchmarks/bench_scaling.py --out runs/scaling --plot-only          # tables, figure
    python benchmarks/bench_scaling.py --out runs/ray --ray-cluster 3          # Ray vs pool
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MEASURES = ("pc", "evidence", "episode", "job")
#: exact KCI up to this n when ``--ci-test auto`` and ``kci-auto`` is not registered
EXACT_KCI_MAX_N = 2000
#: fields of a results line that may differ between two runs of a deterministic policy
TIMING_FIELDS = ("wall_seconds", "worker", "config_digest")


# ---- measurements (each runs in its own subprocess: ``--child MEASURE``) --------------------

def instance(family: str, d: int, n: int):
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    return generate_instance(InstanceKey(family, "dev", 0, d=d, n=n))


def resolve_ci_test(name: str, n: int) -> str:
    """``auto``: ``kci-auto`` when registered, else exact KCI up to n = 2000, RCoT above."""
    from heuresis_env.discovery.citests import available_ci_tests

    if name != "auto":
        return name
    if "kci-auto" in available_ci_tests():
        return "kci-auto"
    return "kci" if n <= EXACT_KCI_MAX_N else "rcot"


class Progress:
    """Counts computed CI tests by |S| and writes them to ``path`` at most every second, so
    the parent can report what a measurement stopped for exceeding its budget had done."""

    def __init__(self, path: Path):
        self.path, self.started, self.written = path, time.perf_counter(), 0.0
        self.tests: dict[int, int] = {}

    def count(self, level: int) -> None:
        self.tests[level] = self.tests.get(level, 0) + 1
        now = time.perf_counter()
        if now - self.written > 1.0:
            self.write()
            self.written = now

    def write(self) -> None:
        self.path.write_text(json.dumps({"seconds": time.perf_counter() - self.started,
                                         "tests": sum(self.tests.values()),
                                         "tests_by_level": self.tests}))


def counted(method, progress: Progress):
    """``CITest._compute`` wrapped to count each computed test in ``progress``."""
    def compute(self, x, y, s):
        out = method(self, x, y, s)
        progress.count(len(s))
        return out
    return compute


def child_pc(args, cell: Path) -> dict:
    from heuresis_env.discovery.citests import make_ci_test
    from heuresis_env.discovery.citests.base import ci_test_class
    from heuresis_env.discovery.pc import pc

    inst = instance(args.family, args.d, args.n)
    name = resolve_ci_test(args.ci_test, args.n)
    progress = Progress(cell / "pc.progress.json")
    tester = make_ci_test(name, inst.X, disk_cache=False)
    runs = getattr(tester, "delegate", tester)  # kci-auto answers through the test it picks
    cls = ci_test_class(runs.name)
    cls._compute = counted(cls._compute, progress)  # type: ignore[method-assign]
    start = time.perf_counter()
    result = pc(None, inst.names, ci_test=tester)
    seconds = time.perf_counter() - start
    (cell / "pc_result.pickle").write_bytes(pickle.dumps(result))
    return {"seconds": seconds, "tests": result.n_tests, "ci_test": name, "method": runs.name,
            "tests_by_level": progress.tests, "edges": result.skeleton.n_edges()}


def child_evidence(args, cell: Path) -> dict:
    from heuresis_env.discovery.citests.base import ci_test_class
    from heuresis_env.evidence import GuidedStart, compute_pair_evidence

    inst = instance(args.family, args.d, args.n)
    result = pickle.loads((cell / "pc_result.pickle").read_bytes())
    guided = GuidedStart(graph=result.graph, deletion_log=tuple(result.deletion_log),
                         n_tests=result.n_tests, alpha=0.05, ci_test=result.ci_test, runtime=0.0)
    progress = Progress(cell / "evidence.progress.json")
    cls = ci_test_class("kci")
    cls._compute = counted(cls._compute, progress)  # type: ignore[method-assign]
    start = time.perf_counter()
    compute_pair_evidence(inst.X, inst.names, inst.sha256, guided=guided)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "tests": sum(progress.tests.values()),
            "pairs": args.d * (args.d - 1) // 2, "guided_ci_test": result.ci_test}


def child_episode(args, cell: Path) -> dict:
    from heuresis_env.evaluation.episode import EpisodeRunner, EpisodeTask, RunSpec
    from heuresis_env.policy import EpisodeSettings

    spec = RunSpec(policy="scratchpad", policy_options={},
                   settings=EpisodeSettings(max_steps=40, max_seconds=args.budget), d=args.d,
                   n=args.n)
    runner = EpisodeRunner(spec, "bench")
    try:
        start = time.perf_counter()
        outcome = runner.run(EpisodeTask("bench", args.family, "dev", 0, 0, 0))
        seconds = time.perf_counter() - start
    finally:
        runner.close()
    record = outcome.record
    return {"seconds": seconds, "steps": record["steps"],
            "termination_reason": record["termination_reason"], "error": record["error"]}


CHILDREN = {"pc": child_pc, "evidence": child_evidence, "episode": child_episode}


def child_main(args) -> None:
    from heuresis_env.threads import limit_threads

    limit_threads()
    cell = Path(args.cell_dir)
    try:
        out = CHILDREN[args.child](args, cell)
    except MemoryError:
        out = {"error": f"MemoryError (address-space limit {args.memory_limit_gb:g} GiB)"}
    (cell / f"{args.child}.json").write_text(json.dumps(out))


# ---- running a measurement in a subprocess: budget, memory peak, partial figures ------------

def process_table() -> dict[int, tuple[int, int]]:
    """pid → (parent pid, resident bytes) of every process readable in /proc."""
    page = os.sysconf("SC_PAGE_SIZE")
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/statm") as statm:
                resident = int(statm.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry)] = (int(fields[1]), resident)
    return table


def descendants(root: int, table: dict[int, tuple[int, int]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        if pid in table:
            found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def run_measured(command: list[str], env: dict[str, str], budget: float, memory_limit_gb: float,
                 log: Path, watch=None) -> dict:
    """Run ``command`` in its own session under ``budget`` seconds; its tree's memory peak.
    ``watch(table, tree)`` is called at each sample (the Ray study uses it)."""
    limit = int(memory_limit_gb * 2**30)

    def confine() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with open(log, "w") as output:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=output,
                                   stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=confine if memory_limit_gb > 0 else None)
    start, peak, status, usage, over = time.perf_counter(), 0, None, None, False
    tree: list[int] = [process.pid]
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        table = process_table()
        tree = descendants(process.pid, table) or tree
        peak = max(peak, sum(table[p][1] for p in tree if p in table))
        if watch is not None:
            watch(table, tree)
        if time.perf_counter() - start > budget:
            over = True
            for target in tree:  # the tree we started: its session, then any stragglers
                try:
                    os.kill(target, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _, status, usage = os.wait4(process.pid, 0)
            break
        time.sleep(0.2)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    peak = max(peak, usage.ru_maxrss * 1024)
    return {"wall": seconds, "over_budget": over, "returncode": process.returncode,
            "peak_rss_mb": peak / 2**20}


def measure(args, measure_name: str, d: int, n: int, cell: Path) -> dict:
    env = {**os.environ, "HEURESIS_CACHE_DIR": str(cell / "cache"),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if measure_name == "job":
        run_dir = cell / "job-run"
        shutil.rmtree(run_dir, ignore_errors=True)
        command = [sys.executable, "-m", "heuresis_env.cli", "evaluate", "--policy", "pc-kci",
                   "--family", args.family, "--split", "dev", "--count", str(args.job_count),
                   "--workers", str(args.job_workers), "--d", str(d), "--n", str(n),
                   "--max-seconds", str(args.budget), "--out", str(run_dir), "--no-progress"]
    else:
        command = [sys.executable, __file__, "--child", measure_name, "--cell-dir", str(cell),
                   "--family", args.family, "--d", str(d), "--n", str(n),
                   "--ci-test", args.ci_test, "--budget", str(args.budget),
                   "--memory-limit-gb", str(args.memory_limit_gb)]
    started_at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load = os.getloadavg()
    run = run_measured(command, env, args.budget, args.memory_limit_gb,
                       cell / f"{measure_name}.log")
    row = {"measure": measure_name, "d": d, "n": n, "family": args.family, "budget": args.budget,
           "started": started_at, "load_before": load[0], "load_after": os.getloadavg()[0],
           **run}
    if measure_name == "job":
        results = run_dir / "results.jsonl"
        lines = results.read_text().splitlines() if results.exists() else []
        records = [json.loads(line) for line in lines if line.strip()]
        row["episodes"] = len(records)
        row["errors"] = [r["error"] for r in records if r.get("error")]
        row["job_count"], row["job_workers"] = args.job_count, args.job_workers
        row["finished"] = (not run["over_budget"] and run["returncode"] == 0
                           and len(records) == args.job_count and not row["errors"])
        if row["finished"]:
            row["seconds"] = run["wall"]
        elif not run["over_budget"]:
            row["error"] = (cell / "job.log").read_text()[-800:]
    else:
        outcome = cell / f"{measure_name}.json"
        progress = cell / f"{measure_name}.progress.json"
        if outcome.exists():
            row.update(json.loads(outcome.read_text()))
        elif progress.exists():
            row["partial"] = json.loads(progress.read_text())
        row["finished"] = bool(outcome.exists() and not row.get("error")
                               and run["returncode"] == 0)
        if measure_name == "episode" and row.get("termination_reason") == "wall_time":
            row["finished"] = False
            row["over_budget"] = True
        if not row["finished"] and not run["over_budget"] and not row.get("error"):
            row["error"] = (cell / f"{measure_name}.log").read_text()[-800:]
    return row


def cell_key(row: dict) -> tuple:
    return row["measure"], row["d"], row["n"], row["family"], row["budget"]


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_table(args) -> None:
    ds = [int(v) for v in args.d.split(",")]
    ns = [int(v) for v in args.n.split(",")]
    cells = sorted(((d, n) for d in ds for n in ns), key=lambda c: (c[1] ** 2 * c[0], c))
    path = args.out / "cells.jsonl"
    done = {cell_key(r) for r in read_rows(path)}
    measures = [m for m in args.measures.split(",") if m]
    unknown = sorted(set(measures) - set(MEASURES))
    if unknown:
        raise SystemExit(f"unknown measures {unknown}; choose from {list(MEASURES)}")
    for d, n in cells:
        cell = args.out / f"d{d}-n{n}"
        cell.mkdir(parents=True, exist_ok=True)
        for name in measures:
            if (name, d, n, args.family, args.budget) in done:
                continue
            if name == "evidence" and not (cell / "pc_result.pickle").exists():
                row = {"measure": name, "d": d, "n": n, "family": args.family,
                       "budget": args.budget, "finished": False,
                       "skipped": "needs PC's output, and PC did not finish within the budget",
                       "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
            else:
                row = measure(args, name, d, n, cell)
            with open(path, "a") as out:
                out.write(json.dumps(row) + "\n")
            print(json.dumps({k: v for k, v in row.items() if k != "error"}), flush=True)
        shutil.rmtree(cell / "cache", ignore_errors=True)


# ---- tables, exponents, figure --------------------------------------------------------------

def latest(rows: list[dict]) -> dict[tuple, dict]:
    """The last row of each (measure, d, n) (a rerun at another budget replaces it)."""
    return {(r["measure"], r["d"], r["n"]): r for r in rows}


def cell_text(row: dict | None) -> str:
    if row is None:
        return "–"
    if row.get("finished"):
        return f"{row['seconds']:.1f}"
    if row.get("skipped"):
        return "not run (PC > budget)"
    if row.get("over_budget"):
        partial = row.get("partial") or {}
        extra = ""
        if row["measure"] == "job":
            extra = f"; {row.get('episodes', 0)}/{row.get('job_count')} episodes"
        elif partial.get("tests"):
            extra = f"; {partial['tests']:,} tests done"
        return f"> {row['budget']:.0f}{extra}"
    return "failed: " + str(row.get("error", "?")).strip().splitlines()[-1][:60]


def memory_text(row: dict | None) -> str:
    if row is None or row.get("skipped") or "peak_rss_mb" not in row:
        return "–"
    mb = row["peak_rss_mb"]
    text = f"{mb / 1024:.2f} GiB" if mb >= 1024 else f"{mb:.0f} MiB"
    return text if row.get("finished") else f"≥ {text}"


def fit_exponents(rows: list[dict]) -> str | None:
    """Least squares of log time on log n and log d over the finished cells: "n^a · d^b", or
    the one exponent the cells can show when they share n (or d)."""
    points = [(math.log(r["n"]), math.log(r["d"]), math.log(r["seconds"]))
              for r in rows if r.get("finished") and r.get("seconds")]
    varies = [len({p[k] for p in points}) >= 2 for k in (0, 1)]
    if not any(varies) or len(points) < 3:  # two points fit any line
        return None
    columns = [k for k in (0, 1) if varies[k]]
    design = np.array([[1.0, *(p[k] for k in columns)] for p in points])
    target = np.array([p[2] for p in points])
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    terms = [f"{'nd'[k]}^{c:.2f}" for k, c in zip(columns, coefficients[1:])]
    fixed = [f"{'nd'[k]} = {math.exp(points[0][k]):,.0f}" for k in (0, 1) if not varies[k]]
    return " · ".join(terms) + (f" (at {', '.join(fixed)})" if fixed else "")


TITLES = {"pc": "PC, kernel test", "evidence": "RL-view evidence", "episode": "scratchpad episode",
          "job": "main job (evaluate pc-kci)"}


def report(args) -> None:
    rows = read_rows(args.out / "cells.jsonl")
    if not rows:
        print("no measured cells yet")
        return
    cells = latest(rows)
    keys = sorted({(d, n) for _, d, n in cells}, key=lambda c: (c[0], c[1]))
    print("\n| d | n | test | PC s | PC tests | PC memory | evidence s | evidence memory | "
          "episode s | episode memory | job s | job memory | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d, n in keys:
        get = {m: cells.get((m, d, n)) for m in MEASURES}
        pc_row = get["pc"] or {}
        tests = pc_row.get("tests") if pc_row.get("finished") else None
        loads = [r["load_before"] for r in get.values() if r and r.get("load_before")]
        load_text = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "–"
        # a run stopped at the budget wrote no outcome: with --ci-test auto the test is set by n
        test = pc_row.get("ci_test") or ("kci" if n <= EXACT_KCI_MAX_N else "rcot")
        if pc_row.get("method") and pc_row["method"] != test:
            test = f"{test} ({pc_row['method']})"
        print(f"| {d} | {n:,} | {test} | {cell_text(get['pc'])} | "
              f"{tests if tests is not None else '–'} | {memory_text(get['pc'])} | "
              f"{cell_text(get['evidence'])} | {memory_text(get['evidence'])} | "
              f"{cell_text(get['episode'])} | {memory_text(get['episode'])} | "
              f"{cell_text(get['job'])} | {memory_text(get['job'])} | "
              f"{load_text} |")
    print()
    for name in MEASURES:
        measured = [r for (m, _, _), r in cells.items() if m == name]
        # PC's cells by the test that ran: exact KCI and its approximation are two laws
        groups = ({"": measured} if name != "pc" else
                  {f" [{test}]": [r for r in measured if r.get("method", r.get("ci_test")) == test]
                   for test in sorted({r.get("method", r.get("ci_test")) for r in measured
                                       if r.get("finished")})})
        for label, group in groups.items():
            fitted = fit_exponents(group)
            count = sum(1 for r in group if r.get("finished"))
            if fitted:
                print(f"{TITLES[name]}{label}: time ∝ {fitted} ({count} finished cells)")
    plot(cells, args.out / "scaling.png")
    print(f"\nfigure: {args.out / 'scaling.png'}")


def plot(cells: dict[tuple, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ds = sorted({d for _, d, _ in cells})
    colours = dict(zip(ds, plt.get_cmap("viridis")(np.linspace(0.0, 0.85, len(ds)))))
    figure, axes = plt.subplots(2, len(MEASURES), figsize=(4.2 * len(MEASURES), 7.2),
                                sharex=True)
    for column, name in enumerate(MEASURES):
        for d in ds:
            rows = sorted((r for (m, dd, _), r in cells.items() if m == name and dd == d
                           and not r.get("skipped")), key=lambda r: r["n"])
            for row_index, key in ((0, "time"), (1, "memory")):
                axis = axes[row_index][column]
                finished = [r for r in rows if r.get("finished")]
                xs = [r["n"] for r in finished]
                ys = ([r["seconds"] for r in finished] if key == "time"
                      else [r["peak_rss_mb"] for r in finished])
                axis.plot(xs, ys, "o-", color=colours[d], label=f"d = {d}")
                stopped = [r for r in rows if not r.get("finished") and "peak_rss_mb" in r]
                if stopped:
                    axis.scatter([r["n"] for r in stopped],
                                 [r["wall"] if key == "time" else r["peak_rss_mb"]
                                  for r in stopped],
                                 marker="^", facecolors="none", edgecolors=colours[d], s=60)
        axes[0][column].set_title(TITLES[name])
        axes[0][column].set_ylabel("seconds")
        axes[1][column].set_ylabel("peak memory (MiB)")
        axes[1][column].set_xlabel("n (rows)")
        for axis in (axes[0][column], axes[1][column]):
            axis.set_xscale("log")
            axis.set_yscale("log")
            axis.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.suptitle("Cost growth with n, one line per d (log-log; ▲ hollow: stopped at the "
                    "budget, at the time/memory reached)")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


# ---- Ray: a local cluster of several raylets against the local pool ------------------------

def ray_cluster(raylets: int, cpus: int):
    """A local Ray cluster: a head and ``raylets − 1`` worker nodes, ``cpus`` spread over
    them, the head getting the fewest. Returns (cluster, {raylet pid: node index}, CPUs by
    node)."""
    from ray.cluster_utils import Cluster

    shares = sorted(cpus // raylets + (1 if k < cpus % raylets else 0) for k in range(raylets))
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": shares[0], "include_dashboard": False})
    for share in shares[1:]:
        cluster.add_node(num_cpus=share)
    cluster.wait_for_nodes()
    nodes = [cluster.head_node, *cluster.worker_nodes]
    raylet_pids = {node.all_processes["raylet"][0].process.pid: k for k, node in enumerate(nodes)}
    return cluster, raylet_pids, shares


def comparable(records: list[dict]) -> dict[str, dict]:
    return {r["episode_id"]: {k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in records}


def run_job(args, backend: str, out: Path, address: str | None = None, watch=None) -> dict:
    cache = out / "cache"
    env = {**os.environ, "HEURESIS_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "heuresis_env.cli", "evaluate", "--policy", args.ray_policy,
               "--family", args.family, "--split", "dev", "--count", str(args.ray_count),
               "--n", str(args.ray_n), "--workers", str(args.ray_workers), "--backend", backend,
               "--out", str(out / "run"), "--no-progress"]
    if address:
        command += ["--address", address]
    load = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    run = run_measured(command, env, args.budget, 0, out / "job.log", watch=watch)
    if run["over_budget"] or run["returncode"] != 0:
        raise SystemExit(f"the {backend} job failed or exceeded the budget: "
                         f"{(out / 'job.log').read_text()[-2000:]}")
    records = read_rows(out / "run" / "results.jsonl")
    shutil.rmtree(cache, ignore_errors=True)
    return {"backend": backend, "started": started, "load_before": load,
            "load_after": os.getloadavg()[0], "seconds": run["wall"],
            "peak_rss_mb": run["peak_rss_mb"], "episodes": len(records), "records": records,
            "command": " ".join(command[1:])}


def ray_study(args) -> None:
    out = args.out
    shutil.rmtree(out / "local", ignore_errors=True)
    shutil.rmtree(out / "ray", ignore_errors=True)
    (out / "local").mkdir(parents=True)
    (out / "ray").mkdir(parents=True)
    local = run_job(args, "local", out / "local")
    print(f"local pool, {args.ray_workers} workers: {local['seconds']:.1f} s, "
          f"{local['episodes']} episodes (load {local['load_before']:.1f})", flush=True)
    import ray

    # the cluster writes its address where a bare ray.init() looks: put back what was there
    address_file = Path(ray._private.utils.get_ray_address_file(None))
    previous = address_file.read_text() if address_file.exists() else None
    started = time.perf_counter()
    cluster, raylets, shares = ray_cluster(args.ray_cluster, args.ray_workers)
    start_seconds = time.perf_counter() - started
    hosts: dict[int, int] = {}  # actor pid → node index
    actors_peak = [0]  # the actors' process trees (with their policy processes), summed

    def watch(table, tree) -> None:
        for pid, (parent, _) in table.items():
            if parent in raylets and pid not in hosts:
                try:
                    title = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"EpisodeActor" in title:
                    hosts[pid] = raylets[parent]
        alive = [p for actor in hosts if actor in table for p in descendants(actor, table)]
        actors_peak[0] = max(actors_peak[0], sum(table[p][1] for p in alive))

    try:
        ray_row = run_job(args, "ray", out / "ray", address=cluster.address, watch=watch)
    finally:
        cluster.shutdown()
        if address_file.exists() and address_file.read_text() == cluster.address:
            if previous is None:  # don't leave a dead address for the next ray.init()
                address_file.unlink()
            else:
                address_file.write_text(previous)
    ray_row["driver_peak_rss_mb"] = ray_row["peak_rss_mb"]
    ray_row["peak_rss_mb"] += actors_peak[0] / 2**20  # the CLI's tree and the actors' trees
    by_node: dict[int, int] = {}
    for record in ray_row["records"]:
        pid = int(record["worker"].rsplit(":", 1)[1])
        node = hosts.get(pid, -1)
        by_node[node] = by_node.get(node, 0) + 1
    got, want = comparable(ray_row["records"]), comparable(local["records"])
    differing = sorted(e for e in set(got) | set(want) if got.get(e) != want.get(e))
    summary = {"raylets": args.ray_cluster, "cpus_per_raylet": shares,
               "cluster_start_seconds": start_seconds, "identical": not differing,
               "differing_episodes": differing, "episodes_by_raylet": by_node,
               "local": {k: v for k, v in local.items() if k != "records"},
               "ray": {k: v for k, v in ray_row.items() if k != "records"}}
    (out / "ray.json").write_text(json.dumps(summary, indent=1))
    print(f"\nRay cluster of {args.ray_cluster} raylets (CPUs {shares}), started in "
          f"{start_seconds:.1f} s; episodes by raylet (node index; -1 unseen): {by_node}")
    print("\n| backend | workers | seconds | episodes | peak memory | load before → after |")
    print("|---|---|---|---|---|---|")
    for row in (local, ray_row):
        label = ("local process pool" if row["backend"] == "local"
                 else f"Ray, {args.ray_cluster} raylets, --address")
        print(f"| {label} | {args.ray_workers} | {row['seconds']:.1f} | {row['episodes']} | "
              f"{row['peak_rss_mb'] / 1024:.2f} GiB | {row['load_before']:.1f} → "
              f"{row['load_after']:.1f} |")
    print(f"\nresults identical apart from {list(TIMING_FIELDS)}: {not differing}"
          + (f" (differ: {differing})" if differing else ""))
    if differing:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="wild")
    parser.add_argument("--d", default="10,20,50,100")
    parser.add_argument("--n", default="600,2000,10000")
    parser.add_argument("--measures", default=",".join(MEASURES))
    parser.add_argument("--ci-test", default="auto",
                        help="PC's kernel test: a registered name, or auto (kci-auto when "
                             "registered, else kci for n ≤ 2000 and rcot above)")
    parser.add_argument("--budget", type=float, default=600.0,
                        help="seconds per measurement (and per Ray job)")
    parser.add_argument("--memory-limit-gb", type=float, default=8.0,
                        help="address-space limit of each process of a measurement (0: none)")
    parser.add_argument("--job-count", type=int, default=2, help="instances of the main job")
    parser.add_argument("--job-workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("runs/scaling"))
    parser.add_argument("--plot-only", action="store_true", help="tables and figure from OUT")
    parser.add_argument("--ray-cluster", type=int, default=0, metavar="N",
                        help="instead of the table: the Ray job on N local raylets against the "
                             "local pool")
    parser.add_argument("--ray-workers", type=int, default=2)
    parser.add_argument("--ray-policy", default="pc-kci")
    parser.add_argument("--ray-count", type=int, default=32)
    parser.add_argument("--ray-n", type=int, default=600)
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--cell-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.d, args.n = int(args.d), int(args.n)
        child_main(args)
        return
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at "
          f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}", flush=True)
    if args.ray_cluster:
        if args.ray_cluster < 2:
            raise SystemExit("--ray-cluster needs at least 2 raylets (a head and a worker node)")
        ray_study(args)
        return
    if not args.plot_only:
        run_table(args)
    report(args)


if __name__ == "__main__":
    main()
