"""Compare two language-model backends under identical budgets, then report.

With OPENAI_API_KEY and ANTHROPIC_API_KEY set, it compares --openai-model with
--anthropic-model. With no key it starts the loopback chat server (agents.llm.server) playing
a deterministic heuristic model behind both protocols, so the whole path — the official SDKs,
HTTP, tool calling, the final edge list, usage accounting — runs with no network.

    python examples/compare_llm_backends.py --family wild --count 2 --out runs/llm-compare

The report names the arms by their policies' names (llm-openai, llm-anthropic), and its cells
link to the trace viewer of both runs (each step's tool output, tokens and cost).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from agents.llm.heuristic_model import HeuristicModel
from agents.llm.server import HEURISTIC_MODEL_NAME, ChatServer
from heuresis_env.evaluation import evaluate
from heuresis_env.policy import EpisodeSettings
from heuresis_env.reports.build import build_report
from heuresis_env.viewer import build_site


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="wild")
    parser.add_argument("--count", type=int, default=2, help="test instances")
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--max-steps", type=int, default=12)
    parser.add_argument("--token-budget", type=int, default=2048)
    parser.add_argument("--openai-model", default="gpt-4.1-mini")
    parser.add_argument("--anthropic-model", default="claude-sonnet-4-5")
    parser.add_argument("--out", type=Path, default=Path("runs/llm-compare"))
    args = parser.parse_args()

    server = None
    if os.environ.get("OPENAI_API_KEY") and os.environ.get("ANTHROPIC_API_KEY"):
        arms = {"openai": {"backend": "openai", "model": args.openai_model},
                "anthropic": {"backend": "anthropic", "model": args.anthropic_model}}
    else:
        server = ChatServer(responder=HeuristicModel(), model=HEURISTIC_MODEL_NAME)
        print(f"no API keys set: both backends talk to the loopback server at {server.root_url}")
        arms = {"openai": {"backend": "openai", "model": HEURISTIC_MODEL_NAME,
                           "base_url": server.url, "api_key": "loopback"},
                "anthropic": {"backend": "anthropic", "model": HEURISTIC_MODEL_NAME,
                              "base_url": server.root_url, "api_key": "loopback"}}
    # one settings object for both arms: the runner imposes it, the policies cannot change it
    settings = EpisodeSettings(max_steps=args.max_steps, max_seconds=600,
                               token_budget_per_turn=args.token_budget)
    try:
        run_dirs = []
        for arm, options in arms.items():
            summary = evaluate("llm", families=[args.family], split="test", count=args.count,
                               settings=settings, out_dir=args.out / arm,
                               policy_options={**options, "name": f"llm-{arm}"},
                               d=args.d, n=args.n, progress=False)
            print(summary.to_text())
            run_dirs.append(summary.out_dir)
        report = build_report(run_dirs, args.out / "report", viewer="../viewer/index.html")
        viewer = build_site(run_dirs, args.out / "viewer")
        print(report.headline)
        print(f"report: {report.html_path}")
        print(f"viewer: {viewer.index_path}")
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
