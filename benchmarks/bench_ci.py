"""CI-test speed against causal-learn, measured in the same run (ratios, no pass/fail).

1. KCI per test: ours vs causal-learn's ``CIT(X, "kci")`` on the same tests of a d = 10,
   n = 600 ``wild`` instance (|S| = 0..3): times, ratio, max |Δp|.
2. Fisher-z per-test throughput vs causal-learn's ``CIT(X, "fisherz")`` on the distinct tests
   of a PC run (d = 20, n = 1000, linear-Gaussian); also the ratio of our computation alone
   (without the shared ``CITest.test`` bookkeeping).
3. PC-KCI end to end: ``heuresis_env.discovery.pc.pc`` with our KCI vs causal-learn's
   ``pc(X, 0.05, "kci")`` on the same instance: times, numbers of tests, ratio, skeleton
   equality, max |Δp| over the tests both ran.
4. ``import heuresis_env`` time, and that importing the CI tests loads no dcor, numba, torch
   or causal-learn.

BLAS threads are limited to ``--blas-threads`` (default 1) for both sides: on a shared
machine multi-threaded BLAS on 600 × 600 matrices oversubscribes the cores and times become
noise; pass 0 to leave the library default.

    python benchmarks/bench_ci.py [--family wild --index 0] [--blas-threads 1] [--skip-pc]
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import textwrap
import time

import numpy as np


def instance_data(family: str, index: int) -> np.ndarray:
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    return np.array(generate_instance(InstanceKey(family, "dev", index)).X)


def kci_test_list(d: int, rng: np.random.Generator, per_level: int = 12) -> list[tuple[int, int, tuple[int, ...]]]:
    tests = []
    for level in range(4):
        for _ in range(per_level):
            x, y, *rest = (int(v) for v in rng.permutation(d))
            tests.append((min(x, y), max(x, y), tuple(sorted(rest[:level]))))
    return list(dict.fromkeys(tests))


def bench_kci(data: np.ndarray) -> None:
    from causallearn.utils.cit import CIT

    from heuresis_env.discovery.citests.kci import KCI

    tests = kci_test_list(data.shape[1], np.random.default_rng(0))
    reference = CIT(data, "kci")
    ours = KCI(data, disk_cache=False)
    print(f"\n[1] KCI per test: {len(tests)} distinct tests on n={data.shape[0]}, d={data.shape[1]}")
    print(f"    {'|S|':>4} {'tests':>6} {'causal-learn ms':>16} {'ours ms':>9} {'ratio':>7} {'max |Δp|':>10}")
    total_reference = total_ours = 0.0
    worst = 0.0
    for level in range(4):
        level_tests = [t for t in tests if len(t[2]) == level]
        time_reference = time_ours = 0.0
        level_worst = 0.0
        for x, y, s in level_tests:
            start = time.perf_counter()
            expected = reference(x, y, list(s))
            time_reference += time.perf_counter() - start
            start = time.perf_counter()
            got = ours.p_value(x, y, s)
            time_ours += time.perf_counter() - start
            level_worst = max(level_worst, abs(got - expected))
        count = len(level_tests)
        print(f"    {level:>4} {count:>6} {1000 * time_reference / count:>16.1f} "
              f"{1000 * time_ours / count:>9.2f} {time_reference / time_ours:>7.1f} {level_worst:>10.2e}")
        total_reference += time_reference
        total_ours += time_ours
        worst = max(worst, level_worst)
    print(f"    all  {len(tests):>6} {1000 * total_reference / len(tests):>16.1f} "
          f"{1000 * total_ours / len(tests):>9.2f} {total_reference / total_ours:>7.1f} {worst:>10.2e}")


def bench_fisherz(repeats: int = 5) -> None:
    from causallearn.utils.cit import CIT

    from heuresis_env.discovery.citests.fisherz import FisherZ
    from heuresis_env.discovery.pc import pc

    rng = np.random.default_rng(1)
    d, n = 20, 1000
    weights = np.triu(rng.uniform(0.5, 1.5, (d, d)) * (rng.uniform(size=(d, d)) < 0.15), 1)
    data = rng.normal(size=(n, d))
    for j in range(d):
        data[:, j] += data @ weights[:, j]
    recorder = FisherZ(data)
    pc(None, ci_test=recorder)
    tests = list(recorder._memory)  # the distinct tests of the PC run, in order

    def run(factory, call) -> float:
        best = np.inf
        for _ in range(repeats):
            tester = factory()
            start = time.perf_counter()
            for x, y, s in tests:
                call(tester, x, y, s)
            best = min(best, time.perf_counter() - start)
        return 1e6 * best / len(tests)

    reference = run(lambda: CIT(data, "fisherz"), lambda t, x, y, s: t(x, y, list(s)))
    ours = run(lambda: FisherZ(data), lambda t, x, y, s: t.test(x, y, s))
    computation = run(lambda: FisherZ(data), lambda t, x, y, s: t._compute(x, y, s))
    fresh_reference, fresh_ours = CIT(data, "fisherz"), FisherZ(data)
    worst = max(abs(fresh_ours.p_value(x, y, s) - fresh_reference(x, y, list(s))) for x, y, s in tests)
    levels = np.bincount([len(s) for _, _, s in tests])
    print(f"\n[2] Fisher-z: {len(tests)} distinct tests of a PC run (d={d}, n={n}; by |S|: {levels.tolist()}), "
          f"best of {repeats}")
    print(f"    causal-learn {reference:.2f} µs/test; ours {ours:.2f} µs/test (ratio {reference / ours:.1f}); "
          f"our computation alone {computation:.2f} µs/test (ratio {reference / computation:.1f}); "
          f"max |Δp| {worst:.1e}")


def bench_pc_kci(data: np.ndarray, alpha: float = 0.05) -> None:
    from causallearn.search.ConstraintBased.PC import pc as reference_pc
    from causallearn.utils import cit as reference_cit

    from heuresis_env.discovery.citests.kci import KCI
    from heuresis_env.discovery.pc import pc

    reference_p: dict[tuple[int, int, tuple[int, ...]], float] = {}
    original_call = reference_cit.KCI.__call__

    def recording_call(self, x, y, condition_set=None):
        p = original_call(self, x, y, condition_set)
        reference_p[(min(int(x), int(y)), max(int(x), int(y)), tuple(sorted(int(v) for v in condition_set or ())))] = p
        return p

    reference_cit.KCI.__call__ = recording_call
    try:
        start = time.perf_counter()
        reference_graph = reference_pc(data, alpha, "kci", show_progress=False)
        time_reference = time.perf_counter() - start
    finally:
        reference_cit.KCI.__call__ = original_call

    tester = KCI(data, disk_cache=False)
    start = time.perf_counter()
    result = pc(None, ci_test=tester, alpha=alpha)
    time_ours = time.perf_counter() - start

    reference_skeleton = reference_graph.G.graph != 0
    reference_skeleton = reference_skeleton | reference_skeleton.T
    same_skeleton = bool(np.array_equal(reference_skeleton, result.skeleton.skeleton()))
    common = [key for key in tester._memory if key in reference_p]
    worst = max((abs(tester._memory[key].p_value - reference_p[key]) for key in common), default=float("nan"))
    levels = np.bincount([len(key[2]) for key in tester._memory]).tolist()
    print(f"\n[3] PC-KCI (α = {alpha}) on n={data.shape[0]}, d={data.shape[1]}")
    print(f"    causal-learn {time_reference:.2f} s, {len(reference_p)} distinct tests")
    print(f"    ours         {time_ours:.2f} s, {result.n_tests} distinct tests (by |S|: {levels})")
    print(f"    ratio {time_reference / time_ours:.1f}; same skeleton: {same_skeleton}; "
          f"max |Δp| over {len(common)} common tests: {worst:.2e}")


def bench_imports() -> None:
    code = textwrap.dedent(
        """
        import sys, time
        start = time.perf_counter()
        import heuresis_env
        package = time.perf_counter() - start
        import heuresis_env.discovery.citests, heuresis_env.discovery.citests.fisherz, heuresis_env.discovery.citests.kci
        import heuresis_env.discovery.citests.rcit, heuresis_env.discovery.citests.dcor
        total = time.perf_counter() - start
        heavy = sorted({m.split(".")[0] for m in sys.modules} & {"dcor", "numba", "torch", "causallearn"})
        print(f"{package:.3f} {total:.3f} {','.join(heavy) or '-'}")
        """
    )
    times = []
    for _ in range(3):
        output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        package, total, heavy = output.stdout.split()
        times.append((float(package), float(total)))
    package, total = min(times)
    print(f"\n[4] import heuresis_env: {package:.3f} s; with all CI-test modules: {total:.3f} s "
          f"(best of 3); heavy modules loaded: {heavy}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="wild")
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--skip-pc", action="store_true", help="skip the (slow) causal-learn PC run")
    args = parser.parse_args()

    # load every BLAS library first (numpy's and scipy's are distinct), then limit them all
    import causallearn.utils.cit  # noqa: F401
    import scipy.linalg  # noqa: F401

    import heuresis_env.discovery.citests.kci  # noqa: F401

    limits = contextlib.nullcontext()
    if args.blas_threads > 0:
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(limits=args.blas_threads)
    with limits:
        data = instance_data(args.family, args.index)
        print(f"instance {args.family}/dev/{args.index}: n={data.shape[0]}, d={data.shape[1]}; "
              f"BLAS threads: {args.blas_threads or 'default'}")
        bench_kci(data)
        bench_fisherz()
        if not args.skip_pc:
            bench_pc_kci(data)
    bench_imports()


if __name__ == "__main__":
    main()
