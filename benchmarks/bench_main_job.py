"""The main job's cost profile: ``heuresis demo`` cold (an empty cache) then warm (the same cache,
a new output directory), with the time per policy, per tool and per CI-test kind.

Each run is the real command in a subprocess (its workers included): wall time, user and system
CPU of the process tree it waited for (policy processes forked by the launcher end outside it),
the machine's busy CPU seconds over the run (``/proc/stat``; on an otherwise idle machine the
fuller figure), the machine's load average. The breakdown is read back from the
run directories: per policy, the wall time of its evaluation (from the run directory's first
and last writes) and the sum of its episodes' wall seconds; per tool, the steps' durations
recorded in the traces (``run_algorithm`` by algorithm, ``ci_test`` by method); "policy and
environment" is an episode's wall time outside its tool calls (the policy's own work, the
environment's reset — a guided start's evidence — and scoring).

    python benchmarks/bench_main_job.py --count 1 --workers 2          # quick look (n = 600)
    python benchmarks/bench_main_job.py --count 32 --workers 2         # the full size
    python benchmarks/bench_main_job.py --runs OUT/cold OUT/warm        # tables only, from runs
    python benchmarks/bench_main_job.py --n 200 --count 6 --record --update-readme

``--record`` appends the measurement (date, commit, command, machine load, every run's wall and
CPU seconds) to ``benchmarks/results/main_job.jsonl``; ``--update-readme`` rewrites the
README's figures of the default demo (n = 200, 6 instances per family) from the latest record
of that size, between the README's ``main-job figures`` markers, and the table of its runs in
``docs/performance.md`` (between its ``main-job runs`` markers). ``tests/test_docs.py`` fails
when the README's figures and that record disagree beyond the README's stated range, or when
the page's table is not the one the record gives.

Options after ``--`` go to ``heuresis demo`` unchanged (e.g. ``-- --no-rl``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

PACKAGES = ("heuresis_env", "agents", "baselines")
ROOT = Path(__file__).resolve().parent.parent
#: every recorded measurement, one JSON object a line (the last of a size is the latest)
RESULTS = ROOT / "benchmarks" / "results" / "main_job.jsonl"
README = ROOT / "README.md"
#: the README's generated sentence sits between these markers
README_BEGIN = "<!-- main-job figures: python benchmarks/bench_main_job.py --update-readme -->"
README_END = "<!-- /main-job figures -->"
DOCS = ROOT / "docs" / "performance.md"
#: the reference page's table of the same record sits between these markers
DOCS_BEGIN = "<!-- main-job runs: python benchmarks/bench_main_job.py --update-readme -->"
DOCS_END = "<!-- /main-job runs -->"
#: the size of the default demo (``heuresis demo``), the one the README states
DEMO_SIZE = {"n": 200, "count": 6}


def byte_compile() -> None:
    """Compile the checkout's packages to bytecode, as ``make demo`` does (and pip for a
    regular install): with PYTHONDONTWRITEBYTECODE set, as on these machines, every process
    of a run would otherwise compile them anew, a fixed cost that is a larger part of a warm
    run than of a cold one."""
    root = Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", *PACKAGES], cwd=root,
                   check=True, stdout=subprocess.DEVNULL)


def run_demo(out: Path, cache: Path, n: int, count: int, workers: int,
             extra: list[str]) -> dict:
    """Run ``heuresis demo`` in a subprocess; wall, user and system seconds of its tree."""
    command = [sys.executable, "-m", "heuresis_env.cli", "demo", "--n", str(n),
               "--count", str(count), "--workers", str(workers), "--out", str(out), *extra]
    env = {**os.environ, "HEURESIS_CACHE_DIR": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()
    busy_before = machine_busy_seconds()
    started = time.perf_counter()
    completed = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    busy_after = machine_busy_seconds()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise SystemExit(f"heuresis demo failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
    (out / "demo.stdout").write_text(completed.stdout)
    (out / "demo.stderr").write_text(completed.stderr)
    return {"command": " ".join(command[1:]), "wall": wall,
            "user": after.ru_utime - before.ru_utime, "sys": after.ru_stime - before.ru_stime,
            "max_rss_mb": after.ru_maxrss / 1024, "load_before": load_before[0],
            "load_after": os.getloadavg()[0],
            "machine_busy": (None if busy_before is None or busy_after is None
                             else busy_after - busy_before)}


def machine_busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy (``/proc/stat``: all but idle and iowait),
    or None off Linux. The job's user + sys above count only processes its tree waited for;
    policy processes forked by the launcher end outside it, so on an otherwise idle machine
    this difference is the fuller figure."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def profile_runs(demo_out: Path) -> dict:
    """Per policy, tool and CI-test kind, from ``demo_out/runs/*`` (results and traces)."""
    policies: dict[str, dict] = {}
    tools: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for run in sorted((demo_out / "runs").iterdir()):
        results = run / "results.jsonl"
        if not results.is_file():
            continue
        records = [json.loads(line) for line in results.read_text().splitlines() if line]
        config_time = (run / "config.json").stat().st_mtime
        tool_seconds = 0.0
        for record in records:
            trace = run / record["trace"] if record.get("trace") else None
            if trace is None or not trace.is_file():
                continue
            for line in trace.read_text().splitlines():
                step = json.loads(line)
                if step.get("type") != "step" or not step.get("tool"):
                    continue
                name = step["tool"]
                args = step.get("args") or {}
                if name == "run_algorithm" and isinstance(args, dict):
                    name = f"run_algorithm: {args.get('name')}"
                elif name == "ci_test" and isinstance(args, dict):
                    name = f"ci_test: {args.get('method')}"
                seconds = float(step.get("duration") or 0.0)
                tools[name][0] += 1
                tools[name][1] += seconds
                tool_seconds += seconds
        episode_seconds = sum(float(r.get("wall_seconds") or 0.0) for r in records)
        policies[run.name] = {
            "episodes": len(records), "episode_seconds": episode_seconds,
            "tool_seconds": tool_seconds,
            "wall": max(results.stat().st_mtime - config_time, 0.0),
            "errors": sum(r.get("error") is not None for r in records)}
        tools["(policy and environment, outside tools)"][0] += len(records)
        tools["(policy and environment, outside tools)"][1] += episode_seconds - tool_seconds
    return {"policies": policies, "tools": {k: {"count": v[0], "seconds": v[1]}
                                            for k, v in tools.items()}}


def _fmt(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds:.1f}"


def tables(runs: dict[str, dict]) -> str:
    """Markdown tables comparing the runs (``{"cold": {...}, "warm": {...}}``)."""
    labels = list(runs)
    lines = ["| run | wall s | user s | sys s | machine busy s | load before/after |",
             "|---|---|---|---|---|---|"]
    for label in labels:
        r = runs[label].get("process", {})
        lines.append(f"| {label} | {_fmt(r.get('wall'))} | {_fmt(r.get('user'))} | "
                     f"{_fmt(r.get('sys'))} | {_fmt(r.get('machine_busy'))} | "
                     f"{r.get('load_before', 0):.1f} / {r.get('load_after', 0):.1f} |")
    if len(labels) == 2 and all("process" in runs[k] for k in labels):
        a, b = (runs[k]["process"]["wall"] for k in labels)
        lines.append(f"\n{labels[0]} / {labels[1]} wall: {a / b:.1f}×")
    names = sorted({p for k in labels for p in runs[k]["profile"]["policies"]},
                   key=lambda p: -runs[labels[0]]["profile"]["policies"].get(p, {}).get(
                       "episode_seconds", 0.0))
    lines += ["", "| policy | episodes | " + " | ".join(
        f"{k} wall s | {k} Σ episode s | {k} in tools s" for k in labels) + " |",
        "|---|---|" + "---|---|---|" * len(labels)]
    for name in names:
        cells = []
        for label in labels:
            p = runs[label]["profile"]["policies"].get(name)
            cells += ([_fmt(p["wall"]), _fmt(p["episode_seconds"]), _fmt(p["tool_seconds"])]
                      if p else ["–"] * 3)
        episodes = next(runs[k]["profile"]["policies"][name]["episodes"] for k in labels
                        if name in runs[k]["profile"]["policies"])
        lines.append(f"| {name} | {episodes} | " + " | ".join(cells) + " |")
    tool_names = sorted({t for k in labels for t in runs[k]["profile"]["tools"]},
                        key=lambda t: -runs[labels[0]]["profile"]["tools"].get(t, {}).get(
                            "seconds", 0.0))
    lines += ["", "| tool (CI test, algorithm) | calls | " + " | ".join(
        f"{k} s | {k} ms/call" for k in labels) + " |", "|---|---|" + "---|---|" * len(labels)]
    for name in tool_names:
        cells = []
        count = 0
        for label in labels:
            t = runs[label]["profile"]["tools"].get(name)
            count = max(count, t["count"] if t else 0)
            cells += ([_fmt(t["seconds"]), f"{1000 * t['seconds'] / max(t['count'], 1):.1f}"]
                      if t else ["–", "–"])
        lines.append(f"| {name} | {count} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def git_commit() -> str:
    """The checkout's commit (``-dirty`` when files differ from it), or ``unknown``."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")


def measurement(runs: dict[str, list[dict]], n: int, count: int, workers: int,
                extra: list[str], repeats: int = 1) -> dict:
    """One record: when, what, on which machine under which load, and every run's figures."""
    command = (f"python benchmarks/bench_main_job.py --n {n} --count {count} "
               f"--workers {workers}" + (f" --repeats {repeats}" if repeats > 1 else "")
               + (f" -- {' '.join(extra)}" if extra else ""))
    loads = [r[key] for label in runs for r in runs[label]
             for key in ("load_before", "load_after")]
    return {"date": time.strftime("%Y-%m-%d", time.gmtime()), "commit": git_commit(),
            "command": command, "n": n, "count": count, "workers": workers,
            "cpus": os.cpu_count(), "load": [min(loads), max(loads)],
            **{label: [{k: r[k] for k in ("wall", "user", "sys", "machine_busy",
                                          "load_before", "load_after")} for r in runs[label]]
               for label in runs}}


def append_record(record: dict, path: Path = RESULTS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def latest_record(path: Path = RESULTS, n: int = DEMO_SIZE["n"],
                  count: int = DEMO_SIZE["count"]) -> dict | None:
    """The last recorded measurement of this size with a cold and a warm run, or None."""
    if not path.is_file():
        return None
    found = None
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["n"] == n and record["count"] == count and record.get("cold") and \
                record.get("warm"):
            found = record
    return found


def _seconds_range(runs: list[dict]) -> str:
    low, high = (round(min(r["wall"] for r in runs)), round(max(r["wall"] for r in runs)))
    return f"{low}" if low == high else f"{low}–{high}"


def readme_figures(record: dict) -> str:
    """The README's sentence of the default demo's figures, from one record."""
    cpu = [round(r["user"] + r["sys"]) for r in record["cold"]]
    cpu_range = f"{min(cpu)}" if min(cpu) == max(cpu) else f"{min(cpu)}–{max(cpu)}"
    runs = len(record["cold"])
    # the job keeps its two workers busy (a load of about 2-3); above that, others were running
    others = ("; other jobs were running" if record["load"][1] > record["cpus"] + 1.5
              else "")
    return (f"Measured on {record['date']} at commit {record['commit']} "
            f"(`{record['command']} --record`, {runs} cold and {len(record['warm'])} warm "
            f"run{'s' if runs > 1 else ''}) on a shared {record['cpus']}-core machine under "
            f"load {record['load'][0]:.1f}–{record['load'][1]:.1f} (the 1-minute load "
            f"average before and after each run{others}), it took "
            f"{_seconds_range(record['cold'])} s with a cold cache ({cpu_range} s of CPU in "
            f"the job's process tree, its forked policy processes not counted) and "
            f"{_seconds_range(record['warm'])} s warm, served from the on-disk caches.")


def stated_figures(readme: str) -> dict[str, tuple[int, int]]:
    """The cold and warm ranges (seconds) the README states between its markers."""
    start, end = readme.find(README_BEGIN), readme.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"the README has no {README_BEGIN!r} … {README_END!r} block")
    text = " ".join(readme[start + len(README_BEGIN):end].split())
    found = {}
    for label, pattern in (("cold", r"(\d+)(?:–(\d+))? s with a cold cache"),
                           ("warm", r"(\d+)(?:–(\d+))? s warm")):
        match = re.search(pattern, text)
        if match is None:
            raise ValueError(f"the README's figures do not state the {label} time")
        low = int(match.group(1))
        found[label] = (low, int(match.group(2) or low))
    date = re.search(r"Measured on (\d{4}-\d{2}-\d{2})", text)
    found["date"] = date.group(1) if date else None  # type: ignore[assignment]
    return found


def runs_table(record: dict) -> str:
    """The reference page's table of one record: every run with its wall and CPU seconds and
    the machine's load before and after it (the text between ``DOCS_BEGIN`` and ``DOCS_END``)."""
    lines = [f"Measured on {record['date']} at commit {record['commit']} on a "
             f"{record['cpus']}-core machine: `{record['command']} --record` "
             f"(`heuresis demo --n {record['n']} --count {record['count']} "
             f"--workers {record['workers']}`, each cold run on an emptied cache, each warm "
             "run on the cache the cold run before it left).", "",
             "| run | wall s | user + sys s (the job's process tree) | machine busy s | "
             "load before → after |", "|---|---|---|---|---|"]
    rounds = max(len(record.get("cold", [])), len(record.get("warm", [])))
    # in the order they ran: --repeats alternates a cold run and a warm one
    for index, label in ((i, k) for i in range(rounds) for k in ("cold", "warm")):
        if index < len(record.get(label, [])):
            run = record[label][index]
            busy = run.get("machine_busy")
            lines.append(f"| {label} {index + 1} | {run['wall']:.1f} | "
                         f"{run['user'] + run['sys']:.1f} | "
                         f"{'–' if busy is None else f'{busy:.1f}'} | "
                         f"{run['load_before']:.1f} → {run['load_after']:.1f} |")
    return "\n" + "\n".join(lines) + "\n"


def replace_between(path: Path, begin: str, end: str, text: str) -> None:
    """Write ``text`` between the markers ``begin`` and ``end`` of the file at ``path``."""
    content = path.read_text(encoding="utf-8")
    start, stop = content.find(begin), content.find(end)
    if start < 0 or stop < start:
        raise SystemExit(f"{path} has no {begin!r} … {end!r} block")
    path.write_text(content[:start + len(begin)] + text + content[stop:], encoding="utf-8")


def update_readme(record: dict, path: Path = README, docs: Path = DOCS) -> None:
    """The README's sentence and the reference page's table, from one record."""
    replace_between(path, README_BEGIN, README_END, readme_figures(record))
    replace_between(docs, DOCS_BEGIN, DOCS_END, runs_table(record))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("runs/bench-main-job"))
    parser.add_argument("--cache", type=Path, default=None,
                        help="cache directory (default OUT/cache; emptied before the cold run)")
    parser.add_argument("--warm-only", action="store_true", help="keep the cache; one run")
    parser.add_argument("--runs", nargs="+", type=Path, default=None,
                        help="only tabulate these demo output directories")
    parser.add_argument("--repeats", type=int, default=1,
                        help="cold and warm runs each (alternating; default 1)")
    parser.add_argument("--record", action="store_true",
                        help=f"append the measurement to {RESULTS.relative_to(ROOT)}")
    parser.add_argument("--update-readme", action="store_true",
                        help="rewrite the README's figures and docs/performance.md's table from "
                             "the latest record of the default demo's size")
    parser.add_argument("demo_args", nargs=argparse.REMAINDER,
                        help="after --: passed to heuresis demo")
    args = parser.parse_args()
    extra = [a for a in args.demo_args if a != "--"]
    runs: dict[str, dict] = {}
    if args.runs:
        for path in args.runs:
            saved = path / "profile.json"
            runs[path.name] = (json.loads(saved.read_text()) if saved.is_file()
                               else {"profile": profile_runs(path)})
    elif args.runs is None and not (args.update_readme and not args.record):
        byte_compile()
        cache = args.cache or args.out / "cache"
        processes: dict[str, list[dict]] = {"cold": [], "warm": []}
        for repeat in range(args.repeats):
            if not args.warm_only and cache.exists():
                shutil.rmtree(cache)
            for label in (["warm"] if args.warm_only else ["cold", "warm"]):
                out = args.out / label
                if out.exists():
                    shutil.rmtree(out)
                out.mkdir(parents=True)
                print(f"[{label} {repeat + 1}/{args.repeats}] heuresis demo --n {args.n} "
                      f"--count {args.count} --workers {args.workers} (cache {cache}) …",
                      file=sys.stderr, flush=True)
                process = run_demo(out, cache, args.n, args.count, args.workers, extra)
                processes[label].append(process)
                runs[label] = {"process": process, "profile": profile_runs(out)}
                (out / "profile.json").write_text(json.dumps(runs[label], indent=1))
                print(f"[{label}] {process['wall']:.0f} s wall, user {process['user']:.0f} s, "
                      f"sys {process['sys']:.0f} s, load {process['load_before']:.1f} → "
                      f"{process['load_after']:.1f}", file=sys.stderr, flush=True)
        if args.record:
            record = measurement({k: v for k, v in processes.items() if v}, args.n,
                                 args.count, args.workers, extra, args.repeats)
            append_record(record)
            print(f"recorded in {RESULTS}", file=sys.stderr)
    if runs:
        print(f"machine: {os.cpu_count()} CPUs; n = {args.n}, count = {args.count}, "
              f"workers = {args.workers}")
        print(tables(runs))
    if args.update_readme:
        latest = latest_record()
        if latest is None:
            raise SystemExit(f"no recorded measurement of the default demo's size "
                             f"({DEMO_SIZE}) in {RESULTS}: run with --n 200 --count 6 --record")
        update_readme(latest)
        print(f"README: {readme_figures(latest)}", file=sys.stderr)


if __name__ == "__main__":
    main()
