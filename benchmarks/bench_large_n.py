"""Which kernel CI test for large n? Candidates against exact KCI, in the same run.

Candidates (registered CI tests): RCoT and RCIT (random Fourier features, seeded) and KCI on
blocks of rows (``kci-block``, exact KCI per block, moments summed) with 500 and 1,000 rows
per block. Four sections (``--sections``, default all):

``agreement``  For n in ``--n`` (600, 1000, 2000): exact PC-KCI (our KCI, cold, no disk cache)
               on ``--wild`` wild dev instances (d = 10) and one dev instance of each of
               ``--families``; then every candidate answers the tests exact PC-KCI ran. Printed:
               the share of decisions at α = 0.05 (independent / dependent) equal to exact
               KCI's, on the skeleton phase's tests and on all tests (orientation included);
               how the others split (candidate says independent where KCI says dependent,
               "→ind", or the reverse, "→dep"); ms per test (the candidate's own, answering
               the tests in PC's order on a fresh object, caches warm as in a PC run); and
               the skeleton of PC run with the candidate against exact PC-KCI's (pairs that
               differ, of 45).
``calibration`` Type-I rate at α = 0.05 under the null (X ⫫ Y | S by construction: additive
               nonlinear mechanisms with non-Gaussian noise, a multiplicative-noise one,
               |S| = 0..3), ``--replicates`` (200) fresh datasets per setting, with a 95 %
               Clopper–Pearson interval; then the power on three dependent settings
               (``--power-replicates``). At each n of ``--calibration-n`` (2000, 10000); exact
               KCI too at n ≤ ``--exact-calibration-max-n`` (default 600: exact KCI at n = 2,000
               costs ≈ 1 s per fresh conditional test).
``large``      At n in ``--large-n`` (5000, 10000), each candidate in a fresh subprocess on
               wild dev instance 0: PC (wall and CPU time, tests, ms per test, peak RSS =
               VmHWM), or with ``--large-mode tests`` three cold tests (|S| = 0, 1, 2), where
               exact KCI joins at n = ``--exact-n`` (5000), for scale.
``pc``         The target: ``kci-auto`` PC on wild dev 0, d = 10, n = 10,000, in a fresh
               subprocess: wall and CPU time, peak RSS, and which test ran.

BLAS is limited to one thread (a shared 2-core machine). No pass/fail: the figures are for
docs/performance.md ("Large n: an approximate kernel test").

    nice -n 10 python benchmarks/bench_large_n.py
    python benchmarks/bench_large_n.py --sections agreement --n 600 --wild 1 --families ""
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

ALPHA = 0.05
#: name → (registered test, parameters)
CANDIDATES: dict[str, tuple[str, dict[str, Any]]] = {
    "rcot": ("rcot", {"seed": 0}),
    "rcit": ("rcit", {"seed": 0}),
    "kci-block-500": ("kci-block", {"block_size": 500}),
    "kci-block-1000": ("kci-block", {"block_size": 1000}),
}


def instance_data(family: str, index: int, n: int, d: int = 10) -> np.ndarray:
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    return np.array(generate_instance(InstanceKey(family, "dev", index, d=d, n=n)).X)


def build(candidate: str, data: np.ndarray) -> Any:
    from heuresis_env.discovery.citests import make_ci_test

    name, params = CANDIDATES[candidate]
    return make_ci_test(name, data, disk_cache=False, **params)


def peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM), MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# ---- agreement ---------------------------------------------------------------------------

def agreement(ns: list[int], wild: int, families: list[str], candidates: list[str]) -> None:
    from heuresis_env.discovery.citests import make_ci_test
    from heuresis_env.discovery.pc import pc

    print("\n## Agreement with exact KCI on the tests exact PC-KCI runs (alpha = 0.05)")
    instances = [("wild", i) for i in range(wild)] + [(f, 0) for f in families]
    for n in ns:
        pooled: dict[str, list[int]] = {c: [0, 0, 0, 0, 0, 0] for c in candidates}
        # same, total, to_ind, to_dep (skeleton tests), same_all, total_all
        seconds = {c: 0.0 for c in ["kci", *candidates]}
        test_count = 0
        print(f"\n### n = {n}\n")
        print("| instance | tests (skeleton/all) | exact KCI s | "
              + " | ".join(f"{c} agree skel / all, →ind/→dep, skeleton diff" for c in candidates)
              + " |")
        print("|---|---|---|" + "---|" * len(candidates))
        for family, index in instances:
            data = instance_data(family, index, n)
            exact = make_ci_test("kci", data, disk_cache=False)
            start = time.perf_counter()
            exact_pc = pc(None, ci_test=exact, alpha=ALPHA)
            exact_seconds = time.perf_counter() - start
            keys = list(exact._memory)
            skeleton_keys = keys[:exact_pc.n_tests]
            seconds["kci"] += exact_seconds
            test_count += len(keys)
            exact_skeleton = exact_pc.skeleton.skeleton()
            cells = []
            for candidate in candidates:
                tester = build(candidate, data)
                start = time.perf_counter()
                decisions = {key: tester.test(*key).p_value > ALPHA for key in keys}
                seconds[candidate] += time.perf_counter() - start
                stats = [0, 0, 0, 0, 0, len(keys)]
                for position, key in enumerate(keys):
                    exact_independent = exact._memory[key].p_value > ALPHA
                    same = decisions[key] == exact_independent
                    stats[4] += same
                    if position < len(skeleton_keys):
                        stats[0] += same
                        stats[1] += 1
                        stats[2] += (not same) and decisions[key]
                        stats[3] += (not same) and not decisions[key]
                for k in range(6):
                    pooled[candidate][k] += stats[k]
                candidate_pc = pc(None, ci_test=tester, alpha=ALPHA)
                differ = int(np.sum(np.triu(candidate_pc.skeleton.skeleton() != exact_skeleton)))
                cells.append(f"{stats[0] / stats[1]:.1%} / {stats[4] / stats[5]:.1%}, "
                             f"{stats[2]}/{stats[3]}, {differ}")
            print(f"| {family} {index} | {len(skeleton_keys)}/{len(keys)} | {exact_seconds:.1f} | "
                  + " | ".join(cells) + " |", flush=True)
        print(f"\nPooled at n = {n} ({test_count} tests; ms per test: exact KCI "
              f"{1000 * seconds['kci'] / test_count:.1f} in its PC run):\n")
        print("| candidate | skeleton tests agree | all tests agree | →ind | →dep | ms/test | "
              "speed-up vs exact |")
        print("|---|---|---|---|---|---|---|")
        for candidate in candidates:
            same, total, to_ind, to_dep, same_all, total_all = pooled[candidate]
            ms = 1000 * seconds[candidate] / test_count
            print(f"| {candidate} | {same}/{total} = {same / total:.1%} | "
                  f"{same_all}/{total_all} = {same_all / total_all:.1%} | {to_ind} | {to_dep} | "
                  f"{ms:.1f} | {seconds['kci'] / max(seconds[candidate], 1e-9):.1f}× |",
                  flush=True)


# ---- calibration -------------------------------------------------------------------------

def _noise(random: np.random.Generator, n: int, kind: int) -> np.ndarray:
    """Non-Gaussian noise of a few shapes (standardized)."""
    draws = [random.normal(size=n), random.laplace(size=n), random.uniform(-1, 1, size=n),
             random.standard_t(4, size=n), random.exponential(size=n)]
    value = draws[kind % len(draws)]
    return (value - value.mean()) / value.std()


_MECHANISMS: list[Callable[[np.ndarray], np.ndarray]] = [
    np.sin, np.tanh, lambda v: v**2 / 2, np.abs, lambda v: np.cos(1.5 * v), lambda v: v**3 / 4]


def null_setting(name: str, n: int, random: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """Data whose columns 0 and 1 are independent given columns 2.. (by construction)."""
    size = int(name.split("-")[0][1:])  # "s2-additive" → 2
    z = np.column_stack([_noise(random, n, k) for k in range(size)]) if size else np.empty((n, 0))
    kind = name.split("-", 1)[1]
    x_part = sum((_MECHANISMS[k % 6](z[:, k]) for k in range(size)), np.zeros(n))
    y_part = sum((_MECHANISMS[(k + 3) % 6](z[:, k]) for k in range(size)), np.zeros(n))
    if kind == "additive":
        x = x_part + 0.5 * _noise(random, n, 1)
        y = y_part + 0.5 * _noise(random, n, 2)
    elif kind == "multiplicative":  # heteroscedastic: the noise scale depends on z
        x = x_part + (0.3 + np.abs(z[:, 0])) * _noise(random, n, 3)
        y = y_part * (1 + 0.5 * _noise(random, n, 4))
    else:
        raise ValueError(f"unknown null setting {name!r}")
    return np.column_stack([x, y, z]), (0, 1, tuple(range(2, 2 + size)))


def power_setting(name: str, n: int, random: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """Data where columns 0 and 1 are dependent given columns 2.. (a direct, weak effect)."""
    if name == "s0-sine":  # y = sin(2x) + noise: non-monotone
        x = _noise(random, n, 0)
        return np.column_stack([x, 0.5 * np.sin(2 * x) + _noise(random, n, 1)]), (0, 1, ())
    if name == "s1-confounded":  # z → x, z → y and x → y (weak, nonlinear)
        z = _noise(random, n, 1)
        x = np.tanh(z) + _noise(random, n, 2)
        y = np.sin(z) + 0.3 * np.abs(x) + _noise(random, n, 0)
        return np.column_stack([x, y, z]), (0, 1, (2,))
    if name == "s2-interaction":  # y depends on x only through x · z1
        z = np.column_stack([_noise(random, n, 0), _noise(random, n, 2)])
        x = z[:, 1] + _noise(random, n, 1)
        y = np.cos(z[:, 1]) + 0.3 * x * z[:, 0] + _noise(random, n, 2)
        return np.column_stack([x, y, z]), (0, 1, (2, 3))
    raise ValueError(f"unknown power setting {name!r}")


NULL_SETTINGS = ("s0-additive", "s1-additive", "s1-multiplicative", "s2-additive", "s3-additive")
POWER_SETTINGS = ("s0-sine", "s1-confounded", "s2-interaction")


def _rate(rejections: int, total: int) -> str:
    from scipy.stats import binomtest

    interval = binomtest(rejections, total).proportion_ci(0.95)
    return f"{rejections / total:.3f} [{interval.low:.3f}, {interval.high:.3f}]"


def calibration(ns: list[int], replicates: int, power_replicates: int, candidates: list[str],
                exact_max_n: int) -> None:
    print("\n## Calibration: rejection rate at alpha = 0.05 [95 % Clopper-Pearson interval]")
    for n in ns:
        tests = [*candidates, *(["kci"] if n <= exact_max_n else [])]
        for kind, settings, count in (("null (type-I rate)", NULL_SETTINGS, replicates),
                                      ("dependent (power)", POWER_SETTINGS, power_replicates)):
            maker = null_setting if kind.startswith("null") else power_setting
            print(f"\n### n = {n}, {kind}, {count} replicates per setting\n")
            print("| setting | " + " | ".join(tests) + " |")
            print("|---|" + "---|" * len(tests))
            seconds = {t: 0.0 for t in tests}
            for setting in settings:
                rejections = {t: 0 for t in tests}
                for replicate in range(count):
                    random = np.random.default_rng([n, replicate, settings.index(setting),
                                                    kind.startswith("null")])
                    data, (x, y, s) = maker(setting, n, random)
                    for test in tests:
                        if test == "kci":
                            from heuresis_env.discovery.citests import make_ci_test
                            tester = make_ci_test("kci", data, disk_cache=False)
                        else:
                            tester = build(test, data)
                        start = time.perf_counter()
                        rejections[test] += tester.test(x, y, s).p_value <= ALPHA
                        seconds[test] += time.perf_counter() - start
                print(f"| {setting} | " + " | ".join(_rate(rejections[t], count) for t in tests)
                      + " |", flush=True)
            total = len(settings) * count
            print("| ms per test (fresh data) | "
                  + " | ".join(f"{1000 * seconds[t] / total:.0f}" for t in tests) + " |")


# ---- large n: subprocesses ---------------------------------------------------------------

def child(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one measurement in this (fresh) process; returns the figures."""
    from heuresis_env.discovery.citests import make_ci_test
    from heuresis_env.discovery.pc import pc

    start = time.perf_counter()
    data = instance_data("wild", spec.get("index", 0), spec["n"])
    generate_seconds = time.perf_counter() - start
    if spec["test"] in CANDIDATES:
        tester = build(spec["test"], data)
    else:
        tester = make_ci_test(spec["test"], data, disk_cache=False, **spec.get("params", {}))
    start, cpu = time.perf_counter(), time.process_time()
    if spec["mode"] == "pc":
        result = pc(None, ci_test=tester, alpha=ALPHA)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "cpu_seconds": time.process_time() - cpu,
                "tests": tester.n_cached, "ran": result.ci_test,
                "ms_per_test": 1000 * seconds / max(tester.n_cached, 1),
                "generate_seconds": generate_seconds, "peak_rss_mib": peak_rss_mib(),
                "edges": int(np.sum(np.triu(result.skeleton.skeleton())))}
    times = []
    for key in [(0, 1, ()), (0, 1, (2,)), (0, 1, (2, 3))]:
        t0 = time.perf_counter()
        tester.test(*key)
        times.append(time.perf_counter() - t0)
    return {"seconds": time.perf_counter() - start, "per_test": times,
            "cpu_seconds": time.process_time() - cpu,
            "peak_rss_mib": peak_rss_mib(), "generate_seconds": generate_seconds}


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    completed = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                               capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        return {"error": completed.stderr.strip().splitlines()[-1:]}
    return json.loads(completed.stdout.strip().splitlines()[-1])


