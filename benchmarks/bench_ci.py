"""CI-test speed against causal-learn, measured in the same run (ratios, no pass/fail).

1. KCI per test: ours vs causal-learn's ``CIT(X, "kci")`` on the same tests of a d = 10,
   n = 600 ``wild`` instance (|S| = 0..3): times, ratio, max |Δp|.
2. Fisher-z per-test throughput vs causal-learn's ``CIT(X, "fisherz")`` on the distinct tests
   of a PC run (d = 20, n = 1000, linear-Gaussian); also the ratio of our computation alone
   (without the shared ``CITest.test`` bookkeeping).
3. PC-KCI end to end: ``heuresis_env.discovery.pc.pc`` with our KCI vs causal-learn's
   ``pc(X, 0.05, "kci")`` on the same instance: times, numbers of tests, ratio, skeleton
   equality, max |Δp| over the tests both ran.
4. dCor's permutation test per call against ``dcor.independence.distance_covariance_test`` on
   the same residuals and permutations (the p-values are equal): with the conditioning set's
   residuals already computed (as for the later tests of a set) and with a fresh set.
5. ``import heuresis_env`` time, and that importing the CI tests loads no dcor, numba, torch
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
    """One instance of ``bench_pc_kci.py`` (which runs twelve)."""
    from bench_pc_kci import compare_on

    row = compare_on(data, alpha)
    print(f"\n[3] PC-KCI (α = {alpha}) on n={data.shape[0]}, d={data.shape[1]} (seconds wall / CPU)")
    print(f"    causal-learn {row['reference']:.2f} / {row['reference_cpu']:.2f} s, "
          f"{row['reference_tests']} distinct tests")
    print(f"    ours         {row['ours']:.2f} / {row['ours_cpu']:.2f} s, {row['tests']} distinct "
          f"tests (by |S|: {row['levels']})")
    print(f"    ratio {row['ratio']:.1f} wall, {row['cpu_ratio']:.1f} CPU; same skeleton: "
          f"{row['same_skeleton']}; max |Δp| over {row['common']} common tests: {row['max_dp']:.2e}")


def bench_dcor(data: np.ndarray, repeats: int = 3) -> None:
    """dCor permutation test (199 permutations) per call: ours against dcor's
    ``distance_covariance_test`` on the same residuals and permutations (equal p-values)."""
    import dcor

    from heuresis_env.discovery.citests.dcor import DistanceCorrelation, pairing_statistics

    d = data.shape[1]
    rng = np.random.default_rng(3)
    tests = [(0, 1, ())] + [(x, y, tuple(sorted(rng.choice([v for v in range(d) if v not in (x, y)],
                                                          size=size, replace=False).tolist())))
                            for size in (1, 2) for x, y in ((2, 3), (4, 5), (6, 7))]
    pairing_statistics(data[:, 0], data[:, 1], np.array([np.arange(data.shape[0])]))  # numba load
    print(f"\n[4] dCor permutation test, 199 permutations, n={data.shape[0]}: ms per call")
    print(f"    {'test':<18} {'dcor':>8} {'ours (S cached)':>16} {'ours (fresh S)':>15} {'ratio':>6} {'same p':>7}")
    fresh_total = cached_total = reference_total = 0.0
    for x, y, s in tests:
        fresh = DistanceCorrelation(data, seed=1, disk_cache=False)
        start = time.perf_counter()
        result = fresh.test(x, y, s)
        time_fresh = time.perf_counter() - start
        time_cached = np.inf
        for _ in range(repeats):  # residuals of S kept, as within an episode or PC level
            fresh._memory.clear()
            start = time.perf_counter()
            fresh.test(x, y, s)
            time_cached = min(time_cached, time.perf_counter() - start)
        residual_x, residual_y = fresh.residuals(x, s), fresh.residuals(y, s)
        start = time.perf_counter()
        expected = dcor.independence.distance_covariance_test(
            residual_x, residual_y, num_resamples=199, random_state=fresh.generator(x, y, s))
        time_reference = time.perf_counter() - start
        fresh_total += time_fresh
        cached_total += time_cached
        reference_total += time_reference
        print(f"    {str((x, y, s)):<18} {1000 * time_reference:>8.1f} {1000 * time_cached:>16.1f} "
              f"{1000 * time_fresh:>15.1f} {time_reference / time_cached:>6.1f} "
              f"{str(result.p_value == expected.pvalue):>7}")
    count = len(tests)
    print(f"    mean: dcor {1000 * reference_total / count:.1f} ms; ours {1000 * cached_total / count:.1f} ms "
          f"with the set's residuals kept, {1000 * fresh_total / count:.1f} ms with a fresh set "
          f"(ratio {reference_total / cached_total:.1f} / {reference_total / fresh_total:.1f})")


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
    print(f"\n[5] import heuresis_env: {package:.3f} s; with all CI-test modules: {total:.3f} s "
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
        bench_dcor(data)
    bench_imports()


if __name__ == "__main__":
    main()
