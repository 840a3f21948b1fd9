"""The modules over 700 lines and the functions over 80 lines of the project's packages.

    python scripts/code_lengths.py                 # heuresis_env, agents, baselines, heuresis
    python scripts/code_lengths.py --functions 60  # other limits
    python scripts/code_lengths.py --counts        # the two counts only

A module's length is its number of lines; a function's runs from its ``def`` line to its last
line (decorators left out), methods and nested functions counted on their own. The counts are
issue 43's targets: no module over 700 lines, and the functions over 80 lines halved.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("heuresis_env", "agents", "baselines", "heuresis")


def module_lengths(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, int]:
    """Each module's number of lines, by path relative to ``root``."""
    lengths = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            lengths[relative] = len(path.read_text(encoding="utf-8").splitlines())
    return lengths


def function_lengths(root: Path = ROOT,
                     packages: tuple[str, ...] = PACKAGES) -> list[tuple[str, str, int]]:
    """``(module path, qualified name, lines)`` of every function and method."""
    found = []
    for module in module_lengths(root, packages):
        tree = ast.parse((root / module).read_text(encoding="utf-8"))
        found.extend((module, name, length) for name, length in _functions(tree, ""))
    return found


def _functions(node: ast.AST, prefix: str) -> list[tuple[str, int]]:
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            found.append((name, child.end_lineno - child.lineno + 1))
            found.extend(_functions(child, name + "."))
        elif isinstance(child, ast.ClassDef):
            found.extend(_functions(child, prefix + child.name + "."))
        else:
            found.extend(_functions(child, prefix))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=700, help="module limit in lines")
    parser.add_argument("--functions", type=int, default=80, help="function limit in lines")
    parser.add_argument("--counts", action="store_true", help="print the two counts only")
    parser.add_argument("packages", nargs="*", default=list(PACKAGES))
    args = parser.parse_args(argv)
    packages = tuple(args.packages)
    long_modules = sorted(((n, m) for m, n in module_lengths(ROOT, packages).items()
                           if n > args.modules), reverse=True)
    long_functions = sorted(((n, m, f) for m, f, n in function_lengths(ROOT, packages)
                             if n > args.functions), reverse=True)
    print(f"modules over {args.modules} lines: {len(long_modules)}")
    if not args.counts:
        for lines, module in long_modules:
            print(f"  {lines:5d}  {module}")
    print(f"functions over {args.functions} lines: {len(long_functions)}")
    if not args.counts:
        for lines, module, function in long_functions:
            print(f"  {lines:5d}  {module}::{function}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
