"""``heuresis amortized`` (also ``python -m agents.amortized``): the amortized models' front
door — the first model's evidence shards, training, learning curve, leave-one-family-out study,
costs and evaluation; the directed model's training stream, fitting and offline study. One
function per subcommand in :mod:`agents.amortized.commands`, imported in :func:`run` (torch
loads there, not when ``heuresis --help`` reads these arguments)."""

from __future__ import annotations

import argparse

HELP = ("The amortized models: build evidence or a training stream, train, evaluate, and "
        "the design study's scores (docs/amortized.md).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="amortized_command", required=True,
                                     metavar="SUBCOMMAND")
    for add in (_data_arguments, _train_arguments, _curve_arguments, _lofo_arguments,
                _costs_arguments, _evaluate_arguments, _stream_arguments, _fit_arguments,
                _study_arguments):
        add(commands)


def _common(sub: argparse.ArgumentParser) -> None:
    """The instance size."""
    sub.add_argument("--d", type=int, default=10)
    sub.add_argument("--n", type=int, default=600)


def _training(sub: argparse.ArgumentParser) -> None:
    """The first model's training options."""
    sub.add_argument("--data", required=True, help="the shard directory (train and dev)")
    sub.add_argument("--epochs", type=int, default=40)
    sub.add_argument("--batch-size", type=int, default=32)
    sub.add_argument("--learning-rate", type=float, default=1e-3)
    sub.add_argument("--hidden", type=int, default=64)
    sub.add_argument("--layers", type=int, default=2)
    sub.add_argument("--seed", type=int, default=0)
    sub.add_argument("--threads", type=int, default=1, help="torch threads")
    sub.add_argument("--resamples", type=int, default=10_000)
    sub.add_argument("--verbose", action="store_true", help="print every epoch")


def _data_arguments(commands: argparse._SubParsersAction) -> None:
    data = commands.add_parser("data", help="compute labelled evidence grids as shards")
    _common(data)
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


def _train_arguments(commands: argparse._SubParsersAction) -> None:
    train = commands.add_parser("train", help="train the grid model on train shards; score dev")
    _common(train)
    _training(train)
    train.add_argument("--per-family", type=int, default=None,
                       help="the first N train instances of each family (default: all)")
    train.add_argument("--exclude", default="", help="families left out (comma-separated)")
    train.add_argument("--out", required=True, help="write the model here")


def _curve_arguments(commands: argparse._SubParsersAction) -> None:
    curve = commands.add_parser("curve", help="the learning curve: dev gain vs train size")
    _common(curve)
    _training(curve)
    curve.add_argument("--sizes", default="2,17,167,all",
                       help="train instances per family of each point")
    curve.add_argument("--out", required=True, help="write curve.json and curve.png here")


def _lofo_arguments(commands: argparse._SubParsersAction) -> None:
    lofo = commands.add_parser(
        "lofo", help="leave one family out: train on five families, score the sixth's split "
                     "instances beside the model trained on all six")
    _common(lofo)
    _training(lofo)
    lofo.add_argument("--per-family", type=int, default=None,
                      help="the first N train instances of each family (default: all)")
    lofo.add_argument("--families", default="all", help="the families held out in turn")
    lofo.add_argument("--split", default="test", choices=("dev", "test"))
    lofo.add_argument("--count", type=int, default=None, help="instances per family")
    lofo.add_argument("--workers", type=int, default=1)
    lofo.add_argument("--out", required=True, help="write the models and lofo.json here")


def _costs_arguments(commands: argparse._SubParsersAction) -> None:
    costs = commands.add_parser("costs", help="seconds per instance of each part of the grid")
    _common(costs)
    costs.add_argument("--data", required=True)
    costs.add_argument("--split", default="train", choices=("train", "dev"))


