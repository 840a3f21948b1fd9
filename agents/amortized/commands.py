"""The subcommands of ``heuresis amortized`` (and ``python -m agents.amortized``), one
function each: the first model's evidence shards, training, learning curve, leave-one-family-out
study, costs and evaluation, and the directed model's stream, fitting and offline study. The
arguments are :mod:`agents.amortized.cli`'s; docs/amortized.md has every command that made a
shipped model."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from agents.amortized.dataset import ExampleSet, build_shards, examples_of, load_examples
from agents.amortized.directed import load_directed
from agents.amortized.evaluation import (
    cost_table,
    outcome_table,
    score_examples,
    summarize_scores,
    transfer_summary,
    transfer_table,
    write_scores,
)
from agents.amortized.fit import FitSettings, fit_directed
from agents.amortized.inference import check_blend_weight
from agents.amortized.model import load_model, save_model
from agents.amortized.plots import plot_curve
from agents.amortized.stream import build_screens, build_stream
from agents.amortized.study import (
    STUDY_REFERENCES,
    read_records,
    score_directed,
    summarize_directed,
    write_records,
)
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


def lofo_command(args: argparse.Namespace) -> int:
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
    command = _command_line(args)
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


def data_command(args: argparse.Namespace) -> int:
    """Labelled evidence grids of the first model, as shards."""
    build_shards(expand_families(args.families), args.split,
                 range(args.start, args.start + args.count), args.out, d=args.d, n=args.n,
                 workers=args.workers, shard_size=args.shard_size, progress=_say,
                 backend=args.backend, address=args.address)
    return 0


def costs_command(args: argparse.Namespace) -> int:
    """Seconds per instance of each part of the grid."""
    print(cost_table(load_examples(_shards(args.data, args.split, args.d, args.n))))
    return 0


def train_command(args: argparse.Namespace) -> int:
    """Train the grid model on train shards; score dev."""
    exclude = [f for f in args.exclude.split(",") if f]
    out = _train_and_score(args, args.per_family, exclude)
    result = out["result"]
    provenance = {
        "name": Path(args.out).name, "command": _command_line(args),
        "train_instances": out["train_instances"], "excluded": exclude,
        "settings": vars(result.settings), "training": result.summary(),
        "dev": out["summary"]}
    save_model(result.model, args.out, provenance)
    write_scores(Path(args.out) / "dev_scores.json", out["scores"])
    print(outcome_table(out["summary"]))
    return 0


def curve_command(args: argparse.Namespace) -> int:
    """The learning curve: dev gain against the number of training instances."""
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


def _split_keys(args: argparse.Namespace) -> list[list[InstanceKey]]:
    """The keys of ``--families`` (families, groups or data tables) on ``--split``, one list
    per family (families may differ in d)."""
    families = [name for part in args.families.split(",") if part
                for name in ([part] if get_source(part) is not None else expand_families(part))]
    out = []
    for family in families:
        d, n = ((args.d, args.n) if family in BENCHMARK_FAMILIES
                else (None, None) if get_source(family) is not None else (None, args.n))
        count = default_count(family, args.split, args.count)
        out.append([InstanceKey(family, args.split, i, d=d, n=n)
                    for i in range(args.start, args.start + count)])
    return out


def evaluate_command(args: argparse.Namespace) -> int:
    """Score the first model on a split, in memory ($HEURESIS_TEST_SALT seals test)."""
    model, _ = load_model(args.model) if args.model else load_model(
        Path(__file__).resolve().parents[1] / "data" / "amortized")
    salt = sealing_salt(args.split)
    scores = []
    for keys in _split_keys(args):
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


def stream_command(args: argparse.Namespace) -> int:
    """The directed model's training stream: statistics, rows and labels as shards."""
    paths = build_stream(args.prior, args.start, args.count, args.out, workers=args.workers,
                         shard_size=args.shard_size, progress=_say)
    if args.screens:
        build_screens(paths, workers=args.workers, progress=_say)
    return 0


def fit_command(args: argparse.Namespace) -> int:
    """Train (or resume) a directed or AVICI model on the stream's shards."""
    settings = FitSettings(architecture=args.architecture, steps=args.steps,
                           batch_cells=args.batch_cells, learning_rate=args.learning_rate,
                           seed=args.seed, threads=args.threads, stop_at=args.stop_at,
                           checkpoint_every=args.checkpoint_every, shards=args.shards,
                           init=args.init,
                           exclude_families=tuple(f for f in args.exclude.split(",") if f))
    config = json.loads(args.config) if args.config else {}
    if not isinstance(config, dict):
        raise HeuresisError(f"--config must be a JSON object, got {args.config!r}")
    where = fit_directed(args.data, args.out, settings, config, prior=args.prior,
                         progress=_say)
    print(where)
    return 0


