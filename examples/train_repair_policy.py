"""Train a repair policy on the RL view, evaluate it against the guided start, reload it and run
it as an ordinary policy.

Tiny by default (d = 5, 8 development and 8 test instances, 4,000 steps: a minute or two
including the instances' evidence); ``--full`` uses the benchmark's size (d = 10, n = 600,
100 development and 32 test instances; the first run computes every instance's evidence, about
5–35 s each, then the cache serves it).

    python examples/train_repair_policy.py [--full] [--algo ppo] [--out runs/rl-example]
"""

from __future__ import annotations

import argparse

from agents.rl import evaluate_policy, load, train
from heuresis_env.policy import EpisodeSettings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="d = 10, n = 600, 100/32 instances")
    parser.add_argument("--algo", default="maskable_ppo", choices=["maskable_ppo", "ppo"])
    parser.add_argument("--out", default="runs/rl-example")
    parser.add_argument("--workers", type=int, default=1, help="processes for the evidence")
    args = parser.parse_args()
    size = ({"d": 10, "n": 600, "dev_count": 100, "test_count": 32, "steps": 20_000}
            if args.full else {"d": 5, "n": 200, "dev_count": 8, "test_count": 8,
                               "steps": 4_000})

    report = train("wild", args.algo, out_dir=args.out, seed=0, workers=args.workers,
                   progress=lambda message: print("...", message), **size)
    print(report.summary())
    print("learning curve:", report.files["learning_curve"])

    # a trained policy is a policy like any other: load it and run it on other instances
    policy = load(args.out)
    settings = EpisodeSettings(max_steps=50, max_seconds=None, guided=True)
    results = evaluate_policy(policy, "wild", "dev", range(3), settings, size["d"], size["n"])
    for index, result in enumerate(results):
        print(f"dev instance {index}: F1 {result.scores['f1']:.3f} after {result.steps} steps "
              f"({result.termination_reason}); actions {result.usage['actions']}")


if __name__ == "__main__":
    main()
