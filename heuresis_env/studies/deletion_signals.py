"""Appendix F: telling PC-KCI's wrong deletions from its right ones, and the proposition.

**The task.** On each instance PC-KCI (α = 0.05) deletes pairs; the hidden record labels each
deletion *wrong* (the pair is a true edge) or *right* (a true non-edge)
(:func:`heuresis_env.discovery.pc.label_deletions`). A *signal* scores every deletion; its AUC is the
probability that a random wrong deletion scores above a random right one (ties count ½).
Each signal's direction is fixed in advance (:data:`SIGNALS`), never chosen on the data.
Intervals resample **instances** (deletions of one instance are not independent): a cluster
bootstrap, seeded.

**The proposition** (the paper's §6): a ranker that sees only the recorded p-value p₀ > α
has |AUC − ½| ≤ TV ≤ ½·sup|Λ_δ − 1|, where Λ_δ = f_w / f_r is the ratio of the densities of
p₀ for wrong and right deletions; as the test's power vanishes (effect size δ → 0), Λ_δ → 1
and the AUC → ½. :func:`proposition_simulation` checks it for a Fisher-z test: right
deletions are a true null (ρ = 0), wrong ones a weak true edge (ρ = δ), both conditioned on
p > α. For this test everything is analytic: with noncentrality μ = √(n−3)·atanh δ and
c = |z| = Φ⁻¹(1 − p/2),

    Λ_δ(c) = exp(−μ²/2) · cosh(μ c) · (1 − α) / (1 − β_δ),   β_δ = 1 − Φ(c_α − μ) + Φ(−c_α − μ),

increasing in c, so sup|Λ_δ − 1| is at c = 0 or c = c_α; the exact AUC and TV are integrals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heuresis_env.cache import ResultCache, stable_hash
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.orientation import orientation_probe
from heuresis_env.discovery.pc import label_deletions
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError
from heuresis_env.evidence import guided_start, pair_evidence
from heuresis_env.generation.families import expand_families
from heuresis_env.generation.instances import SPLIT_SIZES
from heuresis_env.seeding import instance_rng

#: bump when a signal's computation changes (the per-instance cache is keyed by it)
DELETION_SIGNALS_VERSION = 1
#: significance level of PC-KCI (the guided start's) and of the proposition's test
ALPHA = 0.05


@dataclass(frozen=True)
class Signal:
    """A score of a deletion; ``higher_means_wrong`` fixes its direction in advance."""

    name: str
    description: str
    higher_means_wrong: bool
    p_value_only: bool = False


SIGNALS: tuple[Signal, ...] = (
    Signal("recorded_p_value", "the KCI p-value with which PC-KCI deleted the pair (> α)",
           higher_means_wrong=False, p_value_only=True),
    Signal("dcor_gap", "distance correlation − |Pearson r| on ≤ 300 fixed rows", True),
    Signal("distance_correlation", "distance correlation of the pair on ≤ 300 fixed rows", True),
    Signal("kci_p_other_sets_max", "largest KCI p-value at the other conditioning sets (∅ and "
           "each single neighbour of the pair in PC-KCI's output, the deleting set excluded)",
           False),
    Signal("kci_p_other_sets_min", "smallest KCI p-value at those other conditioning sets",
           False),
    Signal("stability", "adjacency frequency of the pair over 30 bootstrap runs of PC-Fisher-z",
           True),
    Signal("anm_asymmetry", "orientation probe: |log10 p(x→y) − log10 p(y→x)| of the "
           "additive-noise-model HSIC tests", True),
    Signal("lingam_ratio", "orientation probe: |pairwise LiNGAM likelihood ratio| (entropy)",
           True),
)
SIGNAL_NAMES = tuple(s.name for s in SIGNALS)


# ---- AUC ------------------------------------------------------------------------------------------

def _scores_and_labels(scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    scores = np.asarray(scores, dtype=np.float64).ravel()
    labels = np.asarray(labels).ravel()
    if scores.shape != labels.shape:
        raise DataError(f"one label per score needed; got {scores.size} scores and "
                        f"{labels.size} labels")
    if labels.dtype.kind not in "biu":
        raise DataError("labels must be booleans or 0/1 (1 = positive, a wrong deletion)")
    if labels.size and not np.all(np.isin(labels, (0, 1))):
        raise DataError("labels must be 0 or 1 (1 = positive, a wrong deletion)")
    if np.any(np.isinf(scores)):
        raise DataError("scores must be finite (NaN marks a missing score)")
    return scores, labels.astype(bool)


def roc_auc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties ½
    (``sklearn.metrics.roc_auc_score``). NaN scores are left out; NaN when a class is empty."""
    from sklearn.metrics import roc_auc_score

    scores, labels = _scores_and_labels(scores, labels)
    kept = ~np.isnan(scores)
    scores, labels = scores[kept], labels[kept]
    if labels.all() or not labels.any():
        return math.nan
    return float(roc_auc_score(labels, scores))


