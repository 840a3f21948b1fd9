"""What running policies in their own process costs: episodes per second of a trivial policy
driven in the runner's process (as before issue 18) beside the same policy behind a
``PolicyProxy`` (plain process, and confined in namespaces where available), measured in the
same run, plus the one-off start of a policy process; then the start of a policy process
from a fresh interpreter against a fork of the runner's launcher, in the same run.

The trivial policy calls ``list_graphs`` ``--steps - 1`` times and submits, so the numbers are
the runner's fixed per-episode cost (fresh environment, reset, trace) plus the per-step cost
of the pipe.

Usage: ``python benchmarks/bench_policy_process.py [--episodes 40] [--steps 10]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from heuresis_env.evaluation.episode import EpisodeRunner, EpisodeTask, RunSpec
from heuresis_env.evaluation.policy_process import PolicyProxy, confinement_available
from heuresis_env.isolation.launcher import LAUNCHER_VARIABLE, close_launchers
from heuresis_env.policy import EpisodeSettings, Policy


class TrivialPolicy(Policy):
    """``steps - 1`` calls of ``list_graphs``, then ``submit``."""

    name = "trivial"

    def __init__(self, steps: int = 10):
        self.steps = steps
        self.taken = 0

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        self.taken = 0

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        self.taken += 1
        if self.taken >= self.steps:
            return {"tool": "submit", "args": {}}
        return {"tool": "list_graphs", "args": {}}


def episodes_per_second(runner: EpisodeRunner, episodes: int) -> tuple[float, list[float]]:
    samples = []
    for k in range(episodes):
        task = EpisodeTask(f"lg/dev/{k % 4}/r0", "lg", "dev", k % 4, 0, k)
        started = time.perf_counter()
        outcome = runner.run(task)
        samples.append(time.perf_counter() - started)
        if outcome.record["error"] is not None:
            raise SystemExit(f"episode failed: {outcome.record['error']}")
    return len(samples) / sum(samples), samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--starts", type=int, default=6, help="policy process starts timed")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    spec = RunSpec(policy=f"{Path(__file__).stem}:TrivialPolicy",
                   policy_options={"steps": args.steps},
                   settings=EpisodeSettings(max_steps=args.steps + 5), d=5, n=200)

    runs = {"in the runner's process": dict(policy=TrivialPolicy(args.steps))}
    runs["policy process (plain)"] = {"isolation": "process"}
    missing = confinement_available()
    if missing is None:
        runs["policy process (namespaces)"] = {"isolation": "namespaces"}
    else:
        print(f"(namespaces unavailable: {missing})")

    # warm the instances (generation and evidence are not what is measured)
    warm = EpisodeRunner(spec, "bench", policy=TrivialPolicy(args.steps))
    episodes_per_second(warm, 4)
    warm.close()

    results = {}
    for label, how in runs.items():
        started = time.perf_counter()
        if "policy" in how:
            runner = EpisodeRunner(spec, "bench", policy=how["policy"])
        else:
            runner = EpisodeRunner(RunSpec(**{**spec.__dict__,
                                              "policy_isolation": how["isolation"]}), "bench")
        start_seconds = time.perf_counter() - started
        rate, samples = episodes_per_second(runner, args.episodes)
        runner.close()
        results[label] = (rate, statistics.median(samples), start_seconds)

    reference = results["in the runner's process"][0]
    print(f"{args.episodes} episodes of {args.steps} steps (lg, d=5, n=200), one runner each")
    print(f"{'':30} {'episodes/s':>10} {'median ms':>10} {'vs in-process':>14} "
          f"{'start s':>8}")
    for label, (rate, median, start) in results.items():
        print(f"{label:30} {rate:10.1f} {1000 * median:10.1f} {rate / reference:13.2f}x "
              f"{start:8.2f}")
    in_process_ms = 1000 / reference
    for label, (rate, _, _) in results.items():
        if label != "in the runner's process":
            overhead = 1000 / rate - in_process_ms
            print(f"{label}: {overhead:.1f} ms more per episode, "
                  f"{overhead / args.steps:.2f} ms per step")
    start_costs(spec, args.starts)
    return 0


def start_costs(spec: RunSpec, starts: int) -> None:
    """Seconds to start a policy process and build the policy: a fresh interpreter each time
    (``$HEURESIS_POLICY_LAUNCHER=0``, as before the launcher) against a fork of the runner's
    launcher (its own start counted once, in the first fork), measured in the same run; and
    the round trip of one call to a running process started either way."""
    timings: dict[str, list[float]] = {}
    round_trips: dict[str, float] = {}
    calls = 2000
    for label, setting in (("fresh interpreter", "0"), ("forked from the launcher", "1")):
        os.environ[LAUNCHER_VARIABLE] = setting
        close_launchers()
        samples = []
        for _ in range(starts):
            started = time.perf_counter()
            proxy = PolicyProxy(spec.policy, spec.policy_options, isolation="process")
            samples.append(time.perf_counter() - started)
            proxy.close()
        timings[label] = samples
        proxy = PolicyProxy(spec.policy, spec.policy_options, isolation="process")
        for _ in range(100):  # warm
            proxy.usage()
        started = time.perf_counter()
        for _ in range(calls):
            proxy.usage()
        round_trips[label] = (time.perf_counter() - started) / calls
        proxy.close()
    close_launchers()
    os.environ.pop(LAUNCHER_VARIABLE, None)
    fresh = statistics.median(timings["fresh interpreter"])
    print(f"\n{starts} policy process starts (plain isolation), seconds each")
    print(f"{'':26} {'first':>7} {'median':>7} {'vs fresh':>9} {'µs a call':>10}")
    for label, samples in timings.items():
        median = statistics.median(samples[1:] or samples)
        print(f"{label:26} {samples[0]:7.3f} {median:7.3f} {fresh / median:8.1f}x "
              f"{1e6 * round_trips[label]:10.0f}")
    print(f"(µs a call: {calls} usage() round trips to a running policy process)")


if __name__ == "__main__":
    sys.exit(main())
