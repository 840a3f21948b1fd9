"""How cost grows with d and n: PC-KCI, the environment's step rate, evidence and a scratchpad
episode at d ∈ {10, 20, 50} × n ∈ {200, 600, 2000}, with fitted exponents and a log-log plot;
then the same job on a local Ray cluster with 1, 2 and 4 worker processes.

Per cell (one ``--family`` dev instance, cold caches in a fresh ``HEURESIS_CACHE_DIR``):

* **PC-KCI**: our PC with our KCI under a budget (``--budget`` seconds). Within budget it is
  measured. Beyond it, it is *extrapolated* and labelled so: the tests PC-KCI would run, by
  level |S|, are taken from the largest n at the same d that finished (PC's test count grows
  with n as power grows, so this undercounts), times the mean seconds of a KCI test of that
  level at this n, measured on ``--sample`` tests of the budgeted run or drawn at random;
* **evidence**: the pair evidence of the RL view (PC-Fisher-z, a KCI test per pair, 30 bootstrap
  PC-Fisher-z runs, distance correlations), given PC-KCI's output; extrapolated from the
  per-pair KCI time when PC-KCI was;
* **env steps/s**: text-view edit steps (``add_edge`` / ``remove_edge``) after a reset;
* **scratchpad episode**: one episode of the ``scratchpad`` router (40 steps), wall-time
  capped by ``--episode-budget`` (a capped episode is reported as "> budget").

Exponents: least squares of log time on log n and log d over the measured cells only.

    python benchmarks/bench_scaling.py --out runs/scaling [--d 10,20,50] [--n 200,600,2000]
    python benchmarks/bench_scaling.py --ray-only --out runs/scaling   # the Ray study alone
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


class _OutOfBudget(Exception):
    pass


def instance(family: str, d: int, n: int):
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    return generate_instance(InstanceKey(family, "dev", 0, d=d, n=n))


def budgeted_pc_kci(data: np.ndarray, names, budget: float) -> dict:
    """PC-KCI until done or out of budget: seconds, tests by level, seconds per test by level."""
    from heuresis_env.discovery.citests.kci import KCI
    from heuresis_env.discovery.pc import pc

    class TimedKCI(KCI):
        def _compute(self, x, y, s):
            start = time.perf_counter()
            if start - self.started > budget:
                raise _OutOfBudget
            out = super()._compute(x, y, s)
            level = len(s)
            self.per_level.setdefault(level, []).append(time.perf_counter() - start)
            return out

    tester = TimedKCI(data, disk_cache=False)
    tester.per_level, tester.started = {}, time.perf_counter()
    result = None
    try:
        result = pc(None, names, ci_test=tester)
    except _OutOfBudget:
        pass
    seconds = time.perf_counter() - tester.started
    return {"finished": result is not None, "seconds": seconds, "result": result,
            "tests": {lv: len(t) for lv, t in tester.per_level.items()},
            "per_test": {lv: float(np.mean(t)) for lv, t in tester.per_level.items()}}


def sampled_test_seconds(data: np.ndarray, level: int, count: int, seed: int = 0) -> float:
    """Mean seconds of ``count`` random KCI tests with |S| = level, in one cold KCI object
    (tests of one level share residual makers in PC as here: sets are drawn from few)."""
    from heuresis_env.discovery.citests.kci import KCI

    rng = np.random.default_rng(seed)
    d = data.shape[1]
    tester = KCI(data, disk_cache=False)
    sets = [tuple(sorted(rng.choice(d, size=level, replace=False).tolist()))
            for _ in range(max(1, count // 3))]
    times = []
    for k in range(count):
        s = sets[k % len(sets)]
        x, y = (int(v) for v in rng.choice([v for v in range(d) if v not in s], 2, replace=False))
        start = time.perf_counter()
        tester.test(x, y, s)
        times.append(time.perf_counter() - start)
    return float(np.mean(times))


def evidence_seconds(inst, guided_result) -> float:
    from heuresis_env.evidence import GuidedStart, compute_pair_evidence

    guided = GuidedStart(graph=guided_result.graph, deletion_log=tuple(guided_result.deletion_log),
                         n_tests=guided_result.n_tests, alpha=0.05, ci_test="kci", runtime=0.0)
    start = time.perf_counter()
    compute_pair_evidence(inst.X, inst.names, inst.sha256, guided=guided)
    return time.perf_counter() - start


def env_step_rate(family: str, d: int, n: int, seconds: float = 2.0) -> float:
    from heuresis_env.env import HeuresisEnv

    env = HeuresisEnv(family=family, d=d, n=n, indices=[0], max_steps=10**9, max_seconds=None)
    env.reset(seed=0)
    actions = [{"tool": "add_edge", "args": {"x": "X1", "y": "X2"}},
               {"tool": "remove_edge", "args": {"x": "X1", "y": "X2"}}]
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(actions[steps % 2])
        steps += 1
    rate = steps / (time.perf_counter() - start)
    env.close()
    return rate


def scratchpad_episode(family: str, d: int, n: int, budget: float) -> tuple[float, bool]:
    """Seconds of one scratchpad episode and whether it ended within the wall budget."""
    from heuresis_env.evaluation.episode import EpisodeRunner, EpisodeTask, RunSpec
    from heuresis_env.policy import EpisodeSettings

    spec = RunSpec(policy="scratchpad", policy_options={},
                   settings=EpisodeSettings(max_steps=40, max_seconds=budget), d=d, n=n)
    runner = EpisodeRunner(spec, "bench")
    try:
        start = time.perf_counter()
        outcome = runner.run(EpisodeTask("bench", family, "dev", 0, 0, 0))
        seconds = time.perf_counter() - start
    finally:
        runner.close()
    return seconds, outcome.record["termination_reason"] != "wall_time"


def fit_exponents(rows: list[dict], key: str) -> tuple[float, float] | None:
    """(exponent of n, exponent of d) by least squares on the measured cells."""
    points = [(math.log(r["n"]), math.log(r["d"]), math.log(r[key]))
              for r in rows if r.get(key) and not r.get(f"{key}_extrapolated")]
    if len({p[0] for p in points}) < 2 or len({p[1] for p in points}) < 2:
        return None
    design = np.array([[1.0, a, b] for a, b, _ in points])
    target = np.array([c for _, _, c in points])
    coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
    return float(coefficients[1]), float(coefficients[2])


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("pc_kci_s", "PC-KCI (s)"), ("evidence_s", "evidence (s)"),
              ("step_rate", "env edit steps / s"), ("episode_s", "scratchpad episode (s)")]
    figure, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    for axis, (key, title) in zip(axes, panels):
        for d in sorted({r["d"] for r in rows}):
            cells = sorted((r for r in rows if r["d"] == d and r.get(key)), key=lambda r: r["n"])
            if not cells:
                continue
            xs = [r["n"] for r in cells]
            ys = [r[key] for r in cells]
            line, = axis.plot(xs, ys, "-", label=f"d = {d}")
            measured = [not r.get(f"{key}_extrapolated") for r in cells]
            axis.scatter([x for x, m in zip(xs, measured) if m], [y for y, m in zip(ys, measured) if m],
                         color=line.get_color())
            axis.scatter([x for x, m in zip(xs, measured) if not m],
                         [y for y, m in zip(ys, measured) if not m],
                         facecolors="none", edgecolors=line.get_color())
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("n (rows)")
        axis.set_title(title)
    axes[0].legend()
    figure.suptitle("Cost growth (filled: measured, hollow: extrapolated)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def ray_study(family: str, n: int, count: int, policy: str, workers_list: list[int]) -> list[dict]:
    """The same evaluation on a local Ray cluster with k worker processes, cold cache each."""
    from heuresis_env.evaluation import evaluate

    rows = []
    for workers in workers_list:
        cache = Path(tempfile.mkdtemp(prefix="heuresis-ray-cache-"))
        out = Path(tempfile.mkdtemp(prefix="heuresis-ray-run-"))
        os.environ["HEURESIS_CACHE_DIR"] = str(cache)
        start = time.perf_counter()
        summary = evaluate(policy, families=family, split="dev", count=count, workers=workers,
                           backend="ray", out_dir=out / "run", n=n, progress=False)
        seconds = time.perf_counter() - start
        rows.append({"workers": workers, "seconds": seconds, "episodes": summary.total_episodes,
                     "load": os.getloadavg()[0]})
        print(f"ray, {workers} worker(s): {seconds:.1f} s for {summary.total_episodes} episodes "
              f"(load {rows[-1]['load']:.1f})", flush=True)
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    base = rows[0]["seconds"]
    for row in rows:
        row["speedup"] = base / row["seconds"]
        row["per_worker"] = row["speedup"] / row["workers"]
    return rows


def _cell(row: dict, key: str) -> str:
    if not row.get(key):
        return "–"
    return f"{row[key]:.1f}" + (" (extrapolated)" if row.get(f"{key}_extrapolated") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="wild")
    parser.add_argument("--d", default="10,20,50")
    parser.add_argument("--n", default="200,600,2000")
    parser.add_argument("--budget", type=float, default=600.0, help="PC-KCI seconds per cell")
    parser.add_argument("--episode-budget", type=float, default=600.0)
    parser.add_argument("--sample", type=int, default=6, help="KCI tests per level to time")
    parser.add_argument("--out", type=Path, default=Path("runs/scaling"))
    parser.add_argument("--ray-only", action="store_true")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--ray-workers", default="1,2,4")
    parser.add_argument("--ray-policy", default="pc-kci")
    parser.add_argument("--ray-count", type=int, default=6)
    args = parser.parse_args()
    from heuresis_env.threads import limit_threads

    limit_threads()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at start", flush=True)
    rows: list[dict] = []
    if not args.ray_only:
        os.environ["HEURESIS_CACHE_DIR"] = tempfile.mkdtemp(prefix="heuresis-scaling-cache-")
        ds = [int(v) for v in args.d.split(",")]
        ns = [int(v) for v in args.n.split(",")]
        # warm-up, not counted: imports, the policy's modules, numba's first load (dcor)
        scratchpad_episode(args.family, 5, 100, args.episode_budget)
        env_step_rate(args.family, 5, 100, seconds=0.5)
        finished_counts: dict[int, dict[int, int]] = {}
        for d, n in itertools.product(ds, ns):
            inst = instance(args.family, d, n)
            row: dict = {"d": d, "n": n}
            pc_run = budgeted_pc_kci(inst.X, inst.names, args.budget)
            if pc_run["finished"]:
                row["pc_kci_s"] = pc_run["seconds"]
                row["pc_tests"] = sum(pc_run["tests"].values())
                finished_counts[d] = pc_run["tests"]
                row["evidence_s"] = evidence_seconds(inst, pc_run["result"])
            else:
                counts = finished_counts.get(d)
                per_test = {}
                for level in sorted(counts or {0: 0, 1: 0, 2: 0}):
                    measured = pc_run["tests"].get(level, 0)
                    per_test[level] = (pc_run["per_test"][level] if measured >= 3 else
                                       sampled_test_seconds(inst.X, level, args.sample))
                row["per_test_s"] = per_test
                if counts:
                    row["pc_kci_s"] = sum(c * per_test[lv] for lv, c in counts.items())
                    row["pc_kci_s_extrapolated"] = True
                    row["pc_tests"] = sum(counts.values())
                    # evidence ≈ one KCI test per pair at a small set, plus Fisher-z (cheap)
                    row["evidence_s"] = d * (d - 1) / 2 * per_test.get(1, per_test[0])
                    row["evidence_s_extrapolated"] = True
            row["step_rate"] = env_step_rate(args.family, d, n)
            seconds, finished = scratchpad_episode(args.family, d, n, args.episode_budget)
            row["episode_s"] = seconds
            row["episode_capped"] = not finished
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "per_test_s"}), flush=True)
        (args.out / "scaling.json").write_text(json.dumps(rows, indent=1))
        plot(rows, args.out / "scaling.png")
        print("\n| d | n | PC-KCI s | tests | evidence s | env steps/s | scratchpad episode s |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            pc_text = _cell(r, "pc_kci_s")
            ev_text = _cell(r, "evidence_s")
            episode = f"{'> ' if r['episode_capped'] else ''}{r['episode_s']:.1f}"
            print(f"| {r['d']} | {r['n']} | {pc_text} | {r.get('pc_tests', '–')} | {ev_text} | "
                  f"{r['step_rate']:,.0f} | {episode} |")
        for key, label in (("pc_kci_s", "PC-KCI time"), ("evidence_s", "evidence time"),
                           ("step_rate", "env step rate"), ("episode_s", "scratchpad episode time")):
            fitted = fit_exponents(rows, key)
            if fitted:
                print(f"{label} ∝ n^{fitted[0]:.2f} · d^{fitted[1]:.2f} (measured cells)")
    if not args.no_ray:
        workers = [int(v) for v in args.ray_workers.split(",")]
        ray_rows = ray_study(args.family, 600, args.ray_count, args.ray_policy, workers)
        (args.out / "ray.json").write_text(json.dumps(ray_rows, indent=1))
        print("\n| Ray workers | seconds | speed-up | per worker |\n|---|---|---|---|")
        for r in ray_rows:
            print(f"| {r['workers']} | {r['seconds']:.1f} | {r['speedup']:.2f} | "
                  f"{r['per_worker']:.2f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
