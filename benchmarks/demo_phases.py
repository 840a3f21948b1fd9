"""Where a ``heuresis demo`` run's wall time goes: its phases and each policy's span.

Runs ``heuresis demo`` in this process with timers around its phases — start-up (imports and
the plan), the evaluation (``evaluate_many``), the report and the viewer (which run side by
side) — and around each episode's saving, then prints: the phases' start and end times, when
each policy's first and last episode was saved, each worker's episodes and summed episode
seconds, the parent's own CPU, and the machine's busy CPU seconds over the run (``/proc/stat``:
on an otherwise idle machine it counts the policy processes too, which the process tree's
rusage misses). ``bench_main_job.py`` gives the cold/warm comparison and the per-tool profile;
this script shows the critical path of one run.

    HEURESIS_CACHE_DIR=<a warm cache> python benchmarks/demo_phases.py --n 600 --count 32 \\
        --workers 2 --out /tmp/phases

Every argument is passed to ``heuresis demo`` unchanged.
"""

from __future__ import annotations

import resource
import sys
import time
from collections import defaultdict

from bench_main_job import (  # this folder is the script's import path
    byte_compile,
    machine_busy_seconds,
)


def main(argv: list[str]) -> int:
    byte_compile()  # as bench_main_job.py and ``make demo`` do, before the clock starts
    started = time.perf_counter()
    busy_before = machine_busy_seconds()
    import heuresis_env.cli as cli
    import heuresis_env.cli.demo as demo
    import heuresis_env.evaluation.runner as runner

    phases: list[tuple[str, float, float]] = []
    saved: list[tuple[float, str, str, float]] = []  # (time, policy, worker, episode s)
    save = runner.save_outcome

    def timed_save(store, outcome):
        value = save(store, outcome)
        record = outcome.record
        saved.append((time.perf_counter() - started, str(record["policy"]),
                      str(record["worker"]), float(record["wall_seconds"])))
        return value

    runner.save_outcome = timed_save
    for name in ("evaluate_many", "build_report", "build_site"):
        function = getattr(demo, name)

        def timed(*args, _function=function, _name=name, **kwargs):
            begin = time.perf_counter() - started
            try:
                return _function(*args, **kwargs)
            finally:  # the report runs in a forked child: its end is printed there
                end = time.perf_counter() - started
                phases.append((_name, begin, end))
                if _name == "build_report":
                    print(f"  build_report: {begin:7.2f} → {end:7.2f} s", file=sys.stderr)

        setattr(demo, name, timed)
    code = cli.main(["demo", *argv])
    total = time.perf_counter() - started
    busy_after = machine_busy_seconds()
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = sys.stderr
    print(f"\ntotal {total:.2f} s; this process user {mine.ru_utime:.1f} s sys "
          f"{mine.ru_stime:.1f} s; waited-for children user {children.ru_utime:.1f} s sys "
          f"{children.ru_stime:.1f} s", file=out)
    if busy_before is not None and busy_after is not None:
        print(f"machine busy {busy_after - busy_before:.1f} CPU s over the run", file=out)
    for name, begin, end in phases:
        print(f"  {name}: {begin:7.2f} → {end:7.2f} s", file=out)
    if saved:
        first: dict[str, float] = {}
        last: dict[str, float] = {}
        count: dict[str, int] = defaultdict(int)
        seconds: dict[str, float] = defaultdict(float)
        workers: dict[str, list[float]] = defaultdict(list)
        for at, policy, worker, episode in saved:
            first.setdefault(policy, at)
            last[policy] = at
            count[policy] += 1
            seconds[policy] += episode
            workers[worker].append(episode)
        print("\n| policy | first saved s | last saved s | episodes | Σ episode s |\n"
              "|---|---|---|---|---|", file=out)
        for policy in first:
            print(f"| {policy} | {first[policy]:.2f} | {last[policy]:.2f} | {count[policy]} | "
                  f"{seconds[policy]:.2f} |", file=out)
        for worker, episodes in workers.items():
            print(f"worker {worker}: {len(episodes)} episodes, Σ {sum(episodes):.1f} s",
                  file=out)
    return code


if __name__ == "__main__":  # the evaluation's workers are spawned: guard the entry point
    sys.exit(main(sys.argv[1:]))
