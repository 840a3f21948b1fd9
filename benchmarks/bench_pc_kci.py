"""PC-KCI against causal-learn's ``pc(X, 0.05, "kci")`` on many instances, in the same run.

For each instance (``--per-family`` dev instances of every family, d = 10, n = ``--n``):
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
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import numpy as np


def instance_data(family: str, index: int, n: int, d: int = 10) -> np.ndarray:
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    return np.array(generate_instance(InstanceKey(family, "dev", index, d=d, n=n)).X)


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
        start = time.perf_counter()
        graph = reference_pc(data, alpha, "kci", show_progress=False)
        seconds = time.perf_counter() - start
    finally:
        reference_cit.KCI.__call__ = original_call
    skeleton = graph.G.graph != 0
    return seconds, skeleton | skeleton.T, p_values


def run_ours(data: np.ndarray, alpha: float) -> tuple[float, np.ndarray, dict, object]:
    """Our PC-KCI, cold: (seconds, skeleton, {(x, y, S): p}, the KCI object)."""
    from heuresis_env.discovery.citests.kci import KCI
    from heuresis_env.discovery.pc import pc

    tester = KCI(data, disk_cache=False)
    start = time.perf_counter()
    result = pc(None, ci_test=tester, alpha=alpha)
    seconds = time.perf_counter() - start
    p_values = {key: r.p_value for key, r in tester._memory.items()}
    return seconds, result.skeleton.skeleton(), p_values, tester


def compare_on(data: np.ndarray, alpha: float = 0.05, reference: bool = True) -> dict:
    """Both PCs on one data set; a dict of the figures printed per instance."""
    ours_seconds, ours_skeleton, ours_p, tester = run_ours(data, alpha)
    row = {"ours": ours_seconds, "tests": len(ours_p),
           "levels": np.bincount([len(k[2]) for k in ours_p]).tolist(),
           "profile": dict(getattr(tester, "timings", {}))}
    if reference:
        ref_seconds, ref_skeleton, ref_p = run_causal_learn(data, alpha)
        common = [k for k in ours_p if k in ref_p]
        row.update(reference=ref_seconds, reference_tests=len(ref_p),
                   ratio=ref_seconds / ours_seconds,
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
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--ours-only", action="store_true", help="skip causal-learn")
    args = parser.parse_args()

    import causallearn.utils.cit  # noqa: F401 - load every BLAS library before limiting them
    import scipy.linalg  # noqa: F401

    from heuresis_env.generation.families import available_families

    families = available_families() if args.families == "all" else args.families.split(",")
    limits = contextlib.nullcontext()
    if args.blas_threads > 0:
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(limits=args.blas_threads)
    print(f"PC-KCI (α = {args.alpha}), dev instances, d = 10, n = {args.n}; BLAS threads: "
          f"{args.blas_threads or 'default'}; load average {os.getloadavg()[0]:.1f} at start")
    header = (f"{'instance':<12} {'causal-learn s':>14} {'ours s':>8} {'ratio':>7} "
              f"{'tests cl/ours':>13} {'skeleton':>9} {'max |Δp|':>9}  ours by |S|")
    print(header)
    rows = []
    with limits:
        for family in families:
            for index in range(args.per_family):
                data = instance_data(family, index, args.n)
                row = compare_on(data, args.alpha, reference=not args.ours_only)
                row["name"] = f"{family}/{index}"
                rows.append(row)
                if args.ours_only:
                    print(f"{row['name']:<12} {'-':>14} {row['ours']:>8.2f} {'-':>7} "
                          f"{'-':>6}/{row['tests']:<6} {'-':>9} {'-':>9}  {row['levels']}",
                          flush=True)
                else:
                    print(f"{row['name']:<12} {row['reference']:>14.1f} {row['ours']:>8.2f} "
                          f"{row['ratio']:>7.1f} {row['reference_tests']:>6}/{row['tests']:<6} "
                          f"{'same' if row['same_skeleton'] else 'DIFFERS':>9} "
                          f"{row['max_dp']:>9.1e}  {row['levels']}", flush=True)
    ours = np.array([r["ours"] for r in rows])
    print(f"\nours: mean {ours.mean():.2f} s, slowest {ours.max():.2f} s "
          f"({rows[int(ours.argmax())]['name']}), total {ours.sum():.1f} s")
    if not args.ours_only:
        reference = np.array([r["reference"] for r in rows])
        ratios = reference / ours
        slowest = int(ours.argmax())
        print(f"causal-learn: mean {reference.mean():.1f} s, slowest {reference.max():.1f} s")
        print(f"ratio of mean times {reference.mean() / ours.mean():.1f}; per instance: min "
              f"{ratios.min():.1f}, median {np.median(ratios):.1f}; on our slowest instance "
              f"{ratios[slowest]:.1f}; on causal-learn's slowest {ratios[int(reference.argmax())]:.1f}")
        print(f"same skeleton on {sum(r['same_skeleton'] for r in rows)} of {len(rows)}; "
              f"max |Δp| over common tests {max(r['max_dp'] for r in rows):.1e}")
    for row in sorted(rows, key=lambda r: -r["ours"])[:3]:
        profile = ", ".join(f"{k} {v:.2f} s" for k, v in sorted(row["profile"].items(),
                                                                key=lambda kv: -kv[1]))
        print(f"where {row['name']}'s {row['ours']:.2f} s went: {profile or '(no timers)'}")


if __name__ == "__main__":
    main()
