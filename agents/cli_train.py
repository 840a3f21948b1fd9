"""``heuresis train``: train a repair policy on the RL view of a family's development
instances (guided: starting from PC-KCI's output), evaluate it against the guided start on
test instances, and save the model, its report and a learning curve (:func:`agents.rl.train`).

This module lives outside :mod:`agents.rl` and imports it only in :func:`run`: the ``heuresis``
command imports every subcommand module to build its parser, and importing ``agents.rl``
loads torch and stable-baselines3 (2.7 times the CPU time of ``heuresis --help``, and
106 → 292 MiB). That ``import`` in :func:`run` is the one import inside a function in
``agents`` that names a project module: it is the door to the optional RL stack.
"""

from __future__ import annotations

import argparse
import json
import sys

HELP = "Train an RL repair policy (MaskablePPO or PPO) and evaluate it against the guided start."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", default="wild",
                        help="mechanism family, or 'all' for one policy over the six "
                             "benchmark families (default: wild)")
    parser.add_argument("--algo", default="maskable_ppo", choices=["maskable_ppo", "ppo"],
                        help="maskable_ppo (sb3-contrib, invalid actions masked) or ppo "
                             "(flattened observation; invalid actions are error steps)")
    parser.add_argument("--steps", type=int, default=20_000,
                        help="PPO environment steps (after the warm start; default 20000)")
    parser.add_argument("--out", required=True, help="output directory (model.npz, model.json, "
                                                     "policy.json, report.json, learning_curve.png)")
    parser.add_argument("--dev-count", type=int, default=100,
                        help="development instances to train on (the first N; default 100)")
    parser.add_argument("--test-count", type=int, default=32,
                        help="test instances to evaluate on (the first N; default 32)")
    parser.add_argument("--seed", type=int, default=0, help="training and bootstrap seed")
    parser.add_argument("--n-envs", type=int, default=2, help="parallel training environments")
    parser.add_argument("--d", type=int, default=10, help="variables per instance")
    parser.add_argument("--n", type=int, default=600, help="rows per instance")
    parser.add_argument("--max-steps", type=int, default=50, help="step budget per episode")
    parser.add_argument("--target", default="none", choices=["none", "cpdag", "dag"],
                        help="stated target (sets the cycle rule of orientations)")
    parser.add_argument("--architecture", default="pairwise", choices=["pairwise", "mlp"],
                        help="pairwise: one encoder shared by all pairs; mlp: SB3's default")
    parser.add_argument("--warm-start", action=argparse.BooleanOptionalAction, default=None,
                        help="first fit the policy to the reward of every single edit from the "
                             "dev instances' start states (default: on for pairwise)")
    parser.add_argument("--step-cost", type=float, default=0.0,
                        help="reward charged per step during training (default 0)")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes computing the instances' evidence before training "
                             "(default: one per available CPU)")
    parser.add_argument("--vectorization", default="dummy", choices=["dummy", "subproc"],
                        help="how the n-envs training environments run")
    parser.add_argument("--resamples", type=int, default=10_000,
                        help="paired bootstrap resamples of the test comparison")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")


def run(args: argparse.Namespace) -> int:
    from agents.rl import train  # the RL stack (torch, stable-baselines3) loads here

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