@dataclass(frozen=True)
class AUCResult:
    """An AUC with its cluster-bootstrap percentile interval."""

    auc: float
    low: float
    high: float
    n_positive: int
    n_negative: int
    n_missing: int
    n_clusters: int
    n_resamples: int
    n_degenerate: int  # resamples with an empty class (left out of the interval)


def clustered_auc(scores: Any, labels: Any, clusters: Sequence[Any], n_resamples: int = 10_000,
                  confidence: float = 0.95, seed: int = 0) -> AUCResult:
    """AUC with a percentile interval from resampling whole clusters (instances).

    A resample draws clusters with replacement; the AUC over a resample weights every
    (positive, negative) pair by the multiplicities of their clusters. Vectorized: the
    comparison matrix is summed per pair of clusters once, then every resample is two
    matrix products.
    """
    scores, labels = _scores_and_labels(scores, labels)
    cluster_array = np.asarray(list(clusters), dtype=object)
    if cluster_array.shape != scores.shape:
        raise DataError(f"one cluster per score needed; got {cluster_array.size} and "
                        f"{scores.size}")
    if not (isinstance(n_resamples, int) and n_resamples >= 1):
        raise HeuresisError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise HeuresisError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    missing = np.isnan(scores)
    scores, labels, cluster_array = scores[~missing], labels[~missing], cluster_array[~missing]
    positives, negatives = int(labels.sum()), int((~labels).sum())
    point = roc_auc(scores, labels)
    _, cluster_index = np.unique(cluster_array.astype(str), return_inverse=True)
    n_clusters = int(cluster_index.max()) + 1 if cluster_index.size else 0
    if math.isnan(point):
        return AUCResult(point, math.nan, math.nan, positives, negatives, int(missing.sum()),
                         n_clusters, n_resamples, n_resamples)
    positive_scores, negative_scores = scores[labels], scores[~labels]
    wins = (positive_scores[:, None] > negative_scores[None, :]).astype(np.float64)
    wins += 0.5 * (positive_scores[:, None] == negative_scores[None, :])
    positive_onehot = np.zeros((positives, n_clusters))
    positive_onehot[np.arange(positives), cluster_index[labels]] = 1.0
    negative_onehot = np.zeros((negatives, n_clusters))
    negative_onehot[np.arange(negatives), cluster_index[~labels]] = 1.0
    pair_wins = positive_onehot.T @ wins @ negative_onehot  # (clusters × clusters)
    positive_count, negative_count = positive_onehot.sum(0), negative_onehot.sum(0)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters),
                             size=n_resamples).astype(np.float64)
    numerator = np.einsum("bc,cd,bd->b", counts, pair_wins, counts)
    denominator = (counts @ positive_count) * (counts @ negative_count)
    valid = denominator > 0
    resampled = numerator[valid] / denominator[valid]
    tail = (1 - confidence) / 2
    low, high = (np.quantile(resampled, [tail, 1 - tail]) if resampled.size
                 else (math.nan, math.nan))
    return AUCResult(point, float(low), float(high), positives, negatives, int(missing.sum()),
                     n_clusters, n_resamples, int((~valid).sum()))


# ---- per-deletion evidence -------------------------------------------------------------------------

@dataclass(frozen=True)
class DeletionRecord:
    """One PC-KCI deletion on one instance: its label and the value of every signal."""

    instance: str            # family/split/index
    x: str
    y: str
    conditioning_set: tuple[str, ...]
    label: str               # "wrong" or "right"
    values: dict[str, float]


