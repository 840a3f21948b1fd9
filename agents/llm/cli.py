"""``heuresis llm-server``: the loopback chat server (:mod:`agents.llm.server`) as a command:
an OpenAI-compatible and an Anthropic endpoint on 127.0.0.1 playing the heuristic stand-in, or
with ``--model`` a real small model on this machine's CPU (:mod:`agents.llm.local_server`), so
the language-model policy, ``inspect eval``, ``heuresis probe`` or your own client runs end to
end with no key and no network. It serves until interrupted (Ctrl-C, SIGTERM)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

HELP = ("serve a keyless model on 127.0.0.1 (OpenAI- and Anthropic-compatible) until "
        "interrupted: the heuristic stand-in, or --model a real small model on CPU")
#: the catalogue's names (agents.llm.local_models.LOCAL_MODELS; a test keeps them equal)
MODEL_CHOICES = ("smollm2-135m", "gemma3-270m")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=8642,
                        help="port on 127.0.0.1 (default 8642; 0 picks a free one)")
    parser.add_argument("--model", choices=MODEL_CHOICES, default=None,
                        help="serve this real model (the local-llm extra) instead of the "
                             "heuristic stand-in")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads for --model (default: the cores, at most 4)")
    parser.add_argument("--model-dir", default=None,
                        help="a prepared copy of --model (default: prepared on first use)")
    parser.add_argument("--cache-slots", type=int, default=8,
                        help="conversations whose key/value cache --model keeps for their "
                             "next turn (default 8; about two per concurrent episode)")
    parser.add_argument("--max-batch", type=int, default=32,
                        help="concurrent requests --model decodes as one batch (default 32)")
    parser.add_argument("--max-tests", type=int, default=3,
                        help="KCI tests the heuristic model runs on disputed pairs (default 3)")


def run(args: argparse.Namespace) -> int:
    import os

    from agents.llm.heuristic_model import HeuristicModel
    from agents.llm.server import HEURISTIC_MODEL_NAME, ChatServer
    from heuresis_env.errors import HeuresisError

    if not 0 <= args.port <= 65535:
        raise HeuresisError(f"--port must be in 0..65535, got {args.port}")
    if args.max_tests < 0:
        raise HeuresisError(f"--max-tests must be at least 0, got {args.max_tests}")
    for option in ("threads", "cache_slots", "max_batch"):
        value = getattr(args, option)
        if value is not None and value < 1:
            raise HeuresisError(f"--{option.replace('_', '-')} must be at least 1, got {value}")
    if args.model is None:
        server = ChatServer(responder=HeuristicModel(max_tests=args.max_tests),
                            model=HEURISTIC_MODEL_NAME, port=args.port)
        what = f"the heuristic model {HEURISTIC_MODEL_NAME!r}"
    else:
        from agents.llm.local_server import local_chat_server

        print(f"heuresis llm-server: loading {args.model} (the first time, its GGUF file is "
              "converted: up to a few minutes)", file=sys.stderr, flush=True)
        threads = args.threads or min(4, os.cpu_count() or 1)
        server = local_chat_server(args.model, model_dir=args.model_dir, threads=threads,
                                   port=args.port, cache_slots=args.cache_slots,
                                   max_batch=args.max_batch)
        what = (f"the local model {args.model!r} ({threads} torch threads, batches of up to "
                f"{args.max_batch})")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"heuresis llm-server: {what} on {server.root_url}\n"
          f"  OpenAI-compatible: export HEURESIS_LLM_BASE_URL={server.url} "
          f"HEURESIS_LLM_MODEL={server.model}\n"
          f"  Anthropic: base_url={server.root_url} (any api_key)\n"
          "Ctrl-C stops it.", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    decoded = ""
    engine = getattr(server.responder, "model", None) if args.model else None
    if engine is not None:
        stats = engine.decoder.stats
        decoded = (f", {stats.sequence_steps} tokens decoded in {stats.steps} batched steps "
                   f"(largest batch {stats.largest})")
    print(f"heuresis llm-server: stopped after {len(server.requests)} requests{decoded}, "
          f"{usage.ru_utime + usage.ru_stime:.0f} CPU s", file=sys.stderr, flush=True)
    return 0
