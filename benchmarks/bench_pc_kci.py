"""PC-KCI against causal-learn's ``pc(X, 0.05, "kci")`` on many instances, in the same run.

For each instance (``--per-family`` instances of every family from ``--split``, d = 10,
n = ``--n``):
causal-learn's PC with its KCI (p-values recorded by wrapping ``KCI.__call__``), then our
``pc`` with our KCI (no disk cache, a fresh object: cold). Printed per instance: both times,
their ratio, numbers of distinct tests, skeleton equality and max |Δp| over the tests both
ran; then the ratio of the mean times, the smallest ratio, the ratio on our slowest instance,
and where our time goes on the slowest ones (KCI's own timer: kernels, residual makers,
statistics). No pass/fail: ratios against a reference measured in the same run.

BLAS is limited to ``--blas-threads`` (default 1) for both sides (multi-threaded BLAS on a
shared machine oversubscribes the cores and times become noise).

    python benchmarks/bench_pc_kci.py [--per-family 2] [--n 600] [--families lg,wild]
    python benchmarks/bench_pc_kci.py --ours-only      # skip causal-learn (quick)
    python benchmarks/bench_pc_kci.py --reference-budget 1800  # causal-learn while time lasts
    python benchmarks/bench_pc_kci.py --split test --families wild --per-family 1
        # the test split's first instances, as ``heuresis demo --count 1`` plays them (the
        # public test split: no salt, unless $HEURESIS_TEST_SALT is set)

With ``--reference-budget SECONDS``, causal-learn is run only while its accumulated wall time is
under the budget (the instances are interleaved across families so that a cut-off keeps every
family); the ratios and agreement are then over the instances both ran, and said so.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import numpy as np


def instance_data(family: str, index: int, n: int, d: int = 10, split: str = "dev"
                  ) -> np.ndarray:
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    return np.array(generate_instance(InstanceKey(family, split, index, d=d, n=n)).X)


def run_causal_learn(data: np.ndarray, alpha: float) -> tuple[float, np.ndarray, dict]:
    """causal-learn's PC-KCI: (seconds, skeleton, {(x, y, S): p})."""
    from causallearn.search.ConstraintBased.PC import pc as reference_pc
    from causallearn.utils import cit as reference_cit

    p_values: dict[tuple[int, int, tuple[int, ...]], float] = {}
    original_call = reference_cit.KCI.__call__

    def recording_call(self, x, y, condition_set=None):
        p = original_call(self, x, y, condition_set)
        key = (min(int(x), int(y)), max(int(x), int(y)),
               tuple(sorted(int(v) for v in condition_set or ())))
        p_values[key] = p
        return p

    reference_cit.KCI.__call__ = recording_call
    try:
        start, cpu = time.perf_counter(), time.process_time()
        graph = reference_pc(data, alpha, "kci", show_progress=False)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    finally:
        reference_cit.KCI.__call__ = original_call
    skeleton = graph.G.graph != 0
    return (seconds, cpu), skeleton | skeleton.T, p_values


def run_ours(data: np.ndarray, alpha: float) -> tuple[float, np.ndarray, dict, object]:
    """Our PC-KCI, cold: (seconds, skeleton, {(x, y, S): p}, the KCI object)."""
    from heuresis_env.discovery.citests.kci import KCI
    from heuresis_env.discovery.pc import pc

    tester = KCI(data, disk_cache=False)
    start, cpu = time.perf_counter(), time.process_time()
    result = pc(None, ci_test=tester, alpha=alpha)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    p_values = {key: r.p_value for key, r in tester._memory.items()}
    return (seconds, cpu), result.skeleton.skeleton(), p_values, tester


