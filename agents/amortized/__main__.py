"""``python -m agents.amortized``: the same subcommands as ``heuresis amortized``
(:mod:`agents.amortized.cli`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agents.amortized.cli import add_arguments, run
from heuresis_env.errors import HeuresisError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.amortized", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return run(args)


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except HeuresisError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
