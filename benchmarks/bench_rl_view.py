"""Cold RL-view resets and ``check_env`` on every registered Heuresis id, lazy against eager.

For each id in ``gymnasium.registry`` whose name starts with "Heuresis" (enumerated at run
time, so ids registered later are measured too), each measurement runs in its own process
with a fresh, empty ``HEURESIS_CACHE_DIR`` (cold: nothing computed before):

- ``make``: ``gym.make(id, interface="rl")`` (the action table and spaces);
- ``lazy reset``: the first ``reset(seed=0)`` with ``rl_evidence="lazy"``;
- ``eager reset``: the same with ``rl_evidence="eager"`` (the whole evidence table first),
  the reference measured in the same run; cut at ``--eager-budget`` seconds ("> budget");
- ``check_env rl``: ``gymnasium.utils.env_checker.check_env`` on the RL view with the id's
  defaults (unguided: lazy), cut at ``--budget``;
- ``check_env``: the same on the id as registered (the text view, its default).

The question ids (``Heuresis-qa-*``) have no RL view: their RL columns read "n/a". The user's
table id (``Heuresis-dataset-v0``) needs a table: it gets the data of ``Heuresis-lg-v0``'s
first dev instance (d = 10, n = 600). Ratios are eager ÷ lazy reset time. Target (issue 32):
cold lazy reset on Alarm ≤ 2 s, each check_env ≤ 60 s. Timings are wall seconds on a shared
machine; the load average is printed before and after.

Usage::

    python benchmarks/bench_rl_view.py [--ids Heuresis-bnlearn-alarm-v0,Heuresis-lg-v0:223,...]
        [--budget 300]
        [--eager-budget 180] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, sys, time
import gymnasium as gym
import heuresis_env  # registers the ids
what, name, kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if ":" in name:  # an id at another size, e.g. Heuresis-lg-v0:223
    name, size = name.split(":")
    kwargs["d"] = int(size)
if name == "Heuresis-dataset-v0":
    from heuresis_env.generation.instances import InstanceKey, generate_instance
    kwargs["data"] = generate_instance(InstanceKey("lg", "dev", 0)).X
out = {}
started = time.perf_counter()
env = gym.make(name, **kwargs)
out["make"] = time.perf_counter() - started
if what == "reset":
    started = time.perf_counter()
    env.reset(seed=0)
    out["seconds"] = time.perf_counter() - started
else:
    from gymnasium.utils.env_checker import check_env
    started = time.perf_counter()
    check_env(env.unwrapped)
    out["seconds"] = time.perf_counter() - started
print("RESULT " + json.dumps(out))
"""


def measure(what: str, name: str, kwargs: dict, budget: float) -> dict:
    """One measurement in a fresh process with a fresh cache; {"seconds": ...} or an error."""
    cache = tempfile.mkdtemp(prefix="heuresis-bench-rl-view-")
    env = {**os.environ, "HEURESIS_CACHE_DIR": cache}
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, what, name, json.dumps(kwargs)],
                              capture_output=True, text=True, timeout=budget, env=env)
    except subprocess.TimeoutExpired:
        return {"over": budget, "wall": time.perf_counter() - started}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return {**json.loads(line[len("RESULT "):]), "wall": time.perf_counter() - started}
    tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"error": tail[:200]}


def cell(result: dict | None, key: str = "seconds") -> str:
    if result is None:
        return "n/a"
    if "over" in result:
        return f"> {result['over']:.0f}"
    if "error" in result:
        return "error"
    return f"{result[key]:.2f}"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", default=None, help="comma-separated ids (default: every "
                        "registered id starting with 'Heuresis'); ID:D plays the id at d = D, "
                        "e.g. Heuresis-lg-v0:223 for a synthetic Andes-sized instance")
    parser.add_argument("--budget", type=float, default=300.0,
                        help="seconds before a lazy reset or check_env is cut")
    parser.add_argument("--eager-budget", type=float, default=180.0,
                        help="seconds before the eager reference reset is cut")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args()

    import gymnasium as gym

    import heuresis_env  # noqa: F401 - registers the ids

    names = (args.ids.split(",") if args.ids
             else sorted(n for n in gym.registry if n.startswith("Heuresis")))
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} cores, load average "
          f"{load()}; {len(names)} ids; budgets: {args.budget:.0f} s, eager "
          f"{args.eager_budget:.0f} s", flush=True)
    header = (f"{'id':<36}{'make':>7}{'lazy reset':>12}{'eager reset':>13}{'ratio':>8}"
              f"{'check_env rl':>14}{'check_env':>11}")
    print(header)
    print("-" * len(header), flush=True)
    rows = []
    for name in names:
        rl = "-qa-" not in name  # question episodes are text-view only
        lazy = measure("reset", name, {"interface": "rl", "rl_evidence": "lazy"},
                       args.budget) if rl else None
        eager = measure("reset", name, {"interface": "rl", "rl_evidence": "eager"},
                        args.eager_budget) if rl else None
        checked_rl = measure("check_env", name, {"interface": "rl"}, args.budget) if rl else None
        checked = measure("check_env", name, {}, args.budget)
        ratio = "n/a"
        if lazy and eager and "seconds" in lazy:
            if "seconds" in eager:
                ratio = f"{eager['seconds'] / lazy['seconds']:.0f}x"
            elif "over" in eager:
                ratio = f"> {eager['over'] / lazy['seconds']:.0f}x"
        print(f"{name:<36}{cell(lazy, 'make'):>7}{cell(lazy):>12}{cell(eager):>13}{ratio:>8}"
              f"{cell(checked_rl):>14}{cell(checked):>11}", flush=True)
        for label, result in (("lazy", lazy), ("eager", eager), ("check_env rl", checked_rl),
                              ("check_env", checked)):
            if result is not None and "error" in result:
                print(f"    {label}: {result['error']}", flush=True)
        rows.append({"id": name, "lazy_reset": lazy, "eager_reset": eager,
                     "check_env_rl": checked_rl, "check_env": checked})
    print(f"load average after: {load()}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
