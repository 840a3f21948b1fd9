"""``heuresis generate``: write a family's split (or every family's) to disk with a summary."""

from __future__ import annotations

import argparse

from heuresis_env.console import text_table
from heuresis_env.errors import HeuresisError
from heuresis_env.files import output_directory
from heuresis_env.generation.families import expand_families
from heuresis_env.generation.instances import (
    SPLIT_SIZES,
    STREAM_SPLITS,
    InstanceKey,
    generate_instance,
    save_split,
    split_directory,
)
from heuresis_env.generation.salts import sealing_salt
from heuresis_env.generation.sortability import r2_sortability, varsortability
from heuresis_env.progress import progress_bar

HELP = "generate instances of one family (or all) for a split and save them with a manifest"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", required=True,
                        help="a family name (lg, anm, hetero, wild, mixed, gauntlet, bnlearn-alarm, "
                             "or any registered one), several joined by commas, 'all' (the "
                             "six benchmark families) or 'bnlearn' (the seven BNLearn structures)")
    parser.add_argument("--split", required=True, choices=list(SPLIT_SIZES),
                        help="dev (indices 0-99), test (0-31; sealed by the secret in "
                             "$HEURESIS_TEST_SALT when it is set) or train (an unbounded stream "
                             "for learned policies, disjoint from dev and every test salt: "
                             "give --count)")
    parser.add_argument("--count", type=int, default=None,
                        help="generate only the first COUNT instances (default: the whole split; "
                             "required for train)")
    parser.add_argument("--start", type=int, default=0,
                        help="first index (default 0): indices START .. START+COUNT-1")
    parser.add_argument("--d", type=int, default=None,
                        help="variables per instance (default 10; a fixed structure's own)")
    parser.add_argument("--n", type=int, default=None, help="rows per instance (default 600)")
    parser.add_argument("--graph", choices=["er", "ba"], default=None,
                        help="graph model: Erdős–Rényi or Barabási–Albert (default er; none for a fixed structure)")
    parser.add_argument("--out", required=True,
                        help="output root; each split goes to OUT/<family>/<split>/")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def summarize(instances) -> dict[str, float]:
    """Mean edge count and sortability diagnostics of a list of instances (uses the record)."""
    import numpy as np

    edges, raw_varsort, varsort, r2sort = [], [], [], []
    for instance in instances:
        adjacency = instance.record.dag.directed_adjacency()
        scm = instance.record.scm
        raw = np.asarray(instance.X) * scm.column_sds + scm.column_means
        edges.append(int(adjacency.sum()))
        raw_varsort.append(varsortability(raw, adjacency))
        varsort.append(varsortability(instance.X, adjacency))
        r2sort.append(r2_sortability(instance.X, adjacency))

    def mean(values):
        finite = [v for v in values if v == v]
        return float(np.mean(finite)) if finite else float("nan")

    return {"count": len(instances), "mean_edges": mean(edges),
            "varsortability_raw": mean(raw_varsort), "varsortability": mean(varsort),
            "r2_sortability": mean(r2sort)}


def run(args: argparse.Namespace) -> int:
    import time

    families = expand_families(args.family)
    size = SPLIT_SIZES[args.split]
    if args.count is None and args.split in STREAM_SPLITS:
        raise HeuresisError(f"the {args.split} split is an unbounded stream: give --count")
    if not 0 <= args.start < size:
        raise HeuresisError(f"--start must be in 0..{size - 1} for the {args.split} split, "
                            f"got {args.start}")
    count = size - args.start if args.count is None else args.count
    if not 0 <= count <= size - args.start:
        raise HeuresisError(f"--count must be in 0..{size - args.start} for the {args.split} "
                            f"split from index {args.start}, got {count}")
    keys = {family: [InstanceKey(family, args.split, i, d=args.d, n=args.n,
                                 graph_model=args.graph)
                     for i in range(args.start, args.start + count)]
            for family in families}
    sealed = sealing_salt(args.split) is not None  # a weak salt is refused here
    output_directory(args.out, "output directory")  # a bad --out fails before any work
    rows = []
    with progress_bar(total=count * len(families), show=not args.no_progress, desc="generate",
                      unit="inst") as bar:
        for family in families:
            start = time.perf_counter()
            instances = []
            for key in keys[family]:
                instances.append(generate_instance(key))
                bar.update(1)
            directory = split_directory(args.out, family, args.split)
            save_split(instances, directory)
            seconds = time.perf_counter() - start
            # the sizes as resolved (a family's defaults, a fixed structure's own d), not the
            # options as typed, which are None when left to the defaults
            d, n, graph = (keys[family][0].size if keys[family]
                           else (args.d, args.n, args.graph))
            rows.append({"family": family, "d": d, "n": n, "graph": graph,
                         **summarize(instances), "seconds": seconds,
                         "directory": str(directory)})
    print(f"{args.split} split{', sealed test salt' if sealed else ''}")
    print(text_table(["family", "d", "n", "graph", "count", "edges", "varsort(raw)", "varsort",
                      "R2-sort", "seconds", "directory"],
                     [[row["family"], row["d"], row["n"], row["graph"], row["count"],
                       f"{row['mean_edges']:.2f}",
                       f"{row['varsortability_raw']:.3f}", f"{row['varsortability']:.3f}",
                       f"{row['r2_sortability']:.3f}", f"{row['seconds']:.2f}",
                       row["directory"]] for row in rows], align="<>><>>>>>><"))
    print("varsort(raw): before standardization; varsort and R2-sort: of the data as shipped "
          "(0.5 = chance).")
    return 0