def compute_deletion_records(instance, max_set_size: int = 1) -> list[DeletionRecord]:
    """Every signal for every deletion of PC-KCI on ``instance`` (reads the hidden record).

    PC-KCI's log and the pair evidence come from :mod:`heuresis_env.evidence` (cached per
    instance); the other-set KCI tests use the disk-cached KCI; the orientation probes draw
    from a generator seeded by the instance's hash and the pair.
    """

    names, data, sha = tuple(instance.names), instance.X, instance.sha256
    seed = guided_start(data, names, sha)
    evidence = pair_evidence(data, names, sha)
    labels = label_deletions(seed.deletion_log, instance.record.dag)
    column = {name: k for k, name in enumerate(names)}
    skeleton = seed.graph.skeleton()
    kci = make_ci_test("kci", data)
    key = f"{instance.key.family}/{instance.key.split}/{instance.key.index}"
    records = []
    for deletion, label in zip(seed.deletion_log, labels, strict=True):
        i, j = column[deletion.x], column[deletion.y]
        row = evidence.pair_index(i, j)
        deleting = frozenset(column[v] for v in deletion.conditioning_set)
        neighbours = sorted((set(np.flatnonzero(skeleton[i])) | set(np.flatnonzero(skeleton[j])))
                            - {i, j})
        other_sets: list[tuple[int, ...]] = [()] + [(v,) for v in neighbours]
        if max_set_size >= 2:
            other_sets += [(a, b) for k, a in enumerate(neighbours) for b in neighbours[k + 1:]]
        other_p = [kci.test(i, j, s).p_value for s in other_sets if frozenset(s) != deleting]
        probe = orientation_probe(data[:, i], data[:, j],
                                  instance_rng(sha, 0xF, i, j))
        anm = probe["anm"]
        p_forward = max(float(anm["p_value_x_to_y"]), 1e-300)
        p_backward = max(float(anm["p_value_y_to_x"]), 1e-300)
        values = {
            "recorded_p_value": float(deletion.p_value),
            "dcor_gap": float(evidence.dcor_gap[row]),
            "distance_correlation": float(evidence.distance_correlation[row]),
            "kci_p_other_sets_max": float(max(other_p)) if other_p else math.nan,
            "kci_p_other_sets_min": float(min(other_p)) if other_p else math.nan,
            "stability": float(evidence.stability[row]),
            "anm_asymmetry": abs(math.log10(p_forward) - math.log10(p_backward)),
            "lingam_ratio": abs(float(probe["pairwise_lingam"]["entropy"])),
        }
        records.append(DeletionRecord(key, deletion.x, deletion.y,
                                      tuple(deletion.conditioning_set), label, values))
    return records


def deletion_records(instance, max_set_size: int = 1) -> list[DeletionRecord]:
    """:func:`compute_deletion_records`, cached on disk per instance."""

    key = stable_hash({"sha256": instance.sha256, "version": DELETION_SIGNALS_VERSION,
                       "max_set_size": max_set_size, "alpha": ALPHA,
                       "instance": [instance.key.family, instance.key.split,
                                    instance.key.index]})
    return ResultCache("reports-deletion-signals").get_or_compute(
        key, lambda: compute_deletion_records(instance, max_set_size))


@dataclass
class SignalStudy:
    """Appendix F's table: the AUC of each signal over the deletions of some instances."""

    instances: list[str]
    n_wrong: int
    n_right: int
    results: dict[str, AUCResult]
    records: list[DeletionRecord] = field(repr=False, default_factory=list)


def signal_study(records: Sequence[DeletionRecord], n_resamples: int = 10_000,
                 confidence: float = 0.95, seed: int = 0) -> SignalStudy:
    """AUC and instance-bootstrap interval of every signal in :data:`SIGNALS`."""
    labels = np.array([r.label == "wrong" for r in records], dtype=bool)
    clusters = [r.instance for r in records]
    results = {}
    for position, signal in enumerate(SIGNALS):
        values = np.array([r.values.get(signal.name, math.nan) for r in records], dtype=float)
        oriented = values if signal.higher_means_wrong else -values
        results[signal.name] = clustered_auc(oriented, labels, clusters, n_resamples,
                                             confidence, seed=seed + position)
    return SignalStudy(instances=list(dict.fromkeys(clusters)), n_wrong=int(labels.sum()),
                       n_right=int((~labels).sum()), results=results, records=list(records))


# ---- the proposition ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class PropositionRow:
    """One effect size: power, the simulated and exact AUC of the ranker −p, and the bounds."""

    noncentrality: float     # μ = √(n − 3) · atanh δ
    effect_size: float       # δ, the true correlation of a wrong deletion's pair
    power: float             # β_δ = P(p ≤ α) under the alternative
    n_wrong: int             # simulated wrong deletions kept (p > α)
    n_right: int
    auc_simulated: float
    auc_low: float
    auc_high: float
    auc_exact: float
    total_variation: float
    half_sup_bound: float    # ½ · sup |Λ_δ − 1|


