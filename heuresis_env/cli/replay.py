"""``heuresis replay TRACE``: re-run an episode trace and check it reaches the same graph and
scores."""

from __future__ import annotations

import argparse
import os

from heuresis_env.env import replay_trace

HELP = "re-run episode traces on fresh environments and check graph and scores"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", nargs="+", metavar="TRACE",
                        help="trace files (JSON lines) written with trace_path=...")
    parser.add_argument("--salt-env", default="HEURESIS_TEST_SALT", metavar="VAR",
                        help="environment variable holding the salt of a sealed test split")


def run(args: argparse.Namespace) -> int:

    salt = os.environ.get(args.salt_env) or None
    failures = 0
    for path in args.traces:
        report = replay_trace(path, salt=salt)
        print(report.summary())
        failures += not report.ok
    if len(args.traces) > 1:
        print(f"{len(args.traces) - failures} of {len(args.traces)} traces replayed identically")
    return 1 if failures else 0
