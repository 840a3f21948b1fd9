"""``python -m agents.amortized``: the same command as ``heuresis amortized``
(:mod:`agents.amortized.cli`)."""

from agents.amortized import cli
from agents.command_line import command_main, exit_with

main = command_main("python -m agents.amortized", cli)

if __name__ == "__main__":
    exit_with(main)
