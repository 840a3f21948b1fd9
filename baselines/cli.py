"""``heuresis baselines``: per family, every reference algorithm's mean adjacency F1 with a
95% bootstrap interval, BCA_φ (selected on development instances), the ideal oracle, merge*
and the selection and repair headrooms. Results are cached on disk; workers run in parallel.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from baselines.family_table import compute_family_table, format_family_table
from baselines.reference import REFERENCE_ALGORITHMS
from heuresis_env.discovery import get_algorithm
from heuresis_env.generation import SPLIT_SIZES, available_families, get_family

HELP = "Reference results per family: algorithms, BCA, oracle, merge*, headrooms."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", default="all", help="a family name or 'all' (default)")
    parser.add_argument("--split", default="test", choices=["dev", "test"])
    parser.add_argument("--count", type=int, default=None,
                        help="instances per family (default: the whole split)")
    parser.add_argument("--selection-count", type=int, default=None,
                        help="development instances used to select BCA (default: all 100)")
    parser.add_argument("--algorithms", default=None,
                        help="comma-separated algorithm names (default: every reference algorithm)")
    parser.add_argument("--workers", type=int, default=1, help="parallel worker processes")
    parser.add_argument("--d", type=int, default=10, help="variables per instance")
    parser.add_argument("--n", type=int, default=600, help="rows per instance")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--json", type=Path, default=None, help="also write the tables as JSON")


def resolve_families(name: str) -> list[str]:

    if name == "all":
        return list(available_families())
    get_family(name)  # raises an error listing the known families
    return [name]


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    families = resolve_families(args.family)
    algorithms = (REFERENCE_ALGORITHMS if args.algorithms is None
                  else tuple(a.strip() for a in args.algorithms.split(",") if a.strip()))
    for a in algorithms:
        get_algorithm(a)  # unknown names fail before any work starts
    count = SPLIT_SIZES[args.split] if args.count is None else args.count
    selection = SPLIT_SIZES["dev"] if args.selection_count is None else args.selection_count
    n_algorithms = len(set(algorithms) | {"pc-kci"})
    n_instances = count + (0 if args.split == "dev" and selection == count else selection)
    total = len(families) * n_algorithms * n_instances
    started = time.perf_counter()
    tables = []
    with tqdm(total=total, desc="algorithm runs", unit="run", file=sys.stderr,
              disable=not sys.stderr.isatty() and total < 50) as bar:
        for family in families:
            bar.set_postfix_str(family)
            table = compute_family_table(
                family, args.split, count, algorithms, selection_count=selection,
                workers=args.workers, d=args.d, n=args.n, n_resamples=args.resamples,
                progress=bar.update)
            tables.append(table)
    for table in tables:
        print(format_family_table(table))
        print()
    print(f"{'family':<10}{'BCA':<16}{'F1(BCA)':>9}{'F1(PC-KCI)':>12}{'F1(oracle)':>12}"
          f"{'sel. headroom':>15}{'rep. headroom':>15}")
    for t in tables:
        pc_kci = next(r for r in t.algorithms if r.name == "pc-kci").f1.mean
        print(f"{t.family:<10}{t.bca:<16}{t.bca_f1.mean:>9.3f}{pc_kci:>12.3f}{t.oracle_f1.mean:>12.3f}"
              f"{t.selection_headroom.mean:>+15.3f}{t.repair_headroom.mean:>+15.3f}")
    elapsed = time.perf_counter() - started
    print(f"\n{total} algorithm runs in {elapsed:.1f} s ({args.workers} worker(s))")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        # the size makes the file usable as a BCA selection for episodes of that size only
        size = {"d": args.d, "n": args.n, "graph_model": "er"}
        args.json.write_text(json.dumps({"size": size, "tables": [t.to_dict() for t in tables],
                                         "seconds": elapsed}, indent=2))
        print(f"wrote {args.json}")
    return 0
