"""What RL repair policies reach on a family's test instances as the training budget grows.

For each step budget (and each variant asked for) this trains a policy on the development
instances of the family with ``agents.rl.train`` (guided: starting from PC-KCI's output) and
prints, on the held-out test instances, the mean adjacency F1 of the policy and of the guided
seed, their paired difference with its 95% bootstrap interval, the edits the policy made per
episode, and the PPO training time (wall and CPU seconds of the training process, since a
loaded machine stretches wall time). For the warm-started variant a first row gives the policy
after the warm start alone (its probe steps and seconds). The instances' evidence is computed
once before the first run (its time is printed separately; the disk cache serves later runs).

Usage::

    python benchmarks/bench_rl.py [--family wild] [--d 10] [--n 600] [--dev-count 100]
        [--test-count 32] [--steps 20000,100000,300000] [--variants pairwise,mlp]
        [--algo maskable_ppo] [--workers 2] [--out runs/bench-rl] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="wild")
    parser.add_argument("--algo", default="maskable_ppo", choices=["maskable_ppo", "ppo"])
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--dev-count", type=int, default=100)
    parser.add_argument("--test-count", type=int, default=32)
    parser.add_argument("--steps", default="20000,100000,300000",
                        help="comma-separated training budgets (environment steps)")
    parser.add_argument("--variants", default="pairwise",
                        help="comma-separated: pairwise (warm start, then PPO), "
                             "pairwise-scratch (PPO from a random policy), mlp (SB3's MLP, "
                             "from scratch)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-envs", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="processes for the evidence")
    parser.add_argument("--out", default="runs/bench-rl")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args()

    from agents.rl import train, warm_evidence

    budgets = [int(s) for s in args.steps.split(",") if s.strip()]
    variants = [a.strip() for a in args.variants.split(",") if a.strip()]
    known = {"pairwise": ("pairwise", True), "pairwise-scratch": ("pairwise", False),
             "mlp": ("mlp", False)}
    unknown = [v for v in variants if v not in known]
    if unknown:
        parser.error(f"unknown variant(s) {unknown}; choose from {sorted(known)}")
    started = time.perf_counter()
    warm_evidence(args.family, {"dev": range(args.dev_count), "test": range(args.test_count)},
                  args.d, args.n, workers=args.workers)
    print(f"evidence for {args.dev_count} dev + {args.test_count} test instances of "
          f"{args.family} (d={args.d}, n={args.n}): {time.perf_counter() - started:.0f} s")
    header = (f"{'variant':<17}{'steps':>8}{'wall s':>8}{'cpu s':>8}{'F1 policy':>11}"
              f"{'F1 seed':>9}{'difference [95% paired]':>28}{'adds':>6}{'removes':>8}"
              f"{'tests':>6}")
    print(header)
    rows = []
    for variant in variants:
        architecture, warm = known[variant]
        for steps in budgets:
            report = train(args.family, args.algo, steps=steps,
                           out_dir=f"{args.out}/{variant}-{steps}", seed=args.seed,
                           n_envs=args.n_envs, dev_count=args.dev_count,
                           test_count=args.test_count, d=args.d, n=args.n,
                           architecture=architecture, warm_start_edits=warm)
            if warm and steps == budgets[0]:
                alone, means = report.warm_start["f1_difference"], report.warm_start["test_means"]
                print(f"{'  warm start only':<17}{0:>8}{report.warm_start['seconds']:>8.0f}"
                      f"{'':>8}{means['f1']:>11.3f}{report.start_mean_f1:>9.3f}"
                      f"{alone['mean']:>+10.3f} [{alone['low']:+.3f}, {alone['high']:+.3f}]"
                      f"   ({report.warm_start['steps']} probe steps)", flush=True)
            cpu = report.training_cpu_seconds
            diff = report.f1_difference
            actions = report.policy_actions
            print(f"{variant:<17}{steps:>8}{report.training_seconds:>8.0f}{cpu:>8.0f}"
                  f"{report.policy_mean_f1:>11.3f}{report.start_mean_f1:>9.3f}"
                  f"{diff['mean']:>+10.3f} [{diff['low']:+.3f}, {diff['high']:+.3f}]"
                  f"{actions['add']:>6.2f}{actions['remove']:>8.2f}{actions['test']:>6.1f}",
                  flush=True)
            rows.append({"variant": variant, "steps": steps,
                         "warm_start": report.warm_start,
                         "training_seconds": report.training_seconds, "cpu_seconds": cpu,
                         "policy_f1": report.policy_mean_f1, "start_f1": report.start_mean_f1,
                         "difference": diff, "actions": actions, "out_dir": report.out_dir})
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
