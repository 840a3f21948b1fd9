"""``heuresis discover data.csv``: the learned directed model's causal graph of a user's table,
with each edge's probability and direction (:func:`agents.amortized.discover`).

Imports :mod:`agents.amortized` (torch) only in :func:`run`, as every command module of
``agents`` does: ``heuresis --help`` reads each command's arguments without loading torch.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = ("Learn a causal graph from your own table (CSV) with the shipped directed model: "
        "each edge with its probability and direction.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("table", help="CSV file: a header row of column names, then numbers")
    parser.add_argument("--model", default=None,
                        help="folder of a directed model (model.json + model.npz); default: "
                             "the one shipped with the package")
    parser.add_argument("--skeleton", default="f1", choices=["f1", "shd"],
                        help="f1: the expected-F1 edge set (default); shd: each pair's most "
                             "probable class (fewer, surer edges)")
    parser.add_argument("--orient", default="dag", choices=["dag", "cpdag"],
                        help="dag: every edge directed (default); cpdag: edges whose direction "
                             "is uncertain stay undirected")
    parser.add_argument("--tta", type=int, default=4,
                        help="row subsamples the model reads and averages (default 4)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="also write the graph, every edge's probabilities and the full "
                             "P(i -> j) matrix as JSON")


def run(args: argparse.Namespace) -> int:
    from agents.amortized import SHIPPED_DIRECTED, discover, load_directed
    from heuresis_env.errors import HeuresisError
    from heuresis_env.files import atomic_write_bytes
    from heuresis_env.generation import read_table

    if args.tta < 1 or args.tta > 64:
        raise HeuresisError(f"--tta must be between 1 and 64, got {args.tta}")
    where = Path(args.model) if args.model else SHIPPED_DIRECTED
    if not (where / "model.json").exists():
        raise HeuresisError(f"no directed model in {where} (pass --model FOLDER, a model "
                            "trained with `python -m agents.amortized fit`)")
    model, record = load_directed(where)
    data, names = read_table(args.table)
    result = discover(data, names, model, args.skeleton, args.orient, args.tta,
                      label=str(record.get("provenance", {}).get("name") or where))
    print(f"{len(names)} variables, {data.shape[0]} rows; model {result.model}")
    print(f"{'edge':<32} {'P(adjacent)':>11} {'P(direction)':>12}")
    for edge in result.edges():
        arrow = "-->" if edge["directed"] else "---"
        text = f"{edge['from']} {arrow} {edge['to']}"
        print(f"{text:<32} {edge['p_adjacent']:>11.3f} {edge['p_direction']:>12.3f}")
    if not result.edges():
        print("(no edges)")
    if args.json:
        atomic_write_bytes(Path(args.json),
                           (json.dumps(result.to_dict(), indent=1) + "\n").encode())
        print(f"wrote {args.json}", file=sys.stderr)
    return 0
