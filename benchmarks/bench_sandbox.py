"""Start-up overhead of one sandboxed call, beside a bare ``python -c pass`` measured in the
same run (target: median under 300 ms).

Three views of a trivial snippet (``1 + 1``):
- back to back: calls one after another, so each waits for its worker to finish starting
  (interpreter, namespaces, private root, NumPy import) — the worst case;
- after a pause: the warm worker had time to start, as between an agent's turns;
- cold: ``run_code`` (no warm worker), one fresh sandbox per call.

Usage: ``python benchmarks/bench_sandbox.py [--calls 30] [--pause 0.5]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

from heuresis_env.env.sandbox import Sandbox, run_code


def median_ms(samples: list[float]) -> float:
    return 1000 * statistics.median(samples)


def time_calls(function, calls: int, pause: float = 0.0) -> list[float]:
    samples = []
    for _ in range(calls):
        if pause:
            time.sleep(pause)
        started = time.perf_counter()
        function()
        samples.append(time.perf_counter() - started)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--pause", type=float, default=0.5,
                        help="seconds between calls in the 'after a pause' view")
    args = parser.parse_args(argv)

    X = np.random.default_rng(0).normal(size=(1000, 10))
    names = [f"X{i + 1}" for i in range(X.shape[1])]

    bare = time_calls(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True),
                      args.calls)
    bare_numpy = time_calls(
        lambda: subprocess.run([sys.executable, "-c", "import numpy"], check=True), args.calls)

    def check(result) -> None:
        if result.status != "ok" or result.value != "2":
            raise SystemExit(f"sandbox call failed: {result.to_text()}")

    with Sandbox(X, names) as sandbox:
        isolation = sandbox.isolation
        check(sandbox.run("1 + 1"))  # first worker
        back_to_back = time_calls(lambda: check(sandbox.run("1 + 1")), args.calls)
        after_pause = time_calls(lambda: check(sandbox.run("1 + 1")), args.calls, args.pause)
    cold = time_calls(lambda: check(run_code("1 + 1", X, names)), max(args.calls // 3, 5))

    reference = median_ms(bare)
    print(f"isolation: {isolation}")
    print(f"{'view':<44}{'median ms':>10}{'p90 ms':>9}{'× bare':>8}")
    for label, samples in (
        ("bare subprocess python -c pass", bare),
        ("bare subprocess python -c 'import numpy'", bare_numpy),
        ("sandbox call, back to back", back_to_back),
        (f"sandbox call, after a {args.pause:g} s pause", after_pause),
        ("run_code, cold (no warm worker)", cold),
    ):
        p90 = 1000 * sorted(samples)[int(0.9 * (len(samples) - 1))]
        print(f"{label:<44}{median_ms(samples):>10.1f}{p90:>9.1f}"
              f"{median_ms(samples) / reference:>8.2f}")
    target = 300.0
    worst = median_ms(back_to_back)
    verdict = "meets" if worst < target else "MISSES"
    print(f"back-to-back median {worst:.1f} ms {verdict} the {target:.0f} ms target")
    return 0 if worst < target else 1


if __name__ == "__main__":
    sys.exit(main())
