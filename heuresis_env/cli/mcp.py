"""``heuresis mcp``: serve an episode's toolbox to MCP clients (stdio, or streamable HTTP)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from heuresis_env.budgets import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STEPS
from heuresis_env.env import TARGETS, TOOLBOXES
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.families import available_families
from heuresis_env.generation.salts import TEST_SALT_ENV, sealing_salt
from heuresis_env.mcp.server import (
    HOST,
    EpisodeServer,
    check_token,
    new_token,
    serve_http,
    serve_stdio,
)

#: an environment variable that fixes the HTTP transport's token (else a new one per start)
TOKEN_ENV = "HEURESIS_MCP_TOKEN"

HELP = ("serve a Heuresis episode's toolbox as an MCP server (each tool call one step of a real "
        "episode, same budgets, trace written); default: a wild dev episode over stdio")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", default="wild", choices=available_families(),
                        help="mechanism family (default wild)")
    parser.add_argument("--split", default="dev", choices=("dev", "test"),
                        help="split (default dev; test uses $HEURESIS_TEST_SALT when set)")
    parser.add_argument("--index", type=int, default=None,
                        help="instance index of the first episode (default: drawn from --seed)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode")
    parser.add_argument("--sealed", action="store_true",
                        help="insist on a sealed test split: refuse to start without "
                             "$HEURESIS_TEST_SALT (an MCP client may start the server with a "
                             "minimal environment)")
    parser.add_argument("--experiments", type=int, default=0, metavar="ROWS",
                        help="experiment budget in rows: offers the intervene tool "
                             "(docs/experiments.md; default 0, none)")
    parser.add_argument("--guided", action=argparse.BooleanOptionalAction, default=False,
                        help="start from PC-KCI's output (default: unguided, empty graph)")
    parser.add_argument("--toolbox", default="full", choices=TOOLBOXES)
    parser.add_argument("--target", default="none", choices=TARGETS)
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                        help=f"step budget per episode (default {DEFAULT_MAX_STEPS})")
    parser.add_argument("--max-seconds", type=float, default=DEFAULT_MAX_SECONDS,
                        help="wall-time budget per episode, seconds since reset (default "
                             f"{DEFAULT_MAX_SECONDS:g})")
    parser.add_argument("--d", type=int, default=10, help="variables per instance")
    parser.add_argument("--n", type=int, default=600, help="rows per instance")
    parser.add_argument("--trace-dir", type=Path, default=None,
                        help="where each episode's trace is written (default: the user's data "
                             "folder, e.g. ~/.local/share/heuresis/mcp/traces on Linux; never "
                             "the working directory, which a GUI client does not choose)")
    parser.add_argument("--transport", default="stdio", choices=("stdio", "http"),
                        help="stdio (default) or streamable HTTP on 127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="port for --transport http")
    parser.add_argument("--client-config", action="store_true",
                        help="print the JSON an MCP client needs to start this server (this "
                             "Python, the options given; no `heuresis` on PATH needed) and exit")


def default_trace_dir() -> Path:
    """The traces' folder when ``--trace-dir`` is not given: ``mcp/traces`` in the user's data
    folder (platformdirs: ``$XDG_DATA_HOME/heuresis`` on Linux, ``~/Library/Application
    Support/heuresis`` on macOS, ``%LOCALAPPDATA%\\heuresis`` on Windows)."""
    import platformdirs

    return platformdirs.user_data_path("heuresis", appauthor=False) / "mcp" / "traces"


def client_config(args: argparse.Namespace) -> dict:
    """The ``mcpServers`` entry that starts ``heuresis mcp`` with these options through this
    Python (an absolute path: a GUI client does not inherit the shell's PATH or virtualenv);
    options left at their defaults are left out."""
    defaults = vars(_defaults())
    argv: list[str] = []
    for name, value in vars(args).items():
        if name in ("client_config", "command", "func") or name not in defaults \
                or value == defaults[name]:
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + name.replace("_", "-"))
        else:
            argv += [flag, str(Path(value).resolve()) if name == "trace_dir" else str(value)]
    return {"mcpServers": {"heuresis": {"command": sys.executable,
                                        "args": ["-m", "heuresis_env.cli", "mcp", *argv]}}}


def _defaults() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args([])


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port <= 65535:
        raise HeuresisError(f"--port must be in 1..65535, got {args.port}")
    if args.client_config:
        print(json.dumps(client_config(args), indent=2))
        return 0
    try:
        import mcp  # noqa: F401 - only to say how to install it
    except ImportError:
        raise HeuresisError("the MCP server needs the 'mcp' package: pip install -c "
                            "constraints.txt -e '.[mcp]'") from None
    if args.sealed and (args.split != "test" or sealing_salt("test") is None):
        raise HeuresisError("--sealed: " + (
            "only the test split is sealed; pass --split test" if args.split != "test" else
            f"${TEST_SALT_ENV} is not set in this server's environment, so the test split "
            "would be public; set it (an MCP client's configuration passes environment "
            "variables through its 'env' entry)"))
    trace_dir = args.trace_dir if args.trace_dir is not None else default_trace_dir()
    episodes = EpisodeServer(family=args.family, split=args.split, guided=args.guided,
                             toolbox=args.toolbox, target=args.target, max_steps=args.max_steps,
                             max_seconds=args.max_seconds, d=args.d, n=args.n,
                             trace_dir=trace_dir, index=args.index, seed=args.seed,
                             experiments=args.experiments)
    where = ("stdio" if args.transport == "stdio"
             else f"http://{HOST}:{args.port}/mcp (streamable HTTP)")
    token = check_token(os.environ[TOKEN_ENV]) if os.environ.get(TOKEN_ENV) else new_token()
    print(f"heuresis mcp: {args.family}/{args.split} episodes, {len(episodes.tools())} tools, "
          f"on {where}; traces in {trace_dir}", file=sys.stderr, flush=True)
    print(f"heuresis mcp: {episodes.sealing()}", file=sys.stderr, flush=True)
    if episodes.sealed:
        print("heuresis mcp: sealed test split: no scores are returned; after the session run "
              f"heuresis score {trace_dir}", file=sys.stderr, flush=True)
    if args.transport == "http":
        print(f"heuresis mcp: token {token} (send it as 'Authorization: Bearer <token>')",
              file=sys.stderr, flush=True)
    try:
        if args.transport == "stdio":
            serve_stdio(episodes)
        else:
            serve_http(episodes, args.port, token)
    finally:
        episodes.close()
    return 0
