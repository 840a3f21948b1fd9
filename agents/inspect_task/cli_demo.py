"""``heuresis inspect-demo``: Heuresis's inspect task on two instances against the loopback
chat server (no key, no network), then ``inspect view`` on the log."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("run 'inspect eval heuresis/causal_discovery' on two instances against a loopback "
        "chat server playing a deterministic stand-in model (no key), then open inspect view")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", default="wild", help="the family (default wild)")
    parser.add_argument("--split", default="dev", choices=["dev", "test"],
                        help="the split (default dev)")
    parser.add_argument("--count", type=int, default=2,
                        help="instances to play (default 2)")
    parser.add_argument("--max-steps", type=int, default=30,
                        help="step budget per episode (default 30)")
    parser.add_argument("--log-dir", type=Path, default=Path("logs/inspect-demo"),
                        help="where inspect writes the log (default logs/inspect-demo)")
    parser.add_argument("--no-bca", action="store_true",
                        help="skip the residual gain over BCA_φ (saves running BCA_φ)")
    parser.add_argument("--no-view", action="store_true",
                        help="write the log and stop, without starting inspect view")
    parser.add_argument("--port", type=int, default=7575,
                        help="inspect view's port on 127.0.0.1 (default 7575)")


def run(args: argparse.Namespace) -> int:
    from agents.inspect_task import require_inspect

    require_inspect()
    from agents.inspect_task.demo import loopback_eval, view_logs

    log = loopback_eval(args.log_dir, family=args.family, split=args.split, count=args.count,
                        max_steps=args.max_steps, bca=not args.no_bca)
    print(f"log: {log.location}")
    if args.no_view:
        return 0
    return view_logs(args.log_dir, port=args.port)
