"""Whether a change leaves the main job's results as they were: ``heuresis demo`` run with two
code trees, every run's ``results.jsonl`` compared episode by episode.

    python scripts/demo_results_diff.py --before /path/to/old/checkout --out /tmp/demo-diff
    python scripts/demo_results_diff.py --compare OLD_DEMO_DIR NEW_DEMO_DIR

The first form runs ``heuresis demo`` (fixed seeds: every episode's seed comes from its id)
twice into ``OUT/before`` and ``OUT/after`` — once with ``PYTHONPATH`` set to the old tree
(an exported commit of the repository: ``git archive COMMIT | tar -x -C DIR``), once with
this checkout — then compares them; the second compares two demo folders already written.
Episodes are matched by ``episode_id`` (workers finish them in any order) and compared field
by field, leaving out only what records time and place: :data:`VOLATILE` (seconds, the
worker, the config's digest — the config records the code version and its creation time —
and the trace and transcript file names). Exit status 0: identical; 1: the differences are
listed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: result fields that record when, where and how long, not what
VOLATILE = frozenset({"wall_seconds", "seconds", "worker", "config_digest", "trace",
                      "transcript", "started", "finished", "policy_seconds", "env_seconds",
                      "seal"})


def _records(path: Path) -> dict[str, dict[str, Any]]:
    records = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            records[record["episode_id"]] = record
    return records


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in sorted(value.items()) if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def compare(before: Path, after: Path) -> list[str]:
    """The differences between two demo folders' results (empty: identical)."""
    problems: list[str] = []
    runs_before = sorted(p.parent.name for p in (before / "runs").glob("*/results.jsonl"))
    runs_after = sorted(p.parent.name for p in (after / "runs").glob("*/results.jsonl"))
    if runs_before != runs_after:
        problems.append(f"runs differ: {runs_before} before, {runs_after} after")
    if not runs_before:
        problems.append(f"no results under {before / 'runs'}")
    for run in sorted(set(runs_before) & set(runs_after)):
        old = _records(before / "runs" / run / "results.jsonl")
        new = _records(after / "runs" / run / "results.jsonl")
        if set(old) != set(new):
            problems.append(f"{run}: episodes differ ({sorted(set(old) ^ set(new))[:5]}…)")
        for episode in sorted(set(old) & set(new)):
            a, b = _strip(old[episode]), _strip(new[episode])
            if a != b:
                fields = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                problems.append(f"{run}/{episode}: {', '.join(fields)} differ: "
                                + "; ".join(f"{k}: {a.get(k)!r} → {b.get(k)!r}"
                                            for k in fields)[:400])
    return problems


def run_demo(tree: Path | None, out: Path, demo_arguments: list[str]) -> None:
    """``heuresis demo`` with the code of ``tree`` (None: this checkout) into ``out``."""
    environment = dict(os.environ)
    if tree is not None:
        environment["PYTHONPATH"] = os.pathsep.join(
            [str(tree), *filter(None, [environment.get("PYTHONPATH")])])
    command = [sys.executable, "-m", "heuresis_env.cli", "demo", "--out", str(out),
               *demo_arguments]
    print(f"$ {'PYTHONPATH=' + str(tree) + ' ' if tree else ''}{' '.join(command)}",
          file=sys.stderr)
    subprocess.run(command, cwd=tree or ROOT, env=environment, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="the old code tree (an exported commit)")
    parser.add_argument("--out", type=Path, default=Path("runs/demo-diff"))
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                        help="compare two demo folders already written")
    parser.add_argument("demo_arguments", nargs=argparse.REMAINDER,
                        help="arguments for `heuresis demo` after --, e.g. -- --count 2")
    args = parser.parse_args(argv)
    extra = [a for a in args.demo_arguments if a != "--"] or ["--no-llm"]
    if args.compare:
        before, after = args.compare
    else:
        if args.before is None:
            parser.error("give --before OLD_TREE, or --compare BEFORE AFTER")
        before, after = args.out / "before", args.out / "after"
        run_demo(args.before.resolve(), before.resolve(), extra)
        run_demo(None, after.resolve(), extra)
    problems = compare(before, after)
    for problem in problems:
        print(problem)
    runs = len(list((before / "runs").glob("*/results.jsonl")))
    episodes = sum(len(_records(p)) for p in (before / "runs").glob("*/results.jsonl"))
    print(f"{'identical' if not problems else f'{len(problems)} differences'}: {runs} runs, "
          f"{episodes} episodes compared ({before} vs {after})")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
