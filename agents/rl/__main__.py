"""``python -m agents.rl``: the same command as ``heuresis train``
(:mod:`agents.rl.cli`)."""

from agents.command_line import command_main, exit_with
from agents.rl import cli

main = command_main("python -m agents.rl", cli)

if __name__ == "__main__":
    exit_with(main)
