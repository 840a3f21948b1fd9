"""``heuresis tools``: print the toolbox reference (Markdown, generated from the registry)."""

from __future__ import annotations

import argparse
import json
import sys

import heuresis_env.env.toolbox as toolbox
from heuresis_env.env.toolbox.reference import render_reference

HELP = "print the toolbox reference (or the tools' JSON schemas for function calling)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--schemas", choices=["openai", "anthropic"], default=None,
                        help="print the function-calling schemas as JSON instead")
    parser.add_argument("--toolbox", choices=list(toolbox.TOOLBOXES), default="full",
                        help="with --schemas: the toolbox (default: full)")
    parser.add_argument("--task", choices=list(toolbox.TASKS), default="graph",
                        help="with --schemas: graph episodes (submit) or question episodes "
                             "(answer)")
    parser.add_argument("--guided", action="store_true",
                        help="with --schemas: include the guided-only tools")


def run(args: argparse.Namespace) -> int:

    if args.schemas:
        schemas = toolbox.tool_schemas(args.toolbox, args.guided, args.schemas, args.task)
        sys.stdout.write(json.dumps(schemas, indent=2) + "\n")
    else:
        sys.stdout.write(render_reference())
    return 0
