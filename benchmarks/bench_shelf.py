"""The BNLearn shelf's cost: ``heuresis baselines --suite shelf`` cold (an empty cache) then warm
(the same cache), against the issue's targets (2 cores: cold ≤ 30 min, warm ≤ 1 min).

Each run is the real command in a subprocess: its wall time, the user and system CPU of the
process tree it waited for (its workers, stopped ones included), and the load average before
and after. The command's own output ends with the network × algorithm table of seconds
(where the time goes); it is printed after the figures.

    python benchmarks/bench_shelf.py --out /tmp/shelf                 # cold then warm
    python benchmarks/bench_shelf.py --out /tmp/shelf --warm-only     # the cache is kept
    python benchmarks/bench_shelf.py --out /tmp/shelf -- --budget 60 --count 3

``--out`` holds the cache (``cache/``) and each run's output and JSON; the cold run empties
``cache/`` first. Options after ``--`` go to ``heuresis baselines`` unchanged.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

TARGETS = {"cold": 30 * 60.0, "warm": 60.0}


def load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def run(name: str, out: Path, extra: list[str], workers: int) -> dict[str, float]:
    """One run of the command; returns its wall and CPU seconds."""
    command = [sys.executable, "-m", "heuresis_env.cli", "baselines", "--suite", "shelf", "--workers",
               str(workers), "--json", str(out / f"{name}.json"), *extra]
    environment = {**os.environ, "HEURESIS_CACHE_DIR": str(out / "cache")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"[{name}] {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, load {load()}: "
          f"{' '.join(command[1:])}", flush=True)
    started = time.perf_counter()
    with open(out / f"{name}.txt", "w") as handle:
        code = subprocess.run(command, env=environment, stdout=handle,
                              stderr=subprocess.DEVNULL, check=False).returncode
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if code != 0:
        raise SystemExit(f"[{name}] the command failed (exit code {code}); see "
                         f"{out / f'{name}.txt'}")
    target = TARGETS[name]
    print(f"[{name}] {wall:.1f} s wall, {cpu:.1f} s CPU, load after {load()}; target "
          f"≤ {target:g} s: {'met' if wall <= target else 'missed'} "
          f"(wall / target = {wall / target:.2f})", flush=True)
    return {"wall": wall, "cpu": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warm-only", action="store_true",
                        help="keep the cache and run the warm pass only")
    parser.add_argument("extra", nargs="*", help="after --: options for heuresis baselines")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    figures = {}
    if not args.warm_only:
        shutil.rmtree(args.out / "cache", ignore_errors=True)
        figures["cold"] = run("cold", args.out, args.extra, args.workers)
    figures["warm"] = run("warm", args.out, args.extra, args.workers)
    if "cold" in figures:
        print(f"warm / cold wall time: {figures['warm']['wall'] / figures['cold']['wall']:.3f}")
    text = (args.out / "warm.txt").read_text()
    print(text[text.index("Seconds per network"):] if "Seconds per network" in text else text)


if __name__ == "__main__":
    main()
