"""``python -m agents.learned_repair``: the same command as ``heuresis learned-repair``
(:mod:`agents.learned_repair.cli`)."""

from agents.command_line import command_main, exit_with
from agents.learned_repair import cli

main = command_main("python -m agents.learned_repair", cli)

if __name__ == "__main__":
    exit_with(main)
