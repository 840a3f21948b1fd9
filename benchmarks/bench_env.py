"""Speed of the Heuresis environment, beside CartPole-v1 measured in the same run.

1. RL view with a warm evidence cache, driven by a random *masked* policy (uniform over the
   valid actions of ``action_masks()``): steps per second, and edit steps (add, remove,
   orient) per second, on the raw environment and through ``gym.make``'s wrappers. The
   target is at least 10,000 edit steps per second.
2. CartPole-v1's raw step rate (random actions, reset on episode end) on this machine now.
3. A cached tool call on the text view (a KCI test already computed, a cached
   ``run_algorithm``): parsing, validation, the cache hit and the observation, per call.

Usage: ``python benchmarks/bench_env.py [--d 10] [--n 600] [--family lg] [--seconds 3]``.
The first run on a fresh cache computes the instance's evidence (PC-KCI, KCI tests) once;
that warm-up time is printed separately and not counted.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np

from heuresis_env.registration import env_id, register_envs


def cartpole_rate(seconds: float) -> float:
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, size=1 << 16)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(1000):
            _, _, terminated, truncated, _ = env.step(int(actions[steps & 0xFFFF]))
            steps += 1
            if terminated or truncated:
                env.reset()
    return steps / (time.perf_counter() - start)


def heuresis_rates(env: gym.Env, seconds: float, seed: int = 0) -> tuple[float, float, int]:
    """(steps/s, edit steps/s, episodes) of a uniform random masked policy."""
    rng = np.random.default_rng(seed)
    unwrapped = env.unwrapped
    operations = [a.operation for a in unwrapped.rl_actions]
    env.reset(seed=seed)
    steps = edits = episodes = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(500):
            valid = np.flatnonzero(unwrapped.action_masks())
            action = int(valid[rng.integers(valid.size)])
            _, _, terminated, truncated, _ = env.step(action)
            steps += 1
            edits += operations[action] in ("add", "remove", "orient")
            if terminated or truncated:
                episodes += 1
                env.reset()
    elapsed = time.perf_counter() - start
    return steps / elapsed, edits / elapsed, episodes


def cached_tool_call_seconds(family: str, d: int, n: int, repeats: int = 300) -> dict:
    env = gym.make(env_id(family), d=d, n=n, indices=[0], max_steps=10 * repeats + 10)
    env.reset(seed=0)
    calls = {
        "ci_test (kci, cached)": json.dumps(
            {"tool": "ci_test", "args": {"x": "X1", "y": "X2", "given": ["X3"],
                                         "method": "kci"}}),
        "run_algorithm (pc-fisherz, cached)": json.dumps(
            {"tool": "run_algorithm", "args": {"name": "pc-fisherz"}}),
        "add_edge + remove_edge": None,
    }
    out = {}
    for label, action in calls.items():
        if action is None:
            add = {"tool": "add_edge", "args": {"x": "X1", "y": "X2"}}
            remove = {"tool": "remove_edge", "args": {"x": "X1", "y": "X2"}}
            start = time.perf_counter()
            for _ in range(repeats // 2):
                env.step(add)
                env.step(remove)
        else:
            env.step(action)  # compute once (or load from the disk cache)
            start = time.perf_counter()
            for _ in range(repeats):
                env.step(action)
        out[label] = (time.perf_counter() - start) / repeats
    env.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", default="lg")
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--target", default="dag", choices=["none", "cpdag", "dag"])
    args = parser.parse_args()
    register_envs()

    kwargs = {"interface": "rl", "d": args.d, "n": args.n, "indices": [0],
              "target": args.target, "max_steps": 100}
    start = time.perf_counter()
    wrapped = gym.make(env_id(args.family), **kwargs)
    wrapped.reset(seed=0)  # computes or loads the instance's evidence
    warm_up = time.perf_counter() - start
    print(f"Heuresis-{args.family}-v0 RL view, d={args.d}, n={args.n}, target={args.target}: "
          f"{wrapped.action_space.n} actions; evidence warm-up {warm_up:.1f} s")

    cartpole = cartpole_rate(args.seconds)
    raw = gym.make(env_id(args.family), **kwargs).unwrapped
    raw_steps, raw_edits, raw_episodes = heuresis_rates(raw, args.seconds)
    made_steps, made_edits, _ = heuresis_rates(wrapped, args.seconds)
    print(f"CartPole-v1 raw step rate:                 {cartpole:>10,.0f} steps/s")
    print(f"Heuresis RL, raw env, random masked policy: {raw_steps:>10,.0f} steps/s "
          f"({raw_edits:,.0f} edit steps/s, {raw_episodes} episodes) = "
          f"{raw_steps / cartpole:.2f} x CartPole")
    print(f"Heuresis RL via gym.make (wrappers):        {made_steps:>10,.0f} steps/s "
          f"({made_edits:,.0f} edit steps/s) = {made_steps / cartpole:.2f} x CartPole")
    verdict = "meets" if raw_edits >= 10_000 else "MISSES"
    print(f"Edit steps/s {verdict} the 10,000/s target (policy sampling and masks included).")

    print("\nText view, cost per call after the first (cache warm):")
    for label, seconds in cached_tool_call_seconds(args.family, args.d, args.n).items():
        print(f"  {label:<36} {seconds * 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
