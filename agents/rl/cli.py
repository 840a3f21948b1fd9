"""``heuresis train`` (also ``python -m agents.rl``): train a repair policy on the RL view of
a family's development instances (guided: starting from PC-KCI's output), evaluate it against
the guided start on test instances, and save the model, its report and a learning curve
(:func:`agents.rl.train`). The command is :func:`agents.rl.commands.train_command`, imported
in :func:`run`: the ``heuresis`` command imports every subcommand module to build its parser,
and the RL stack loads torch and stable-baselines3 (2.7 times the CPU time of
``heuresis --help``, and 106 → 292 MiB).
"""

from __future__ import annotations

import argparse

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
    from agents.rl.commands import train_command  # torch and stable-baselines3 load here

    return train_command(args)
