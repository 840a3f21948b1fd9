"""``heuresis llm-server``: the loopback chat server (:mod:`agents.llm.server`) playing the
heuristic model, as a command: an OpenAI-compatible and an Anthropic endpoint on 127.0.0.1, so
the language-model policy, ``heuresis probe`` or your own client runs end to end with no key
and no network. It serves until interrupted (Ctrl-C, SIGTERM)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

HELP = ("serve the keyless heuristic stand-in for a language model on 127.0.0.1 (OpenAI- and "
        "Anthropic-compatible) until interrupted")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8642,
                        help="port on 127.0.0.1 (default 8642; 0 picks a free one)")
    parser.add_argument("--max-tests", type=int, default=3,
                        help="KCI tests the heuristic model runs on disputed pairs (default 3)")


def run(args: argparse.Namespace) -> int:
    from agents.llm.server import HEURISTIC_MODEL_NAME, ChatServer, HeuristicModel
    from heuresis_env.errors import HeuresisError

    if not 0 <= args.port <= 65535:
        raise HeuresisError(f"--port must be in 0..65535, got {args.port}")
    if args.max_tests < 0:
        raise HeuresisError(f"--max-tests must be at least 0, got {args.max_tests}")
    server = ChatServer(responder=HeuristicModel(max_tests=args.max_tests),
                        model=HEURISTIC_MODEL_NAME, port=args.port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"heuresis llm-server: the heuristic model {HEURISTIC_MODEL_NAME!r} on "
          f"{server.root_url}\n"
          f"  OpenAI-compatible: export HEURESIS_LLM_BASE_URL={server.url} "
          f"HEURESIS_LLM_MODEL={HEURISTIC_MODEL_NAME}\n"
          f"  Anthropic: base_url={server.root_url} (any api_key)\n"
          "Ctrl-C stops it.", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    print(f"heuresis llm-server: stopped after {len(server.requests)} requests",
          file=sys.stderr, flush=True)
    return 0
