"""``heuresis show``: describe an instance (a saved file, a split directory, or a key)."""

from __future__ import annotations

import argparse

from heuresis_env.console import text_table
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import (
    MANIFEST_NAME,
    InstanceKey,
    generate_instance,
    load_instance,
    load_split,
)
from heuresis_env.generation.sortability import r2_sortability, varsortability

HELP = ("describe an instance: a saved file, a split directory, or a key like wild/dev/3; "
        "the hidden record only with --reveal")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="PATH_OR_KEY",
                        help="an instance file (.json/.npz or their common stem), a split "
                             "directory with a manifest, or a key family/split/index")
    parser.add_argument("--d", type=int, default=None,
                        help="variables, for a key (default 10; a fixed structure's own)")
    parser.add_argument("--n", type=int, default=None, help="rows, for a key (default 600)")
    parser.add_argument("--graph", choices=["er", "ba"], default=None,
                        help="graph model, for a key (default er)")
    parser.add_argument("--reveal", action="store_true",
                        help="also print the hidden record: true edges, CPDAG, mechanisms")
    parser.add_argument("--json", action="store_true",
                        help="with --reveal: print the whole record as JSON (all parameters)")


def _column_table(instance) -> list[str]:
    import numpy as np
    from scipy import stats

    X = np.asarray(instance.X)
    rows = []
    for j, name in enumerate(instance.names):
        column = X[:, j]
        rows.append([name, f"{column.mean():.2e}", f"{column.std():.4f}", f"{column.min():.3f}",
                     f"{column.max():.3f}", f"{stats.skew(column):.3f}",
                     f"{stats.kurtosis(column):.3f}"])
    return text_table(["column", "mean", "sd", "min", "max", "skew", "ex.kurt"],
                      rows).splitlines()


def _scalar_params(params: dict) -> str:
    shown = []
    for name, value in params.items():
        if isinstance(value, float):
            shown.append(f"{name}={value:.3g}")
        elif isinstance(value, list) and len(value) <= 4 and all(
                isinstance(v, float) for v in value):
            shown.append(f"{name}=[{', '.join(f'{v:.3g}' for v in value)}]")
    return ", ".join(shown)


def describe(instance, reveal: bool = False, as_json: bool = False) -> str:
    """The text ``heuresis show`` prints for one instance."""
    import json

    key = instance.key
    record = instance.record
    lines = [
        f"key:      {key}",
        f"file:     {key.slug}",
        f"shape:    {instance.n} rows × {instance.d} columns",
        f"sha256:   {instance.sha256}",
        f"sealed:   {'yes (secret test salt)' if instance.sealed else 'no'}",
        "",
        *_column_table(instance),
        "",
    ]
    if record.dag is not None and record.dag.graph_type() == "dag":
        adjacency = record.dag.directed_adjacency()
        lines += ["sortability (computed against the hidden DAG; 0.5 = chance):",
                  f"  varsortability   {varsortability(instance.X, adjacency):.3f}",
                  f"  R²-sortability   {r2_sortability(instance.X, adjacency):.3f}"]
    elif record.dag is None:
        lines.append("no ground truth: a data table given without a graph")
    if not reveal:
        lines += ["", "hidden record: not shown (use --reveal)"]
        return "\n".join(lines)
    if record.dag is not None:
        lines += ["", f"hidden record — graph model {record.graph_model}, "
                      f"{record.dag.n_edges()} edges",
                  "true graph:", *("  " + line for line in record.dag.to_text().splitlines()),
                  "CPDAG:", *("  " + line for line in record.cpdag.to_text().splitlines())]
    if record.source:
        columns = record.source.get("columns", {})
        lines += ["", "data table: " + ("standardized" if record.source.get("standardized")
                                        else "values as given") +
                  (", anonymized" if record.source.get("anonymized") else ""),
                  *(f"  {name} = {original}" for name, original in columns.items()
                    if name != original)]
    if record.mechanisms:
        lines.append("mechanisms:")
    for name in (n for n in instance.names if n in record.mechanisms):
        mechanism = record.mechanisms[name]
        parents = ", ".join(mechanism["parents"]) or "—"
        lines.append(f"  {name:<5} {mechanism['kind']:<21} noise={mechanism['noise']:<8} "
                     f"parents: {parents}   {_scalar_params(mechanism['params'])}")
    if as_json:
        lines += ["", json.dumps(record.to_dict(), indent=1)]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    target = Path(args.target)
    if target.is_dir():
        if not (target / MANIFEST_NAME).exists():
            raise HeuresisError(f"{target} is a directory without a {MANIFEST_NAME}; pass an "
                                "instance file or a split directory written by "
                                "'heuresis generate'")
        instances = load_split(target)
        print(f"split {target}: {len(instances)} instances")
        for instance in instances:
            edges = (f"  {instance.record.require_graph('--reveal').n_edges():>3} edges"
                     if args.reveal else "")
            print(f"  {instance.key.slug}  {instance.sha256[:16]}{edges}")
        return 0
    if target.exists() or (target.parent / (target.name + ".json")).exists():
        instance = load_instance(target)
    else:
        try:
            key = InstanceKey.parse(args.target, d=args.d, n=args.n, graph_model=args.graph)
        except HeuresisError as exc:
            raise HeuresisError(f"{args.target!r} is neither an instance file nor a key: "
                                f"{exc}") from None
        instance = generate_instance(key)
    print(describe(instance, reveal=args.reveal, as_json=args.json))
    return 0