def large(ns: list[int], candidates: list[str], exact_n: int, mode: str) -> None:
    print("\n## Large n: wild dev 0 (d = 10) per candidate, each in a fresh process")
    if mode == "pc":
        print("\nPC with the candidate:\n")
        print("| n | test | PC s (CPU s) | tests | ms/test | peak RSS MiB | skeleton edges |")
        print("|---|---|---|---|---|---|---|")
    else:
        print("\nThree tests, cold (x = 0, y = 1; S = ∅, {2}, {2, 3}):\n")
        print("| n | test | s per test (S = ∅, {2}, {2, 3}) | CPU s | peak RSS MiB |")
        print("|---|---|---|---|---|")
    runs = [(n, c) for n in ns for c in candidates]
    if exact_n and mode == "tests":
        runs.append((exact_n, "kci"))
    for n, candidate in runs:
        figures = run_child({"mode": mode, "test": candidate, "n": n})
        if "error" in figures:
            print(f"| {n:,} | {candidate} | failed: {figures['error']} |", flush=True)
        elif mode == "pc":
            print(f"| {n:,} | {candidate} | {figures['seconds']:.1f} ({figures['cpu_seconds']:.1f})"
                  f" | {figures['tests']} | {figures['ms_per_test']:.1f} | "
                  f"{figures['peak_rss_mib']:.0f} | {figures['edges']} |", flush=True)
        else:
            print(f"| {n:,} | {candidate} | "
                  + ", ".join(f"{t:.2f}" for t in figures["per_test"])
                  + f" | {figures['cpu_seconds']:.1f} | {figures['peak_rss_mib']:.0f} |",
                  flush=True)


