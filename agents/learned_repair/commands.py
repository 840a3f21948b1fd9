"""The commands of ``heuresis learned-repair`` (and ``python -m agents.learned_repair``), one
function each: :func:`train_command` fits the classifier on development instances and writes
it with its cross-validated report; :func:`evaluate_command` scores a model on a split. The
arguments are :mod:`agents.learned_repair.cli`'s."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agents.learned_repair.classifier import load_classifier
from agents.learned_repair.evaluation import (
    BCA_FILE,
    bca_choices,
    compare_with_rl,
    comparison_table,
    evaluate_split,
    evaluation_table,
)
from agents.learned_repair.training import train_classifier
from heuresis_env.errors import HeuresisError
from heuresis_env.generation import expand_families, sealing_salt


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def evaluate_command(args: argparse.Namespace) -> int:
    """Score the model at ``--model`` (default: the shipped one) on the first ``--count``
    instances of ``--evaluate SPLIT`` beside PC-KCI and BCA_φ, and beside each
    ``--compare-rl`` report's RL policy."""
    families = expand_families(args.families)
    salt = sealing_salt(args.evaluate)  # checked; None unless test is sealed
    bca = bca_choices(BCA_FILE) if BCA_FILE.is_file() else None
    result = evaluate_split(load_classifier(args.model), families, args.evaluate,
                            args.count, salt, bca,
                            progress=_say, d=args.d, n=args.n)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(evaluation_table(result))
    for path in args.compare_rl:
        rl_report = json.loads(Path(path).read_text(encoding="utf-8"))
        print(f"\nRL policy of {path} ({rl_report['family']}):")
        print(comparison_table(compare_with_rl(result, rl_report)))
    return 0


def train_command(args: argparse.Namespace) -> int:
    """Fit the classifier on the first ``--dev-count`` development instances of each family,
    write it to ``--out`` and print its grouped cross-validated figures."""
    families = expand_families(args.families)
    if not args.out:
        raise HeuresisError("--out is needed to train (or give --evaluate SPLIT)")
    report = train_classifier(families, args.dev_count, args.classifier, args.out, args.seed,
                              progress=_say, d=args.d, n=args.n,
                              family_features=args.family_features)
    for name, summary in report["cross_validated"].items():
        gain = summary["gain"]
        print(f"{name}: F1 {summary['f1_start']:.3f} -> {summary['f1_repaired']:.3f} "
              f"({gain[0]:+.3f} [{gain[1]:+.3f}, {gain[2]:+.3f}]); restored {summary['restored']}"
              f" (precision {summary['restore_precision']:.2f}), removed {summary['removed']} "
              f"(precision {summary['remove_precision']:.2f})")
    return 0
