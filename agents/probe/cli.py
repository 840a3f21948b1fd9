"""``heuresis probe``: the name-only probe against a configured language model (or the
loopback stand-in), written to an output directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = ("ask a language model, from variable names alone, for the BNLearn networks' edges and "
        "the Tübingen pairs' directions (with index-name and never-named controls)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=["heuristic", "openai", "anthropic"], default=None,
                        help="heuristic: a deterministic stand-in on a loopback chat server "
                             "(no key); openai (any chat-completions server) or anthropic "
                             "(default: $HEURESIS_LLM_BACKEND, else what is configured)")
    parser.add_argument("--model", default=None, help="model name (default $HEURESIS_LLM_MODEL)")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server's URL")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR",
                        help="writes DIR/probe.json and DIR/probe.md")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of every presentation order (default 0)")
    parser.add_argument("--arms", default="names,indices,unnamed",
                        help="which arms to ask: names, indices, unnamed (default all)")
    parser.add_argument("--max-pairs", type=int, default=None,
                        help="ask only the first N Tübingen pairs (default all 99)")
    parser.add_argument("--temperature", type=float, default=None,
                        help="sampling temperature (default: the service's)")


def run(args: argparse.Namespace) -> int:
    from agents.llm import ChatServer, OpenAIChatBackend, make_llm_policy
    from agents.probe import (
        ARMS,
        PROBE_HEURISTIC_MODEL,
        ProbeHeuristicModel,
        run_probe,
        write_probe,
    )
    from heuresis_env.errors import UnknownNameError

    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    for arm in arms:
        if arm not in ARMS:
            raise UnknownNameError("probe arm", arm, ARMS)
    resources = []
    if args.backend == "heuristic":
        server = ChatServer(responder=ProbeHeuristicModel(), model=PROBE_HEURISTIC_MODEL)
        resources.append(server)
        backend = OpenAIChatBackend(PROBE_HEURISTIC_MODEL, base_url=server.url,
                                    api_key="local", timeout=60.0, max_retries=2)
        name = "heuristic (loopback)"
    else:
        # the LLM policy's configuration (keys, base URLs, model) picks the chat backend
        policy = make_llm_policy(backend=args.backend, model=args.model,
                                 base_url=args.base_url, temperature=args.temperature)
        resources.append(policy)
        backend = policy.backend
        name = backend.kind
    resources.insert(0, backend)
    try:
        result = run_probe(backend, name, seed=args.seed, arms=arms, max_pairs=args.max_pairs,
                           progress=lambda label: print(label, file=sys.stderr)
                           if sys.stderr.isatty() else None)
    finally:
        for resource in resources:
            resource.close()
    path = write_probe(result, args.out)
    print(result.to_markdown())
    print(f"\nwrote {path} and {args.out / 'probe.md'}")
    return 0
