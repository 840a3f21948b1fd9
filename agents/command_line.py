"""``python -m agents.PACKAGE``: the second door of a command module of ``agents`` (a
``cli.py`` with ``HELP``, ``add_arguments(parser)`` and ``run(args)``, registered under
``heuresis.commands``), so that ``python -m agents.amortized`` and ``heuresis amortized``
read the same arguments and run the same functions. A package's ``__main__.py`` is::

    main = command_main("python -m agents.rl", cli)
    if __name__ == "__main__":
        exit_with(main)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import NoReturn

from heuresis_env.errors import HeuresisError


def command_main(prog: str, command: ModuleType) -> Callable[[Sequence[str] | None], int]:
    """The ``main(argv=None)`` of a command module: its parser, then its ``run`` (the
    arguments as given are kept as ``args.argv``, which a command may record)."""

    def main(argv: Sequence[str] | None = None) -> int:
        parser = argparse.ArgumentParser(prog=prog, description=command.HELP)
        command.add_arguments(parser)
        args = parser.parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)
        return int(command.run(args))

    return main


def exit_with(main: Callable[[], int]) -> NoReturn:
    """Run ``main`` as a process: its return value is the exit status; a Heuresis error is
    one line on stderr and status 2, as under ``heuresis``."""
    try:
        raise SystemExit(main())
    except HeuresisError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
