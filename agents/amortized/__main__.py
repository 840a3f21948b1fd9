"""``python -m agents.amortized``: build evidence shards, train the grid model, draw its learning
curve, evaluate it (docs/amortized.md has every command that made the shipped model)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from agents.amortized.dataset import ExampleSet, build_shards, examples_of, load_examples
from agents.amortized.evaluation import (
    cost_table,
    outcome_table,
    score_examples,
    summarize_scores,
    transfer_summary,
    transfer_table,
    write_scores,
)
from agents.amortized.model import load_model, save_model
from agents.amortized.plots import plot_curve
from agents.amortized.training import TrainingSettings, train_model
from heuresis_env.errors import HeuresisError
from heuresis_env.generation import (
    BENCHMARK_FAMILIES,
    InstanceKey,
    default_count,
    expand_families,
    get_source,
    sealing_salt,
)


def _say(message: str) -> None:
    print(time.strftime("%H:%M:%S"), message, file=sys.stderr, flush=True)


def _shards(data: str | Path, split: str, d: int, n: int) -> list[Path]:
    paths = sorted(Path(data).glob(f"*-{split}-d{d}-n{n}-*.npz"))
    if not paths:
        raise HeuresisError(f"no {split} shards of d={d}, n={n} in {data} (build them with "
                            f"`python -m agents.amortized data --split {split} ...`)")
    return paths


def training_subset(examples: ExampleSet, per_family: int | None,
                    exclude: Sequence[str] = ()) -> ExampleSet:
    """The first ``per_family`` train instances (by index) of each family not excluded."""
    keep = np.ones(len(examples), dtype=bool)
    for family in set(examples.family.tolist()):
        members = examples.family == family
        if family in exclude:
            keep &= ~members
        elif per_family is not None:
            ranks = np.argsort(np.argsort(np.where(members, examples.index, np.iinfo(np.int64).max)))
            keep &= ~members | (ranks < per_family)
    return examples.subset(keep)


def _settings(args: argparse.Namespace) -> TrainingSettings:
    return TrainingSettings(epochs=args.epochs, batch_size=args.batch_size,
                            learning_rate=args.learning_rate, seed=args.seed,
                            threads=args.threads, hidden=args.hidden, layers=args.layers)


def _train_and_score(args: argparse.Namespace, per_family: int | None,
                     exclude: Sequence[str] = ()) -> dict[str, Any]:
    train = training_subset(load_examples(_shards(args.data, "train", args.d, args.n)),
                            per_family, exclude)
    _say(f"training on {len(train)} train instances "
         f"({', '.join(f'{f} {int(np.sum(train.family == f))}' for f in sorted(set(train.family.tolist())))})")
    result = train_model(train, _settings(args), progress=_say if args.verbose else None)
    dev = load_examples(_shards(args.data, "dev", args.d, args.n))
    scores = score_examples(result.model, dev)
    summary = summarize_scores(scores, n_resamples=args.resamples)
    return {"result": result, "scores": scores, "summary": summary,
            "train_instances": len(train)}


def _leave_one_family_out(args: argparse.Namespace) -> int:
    """Train on all families and on each five; score each held-out family's instances."""
    families = expand_families(args.families)
    salt = sealing_salt(args.split)
    shards = load_examples(_shards(args.data, "train", args.d, args.n))
    missing = sorted(set(families) - set(shards.family.tolist()))
    if missing:
        raise HeuresisError(f"no train instances of {', '.join(missing)} in {args.data}: "
                            f"leaving a family out of training needs it in the training data")
    held = {family: examples_of([InstanceKey(family, args.split, i, d=args.d, n=args.n)
                                 for i in range(default_count(family, args.split, args.count))],
                                salt, args.workers, progress=_say)
            for family in families}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python -m agents.amortized " + " ".join(sys.argv[1:])
    models = {}
    for excluded in [None, *families]:
        name = "all" if excluded is None else f"without-{excluded}"
        train = training_subset(shards, args.per_family, [excluded] if excluded else [])
        _say(f"{name}: training on {len(train)} train instances")
        result = train_model(train, _settings(args), progress=_say if args.verbose else None)
        save_model(result.model, out / name,
                   {"name": name, "command": command, "train_instances": len(train),
                    "excluded": [excluded] if excluded else [],
                    "settings": vars(result.settings), "training": result.summary()})
        models[name] = result.model
    rows, scores = {}, {}
    for family in families:
        without = score_examples(models[f"without-{family}"], held[family])
        with_family = score_examples(models["all"], held[family])
        rows[family] = transfer_summary(without, with_family, n_resamples=args.resamples)
        scores[family] = {"without": [asdict(s) for s in without],
                          "with": [asdict(s) for s in with_family]}
    (out / "lofo.json").write_text(json.dumps(
        {"command": command, "split": args.split, "sealed": salt is not None,
         "per_family": args.per_family, "summary": rows, "scores": scores}, indent=1) + "\n")
    print(f"{args.split} split{' (sealed by $HEURESIS_TEST_SALT)' if salt else ''}, "
          f"leave one family out")
    print(transfer_table(rows))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.amortized", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    def common(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--d", type=int, default=10)
        sub.add_argument("--n", type=int, default=600)

    def training(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--data", required=True, help="the shard directory (train and dev)")
        sub.add_argument("--epochs", type=int, default=TrainingSettings.epochs)
        sub.add_argument("--batch-size", type=int, default=TrainingSettings.batch_size)
        sub.add_argument("--learning-rate", type=float, default=TrainingSettings.learning_rate)
        sub.add_argument("--hidden", type=int, default=TrainingSettings.hidden)
        sub.add_argument("--layers", type=int, default=TrainingSettings.layers)
        sub.add_argument("--seed", type=int, default=0)
        sub.add_argument("--threads", type=int, default=1, help="torch threads")
        sub.add_argument("--resamples", type=int, default=10_000)
        sub.add_argument("--verbose", action="store_true", help="print every epoch")

    data = commands.add_parser("data", help="compute labelled evidence grids as shards")
    common(data)
    data.add_argument("--families", default="all")
    data.add_argument("--split", default="train", choices=("train", "dev"))
    data.add_argument("--start", type=int, default=0)
    data.add_argument("--count", type=int, required=True, help="instances per family")
    data.add_argument("--workers", type=int, default=1)
    data.add_argument("--shard-size", type=int, default=50)
    data.add_argument("--backend", default="local", choices=("local", "ray"),
                      help="local worker processes or Ray tasks (a local cluster, or --address)")
    data.add_argument("--address", default=None, help="an existing Ray cluster's address")
    data.add_argument("--out", required=True)

    train = commands.add_parser("train", help="train the grid model on train shards; score dev")
    common(train)
    training(train)
    train.add_argument("--per-family", type=int, default=None,
                       help="the first N train instances of each family (default: all)")
    train.add_argument("--exclude", default="", help="families left out (comma-separated)")
    train.add_argument("--out", required=True, help="write the model here")

    curve = commands.add_parser("curve", help="the learning curve: dev gain vs train size")
    common(curve)
    training(curve)
    curve.add_argument("--sizes", default="2,17,167,all",
                       help="train instances per family of each point")
    curve.add_argument("--out", required=True, help="write curve.json and curve.png here")

    lofo = commands.add_parser(
        "lofo", help="leave one family out: train on five families, score the sixth's split "
                     "instances beside the model trained on all six")
    common(lofo)
    training(lofo)
    lofo.add_argument("--per-family", type=int, default=None,
                      help="the first N train instances of each family (default: all)")
    lofo.add_argument("--families", default="all", help="the families held out in turn")
    lofo.add_argument("--split", default="test", choices=("dev", "test"))
    lofo.add_argument("--count", type=int, default=None, help="instances per family")
    lofo.add_argument("--workers", type=int, default=1)
    lofo.add_argument("--out", required=True, help="write the models and lofo.json here")

    costs = commands.add_parser("costs", help="seconds per instance of each part of the grid")
    common(costs)
    costs.add_argument("--data", required=True)
    costs.add_argument("--split", default="train", choices=("train", "dev"))

    evaluate = commands.add_parser("evaluate", help="score a model on a split, in memory "
                                                    "($HEURESIS_TEST_SALT seals test)")
    common(evaluate)
    evaluate.add_argument("--model", default=None, help="default: the shipped model")
    evaluate.add_argument("--families", default="all")
    evaluate.add_argument("--split", default="test", choices=("dev", "test", "train"))
    evaluate.add_argument("--start", type=int, default=0)
    evaluate.add_argument("--count", type=int, default=None)
    evaluate.add_argument("--workers", type=int, default=1)
    evaluate.add_argument("--resamples", type=int, default=10_000)
    evaluate.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    if args.command == "data":
        build_shards(expand_families(args.families), args.split,
                     range(args.start, args.start + args.count), args.out, d=args.d, n=args.n,
                     workers=args.workers, shard_size=args.shard_size, progress=_say,
                     backend=args.backend, address=args.address)
        return 0
    if args.command == "costs":
        print(cost_table(load_examples(_shards(args.data, args.split, args.d, args.n))))
        return 0
    if args.command == "train":
        exclude = [f for f in args.exclude.split(",") if f]
        out = _train_and_score(args, args.per_family, exclude)
        result = out["result"]
        provenance = {
            "name": Path(args.out).name, "command": "python -m agents.amortized " +
            " ".join(sys.argv[1:] if argv is None else argv),
            "train_instances": out["train_instances"], "excluded": exclude,
            "settings": vars(result.settings), "training": result.summary(),
            "dev": out["summary"]}
        save_model(result.model, args.out, provenance)
        write_scores(Path(args.out) / "dev_scores.json", out["scores"])
        print(outcome_table(out["summary"]))
        return 0
    if args.command == "lofo":
        return _leave_one_family_out(args)
    if args.command == "curve":
        points = []
        for size in args.sizes.split(","):
            per_family = None if size == "all" else int(size)
            out = _train_and_score(args, per_family)
            row = out["summary"]
            points.append({"per_family": size, "train_instances": out["train_instances"],
                           "best_epoch": out["result"].best_epoch,
                           "seconds": round(out["result"].seconds, 1),
                           "dev": row})
            _say(f"{size} per family: dev gain {row['all']['delta_pc_kci']}, "
                 f"wild {row['wild']['delta_pc_kci'] if 'wild' in row else '-'}")
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "curve.json").write_text(json.dumps(points, indent=1) + "\n")
        plot_curve(points, Path(args.out) / "curve.png")
        for point in points:
            print(f"## {point['per_family']} per family ({point['train_instances']} instances)")
            print(outcome_table(point["dev"]))
        return 0
    model, _ = load_model(args.model) if args.model else load_model(
        Path(__file__).resolve().parents[1] / "data" / "amortized")
    families = [name for part in args.families.split(",") if part
                for name in ([part] if get_source(part) is not None else expand_families(part))]
    salt = sealing_salt(args.split)
    scores = []
    for family in families:  # one family at a time: families may differ in d
        d, n = ((args.d, args.n) if family in BENCHMARK_FAMILIES
                else (None, None) if get_source(family) is not None else (None, args.n))
        count = default_count(family, args.split, args.count)
        keys = [InstanceKey(family, args.split, i, d=d, n=n)
                for i in range(args.start, args.start + count)]
        examples = examples_of(keys, salt, args.workers, progress=_say)
        scores += score_examples(model, examples)
    summary = summarize_scores(scores, n_resamples=args.resamples)
    if args.json:
        write_scores(args.json, scores, {"summary": summary, "split": args.split,
                                         "sealed": salt is not None,
                                         "model": str(args.model or "shipped")})
    print(f"{args.split} split{' (sealed by $HEURESIS_TEST_SALT)' if salt else ''}, "
          f"{len(scores)} instances")
    print(outcome_table(summary))
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except HeuresisError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
