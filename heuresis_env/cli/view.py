"""``heuresis view RUN_DIR... --out DIR [--serve]``: the trace viewer of run directories."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heuresis_env.errors import HeuresisError
from heuresis_env.viewer import build_site
from heuresis_env.viewer.serve import serve_site

HELP = ("write the trace viewer (a static site: the episodes of run directories, each step's "
        "working graph, its evidence, and the true graph after the episode)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="run directories written by 'heuresis evaluate' (a run of the bca "
                             "policy among them gives each episode its Δ against BCA_φ)")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR",
                        help="where to write the site (DIR/index.html)")
    parser.add_argument("--serve", action="store_true",
                        help="then serve the site on 127.0.0.1 until interrupted")
    parser.add_argument("--port", type=int, default=8000,
                        help="port for --serve (default 8000; 0 picks a free one)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="write the episode pages in N processes (default 1)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise HeuresisError(f"--port must be in 0..65535, got {args.port}")
    summary = build_site(args.run_dirs, args.out, workers=args.workers,
                         progress=not args.no_progress and sys.stderr.isatty())
    for warning in summary.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"Viewer: {summary.index_path} ({summary.n_runs} runs, {summary.n_episodes} episodes, "
          f"{summary.n_traces} with traces, {summary.n_truths} with the true graph; index "
          f"{summary.index_bytes / 1024:.0f} KiB; {summary.seconds:.1f} s)")
    if args.serve:
        serve_site(summary.out_dir, port=args.port)
    return 0