def _normal_pdf(x: float) -> float:
    return math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def exact_quantities(noncentrality: float, alpha: float = ALPHA) -> dict[str, float]:
    """Power, exact AUC of −p, TV and ½·sup|Λ − 1| for a two-sided z test with shift μ,
    both classes conditioned on p > α (see the module docstring)."""
    from scipy import integrate
    from scipy.stats import norm

    mu = float(abs(noncentrality))
    critical = float(norm.ppf(1 - alpha / 2))
    kept_alternative = _normal_cdf(critical - mu) - _normal_cdf(-critical - mu)
    kept_null = 1.0 - alpha

    def wrong_density(c: float) -> float:  # density of |z| on [0, c_α], conditioned
        return (_normal_pdf(c - mu) + _normal_pdf(c + mu)) / kept_alternative

    def right_density(c: float) -> float:
        return 2 * _normal_pdf(c) / kept_null

    def right_cdf(c: float) -> float:
        return (2 * _normal_cdf(c) - 1) / kept_null

    def ratio(c: float) -> float:
        return math.exp(-mu * mu / 2) * math.cosh(mu * c) * kept_null / kept_alternative

    auc = integrate.quad(lambda c: right_cdf(c) * wrong_density(c), 0, critical,
                         epsabs=1e-12)[0]
    # Λ is increasing in c, so |f_w − f_r| changes sign once, where Λ = 1
    crossing = (math.acosh(kept_alternative / kept_null * math.exp(mu * mu / 2)) / mu
                if mu > 0 and ratio(0.0) < 1 < ratio(critical) else None)
    points = [crossing] if crossing is not None else None
    tv = 0.5 * integrate.quad(lambda c: abs(wrong_density(c) - right_density(c)), 0, critical,
                              epsabs=1e-12, limit=200, points=points)[0]
    half_sup = 0.5 * max(abs(ratio(0.0) - 1), abs(ratio(critical) - 1))
    return {"power": 1.0 - kept_alternative, "auc": auc, "total_variation": tv,
            "half_sup_bound": half_sup}


