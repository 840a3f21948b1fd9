"""``heuresis baselines``: per family, every reference algorithm's mean adjacency F1 with a
95% bootstrap interval, BCA_φ (selected on development instances), the ideal oracle, merge*
and the selection and repair headrooms. Results are cached on disk; workers run in parallel.

``--suite bnlearn`` prints the BNLearn table instead (PC-Fisher-z, PC-KCI, GES, the oracle,
and the share of the oracle's gain that GES recovers; ``--suite bnlearn-large`` the same on the
four larger networks); ``--suite shelf`` the whole shelf (every reference algorithm, BCA_φ and
the oracle on the seven networks, PC-Fisher-z, PC-KCI, GES and the oracle on the four larger
ones, each run within ``--budget`` seconds); ``--dataset data.csv [--graph g.txt]`` runs every
algorithm on one table and scores it against the graph when there is one.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from baselines.family_table import compute_family_table, format_family_table
from baselines.oracle import ideal_oracle
from baselines.reference import REFERENCE_ALGORITHMS, reference_record
from baselines.structure_table import (
    SHELF_BUDGET,
    SHELF_FULL,
    SHELF_LARGE,
    SUITE_ALGORITHMS,
    compute_shelf_table,
    compute_suite_table,
    format_shelf_table,
    format_suite_table,
)
from heuresis_env.console import text_table
from heuresis_env.discovery import get_algorithm
from heuresis_env.errors import HeuresisError
from heuresis_env.generation import FAMILY_GROUPS, SPLIT_SIZES, expand_families, load_dataset
from heuresis_env.metrics import score_graph
from heuresis_env.progress import Progress
from heuresis_env.threads import available_cpus

HELP = "Reference results per family: algorithms, BCA, oracle, merge*, headrooms."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", default="all",
                        help="a family name, several joined by commas, 'all' (the six "
                             "benchmark families, default), 'bnlearn' (the seven structures), "
                             "'bnlearn-large' (the four larger ones) or 'shelf' (all eleven)")
    parser.add_argument("--suite", choices=sorted(set(FAMILY_GROUPS) - {"all"}), default=None,
                        help="bnlearn / bnlearn-large: the BNLearn table (PC-Fisher-z, PC-KCI, "
                             "GES, oracle, GES's share of the oracle's gain); shelf: every "
                             "reference algorithm, BCA_φ and the oracle on the seven networks, "
                             "the suite's algorithms on the four larger ones; --count "
                             "instances each (default 5)")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help="with --suite: CPU seconds one algorithm run may take; a run over "
                             "it is stopped, and an algorithm over it on a network's first "
                             f"instance is not run on the others (shelf default {SHELF_BUDGET:g}; "
                             "bnlearn default: none)")
    parser.add_argument("--dataset", type=Path, default=None, metavar="CSV",
                        help="run every algorithm on one table (header row of column names)")
    parser.add_argument("--graph", type=Path, default=None, metavar="EDGE_LIST",
                        help="with --dataset: the table's graph ('A --> B' / 'A --- B' lines)")
    parser.add_argument("--anonymize", action="store_true",
                        help="with --dataset: rename the columns X1..Xd in random order")
    parser.add_argument("--no-standardize", action="store_true",
                        help="with --dataset: keep the values as given (default: standardize)")
    parser.add_argument("--split", default="test", choices=["dev", "test"])
    parser.add_argument("--count", type=int, default=None,
                        help="instances per family (default: the whole split)")
    parser.add_argument("--selection-count", type=int, default=None,
                        help="development instances used to select BCA (default: all 100)")
    parser.add_argument("--algorithms", default=None,
                        help="comma-separated algorithm names (default: every reference algorithm)")
    parser.add_argument("--workers", type=int, default=None,
                        help="parallel worker processes (default: one per available CPU)")
    parser.add_argument("--d", type=int, default=None,
                        help="variables per instance (default 10; a structure's own)")
    parser.add_argument("--n", type=int, default=None, help="rows per instance (default 600)")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    parser.add_argument("--json", type=Path, default=None, help="also write the tables as JSON")


def resolve_families(name: str) -> list[str]:
    """Family names from --family (groups expanded; unknown names list the known ones)."""
    return expand_families(name)


def run(args: argparse.Namespace) -> int:
    if args.workers is None:
        args.workers = available_cpus()
    if args.dataset is not None:
        return run_dataset(args)
    if args.graph is not None or args.anonymize or args.no_standardize:
        raise HeuresisError("--graph, --anonymize and --no-standardize go with --dataset")
    if args.suite is not None:
        return run_suite(args)
    if args.budget is not None:
        raise HeuresisError("--budget goes with --suite")
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
    with Progress(total, "algorithm runs", unit="run") as bar:
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
    print(text_table(
        ["family", "BCA", "F1(BCA)", "F1(PC-KCI)", "F1(oracle)", "sel. headroom",
         "rep. headroom"],
        [[t.family, t.bca, f"{t.bca_f1.mean:.3f}",
          f"{next(r for r in t.algorithms if r.name == 'pc-kci').f1.mean:.3f}",
          f"{t.oracle_f1.mean:.3f}", f"{t.selection_headroom.mean:+.3f}",
          f"{t.repair_headroom.mean:+.3f}"] for t in tables], align="<<>>>>>"))
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


def run_suite(args: argparse.Namespace) -> int:
    """``--suite bnlearn``: the BNLearn table (cached results are read back)."""
    families = expand_families(args.suite)
    count = 5 if args.count is None else args.count
    if not 1 <= count <= SPLIT_SIZES[args.split]:
        raise HeuresisError(f"--count must be in 1..{SPLIT_SIZES[args.split]}, got {count}")
    if args.budget is not None and not args.budget > 0:
        raise HeuresisError(f"--budget must be a positive number of seconds, got {args.budget}")
    if args.suite == "shelf":
        return run_shelf(args, count)
    started = time.perf_counter()
    total = len(families) * count * 3
    with Progress(total, "algorithm runs", unit="run") as bar:
        rows = compute_suite_table(families, args.split, count, n=args.n, workers=args.workers,
                                   n_resamples=args.resamples, progress=bar.update,
                                   budget=args.budget)
    n = 600 if args.n is None else args.n
    print(format_suite_table(rows, args.split, n))
    elapsed = time.perf_counter() - started
    print(f"\n{total} algorithm runs in {elapsed:.1f} s ({args.workers} worker(s))")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"suite": args.suite, "split": args.split, "n": n,
                                         "rows": [r.to_dict() for r in rows],
                                         "seconds": elapsed}, indent=2, default=str))
        print(f"wrote {args.json}")
    return 0


def run_shelf(args: argparse.Namespace, count: int) -> int:
    """``--suite shelf``: the whole BNLearn shelf (test split; BCA_φ on the dev split)."""
    if args.split != "test":
        raise HeuresisError("--suite shelf scores the test split (BCA_φ is selected on dev); "
                            "leave --split out")
    budget = SHELF_BUDGET if args.budget is None else args.budget
    n = 600 if args.n is None else args.n
    total = (len(SHELF_FULL) * 2 * count * len(REFERENCE_ALGORITHMS)
             + len(SHELF_LARGE) * count * len(SUITE_ALGORITHMS))
    started = time.perf_counter()
    with Progress(total, "algorithm runs", unit="run") as bar:
        rows = compute_shelf_table(count=count, n=args.n, workers=args.workers, budget=budget,
                                   progress=bar.update)
    elapsed = time.perf_counter() - started
    print(format_shelf_table(rows, n, budget))
    print(f"\n{total} algorithm runs in {elapsed:.1f} s ({args.workers} worker(s))")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"suite": "shelf", "n": n, "count": count,
                                         "budget": budget, "rows": [r.to_dict() for r in rows],
                                         "seconds": elapsed}, indent=2, default=str))
        print(f"wrote {args.json}")
    return 0


def edge_lines(name: str, edges_text: str, width: int = 100) -> str:
    """An algorithm's edges (one per line in ``edges_text``) as wrapped, indented lines:
    ``  pc-kci (3): a --> b, b --- c, c <-- d``."""
    import textwrap

    edges = [line.strip() for line in edges_text.splitlines() if line.strip()]
    text = f"{name} ({len(edges)}): " + (", ".join(edges) if edges else "no edge")
    return textwrap.fill(text, width=width, initial_indent="  ", subsequent_indent="      ",
                         break_long_words=False, break_on_hyphens=False)


def run_dataset(args: argparse.Namespace) -> int:
    """``--dataset``: every algorithm on one table, scored when the table has a graph."""
    instance = load_dataset(args.dataset, args.graph, anonymize=args.anonymize,
                            standardize=not args.no_standardize)
    algorithms = (REFERENCE_ALGORITHMS if args.algorithms is None
                  else tuple(a.strip() for a in args.algorithms.split(",") if a.strip()))
    for a in algorithms:
        get_algorithm(a)
    truth = instance.record.dag
    prepared = "standardized" if not args.no_standardize else "as given"
    print(f"{args.dataset}: {instance.n} rows × {instance.d} columns ({prepared}"
          f"{', anonymized' if args.anonymize else ''}); "
          + (f"graph {args.graph}: {truth.n_edges()} edges" if truth is not None
             else "no graph given: no ground truth, outputs are not scored"))
    def cell(scores: dict | None, key: str, digits: int = 3) -> str:
        value = (scores or {}).get(key)
        if value is None or (isinstance(value, float) and value != value):
            return "-"
        return f"{value:.{digits}f}" if digits else str(int(value))

    rows, lines = [], []
    for name in algorithms:
        record = reference_record(instance, name)
        result = record.graph_result()
        lines.append([name, result.graph.n_edges() if result.ok else "fail",
                      cell(record.scores, "f1"), cell(record.scores, "precision"),
                      cell(record.scores, "recall"), cell(record.scores, "shd", 0),
                      f"{float(record.result.get('runtime_seconds', 0.0)):.2f}",
                      "" if result.ok else result.error])
        rows.append({"algorithm": name, "scores": record.scores,
                     "edges": result.graph.to_text() if result.ok else None,
                     "error": result.error})
    if truth is not None and "pc-kci" in algorithms and reference_record(instance, "pc-kci").ok:
        scores = score_graph(ideal_oracle(instance), truth)
        lines.append(["oracle", scores["n_edges"], cell(scores, "f1"), cell(scores, "precision"),
                      cell(scores, "recall"), cell(scores, "shd", 0), "",
                      "(PC-KCI + wrongly deleted true edges)"])
        rows.append({"algorithm": "oracle", "scores": scores, "edges": None, "error": None})
    print(text_table(["algorithm", "edges", "F1", "precision", "recall", "SHD", "seconds", ""],
                     lines, align="<>>>>>><", indent="  "))
    print("\nDiscovered edges:")
    for row in rows:
        if row["edges"] is not None:
            print(edge_lines(row["algorithm"], row["edges"]))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"dataset": str(args.dataset),
                                         "graph": None if args.graph is None else str(args.graph),
                                         "ground_truth": truth is not None, "rows": rows},
                                        indent=2, default=str))
        print(f"wrote {args.json}")
    return 0
