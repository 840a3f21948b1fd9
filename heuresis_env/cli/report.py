"""``heuresis report``: the paper's tables and figures from run directories."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from heuresis_env.errors import HeuresisError
from heuresis_env.reports import build_report
from heuresis_env.studies.deletion_signals import parse_signal_request

HELP = ("write the report (Markdown, one self-contained HTML page, PNG figures) of run "
        "directories written by 'heuresis evaluate', and print the headline table")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                        help="run directories (one policy each; reference policies bca, oracle "
                             "and pc-kci give BCA_φ, the oracle and the headrooms)")
    parser.add_argument("--out", required=True, metavar="REPORT_DIR",
                        help="where to write report.md, report.html, tables.json and figures/")
    parser.add_argument("--allow-mixed", action="store_true",
                        help="put runs with different budgets in one table (refused otherwise; "
                             "the message names the differing fields)")
    parser.add_argument("--deletion-signals", action="append", default=[],
                        metavar="FAMILY[/SPLIT]:COUNT",
                        help="Appendix F: AUC of signals for wrong vs right PC-KCI deletions "
                             "on the first COUNT instances of FAMILY (or 'all'; split dev "
                             "unless given); repeatable")
    parser.add_argument("--bootstrap", type=int, default=10_000, metavar="N",
                        help="bootstrap resamples per interval (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every bootstrap (default 0)")
    parser.add_argument("--no-traces", action="store_true",
                        help="skip Table 4 (re-running the algorithms the traces called)")
    parser.add_argument("--viewer", metavar="VIEWER_DIR", default=None,
                        help="a trace viewer site ('heuresis view --out VIEWER_DIR') of the same "
                             "runs: the tables' cells then link to its episodes")
    parser.add_argument("--probe", action="append", default=[], metavar="PROBE_DIR",
                        help="add the name-only probe's table from a directory written by "
                             "'heuresis probe --out'; repeatable")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")


def run(args: argparse.Namespace) -> int:
    import sys

    if args.bootstrap < 1:
        raise HeuresisError(f"--bootstrap must be a positive integer, got {args.bootstrap}")
    if args.seed < 0:
        raise HeuresisError(f"--seed must be a non-negative integer, got {args.seed}")
    for request in args.deletion_signals:
        parse_signal_request(request)  # fail before any work on a malformed request
    viewer = None
    if args.viewer is not None:
        index = Path(args.viewer)
        index = index if index.suffix == ".html" else index / "index.html"
        viewer = Path(os.path.relpath(index.resolve(), Path(args.out).resolve())).as_posix()
    summary = build_report(args.run_dirs, args.out, allow_mixed=args.allow_mixed,
                           deletion_signals=args.deletion_signals, n_resamples=args.bootstrap,
                           seed=args.seed, trace_analysis=not args.no_traces,
                           progress=not args.no_progress and sys.stderr.isatty(),
                           viewer=viewer, probe_dirs=args.probe)
    for warning in summary.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(summary.headline)
    if summary.headline_note:
        print(summary.headline_note)
    print()
    print(f"Report: {summary.markdown_path} and {summary.html_path} "
          f"({len(summary.figure_paths)} figures in {summary.out_dir / 'figures'}; "
          f"{summary.seconds:.1f} s)")
    return 0
