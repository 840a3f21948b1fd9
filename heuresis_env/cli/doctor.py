"""``heuresis doctor``: what isolation the code tool's sandbox gets on this machine."""

from __future__ import annotations

import argparse

from heuresis_env.env.sandbox import detect_isolation, doctor_report

HELP = "report the code sandbox's isolation on this machine (and Python/package versions)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-self-test", action="store_true",
        help="only detect what the machine provides; do not run a probe inside a sandbox",
    )
    parser.add_argument(
        "--json", action="store_true",
        help="print the detection as JSON (machine-readable) instead of the report",
    )


def run(args: argparse.Namespace) -> int:
    import json

    if args.json:
        print(json.dumps(detect_isolation(), indent=2, sort_keys=True))
    else:
        print(doctor_report(run_self_test=not args.no_self_test))
    return 0 if detect_isolation()["levels"]["namespaces"] == [] else 1
