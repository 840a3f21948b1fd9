"""The command of ``heuresis train`` (and ``python -m agents.rl``): :func:`train_command`.
Its arguments are :mod:`agents.rl.cli`'s."""

from __future__ import annotations

import argparse
import json
import sys

from agents.rl.training import train


def train_command(args: argparse.Namespace) -> int:
    """Train, evaluate and save a policy (:func:`agents.rl.train`); print its report."""

    def say(message: str) -> None:
        print(f"[heuresis train] {message}", file=sys.stderr, flush=True)

    report = train(family=args.family, algo=args.algo, steps=args.steps, out_dir=args.out,
                   seed=args.seed, n_envs=args.n_envs, dev_count=args.dev_count,
                   test_count=args.test_count, d=args.d, n=args.n, max_steps=args.max_steps,
                   target=args.target, architecture=args.architecture,
                   step_cost=args.step_cost, workers=args.workers,
                   vectorization=args.vectorization, n_resamples=args.resamples,
                   warm_start_edits=args.warm_start, progress=say)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.summary())
        print("policy actions per episode: " + ", ".join(
            f"{k} {v:.1f}" for k, v in report.policy_actions.items()))
        warm = report.warm_start
        if warm["used"]:
            diff = warm["f1_difference"]
            print(f"warm start alone ({warm['steps']} probe steps, {warm['seconds']:.0f} s): "
                  f"difference {diff['mean']:+.3f} [{diff['low']:+.3f}, {diff['high']:+.3f}]")
        print(f"evidence {report.evidence_seconds:.0f} s, training "
              f"{report.training_seconds:.0f} s, evaluation {report.evaluation_seconds:.0f} s")
        for name, row in report.per_family.items():
            diff = row["f1_difference"]
            print(f"  {name}: difference {diff['mean']:+.3f} [{diff['low']:+.3f}, "
                  f"{diff['high']:+.3f}]")
        for name, path in report.files.items():
            print(f"{name}: {path}")
    return 0
