"""Quick start: one episode of Heuresis through the plain Gymnasium API.

Runs PC-KCI through the toolbox, tests one pair it deleted with KCI, then submits PC-KCI's
graph and prints the scores the environment reveals at the end of the episode.

    python examples/quickstart.py --family wild --d 10 --n 600
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import heuresis_env  # noqa: F401  (registers the Heuresis-*-v0 ids)
from heuresis_env.graphs import Graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="wild")
    parser.add_argument("--index", type=int, default=0, help="development instance")
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    args = parser.parse_args()

    env = gym.make(f"Heuresis-{args.family}-v0", split="dev", d=args.d, n=args.n)
    observation, info = env.reset(seed=0, options={"index": args.index})
    print(observation["text"][:600], "…\n")

    observation, _, _, _, info = env.step(
        {"tool": "run_algorithm", "args": {"name": "pc-kci"}})
    print(observation["text"][:800], "\n")
    pc_kci = Graph.from_dict(info["data"]["graph"])
    edges = [str(edge) for edge in pc_kci.edges()]

    # test one pair PC-KCI left unconnected, with KCI and no conditioning set
    x, y = next((a, b) for i, a in enumerate(pc_kci.names) for b in pc_kci.names[i + 1:]
                if not pc_kci.adjacent(a, b))
    observation, *_ = env.step({"tool": "ci_test", "args": {"x": x, "y": y, "method": "kci"}})
    print(observation["text"], "\n")

    observation, reward, terminated, truncated, info = env.step(
        {"tool": "submit", "args": {"edges": edges}})
    print(observation["text"])
    print(f"terminated={terminated} truncated={truncated} reward={reward:.3f}")
    print("scores:", {k: round(v, 3) if isinstance(v, float) else v
                      for k, v in info["scores"].items()})


if __name__ == "__main__":
    main()