def fisher_z_p_values(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Two-sided Fisher-z p-values of zero correlation, one per row of ``x`` and ``y`` (m × n);
    the same formula as :class:`heuresis_env.discovery.citests.fisherz.FisherZ` with S = ∅."""
    from scipy.special import erfc

    n = x.shape[1]
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    r = (xc * yc).sum(1) / np.sqrt((xc * xc).sum(1) * (yc * yc).sum(1))
    r = np.clip(r, -(1 - np.finfo(float).eps), 1 - np.finfo(float).eps)
    statistic = math.sqrt(n - 3) * np.abs(np.arctanh(r))
    return erfc(statistic / math.sqrt(2.0))


def _simulate_kept_p_values(effect_size: float, n: int, alpha: float, target: int,
                            rng: np.random.Generator, max_datasets: int,
                            block: int = 2000) -> np.ndarray:
    """Recorded p-values of deleted pairs: datasets of n rows with correlation δ, kept if p > α."""
    kept: list[np.ndarray] = []
    total, drawn = 0, 0
    while total < target and drawn < max_datasets:
        size = min(block, max_datasets - drawn)
        x = rng.standard_normal((size, n))
        y = effect_size * x + math.sqrt(1 - effect_size ** 2) * rng.standard_normal((size, n))
        p = fisher_z_p_values(x, y)
        accepted = p[p > alpha]
        kept.append(accepted)
        total += accepted.size
        drawn += size
    return np.concatenate(kept)[:target] if kept else np.zeros(0)


def _auc_normal_interval(auc: float, n_positive: int, n_negative: int,
                         confidence: float) -> tuple[float, float]:
    """Hanley–McNeil standard error and a normal interval (independent draws)."""
    from scipy.stats import norm

    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    variance = (auc * (1 - auc) + (n_positive - 1) * (q1 - auc * auc)
                + (n_negative - 1) * (q2 - auc * auc)) / (n_positive * n_negative)
    half = float(norm.ppf(0.5 + confidence / 2)) * math.sqrt(max(variance, 0.0))
    return auc - half, auc + half


#: default noncentralities μ of the simulation, from a test with fair power to none
DEFAULT_NONCENTRALITIES = (3.0, 2.0, 1.5, 1.0, 0.5, 0.25, 0.0)


def proposition_simulation(n: int = 600, alpha: float = ALPHA,
                           noncentralities: Sequence[float] = DEFAULT_NONCENTRALITIES,
                           kept_per_class: int = 2000, confidence: float = 0.95,
                           rng: np.random.Generator | None = None,
                           max_datasets: int = 200_000) -> list[PropositionRow]:
    """Simulate the two classes of recorded p-values for shrinking effect sizes.

    For each μ (δ = tanh(μ/√(n−3))): draw datasets of n rows, a pair with correlation δ (a
    wrong deletion's weak true edge) and with correlation 0 (a right deletion's true null),
    test with Fisher-z, keep those with p > α until ``kept_per_class`` of each, and compute
    the AUC of the ranker −p (a smaller recorded p-value ranks as more likely wrong).
    """
    if n < 5:
        raise HeuresisError(f"n must be at least 5 for a Fisher-z test, got {n}")
    if not 0 < alpha < 1:
        raise HeuresisError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    if kept_per_class < 2:
        raise HeuresisError(f"kept_per_class must be at least 2, got {kept_per_class}")
    rng = rng if rng is not None else np.random.default_rng(0)
    rows = []
    for mu in noncentralities:
        if mu < 0:
            raise HeuresisError(f"noncentralities must be ≥ 0, got {mu}")
        delta = math.tanh(mu / math.sqrt(n - 3))
        wrong = _simulate_kept_p_values(delta, n, alpha, kept_per_class, rng, max_datasets)
        right = _simulate_kept_p_values(0.0, n, alpha, kept_per_class, rng, max_datasets)
        labels = np.r_[np.ones(wrong.size, dtype=bool), np.zeros(right.size, dtype=bool)]
        auc = roc_auc(-np.r_[wrong, right], labels)
        low, high = (_auc_normal_interval(auc, wrong.size, right.size, confidence)
                     if wrong.size and right.size else (math.nan, math.nan))
        exact = exact_quantities(mu, alpha)
        rows.append(PropositionRow(
            noncentrality=float(mu), effect_size=delta, power=exact["power"],
            n_wrong=int(wrong.size), n_right=int(right.size), auc_simulated=auc,
            auc_low=low, auc_high=high, auc_exact=exact["auc"],
            total_variation=exact["total_variation"],
            half_sup_bound=exact["half_sup_bound"]))
    return rows


#: bump when the proposition simulation's numbers change (its disk cache is keyed by it)
PROPOSITION_VERSION = 1


def cached_proposition_simulation(n: int = 600, alpha: float = ALPHA,
                                  noncentralities: Sequence[float] = DEFAULT_NONCENTRALITIES,
                                  kept_per_class: int = 2000, confidence: float = 0.95,
                                  seed: int = 0, max_datasets: int = 200_000
                                  ) -> list[PropositionRow]:
    """:func:`proposition_simulation` drawing from ``numpy.random.default_rng(seed)``, cached on
    disk: a function of its arguments alone, so a report rebuilt on the same size reads it."""
    key = stable_hash({"n": n, "alpha": alpha, "noncentralities": list(noncentralities),
                       "kept_per_class": kept_per_class, "confidence": confidence,
                       "seed": int(seed), "max_datasets": max_datasets,
                       "version": PROPOSITION_VERSION})
    return ResultCache("reports-proposition").get_or_compute(key, lambda: proposition_simulation(
        n=n, alpha=alpha, noncentralities=noncentralities, kept_per_class=kept_per_class,
        confidence=confidence, rng=np.random.default_rng(int(seed)), max_datasets=max_datasets))


def parse_signal_request(text: str) -> tuple[str, str, int]:
    """``FAMILY[/SPLIT]:COUNT`` → (family, split, count); split defaults to dev."""

    head, separator, count_text = str(text).rpartition(":")
    if not separator or not count_text.isdigit() or not head:
        raise HeuresisError(f"--deletion-signals reads FAMILY[/SPLIT]:COUNT, e.g. 'wild:10' or "
                            f"'lg/test:5'; got {text!r}")
    family, _, split = head.partition("/")
    split = split or "dev"
    expand_families(family)  # 'all' and 'bnlearn' are groups; unknown names list the known
    if split not in SPLIT_SIZES:

        raise UnknownNameError("split", split, SPLIT_SIZES)
    count = int(count_text)
    if not 1 <= count <= SPLIT_SIZES[split]:
        raise HeuresisError(f"COUNT must be in 1..{SPLIT_SIZES[split]} for the {split} split, "
                            f"got {count}")
    return family, split, count
