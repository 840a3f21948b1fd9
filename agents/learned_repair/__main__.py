"""``python -m agents.learned_repair``: train the classifier (``--out DIR``) or evaluate a
model on a split (``--evaluate SPLIT``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from agents.learned_repair.classifier import CLASSIFIERS, load_classifier
from agents.learned_repair.evaluation import (
    BCA_FILE,
    bca_choices,
    compare_with_rl,
    comparison_table,
    evaluate_split,
    evaluation_table,
)
from agents.learned_repair.training import train_classifier
from heuresis_env.generation import expand_families, sealing_salt


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train or evaluate the learned-repair "
                                                 "classifier.")
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
    args = parser.parse_args(argv)
    families = expand_families(args.families)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.evaluate:
        salt = sealing_salt(args.evaluate)  # checked; None unless test is sealed
        bca = bca_choices(BCA_FILE) if BCA_FILE.is_file() else None
        result = evaluate_split(load_classifier(args.model), families, args.evaluate,
                                args.count, salt, bca,
                                progress=say, d=args.d, n=args.n)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
        print(evaluation_table(result))
        for path in args.compare_rl:
            rl_report = json.loads(Path(path).read_text(encoding="utf-8"))
            print(f"\nRL policy of {path} ({rl_report['family']}):")
            print(comparison_table(compare_with_rl(result, rl_report)))
        return 0
    if not args.out:
        parser.error("--out is needed to train (or give --evaluate SPLIT)")
    report = train_classifier(families, args.dev_count, args.classifier, args.out, args.seed,
                              progress=say, d=args.d, n=args.n,
                              family_features=args.family_features)
    for name, summary in report["cross_validated"].items():
        gain = summary["gain"]
        print(f"{name}: F1 {summary['f1_start']:.3f} -> {summary['f1_repaired']:.3f} "
              f"({gain[0]:+.3f} [{gain[1]:+.3f}, {gain[2]:+.3f}]); restored {summary['restored']}"
              f" (precision {summary['restore_precision']:.2f}), removed {summary['removed']} "
              f"(precision {summary['remove_precision']:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
