"""Time a directed model's inference (``agents.amortized.discover``: the pair statistics, the
model over test-time row subsamples, the decoding) against PC with Fisher-z and BOSS on the
same tables in the same run, and check the issue's targets: ≤ 5 s at d = 10, n = 600 and
≤ 60 s at d = 50, n = 2,000 (wall seconds, one BLAS and torch thread).

Each size is one `wide`-prior-like instance (wild, expected degree 2) generated for the run;
the statistics are computed, not read from a cache. Prints wall and CPU seconds per part and
the ratios to the references. Usage::

    python benchmarks/bench_discover.py --model FOLDER [--sizes 10x600,50x2000] [--tta 4]
"""

from __future__ import annotations

import argparse
import os
import time

from agents.amortized import discover, load_directed
from heuresis_env.discovery import run_algorithm
from heuresis_env.generation import InstanceKey, generate_instance
from heuresis_env.threads import limit_threads

TARGETS = {(10, 600): 5.0, (50, 2000): 60.0}


def _timed(call):
    wall, cpu = time.perf_counter(), time.process_time()
    value = call()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="a directed or AVICI model's folder")
    parser.add_argument("--sizes", default="10x600,50x2000")
    parser.add_argument("--tta", type=int, default=4)
    parser.add_argument("--index", type=int, default=0, help="train index of the instances")
    args = parser.parse_args()
    limit_threads(1)
    os.environ.setdefault("HEURESIS_NO_CACHE", "1")  # the statistics are computed, not read
    model, record = load_directed(args.model)
    print(f"model {args.model} ({record['architecture']}, {record['parameters']:,} "
          f"parameters), tta {args.tta}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'d':>3} {'n':>5} {'discover wall':>13} {'cpu':>6} {'PC-Fz wall':>10} "
          f"{'BOSS wall':>9} {'x PC-Fz':>7} {'x BOSS':>6} {'target':>6} {'met':>4}")
    for size in args.sizes.split(","):
        d, n = (int(v) for v in size.split("x"))
        instance = generate_instance(InstanceKey("wild", "train", args.index, d=d, n=n))
        _, found, found_cpu = _timed(lambda inst=instance: discover(
            inst.X, inst.names, model, tta=args.tta))
        _, pc_wall, _ = _timed(lambda inst=instance: run_algorithm(
            "pc-fisherz", inst.X, inst.names))
        _, boss_wall, _ = _timed(lambda inst=instance: run_algorithm("boss", inst.X, inst.names))
        target = TARGETS.get((d, n))
        met = "" if target is None else ("yes" if found <= target else "no")
        print(f"{d:>3} {n:>5} {found:>13.2f} {found_cpu:>6.2f} {pc_wall:>10.2f} "
              f"{boss_wall:>9.2f} {found / max(pc_wall, 1e-9):>7.1f} "
              f"{found / max(boss_wall, 1e-9):>6.1f} {target if target else '':>6} {met:>4}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