def study_command(args: argparse.Namespace) -> int:
    """Score directed models (and the references) on a split: F1, SHD, nSHD, best cut; or,
    with ``--records``, summarize the records earlier studies wrote."""
    if args.records:
        if args.model:
            raise HeuresisError("--records summarizes saved records; give no --model")
        records = read_records(args.records)
        splits = sorted({r.split for r in records})
        header = f"{', '.join(splits)} records from {len(args.records)} file(s)"
    else:
        if not args.model:
            raise HeuresisError("study needs --model LABEL=FOLDER (or --records FILE)")
        models = {}
        for spec in args.model:
            label, _, folders = spec.partition("=")
            if not folders or not all(folders.split("+")):
                raise HeuresisError(f"--model takes LABEL=FOLDER or LABEL=FOLDER+FOLDER…, got "
                                    f"{spec!r}")
            members = [load_directed(folder)[0] for folder in folders.split("+")]
            models[label] = members[0] if len(members) == 1 else members
        salt = sealing_salt(args.split)
        first = load_model(Path(__file__).resolve().parents[1] / "data" / "amortized")[0] \
            if args.first_model else None
        blends = _weights(args.blend)
        if blends and first is None:
            raise HeuresisError("--blend needs --first-model (the first model's P(adjacent))")
        records = []
        for keys in _split_keys(args):
            records += score_directed(models, keys, salt, tta=args.tta, first_model=first,
                                      blends=blends, progress=_say)
        header = f"{args.split} split{' (sealed by $HEURESIS_TEST_SALT)' if salt else ''}"
    arms = sorted({arm for r in records for arm in r.scores
                   if ":" in arm and not arm.endswith("best-cut")})
    versus = args.versus or None
    if versus is not None and versus not in arms:
        raise HeuresisError(f"--versus {versus!r} is not an arm of this study; its arms: "
                            f"{', '.join(arms)}")
    summary = summarize_directed(records, arms, references=(*STUDY_REFERENCES,
                                                            *([versus] if versus else [])),
                                 n_resamples=args.resamples)
    if args.json:
        write_records(records, args.json)
        Path(args.json).with_suffix(".summary.json").write_text(
            json.dumps({"split": args.split, "models": args.model, "records": args.records,
                        "summary": summary}, indent=1) + "\n")
    print(f"{header}, {len(records)} instances")
    print(study_table(summary, arms, versus))
    return 0


def _weights(text: str) -> list[float]:
    try:
        weights = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise HeuresisError(f"--blend takes comma-separated weights in [0, 1], got {text!r}") \
            from None
    return [check_blend_weight(weight) for weight in weights]


def study_table(summary: dict[str, Any], arms: Sequence[str], versus: str | None = None) -> str:
    """One row per family and arm: F1, nSHD and their differences from PC-KCI, BCA_φ, BOSS
    and the first model (and from the arm ``versus``, when given)."""
    extra = (f" F1 - {versus} [95%] | nSHD - {versus} [95%] |", "---|---|") if versus else ("", "")
    lines = ["| family | arm | F1 | SHD | nSHD | F1 - PC-KCI [95%] | F1 - BCA [95%] | "
             "nSHD - BCA [95%] | F1 - BOSS [95%] | nSHD - BOSS [95%] | F1 - v1 [95%] | "
             f"nSHD - v1 [95%] | best cut |{extra[0]}",
             f"|---|---|---|---|---|---|---|---|---|---|---|---|---|{extra[1]}"]
    for family, row in summary.items():
        for arm in [*arms, "pc-kci", "bca", "boss", "v1", "oracle"]:
            if arm not in row:
                continue
            deltas = row.get("delta", {})
            cell = functools.partial(_interval_cell, deltas)
            best = (row.get(f"{arm}:best-cut") or row.get(f"{arm.split(':')[0]}:best-cut", {})
                    ).get("f1") if ":" in arm else None
            lines.append(f"| {family} | {arm} | {row[arm]['f1']:.3f} | "
                         f"{row[arm].get('shd', float('nan')):.2f} | "
                         f"{row[arm].get('nshd', float('nan')):.3f} | "
                         f"{cell(f'{arm} - pc-kci f1')} | {cell(f'{arm} - bca f1')} | "
                         f"{cell(f'{arm} - bca nshd')} | {cell(f'{arm} - boss f1')} | "
                         f"{cell(f'{arm} - boss nshd')} | {cell(f'{arm} - v1 f1')} | "
                         f"{cell(f'{arm} - v1 nshd')} | "
                         f"{'' if best is None else f'{best:.3f}'} |"
                         + (f" {cell(f'{arm} - {versus} f1')} | "
                            f"{cell(f'{arm} - {versus} nshd')} |" if versus else ""))
    return "\n".join(lines)


def _interval_cell(deltas: dict[str, Any], key: str) -> str:
    value = deltas.get(key)
    return ("" if value is None else
            f"{value['mean']:+.3f} [{value['low']:+.3f}, {value['high']:+.3f}]")


def _command_line(args: argparse.Namespace) -> str:
    return "python -m agents.amortized " + " ".join(getattr(args, "argv", None) or sys.argv[1:])


#: subcommand name → its function
COMMANDS = {"data": data_command, "costs": costs_command, "train": train_command,
            "curve": curve_command, "lofo": lofo_command, "evaluate": evaluate_command,
            "stream": stream_command, "fit": fit_command, "study": study_command}
