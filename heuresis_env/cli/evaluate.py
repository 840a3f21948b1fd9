"""``heuresis evaluate``: run a policy on benchmark episodes into a resumable run directory."""

from __future__ import annotations

import argparse
import sys

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.policies import parse_policy_options
from heuresis_env.generation.datasets import one_instance_note
from heuresis_env.generation.instances import get_source
from heuresis_env.generation.salts import TEST_SALT_ENV, sealing_salt
from heuresis_env.policy import EpisodeSettings

HELP = ("run a policy on the instances of one family (or all) under identical budgets, "
        "resumably, into a run directory")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", required=True, metavar="SPEC",
                        help="a registered policy name (entry points 'heuresis.policies') or "
                             "module:attr for any factory returning a Policy")
    parser.add_argument("--policy-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option passed to the policy factory (VALUE read as JSON when "
                             "it parses, else as text); repeatable")
    _instance_arguments(parser)
    _budget_arguments(parser.add_argument_group(
        "budgets and options (identical for every policy)"))
    _run_arguments(parser)


def _instance_arguments(parser: argparse.ArgumentParser) -> None:
    """Which instances (or which table) the episodes play, and the task."""
    parser.add_argument("--family", default="all",
                        help="a family name (lg, anm, hetero, wild, mixed, gauntlet, "
                             "bnlearn-alarm, sachs, or any registered one), several joined by "
                             "commas, 'all' (the six benchmark families; default) or 'bnlearn' (the "
                             "seven BNLearn structures); with -int (wild-int, all-int) the same "
                             "with an experiment budget of 500 rows (docs/experiments.md)")
    parser.add_argument("--dataset", default=None, metavar="CSV",
                        help="play your own table: a CSV with a header row of column names "
                             "(then --family is not needed)")
    parser.add_argument("--graph", default=None, metavar="EDGE_LIST",
                        help="with --dataset: its graph, one 'A --> B' or 'A --- B' per line; "
                             "without it episodes run unscored (no ground truth)")
    parser.add_argument("--anonymize", action="store_true",
                        help="with --dataset: rename the columns X1..Xd in random order")
    parser.add_argument("--no-standardize", action="store_true",
                        help="with --dataset: keep the values as given (default: standardize)")
    parser.add_argument("--split", choices=["dev", "test", "train"], default="test",
                        help="instances of the dev (0-99) or test (0-31) split (default test; "
                             "sealed by $HEURESIS_TEST_SALT when it is set), or of the train "
                             "stream (give --count)")
    parser.add_argument("--count", type=int, default=None,
                        help="the first COUNT instances of each family (default: the split); "
                             "with --task qa the first COUNT questions of each family's set")
    parser.add_argument("--task", choices=["graph", "qa"], default="graph",
                        help="graph: recover the whole graph (default); qa: answer one causal "
                             "question per episode from the split's question set "
                             "(docs/questions.md)")
    parser.add_argument("--names", choices=["anonymous", "decoy"], default="anonymous",
                        help="question runs: column names X1..Xd (default) or decoy domain "
                             "words attached at random")


