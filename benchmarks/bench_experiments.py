"""Issue 44's targets, measured on a sealed test split: experiments under a budget.

Runs, with ``heuresis evaluate`` (each policy in its own process), on the ``wild`` family's
test split sealed by a salt (``$HEURESIS_TEST_SALT``, or a fresh one with ``--fresh-salt``:
drawn with ``secrets``, used, and never printed — only its digest), d = 10, n = 600, and an
experiment budget of 5 × 100 rows:

- ``bca`` (BCA_φ, observational: the references' budget of 0 rows) and the ``oracle``;
- ``active-int``, ``random-int`` (random targets, then GIES: GIES given random experiments of
  the same budget), ``random-int`` with ``finish=orient`` (random targets, the same
  orientation as active-int and rl-int: the decision alone differs) and ``rl-int``.

Then it prints, with paired bootstrap intervals over the instances (95 %, 10,000 resamples):

- target 1: mean SHD of active-int − 0.7 × BCA_φ's (met when the interval is below 0);
- target 2: mean SHD of random-int − rl-int's (met when the interval is above 0); and the
  same against random-int with ``finish=orient``.

Every run goes to ``--out`` (resumable: rerunning the command finishes what is missing); a
report (``heuresis report``) of the runs is written beside them. A ``--fresh-salt`` run cannot
be resumed (no one, the script included, knows its salt afterwards); set the salt in
``$HEURESIS_TEST_SALT`` for a run to resume. The load average is printed before and after.
Usage::

    python benchmarks/bench_experiments.py --out runs/bench-experiments [--fresh-salt]
        [--count 32] [--workers 1] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from heuresis_env.evaluation import evaluate, load_run
from heuresis_env.generation.salts import TEST_SALT_ENV, new_salt, salt_digest
from heuresis_env.metrics import paired_bootstrap
from heuresis_env.policy import EpisodeSettings
from heuresis_env.reports import build_report

#: (run name, policy, options, experiment rows)
ARMS = (
    ("bca", "bca", {}, 0),
    ("oracle", "oracle", {}, 0),
    ("active-int", "active-int", {}, 500),
    ("random-int", "random-int", {}, 500),
    ("random-int-orient", "random-int", {"finish": "orient"}, 500),
    ("rl-int", "rl-int", {}, 500),
)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _scores(run_dir: Path, score: str) -> dict[tuple[str, int], float]:
    run = load_run(run_dir)
    return {(r.family, r.index): r.score(score) for r in run.episodes if not r.error}


def _paired(a: dict, b: dict, scale_b: float = 1.0) -> dict:
    keys = sorted(set(a) & set(b))
    result = paired_bootstrap(np.array([a[k] for k in keys]),
                              np.array([scale_b * b[k] for k in keys]), seed=0)
    return {"mean": result.mean, "low": result.low, "high": result.high, "n": len(keys)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--fresh-salt", action="store_true",
                        help="draw a new secret salt (never printed) instead of "
                             f"${TEST_SALT_ENV}")
    parser.add_argument("--count", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--family", default="wild")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--force", action="store_true",
                        help="resume runs whose stored config differs (e.g. the code version "
                             "after a commit); finished episodes are kept")
    parser.add_argument("--arms", default=",".join(name for name, *_ in ARMS),
                        help="the arms to run now (default: all); the comparisons need all")
    args = parser.parse_args()
    chosen = [a.strip() for a in args.arms.split(",") if a.strip()]
    salt = new_salt() if args.fresh_salt else os.environ.get(TEST_SALT_ENV)
    if not salt:
        parser.error(f"set ${TEST_SALT_ENV} (heuresis salt) or pass --fresh-salt")
    digest = salt_digest(salt)
    started = time.perf_counter()
    print(f"load average before: {_load()}; salt digest {str(digest)[-16:]}", flush=True)
    runs = {}
    for name, policy, options, rows in ARMS:
        if name not in chosen:
            continue
        out = args.out / name
        settings = EpisodeSettings(experiments=rows)
        evaluate(policy, families=[args.family], split="test", count=args.count,
                 settings=settings, out_dir=out, policy_options=options, salt=salt,
                 workers=args.workers, progress=False, force=args.force)
        runs[name] = out
        print(f"  {name}: done ({time.perf_counter() - started:.0f} s)", flush=True)
    if len(runs) < len(ARMS):
        print(f"ran {sorted(runs)}; the comparisons need every arm")
        return 0
    shd = {name: _scores(path, "shd") for name, path in runs.items()}
    f1 = {name: _scores(path, "f1") for name, path in runs.items()}
    results = {
        "salt_digest": digest, "family": args.family, "count": args.count,
        "mean_shd": {k: float(np.mean(list(v.values()))) for k, v in shd.items()},
        "mean_f1": {k: float(np.mean(list(v.values()))) for k, v in f1.items()},
        "target1_active_minus_0.7_bca": _paired(shd["active-int"], shd["bca"], 0.7),
        "target2_random_minus_rl": _paired(shd["random-int"], shd["rl-int"]),
        "random_orient_minus_rl": _paired(shd["random-int-orient"], shd["rl-int"]),
        "active_minus_rl": _paired(shd["active-int"], shd["rl-int"]),
        "seconds": time.perf_counter() - started,
    }
    results["target1_met"] = results["target1_active_minus_0.7_bca"]["high"] < 0
    results["target2_met"] = results["target2_random_minus_rl"]["low"] > 0
    os.environ[TEST_SALT_ENV] = salt  # the report re-scores the sealed runs with it
    report = build_report([runs[name] for name, *_ in ARMS], args.out / "report").markdown_path
    print(json.dumps(results, indent=2))
    print(f"report: {report}")
    print(f"load average after: {_load()}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