def _evaluate_arguments(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser("evaluate", help="score a model on a split, in memory "
                                                    "($HEURESIS_TEST_SALT seals test)")
    _common(evaluate)
    evaluate.add_argument("--model", default=None, help="default: the shipped model")
    evaluate.add_argument("--families", default="all")
    evaluate.add_argument("--split", default="test", choices=("dev", "test", "train"))
    evaluate.add_argument("--start", type=int, default=0)
    evaluate.add_argument("--count", type=int, default=None)
    evaluate.add_argument("--workers", type=int, default=1)
    evaluate.add_argument("--resamples", type=int, default=10_000)
    evaluate.add_argument("--json", default=None)


def _stream_arguments(commands: argparse._SubParsersAction) -> None:
    stream = commands.add_parser("stream", help="the directed model's training stream: pair "
                                                "statistics, rows and labels of a train prior")
    stream.add_argument("--prior", default="wide", help="train prior: wide (default) or "
                                                        "benchmark")
    stream.add_argument("--start", type=int, default=0, help="first train index")
    stream.add_argument("--count", type=int, required=True, help="instances (a multiple of "
                                                                  "--shard-size)")
    stream.add_argument("--shard-size", type=int, default=100)
    stream.add_argument("--workers", type=int, default=1)
    stream.add_argument("--out", required=True, help="the shard folder (kept shards resume)")
    stream.add_argument("--screens", action="store_true",
                        help="also write each shard's local screen beside it (from its "
                             "stored rows; kept screens resume)")


def _fit_arguments(commands: argparse._SubParsersAction) -> None:
    fit = commands.add_parser("fit", help="train or resume a directed (or AVICI) model on "
                                          "stream shards")
    fit.add_argument("--data", required=True, help="the stream's shard folder")
    fit.add_argument("--prior", default=None, help="read only this prior's shards")
    fit.add_argument("--architecture", default="directed", choices=("directed", "avici"))
    fit.add_argument("--config", default="", help='the model\'s settings as JSON, e.g. '
                                                  '\'{"row_layers": 0}\'')
    fit.add_argument("--steps", type=int, default=6000)
    fit.add_argument("--stop-at", type=int, default=None,
                     help="stop after this step (checkpointed); run again to go on")
    fit.add_argument("--batch-cells", type=int, default=1600)
    fit.add_argument("--learning-rate", type=float, default=5e-4)
    fit.add_argument("--checkpoint-every", type=int, default=200)
    fit.add_argument("--shards", type=int, default=None,
                     help="train on exactly the first N shards (a fixed, recorded set; "
                          "default: every shard, read again as the stream grows)")
    fit.add_argument("--init", default=None,
                     help="start from this model folder (e.g. agents/data/amortized_v2) "
                          "instead of random weights")
    fit.add_argument("--exclude", default="",
                     help="families never read (comma-separated): leave-one-family-out")
    fit.add_argument("--seed", type=int, default=0)
    fit.add_argument("--threads", type=int, default=1, help="torch threads")
    fit.add_argument("--out", required=True, help="checkpoints, history.jsonl and the model")


def _study_arguments(commands: argparse._SubParsersAction) -> None:
    study = commands.add_parser("study", help="score directed models and the references "
                                              "(F1, SHD, nSHD, best cut) on a split")
    study.add_argument("--model", action="append", default=[],
                       help="LABEL=FOLDER of a directed or AVICI model (repeat the option); "
                            "LABEL=FOLDER+FOLDER… a seed ensemble (probabilities averaged)")
    study.add_argument("--records", action="append", default=[],
                       help="summarize the records a study wrote with --json (repeat the "
                            "option to pool runs, e.g. family groups run in parallel) "
                            "instead of scoring")
    study.add_argument("--families", default="all")
    study.add_argument("--split", default="dev", choices=("dev", "test", "train"))
    study.add_argument("--start", type=int, default=0)
    study.add_argument("--count", type=int, default=None)
    study.add_argument("--d", type=int, default=10)
    study.add_argument("--n", type=int, default=600)
    study.add_argument("--tta", type=int, default=4, help="row subsamples averaged")
    study.add_argument("--resamples", type=int, default=10_000)
    study.add_argument("--first-model", action="store_true",
                       help="score the first (shipped) amortized model beside them")
    study.add_argument("--blend", default="",
                       help="comma-separated weights w: arms whose skeleton is the expected-F1 "
                            "selection from w * the first model's P(adjacent) + (1 - w) * the "
                            "directed model's (needs --first-model)")
    study.add_argument("--versus", default="",
                       help="an arm every arm is also compared with (F1 and nSHD, paired), "
                            "e.g. all:f1-dag beside lofo:f1-dag")
    study.add_argument("--json", default=None, help="write every instance's scores here")


def run(args: argparse.Namespace) -> int:
    from agents.amortized.commands import COMMANDS

    return COMMANDS[args.amortized_command](args)
