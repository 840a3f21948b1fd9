"""``heuresis import-inspect``: an inspect eval log of a Heuresis task as a run directory, so
that ``heuresis report`` and ``heuresis view`` show it beside the other policies."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("turn the log of 'inspect eval heuresis/causal_discovery' (or heuresis/qa) into a run "
        "directory that heuresis report and heuresis view read, every episode scored again "
        "on the referee's side")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("log", type=Path, metavar="LOG",
                        help="an inspect eval log (.eval or .json) of a Heuresis task")
    parser.add_argument("--out", required=True, type=Path, metavar="RUN_DIR",
                        help="the run directory to write (importing again resumes it)")
    parser.add_argument("--force", action="store_true",
                        help="accept a config that differs from the directory's (as "
                             "heuresis evaluate --force)")


def run(args: argparse.Namespace) -> int:
    from agents.inspect_task import require_inspect

    require_inspect()
    from agents.inspect_task.logs import import_inspect_log

    summary = import_inspect_log(args.log, args.out, force=args.force)
    print(summary.to_text())
    return 0