def _budget_arguments(budgets: argparse._ArgumentGroup) -> None:
    """An episode's budgets and options, the defaults :class:`EpisodeSettings`'s."""
    defaults = EpisodeSettings()
    budgets.add_argument("--max-steps", type=int, default=defaults.max_steps,
                         help=f"step budget per episode (default {defaults.max_steps})")
    budgets.add_argument("--max-seconds", type=float, default=defaults.max_seconds,
                         help=f"wall-time budget per episode (default {defaults.max_seconds:g})")
    budgets.add_argument("--token-budget", type=int, default=defaults.token_budget_per_turn,
                         help="tokens per turn for language-model policies (default "
                              f"{defaults.token_budget_per_turn})")
    budgets.add_argument("--experiments", type=int, default=None, metavar="ROWS",
                         help="experiment budget in rows for any family: the intervene tool "
                              "draws rows under do() from the hidden model (default: 0, the "
                              "observational benchmark; 500 for the -int families)")
    budgets.add_argument("--guided", action=argparse.BooleanOptionalAction,
                         default=defaults.guided,
                         help="start from PC-KCI's output with the deletion log (default: no)")
    budgets.add_argument("--toolbox", choices=["full", "minimal", "code"],
                         default=defaults.toolbox,
                         help="full, or minimal: no code tool, stability or orientation probes, "
                              "or code: only run_code and the tool that ends the episode")
    budgets.add_argument("--target", choices=["none", "cpdag", "dag"], default=defaults.target,
                         help="the stated target (default none: skeleton)")
    budgets.add_argument("--prompt-level", type=int, choices=[1, 2, 3, 4],
                         default=defaults.prompt_level,
                         help="prompt level for language-model policies, 1 (bare task) to 4 "
                              "(method hints)")


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    """How the run goes: repeats, workers, the run directory, sizes, the policy's isolation."""
    parser.add_argument("--repeats", type=int, default=1, help="episodes per instance")
    parser.add_argument("--workers", type=int, default=1,
                        help="parallel workers (processes or Ray actors), one policy each")
    parser.add_argument("--backend", choices=["local", "ray"], default="local",
                        help="local processes (default) or Ray")
    parser.add_argument("--address", default=None,
                        help="address of an existing Ray cluster (default: start a local one)")
    parser.add_argument("--out", required=True, metavar="RUN_DIR",
                        help="the run directory; rerunning the same command resumes it")
    parser.add_argument("--force", action="store_true",
                        help="accept a config that differs from the one stored in RUN_DIR "
                             "(finished episodes are kept)")
    parser.add_argument("--d", type=int, default=None,
                        help="variables per instance (default 10; a structure's or table's own)")
    parser.add_argument("--n", type=int, default=None,
                        help="rows per instance (default 600; a table's own)")
    parser.add_argument("--policy-isolation", choices=["auto", "namespaces", "process"],
                        default="auto",
                        help="how the policy process is isolated from the truth: namespaces "
                             "(own PID and mount namespaces, no capabilities; auto uses it "
                             "where available) or a plain process")
    parser.add_argument("--policy-network", action="append", metavar="HOST:PORT",
                        help="an API endpoint the policy needs (repeatable): a confined policy "
                             "has only its own loopback interface, and reaches declared "
                             "endpoints, and nothing else, through the runner's proxy "
                             "(HTTPS_PROXY); a registered API policy and a base_url option "
                             "declare theirs")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run(args: argparse.Namespace) -> int:
    settings = EpisodeSettings(max_steps=args.max_steps, max_seconds=args.max_seconds,
                               token_budget_per_turn=args.token_budget,
                               prompt_level=args.prompt_level, target=args.target,
                               guided=args.guided, toolbox=args.toolbox,
                               experiments=args.experiments or 0)
    families = "all" if args.family == "all" else [
        name.strip() for name in args.family.split(",") if name.strip()]
    datasets = []
    if args.dataset is not None:
        datasets.append({"path": args.dataset, "graph": args.graph,
                         "anonymize": args.anonymize, "standardize": not args.no_standardize})
    elif args.graph is not None or args.anonymize or args.no_standardize:
        raise HeuresisError("--graph, --anonymize and --no-standardize go with --dataset")
    summary = evaluate(args.policy, families=families, split=args.split, count=args.count,
                       settings=settings, repeats=args.repeats, workers=args.workers,
                       backend=args.backend, address=args.address, out_dir=args.out,
                       policy_options=parse_policy_options(args.policy_option),
                       force=args.force, d=args.d, n=args.n, progress=not args.no_progress,
                       task=args.task, name_mode=args.names, datasets=datasets,
                       policy_isolation=args.policy_isolation,
                       policy_network=args.policy_network or False)
    print(summary.to_text())
    for note in source_notes([family.family for family in summary.families], args.split):
        print(f"note: {note}", file=sys.stderr)
    if summary.all_errored:
        print(f"heuresis evaluate: error: every episode of the run errored "
              f"({summary.overall.errors} of {summary.overall.episodes}; the reasons are "
              "above): nothing was scored", file=sys.stderr)
        return 1
    return 0


def source_notes(families: list[str], split: str) -> list[str]:
    """What a reader of the run should know about where its instances came from: generated
    instances of an unsealed test split could be regenerated by a policy; a data table (a
    user's CSV, Sachs) is one instance, which no salt seals and no interval over instances
    covers."""
    tables = [name for name in families if get_source(name) is not None]
    generated = [name for name in families if name not in tables]
    notes = []
    if split == "test" and generated and sealing_salt("test") is None:
        notes.append(f"the test split is not sealed (${TEST_SALT_ENV} is not set): its "
                     "instances are public, so a policy could regenerate them; set a secret "
                     "salt for numbers that compare policies")
    if tables:
        notes.append(one_instance_note(tables))
    return notes
