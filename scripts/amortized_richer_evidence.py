"""Does richer pair evidence lift the amortized model's ranking? (A study; not shipped.)

docs/amortized.md found the shipped model's limit in its ranking, not in its training-set size,
and named richer evidence about the pairs PC-KCI gets wrong as the next thing to try. This
script tries it: six more channels per unordered pair, appended to the version-1 evidence grid,
with everything else (design C, settings, data) unchanged. For each pair, −log10 of the p-value
of two tests of residual independence,

- an HSIC test (25 fixed random Fourier features of the residuals' normal scores, the
  gamma approximation of :func:`~heuresis_env.discovery.citests.kci.gamma_p_value`), and
- a GCM-style test (the t statistic of the residual product; in-sample residuals),

on the residuals of the grid's own additive ridge regressions (normal scores, each input and
its random Fourier features, GCV penalty) of i and of j on three sets: PC-KCI's deleting set
(pairs PC-KCI deleted only; 0 elsewhere), the union of i's and j's PC-KCI neighbours, and every
other variable. The grid's regression gains already read the same fits through the residual
*variance*; these channels add a test of any dependence left between the two residuals.

    python scripts/amortized_richer_evidence.py features --split dev --count 100 --out dev.npz
    python scripts/amortized_richer_evidence.py features --split train --count 167 --out train.npz
    python scripts/amortized_richer_evidence.py compare --data GRIDS --train-extra train.npz \\
        --dev-extra dev.npz --train-count 167 --seeds 0 [--no-extra]
    python scripts/amortized_richer_evidence.py separation --data GRIDS --dev-extra dev.npz

``GRIDS`` holds the version-1 shards of ``python -m agents.amortized data``. ``compare`` trains
the design on the first ``--train-count`` train instances of each family (one model per seed;
several seeds are averaged as an ensemble), scores the 600 dev instances and prints one JSON
line; ``separation`` prints how well each new channel, and the shipped model's q, tell the
true edges among PC-KCI's deleted pairs from the rest (AUC). Results: docs/amortized.md,
"Richer pair evidence".
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

FAMILIES = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")
CHANNELS = ("hsic_sep", "gcm_sep", "hsic_nbr", "gcm_nbr", "hsic_mb", "gcm_mb")
CAP = 30.0
HSIC_FEATURES = 25
#: the median distance of two independent standard normals, |a − b|: 0.954
_PRECISION = 1.0 / (2.0 * 0.954 ** 2)


def _log_p(p: float) -> float:
    return min(-math.log10(max(p, 1e-30)), CAP) if math.isfinite(p) else 0.0


def _hsic_features(residual: np.ndarray) -> np.ndarray:
    from heuresis_env.discovery.regression import normal_scores

    z = normal_scores(residual[:, None])
    w = np.random.default_rng(12345).normal(size=(1, HSIC_FEATURES)) * math.sqrt(_PRECISION)
    b = np.random.default_rng(54321).uniform(0, 2 * math.pi, HSIC_FEATURES)
    phi = math.sqrt(2.0 / HSIC_FEATURES) * np.cos(z @ w + b)
    return phi - phi.mean(axis=0)


def _hsic_p(a: np.ndarray, b: np.ndarray) -> float:
    from heuresis_env.discovery.citests.kci import gamma_p_value

    n = a.shape[0]
    statistic = float(np.sum((a.T @ b) ** 2))
    mean = float(np.sum(a ** 2)) * float(np.sum(b ** 2)) / n
    variance = 2.0 * float(np.sum((a.T @ a) ** 2)) * float(np.sum((b.T @ b) ** 2)) / n / n
    return gamma_p_value(statistic, mean, variance)


def _gcm_p(x: np.ndarray, y: np.ndarray) -> float:
    product = x * y
    spread = float(product.std())
    if spread == 0:
        return 1.0
    return math.erfc(abs(math.sqrt(product.size) * float(product.mean()) / spread) / math.sqrt(2))


def richer_channels(data: np.ndarray, names, sha256: str) -> np.ndarray:
    """(d, d, 6) float32: the six channels of :data:`CHANNELS` (symmetric)."""
    from heuresis_env.discovery.regression import _GCVFit, normal_scores
    from heuresis_env.evidence.grid import _BlockRegressions
    from heuresis_env.evidence.start import guided_start
    from heuresis_env.seeding import instance_rng

    start = guided_start(data, names, sha256)
    column = {name: k for k, name in enumerate(names)}
    d = data.shape[1]
    skeleton = start.graph.skeleton().astype(bool)
    deleting = {}
    for deletion in start.deletion_log:
        i, j = sorted((column[deletion.x], column[deletion.y]))
        deleting[(i, j)] = tuple(sorted(column[v] for v in deletion.conditioning_set))
    fits = _BlockRegressions(normal_scores(data), instance_rng(sha256, "richer-evidence"))
    residuals: dict = {}
    features: dict = {}

    def residual(target: int, inputs: tuple[int, ...]) -> np.ndarray:
        key = (target, inputs)
        if key not in residuals:
            y = fits.centred[:, target]
            if not inputs:
                residuals[key] = y.copy()
            else:
                index = np.concatenate([fits.columns[v] for v in inputs])
                fit = _GCVFit.solve(fits.gram[np.ix_(index, index)], fits.cross[index, target],
                                    float(fits.totals[target]), fits.n)
                residuals[key] = y - fits.design[:, index] @ fit.coefficients()
        return residuals[key]

    def hsic_features(target: int, inputs: tuple[int, ...]) -> np.ndarray:
        if (target, inputs) not in features:
            features[(target, inputs)] = _hsic_features(residual(target, inputs))
        return features[(target, inputs)]

    out = np.zeros((d, d, len(CHANNELS)), dtype=np.float32)
    for i, j in itertools.combinations(range(d), 2):
        neighbours = tuple(sorted((set(np.flatnonzero(skeleton[i]))
                                   | set(np.flatnonzero(skeleton[j]))) - {i, j}))
        others = tuple(k for k in range(d) if k not in (i, j))
        for slot, inputs in ((0, deleting.get((i, j))), (2, neighbours), (4, others)):
            if inputs is None:
                continue
            values = (_log_p(_hsic_p(hsic_features(i, inputs), hsic_features(j, inputs))),
                      _log_p(_gcm_p(residual(i, inputs), residual(j, inputs))))
            out[i, j, slot:slot + 2] = out[j, i, slot:slot + 2] = values
    return out


def _job(job: tuple) -> tuple[str, np.ndarray, float]:
    from heuresis_env.generation import InstanceKey, cached_instance

    family, split, index = job
    instance = cached_instance(InstanceKey(family, split, index, d=10, n=600))
    began = time.process_time()
    channels = richer_channels(instance.X, instance.names, instance.sha256)
    return f"{family}-{index}", channels, time.process_time() - began


def _features(args: argparse.Namespace) -> None:
    from threadpoolctl import threadpool_limits

    jobs = [(family, args.split, index) for index in range(args.count) for family in FAMILIES]
    found, seconds = {}, []
    with threadpool_limits(1), ProcessPoolExecutor(args.workers) as pool:
        for key, channels, cpu in pool.map(_job, jobs, chunksize=4):
            found[key] = channels
            seconds.append(cpu)
    np.savez(args.out, **found)
    print(f"{len(found)} instances → {args.out}; CPU s per instance beside the cached PC-KCI: "
          f"mean {np.mean(seconds):.2f}, max {np.max(seconds):.2f}")


def _examples(data: str, split: str, extra: str | None, count: int | None):
    from agents.amortized import load_examples

    examples = load_examples(sorted(Path(data).glob(f"*-{split}-d10-n600-*.npz")))
    if count is not None:
        examples = examples.subset(examples.index < count)
    if extra is not None:
        with np.load(extra) as archive:
            added = np.stack([archive[f"{f}-{i}"] for f, i in
                              zip(examples.family, examples.index)])
        examples.pairs = np.concatenate([examples.pairs, added.astype(np.float32)], axis=-1)
    return examples


def _compare(args: argparse.Namespace) -> None:
    import agents.amortized.model as model_module
    from agents.amortized import score_examples, summarize_scores, train_model
    from agents.amortized.training import TrainingSettings

    with_extra = not args.no_extra
    train = _examples(args.data, "train", args.train_extra if with_extra else None,
                      args.train_count)
    dev = _examples(args.data, "dev", args.dev_extra if with_extra else None, None)
    if with_extra:  # the model's input count follows the appended channels
        inputs = model_module.ModelConfig.inputs.fget
        model_module.ModelConfig.inputs = property(lambda self: inputs(self) + len(CHANNELS))
    began = time.process_time()
    models = [train_model(train, TrainingSettings(seed=seed)).model for seed in args.seeds]

    class Ensemble:
        def probabilities(self, pairs, nodes):
            return np.mean([m.probabilities(pairs, nodes) for m in models], axis=0)

    summary = summarize_scores(score_examples(Ensemble(), dev), n_resamples=2000)
    print(json.dumps({"extra": with_extra, "seeds": args.seeds, "train": len(train),
                      "cpu_s": round(time.process_time() - began, 1),
                      **{family: {key: summary[family][key] for key in
                                  ("delta_pc_kci", "delta_bca", "amortized", "best_cut",
                                   "restored", "restored_true", "removed", "removed_false")}
                         for family in summary}}))


def _auc(positive: np.ndarray, negative: np.ndarray) -> float:
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(positive, negative).statistic / (positive.size * negative.size))


def _separation(args: argparse.Namespace) -> None:
    from agents.amortized import load_model
    from heuresis_env.evidence.grid import GRID_PAIR_FEATURE_NAMES

    dev = _examples(args.data, "dev", args.dev_extra, None)
    model, _ = load_model(args.model)
    base = len(GRID_PAIR_FEATURE_NAMES)
    q = model.probabilities(dev.pairs[..., :base], dev.nodes)
    kept = dev.pairs[..., GRID_PAIR_FEATURE_NAMES.index("pc_kci_kept")] > 0.5
    upper = np.triu(np.ones(kept.shape[1:], dtype=bool), 1)[None]
    for family in (*FAMILIES, "all"):
        chosen = (dev.family == family) if family != "all" else np.ones(len(dev), dtype=bool)
        deleted = ~kept & upper & chosen[:, None, None]
        true = deleted & (dev.skeleton > 0)
        false = deleted & (dev.skeleton == 0)
        row = {"family": family, "wrongly_deleted": int(true.sum()),
               "rightly_deleted": int(false.sum()),
               "model_q": round(_auc(q[true], q[false]), 3)}
        for k, name in enumerate(CHANNELS):
            values = dev.pairs[..., base + k]
            row[name] = round(_auc(values[true], values[false]), 3)
        print(json.dumps(row))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    features = commands.add_parser("features")
    features.add_argument("--split", required=True)
    features.add_argument("--count", type=int, required=True)
    features.add_argument("--workers", type=int, default=2)
    features.add_argument("--out", required=True)
    compare = commands.add_parser("compare")
    compare.add_argument("--data", required=True)
    compare.add_argument("--train-extra")
    compare.add_argument("--dev-extra")
    compare.add_argument("--train-count", type=int, default=167)
    compare.add_argument("--seeds", type=lambda s: [int(v) for v in s.split(",")],
                         default=[0])
    compare.add_argument("--no-extra", action="store_true")
    separation = commands.add_parser("separation")
    separation.add_argument("--data", required=True)
    separation.add_argument("--dev-extra", required=True)
    separation.add_argument("--model", default="agents/data/amortized")
    args = parser.parse_args(argv)
    if args.command == "compare" and not args.no_extra and not (args.train_extra
                                                                and args.dev_extra):
        parser.error("compare needs --train-extra and --dev-extra (or --no-extra)")
    {"features": _features, "compare": _compare, "separation": _separation}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