def compare_on(data: np.ndarray, alpha: float = 0.05, reference: bool = True) -> dict:
    """Both PCs on one data set; a dict of the figures printed per instance."""
    (ours_seconds, ours_cpu), ours_skeleton, ours_p, _ = run_ours(data, alpha)
    row = {"ours": ours_seconds, "ours_cpu": ours_cpu, "tests": len(ours_p),
           "levels": np.bincount([len(k[2]) for k in ours_p]).tolist()}
    if reference:
        (ref_seconds, ref_cpu), ref_skeleton, ref_p = run_causal_learn(data, alpha)
        common = [k for k in ours_p if k in ref_p]
        row.update(reference=ref_seconds, reference_cpu=ref_cpu, reference_tests=len(ref_p),
                   ratio=ref_seconds / ours_seconds, cpu_ratio=ref_cpu / ours_cpu,
                   same_skeleton=bool(np.array_equal(ref_skeleton, ours_skeleton)),
                   common=len(common),
                   max_dp=max((abs(ours_p[k] - ref_p[k]) for k in common), default=float("nan")))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-family", type=int, default=2)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--families", default="all")
    parser.add_argument("--split", choices=("dev", "test"), default="dev",
                        help="the instances' split (test: the public one unless "
                             "$HEURESIS_TEST_SALT is set)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--ours-only", action="store_true", help="skip causal-learn")
    parser.add_argument("--reference-budget", type=float, default=None,
                        help="stop running causal-learn once its wall seconds exceed this")
    parser.add_argument("--profile", type=int, default=2,
                        help="profile our run on this many of the slowest instances")
    args = parser.parse_args()

    import causallearn.utils.cit  # noqa: F401 - load every BLAS library before limiting them
    import scipy.linalg  # noqa: F401

    from heuresis_env.generation.families import expand_families

    families = expand_families(args.families)  # "all": the six benchmark families
    limits = contextlib.nullcontext()
    if args.blas_threads > 0:
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(limits=args.blas_threads)
    salted = args.split == "test" and bool(os.environ.get("HEURESIS_TEST_SALT"))
    print(f"PC-KCI (α = {args.alpha}), {args.split} instances{' (salted)' if salted else ''}, "
          f"d = 10, n = {args.n}; BLAS threads: "
          f"{args.blas_threads or 'default'}; load average {os.getloadavg()[0]:.1f} at start")
    print("seconds: wall / CPU of this process (CPU time is what a loaded machine distorts least)")
    print(f"{'instance':<12} {'causal-learn s':>15} {'ours s':>12} {'ratio wall/CPU':>15} "
          f"{'tests cl/ours':>13} {'skeleton':>9} {'max |Δp|':>9}  ours by |S|")
    rows = []
    reference_spent = 0.0
    with limits:
        for index, family in ((i, f) for i in range(args.per_family) for f in families):
            data = instance_data(family, index, args.n, split=args.split)
            with_reference = not args.ours_only and (
                args.reference_budget is None or reference_spent < args.reference_budget)
            row = compare_on(data, args.alpha, reference=with_reference)
            reference_spent += row.get("reference", 0.0)
            row["name"] = f"{family}/{index}"
            row["data"] = data
            rows.append(row)
            ours = f"{row['ours']:.1f}/{row['ours_cpu']:.1f}"
            if "reference" not in row:
                print(f"{row['name']:<12} {'-':>15} {ours:>12} {'-':>15} "
                      f"{'-':>6}/{row['tests']:<6} {'-':>9} {'-':>9}  {row['levels']}",
                      flush=True)
            else:
                reference = f"{row['reference']:.1f}/{row['reference_cpu']:.1f}"
                ratio = f"{row['ratio']:.1f}/{row['cpu_ratio']:.1f}"
                print(f"{row['name']:<12} {reference:>15} {ours:>12} {ratio:>15} "
                      f"{row['reference_tests']:>6}/{row['tests']:<6} "
                      f"{'same' if row['same_skeleton'] else 'DIFFERS':>9} "
                      f"{row['max_dp']:>9.1e}  {row['levels']}", flush=True)
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
        for kind, ours_key, ref_key in (("wall", "ours", "reference"),
                                        ("CPU", "ours_cpu", "reference_cpu")):
            ours = np.array([r[ours_key] for r in rows])
            slowest = int(ours.argmax())
            print(f"\n{kind} time — ours: mean {ours.mean():.2f} s, slowest {ours.max():.2f} s "
                  f"({rows[slowest]['name']}), total {ours.sum():.1f} s")
            both = [r for r in rows if "reference" in r]
            if not both:
                continue
            if len(both) < len(rows):
                print(f"causal-learn ran on {len(both)} of {len(rows)} instances (budget "
                      f"{args.reference_budget:.0f} s); the ratios below are over those")
            ours = np.array([r[ours_key] for r in both])
            slowest = int(ours.argmax())
            reference = np.array([r[ref_key] for r in both])
            ratios = reference / ours
            print(f"{kind} time — causal-learn: mean {reference.mean():.1f} s, slowest "
                  f"{reference.max():.1f} s ({both[int(reference.argmax())]['name']}); ours on "
                  f"the same: mean {ours.mean():.2f} s, slowest {ours.max():.2f} s "
                  f"({both[slowest]['name']})")
            print(f"{kind} ratio of mean times {reference.mean() / ours.mean():.1f}; per "
                  f"instance: min {ratios.min():.1f}, median {np.median(ratios):.1f}; on our "
                  f"slowest instance {ratios[slowest]:.1f}; on causal-learn's slowest "
                  f"{ratios[int(reference.argmax())]:.1f}")
        both = [r for r in rows if "reference" in r]
        if both:
            print(f"same skeleton on {sum(r['same_skeleton'] for r in both)} of {len(both)}; "
                  f"max |Δp| over {sum(r['common'] for r in both)} common tests "
                  f"{max(r['max_dp'] for r in both):.1e}")
        for row in sorted(rows, key=lambda r: -r["ours_cpu"])[:args.profile]:
            print(f"\nwhere {row['name']}'s time goes (cProfile of our PC-KCI, top functions):")
            profile_ours(row["data"], args.alpha)


def profile_ours(data: np.ndarray, alpha: float, top: int = 8) -> None:
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    run_ours(data, alpha)
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    lines = text.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "ncalls" in line)
    print("\n".join(lines[start:start + top + 1]))


if __name__ == "__main__":
    main()
