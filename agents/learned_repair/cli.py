"""``heuresis learned-repair`` (also ``python -m agents.learned_repair``): the learned-repair
classifier's front door — train it (``--out DIR``) or evaluate a model on a split
(``--evaluate SPLIT``). One function per command in :mod:`agents.learned_repair.commands`,
imported in :func:`run`."""

from __future__ import annotations

import argparse

from agents.learned_repair import CLASSIFIERS

HELP = ("Train the learned-repair classifier (--out DIR) or evaluate a model on a split "
        "(--evaluate SPLIT; docs/rl.md).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--families", default="all")
    parser.add_argument("--dev-count", type=int, default=20)
    parser.add_argument("--classifier", default="boosting", choices=CLASSIFIERS)
    parser.add_argument("--family-features", action="store_true",
                        help="also give the classifier the family (one-hot)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--out", help="train: write the model here")
    parser.add_argument("--evaluate", metavar="SPLIT",
                        help="evaluate the model at --model (default: the shipped one) on the "
                             "first --count instances of SPLIT ($HEURESIS_TEST_SALT seals test)")
    parser.add_argument("--model", help="the model directory to evaluate")
    parser.add_argument("--count", type=int, default=32)
    parser.add_argument("--json", help="evaluate: write the full result here")
    parser.add_argument("--compare-rl", metavar="REPORT", action="append", default=[],
                        help="evaluate: also compare the RL policy of this `heuresis train` "
                             "report.json, paired by instance (repeatable)")


def run(args: argparse.Namespace) -> int:
    from agents.learned_repair.commands import evaluate_command, train_command

    return evaluate_command(args) if args.evaluate else train_command(args)