def target(n: int) -> None:
    print(f"\n## Target: kci-auto PC on wild dev 0, d = 10, n = {n:,} (fresh process)")
    figures = run_child({"mode": "pc", "test": "kci-auto", "n": n})
    if "error" in figures:
        print(f"failed: {figures['error']}")
        return
    print(f"ran {figures['ran']}: {figures['seconds']:.1f} s wall ({figures['cpu_seconds']:.1f} "
          f"s CPU) for {figures['tests']} tests "
          f"({figures['ms_per_test']:.1f} ms/test; data generation {figures['generate_seconds']:.1f}"
          f" s, not counted), peak RSS {figures['peak_rss_mib']:.0f} MiB "
          f"({figures['peak_rss_mib'] / 1024:.2f} GiB), {figures['edges']} skeleton edges",
          flush=True)


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="agreement,calibration,large,pc")
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--n", default="600,1000,2000")
    parser.add_argument("--wild", type=int, default=3, help="wild dev instances (from index 0)")
    parser.add_argument("--families", default="anm,hetero,mixed")
    parser.add_argument("--calibration-n", default="2000,10000")
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--power-replicates", type=int, default=50)
    parser.add_argument("--exact-calibration-max-n", type=int, default=600)
    parser.add_argument("--large-n", default="5000,10000")
    parser.add_argument("--large-mode", choices=("pc", "tests"), default="pc",
                        help="a PC run per candidate, or three cold tests")
    parser.add_argument("--exact-n", type=int, default=5000,
                        help="n of exact KCI's three tests with --large-mode tests (0: skip)")
    parser.add_argument("--target-n", type=int, default=10000)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    candidates = [c for c in args.candidates.split(",") if c]
    unknown = sorted(set(candidates) - set(CANDIDATES))
    if unknown:
        parser.error(f"unknown candidates {unknown}; known: {sorted(CANDIDATES)}")
    sections = set(args.sections.split(","))
    print(f"# bench_large_n  {time.strftime('%Y-%m-%d %H:%M:%S %Z')}  load "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}  candidates {candidates}")
    if "agreement" in sections:
        agreement(_ints(args.n), args.wild, [f for f in args.families.split(",") if f],
                  candidates)
    if "calibration" in sections:
        calibration(_ints(args.calibration_n), args.replicates, args.power_replicates,
                    candidates, args.exact_calibration_max_n)
    if "large" in sections:
        large(_ints(args.large_n), candidates, args.exact_n, args.large_mode)
    if "pc" in sections:
        target(args.target_n)
    print(f"\n# done {time.strftime('%H:%M:%S')}  load "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
