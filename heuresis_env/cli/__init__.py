"""The ``heuresis`` command. Each subcommand is a module exposing ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``; modules import their heavy dependencies
inside ``run`` so that ``heuresis --help`` stays fast.

Built-in subcommands live in this package. Other packages add subcommands through the
``heuresis.commands`` entry-point group (name = subcommand, value = module); that is how
``heuresis baselines`` and ``heuresis train`` arrive without ``heuresis_env`` importing
``baselines`` or ``agents``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from heuresis_env.errors import HeuresisError
from heuresis_env.threads import limit_threads
from heuresis_env.version import __version__

#: subcommand → module (added in the order a newcomer meets them)
SUBCOMMANDS: dict[str, str] = {
    "demo": "heuresis_env.cli.demo",
    "generate": "heuresis_env.cli.generate",
    "show": "heuresis_env.cli.show",
    "tools": "heuresis_env.cli.tools",
    "replay": "heuresis_env.cli.replay",
    "evaluate": "heuresis_env.cli.evaluate",
    "report": "heuresis_env.cli.report",
    "score": "heuresis_env.cli.score",
    "view": "heuresis_env.cli.view",
    "mcp": "heuresis_env.cli.mcp",
    "doctor": "heuresis_env.cli.doctor",
    "salt": "heuresis_env.cli.salt",
}


def discover_subcommands() -> dict[str, str]:
    """Built-in subcommands plus those declared in the ``heuresis.commands`` entry points."""
    from importlib.metadata import entry_points

    found = dict(SUBCOMMANDS)
    for ep in entry_points(group="heuresis.commands"):
        found.setdefault(ep.name, ep.value)
    return found


def build_parser() -> argparse.ArgumentParser:

    parser = argparse.ArgumentParser(
        prog="heuresis",
        description="Heuresis: agentic causal discovery benchmark and Gymnasium environments.",
    )
    parser.add_argument("--version", action="version", version=f"heuresis {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in discover_subcommands().items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    limit_threads()  # one BLAS thread per process: parallelism comes from worker processes
    try:
        return int(args._run(args) or 0)
    except HeuresisError as exc:
        print(f"heuresis {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0
    except OSError as exc:
        if exc.filename is None:  # not a file the user named: a real failure, with traceback
            raise
        # a path that cannot be written or read (full disk, permissions, a file in the way)
        print(f"heuresis {args.command}: error: {exc.strerror or exc}: {exc.filename}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"heuresis {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
