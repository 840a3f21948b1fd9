"""``heuresis train-int``: collect the train-split records and train the ``rl-int`` network
on the experiment simulator (:func:`agents.experiments.rl.train`); rerunning the same
command reuses every record already collected (``--work``), so an interrupted run resumes.

Like :mod:`agents.rl.cli`, it imports the RL stack only in :func:`run`.
"""

from __future__ import annotations

import argparse
import json

HELP = ("Train the rl-int policy (MaskablePPO choosing experiments' targets and when to stop) "
        "on a simulator of train-split instances")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", default="wild",
                        help="families to train on, joined by commas (default wild)")
    parser.add_argument("--count", type=int, default=24,
                        help="train-split instances per family (default 24)")
    parser.add_argument("--held-out", type=int, default=16,
                        help="further train-split instances to compare the policies on")
    parser.add_argument("--steps", type=int, default=60_000,
                        help="PPO steps on the simulator (default 60000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-permute", action="store_true",
                        help="train on the variables in their own order (default: a random "
                             "order each episode)")
    parser.add_argument("--out", required=True,
                        help="model directory (model.npz, model.json, policy.json, report.json)")
    parser.add_argument("--work", required=True,
                        help="folder of the collected records (kept: a rerun resumes)")


def run(args: argparse.Namespace) -> int:
    from agents.experiments.rl import TrainingConfig, train  # torch loads here

    config = TrainingConfig(families=tuple(f.strip() for f in args.family.split(",")
                                           if f.strip()),
                            count=args.count, steps=args.steps, seed=args.seed,
                            permute=not args.no_permute)
    report = train(config, args.out, args.work, dev_count=args.held_out)
    print(json.dumps({k: v for k, v in report.items() if k != "config"}, indent=2))
    return 0
