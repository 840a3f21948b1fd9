"""``heuresis export-inspect``: a run directory as an inspect eval log, for ``inspect view``."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("write a run directory (any policy) as an inspect eval log that 'inspect view' opens")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                        help="a run directory written by heuresis evaluate")
    parser.add_argument("--out", required=True, type=Path, metavar="LOG",
                        help="the log to write: a name ending in .eval (inspect's binary "
                             "format) or .json")


def run(args: argparse.Namespace) -> int:
    from agents.inspect_task import require_inspect

    require_inspect()
    from agents.inspect_task.logs import export_run

    path = export_run(args.run_dir, args.out)
    print(f"{path}: open it with inspect view --log-dir {path.parent}")
    return 0
