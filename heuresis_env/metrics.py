"""Scores of an output graph against the true DAG, and paired bootstrap intervals over instances.

Conventions (``docs/scores.md`` gives the full definitions):

- **Adjacency precision, recall, F1** compare skeletons, edges without direction or marks.
  Precision is ``nan`` over an empty prediction and recall ``nan`` over an empty true graph
  (0/0), never an exception. F1 is ``2·TP / (2·TP + FP + FN)``, which equals the harmonic mean
  whenever both are defined and is 0 whenever recall is 0 (so an empty prediction of a
  non-empty graph scores F1 = 0); when both graphs are empty F1 is 1 (exact agreement), so F1
  is never ``nan`` and means over instances never silently drop an episode.
- **SHD** counts unordered pairs whose edge in the output differs in any way from the true
  DAG's: a missing edge, an extra edge, a reversed edge, and an undirected, bidirected or
  circle-marked (PAG) edge between truly adjacent nodes each cost 1. This is the number of
  single-edge edits (add, delete, reverse, orient) turning the output into the true DAG; a
  reversal costs 1 as in causal-learn and notears, not 2 as in cdt's default, and an undirected
  edge is not free as in notears' ``count_accuracy``.
- **SHD against the CPDAG** compares edge marks pair by pair in the same way, against the true
  CPDAG, so an output equal to the true CPDAG scores 0.

Graphs are matched by variable *name*: the output may list the variables in another order, but
both graphs must have the same set of names. This module imports NumPy; SciPy (the bootstrap)
and statsmodels (the Wilson interval) load when those intervals are first asked for.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from heuresis_env.cache import ResultCache, stable_hash
from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.graphs import EdgeMark, Graph, GraphType, cpdag_from_dag

__all__ = [
    "BootstrapResult",
    "adjacency_f1",
    "adjacency_scores",
    "bootstrap_mean_ci",
    "nshd",
    "paired_bootstrap",
    "score_graph",
    "shd",
    "shd_cpdag",
    "unpaired_bootstrap",
    "wilson_interval",
]

# ---- graph scores -----------------------------------------------------------------------------


def _aligned_marks(predicted: Graph, true: Graph) -> np.ndarray:
    """The output's mark matrix reordered to the true graph's variable order."""
    if not isinstance(predicted, Graph) or not isinstance(true, Graph):
        raise HeuresisError(
            f"scores compare two heuresis_env.graphs.Graph objects, got "
            f"{type(predicted).__name__} and {type(true).__name__}")
    if predicted.names == true.names:
        return predicted.marks
    if set(predicted.names) != set(true.names) or len(predicted.names) != len(true.names):
        extra = sorted(set(predicted.names) - set(true.names))
        missing = sorted(set(true.names) - set(predicted.names))
        raise HeuresisError(
            f"the output graph's variables differ from the true graph's: unknown {extra}, "
            f"missing {missing}; the true graph's variables are {list(true.names)}")
    order = [predicted.index(name) for name in true.names]
    return predicted.marks[np.ix_(order, order)]


def _pairwise_differences(predicted: Graph, true: Graph) -> int:
    """Number of unordered pairs whose edge (presence or either end mark) differs."""
    predicted_marks = _aligned_marks(predicted, true)
    differs = predicted_marks != true.marks
    differs = differs | differs.T
    return int(np.count_nonzero(np.triu(differs, k=1)))


def adjacency_scores(predicted: Graph, true: Graph) -> dict[str, float]:
    """Adjacency precision, recall and F1 of the output's skeleton against the true skeleton.

    Returns ``precision``, ``recall``, ``f1`` and the counts ``true_positives``,
    ``false_positives``, ``false_negatives``. Precision is nan for an empty output, recall nan
    for an empty truth; F1 = 2TP/(2TP+FP+FN), 0 when recall is 0 and 1 when both are empty.
    """
    predicted_skeleton = _aligned_marks(predicted, true) != EdgeMark.NONE
    true_skeleton = true.marks != EdgeMark.NONE
    upper = np.triu(np.ones(true_skeleton.shape, dtype=bool), k=1)
    true_positives = int(np.count_nonzero(predicted_skeleton & true_skeleton & upper))
    false_positives = int(np.count_nonzero(predicted_skeleton & ~true_skeleton & upper))
    false_negatives = int(np.count_nonzero(~predicted_skeleton & true_skeleton & upper))
    n_predicted = true_positives + false_positives
    n_true = true_positives + false_negatives
    precision = true_positives / n_predicted if n_predicted else math.nan
    recall = true_positives / n_true if n_true else math.nan
    denominator = 2 * true_positives + false_positives + false_negatives
    f1 = 2 * true_positives / denominator if denominator else 1.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "true_positives": true_positives,
        "false_positives": false_positives,
        "false_negatives": false_negatives,
    }


def adjacency_f1(predicted: Graph, true: Graph) -> float:
    """Adjacency F1 (the main score); see :func:`adjacency_scores` for the empty-graph cases."""
    return adjacency_scores(predicted, true)["f1"]


def orientation_accuracy(predicted: Graph, true_dag: Graph) -> float:
    """Among the true DAG's edges that the output has adjacent, the share the output has as
    the very same directed edge (an undirected, reversed or circle-marked edge is not); nan
    when the output has no true edge adjacent. What SHD mixes with the skeleton, alone: the
    orientation of the edges found."""
    if true_dag.graph_type() != GraphType.DAG:
        raise HeuresisError("orientation accuracy compares against a true DAG")
    marks = _aligned_marks(predicted, true_dag)
    found = true_dag.directed_adjacency() & (marks != EdgeMark.NONE)
    correct = found & (marks == EdgeMark.ARROW) & (marks.T == EdgeMark.TAIL)
    count = int(np.count_nonzero(found))
    return math.nan if count == 0 else int(np.count_nonzero(correct)) / count


def shd(predicted: Graph, true_dag: Graph) -> int:
    """Structural Hamming distance of any output graph to the true DAG.

    One per unordered pair whose edge differs in any way: missing (add), extra (delete),
    reversed (reverse, cost 1), and undirected, bidirected or circle-marked edges between truly
    adjacent nodes (orient, cost 1). A PAG edge counts 0 only when it is exactly the true
    directed edge. Equals causal-learn's ``SHD(true_dag, predicted)``.
    """
    if true_dag.graph_type() != GraphType.DAG:
        raise HeuresisError(
            f"shd compares against a true DAG, but the true graph is a {true_dag.graph_type()}; "
            f"use shd_cpdag to compare against a CPDAG")
    return _pairwise_differences(predicted, true_dag)


def nshd(predicted: Graph, true_dag: Graph) -> float:
    """SHD divided by the number of variables d (nan when d = 0)."""
    d = true_dag.d
    return shd(predicted, true_dag) / d if d else math.nan


def shd_cpdag(predicted: Graph, true_cpdag: Graph) -> int:
    """SHD against the true CPDAG: one per unordered pair whose edge marks differ in any way.

    A missing or extra edge, a direction where the CPDAG is undirected, an undirected edge
    where it is directed, a reversal, or a PAG mark each cost 1; a DAG truth is accepted too.
    """
    if true_cpdag.graph_type() not in (GraphType.DAG, GraphType.CPDAG):
        raise HeuresisError(
            f"shd_cpdag compares against a true CPDAG (directed and undirected edges), but the "
            f"true graph is a {true_cpdag.graph_type()}")
    return _pairwise_differences(predicted, true_cpdag)


def score_graph(predicted: Graph, true_dag: Graph,
                true_cpdag: Graph | None = None) -> dict[str, float]:
    """Every score of one output: f1, precision, recall, shd, nshd, shd_cpdag, n_edges and
    orientation (:func:`orientation_accuracy`).

    ``true_cpdag`` defaults to the CPDAG of ``true_dag``; pass the instance's stored CPDAG to
    skip recomputing it. ``n_edges`` is the number of edges in the output. A true graph that
    is not a DAG (a data table's partially directed graph) gets adjacency scores and
    ``shd_cpdag`` against itself; ``shd`` and ``nshd`` are then nan.
    """
    if true_dag.graph_type() != GraphType.DAG:
        # a partially directed truth (a user's graph with unoriented edges) stands for its
        # class: adjacency and SHD against it; the SHD to a DAG is undefined
        class_graph = true_dag if true_cpdag is None else true_cpdag
        return {**{k: adjacency_scores(predicted, true_dag)[k] for k in ("f1", "precision",
                                                                        "recall")},
                "shd": math.nan, "nshd": math.nan,
                "shd_cpdag": shd_cpdag(predicted, class_graph), "n_edges": predicted.n_edges(),
                "orientation": math.nan}
    if true_cpdag is None:
        true_cpdag = cpdag_from_dag(true_dag)
    elif true_cpdag.names != true_dag.names or not np.array_equal(true_cpdag.skeleton(),
                                                                  true_dag.skeleton()):
        raise HeuresisError("true_cpdag must have the true DAG's variables (same order) and "
                            "skeleton; pass the CPDAG of true_dag or leave it None")
    adjacency = adjacency_scores(predicted, true_dag)
    structural_distance = shd(predicted, true_dag)
    return {
        "f1": adjacency["f1"],
        "precision": adjacency["precision"],
        "recall": adjacency["recall"],
        "shd": structural_distance,
        "nshd": structural_distance / true_dag.d if true_dag.d else math.nan,
        "shd_cpdag": shd_cpdag(predicted, true_cpdag),
        "n_edges": predicted.n_edges(),
        "orientation": orientation_accuracy(predicted, true_dag),
    }


# ---- bootstrap intervals ----------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapResult:
    """A mean over instances with its percentile bootstrap interval.

    ``mean`` is the mean of the kept values (of a, or of a − b for a paired comparison);
    ``low``/``high`` bound the ``confidence`` percentile interval; ``standard_error`` is the sd
    of the resampled means; ``n`` instances were kept and ``n_dropped`` dropped for NaN.
    """

    mean: float
    low: float
    high: float
    confidence: float
    standard_error: float
    n: int
    n_dropped: int
    n_resamples: int

    @property
    def width(self) -> float:
        return self.high - self.low

    def excludes_zero(self) -> bool:
        """True when the interval lies strictly above or strictly below 0."""
        return bool(self.low > 0 or self.high < 0)

    def __str__(self) -> str:
        return (f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}] "
                f"({self.confidence:.0%}, n={self.n})")


def _generator(rng: np.random.Generator | None, seed: int | None) -> np.random.Generator:
    """The generator to draw resamples from: ``rng`` if given, else one seeded with ``seed``."""
    if rng is not None and seed is not None:
        raise HeuresisError("pass either rng or seed, not both")
    if rng is not None:
        if not isinstance(rng, np.random.Generator):
            raise HeuresisError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        return rng
    if seed is None:
        seed = 0
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise HeuresisError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(int(seed))


def _as_vector(values: object, name: str) -> np.ndarray:
    try:
        vector = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise DataError(f"{name} must be a sequence of numbers: {error}") from None
    if vector.ndim != 1:
        raise DataError(f"{name} must be one-dimensional (one value per instance), "
                        f"got shape {vector.shape}")
    if np.any(np.isinf(vector)):
        raise DataError(f"{name} contains an infinite value; scores must be finite or NaN")
    return vector


def _check_settings(n_resamples: int, confidence: float) -> None:
    if (isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral)
            or n_resamples < 1):
        raise HeuresisError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not (isinstance(confidence, numbers.Real) and 0 < confidence < 1):
        raise HeuresisError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def _empty_result(confidence: float, n_dropped: int, n_resamples: int) -> BootstrapResult:
    return BootstrapResult(math.nan, math.nan, math.nan, float(confidence), math.nan, 0,
                           n_dropped, int(n_resamples))


#: resamples are drawn in batches of at most this many index-matrix cells (32 MB of float64)
_BATCH_CELLS = 1 << 22


def _percentile_bootstrap(samples: tuple[np.ndarray, ...],
                          statistic: Callable[..., np.ndarray], rng: np.random.Generator,
                          n_resamples: int, confidence: float, n_dropped: int
                          ) -> BootstrapResult:
    """``scipy.stats.bootstrap`` with the percentile method, as a :class:`BootstrapResult`.

    Each sample is resampled independently (one sample: the paired differences). A sample of
    one value has no spread: its interval is the value itself.
    """
    from scipy.stats import bootstrap

    point = float(statistic(*samples, axis=-1))
    n = int(sum(sample.size for sample in samples))
    if any(sample.size < 2 for sample in samples):
        return BootstrapResult(point, point, point, float(confidence), 0.0, n, n_dropped,
                               int(n_resamples))
    result = bootstrap(samples, statistic, vectorized=True, paired=False, axis=-1,
                       n_resamples=int(n_resamples), confidence_level=confidence,
                       method="percentile", random_state=rng,
                       batch=max(1, _BATCH_CELLS // max(s.size for s in samples)))
    interval = result.confidence_interval
    return BootstrapResult(point, float(interval.low), float(interval.high), float(confidence),
                           float(result.standard_error), n, n_dropped, int(n_resamples))


def _mean(values: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.mean(values, axis=axis))


def _difference_of_means(first: np.ndarray, second: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.asarray(np.mean(first, axis=axis) - np.mean(second, axis=axis))


def paired_bootstrap(a: object, b: object | None = None, n_resamples: int = 10_000,
                     confidence: float = 0.95, rng: np.random.Generator | None = None,
                     seed: int | None = None) -> BootstrapResult:
    """Mean of ``a`` (or of ``a − b``, instance by instance) with a percentile bootstrap interval.

    ``a[i]`` and ``b[i]`` are two policies' scores on the same instance i; each resample draws
    instances with replacement and uses the SAME draw for both (the differences are resampled,
    by ``scipy.stats.bootstrap`` with the percentile method).
    Instances where ``a`` or ``b`` is NaN are dropped as a pair before resampling (reported in
    ``n_dropped``); if none remain the result is all NaN. Draws come from ``rng``, else from a
    generator seeded with ``seed`` (0 by default), so results are reproducible.
    """
    _check_settings(n_resamples, confidence)
    generator = _generator(rng, seed)
    values = _as_vector(a, "a")
    if b is not None:
        other = _as_vector(b, "b")
        if other.shape != values.shape:
            raise DataError(f"a paired comparison needs one value of a and of b per instance; "
                            f"got {values.size} values of a and {other.size} of b")
        values = values - other  # NaN in either propagates, so the pair is dropped below
    kept = values[~np.isnan(values)]
    n_dropped = int(values.size - kept.size)
    if kept.size == 0:
        return _empty_result(confidence, n_dropped, n_resamples)
    # seeded, the result is kept on disk; a caller's generator is part of the result (its
    # state), so that is never cached. No lock: two processes store the same value.
    cache = ResultCache("bootstrap") if rng is None else None
    key = _bootstrap_key(kept, seed, n_resamples, confidence, n_dropped)
    if cache is not None and isinstance(stored := cache.get(key), BootstrapResult):
        return stored
    result = _percentile_bootstrap((kept,), _mean, generator, n_resamples, confidence, n_dropped)
    if cache is not None:
        cache.set(key, result)
    return result


#: bump when what a seeded bootstrap computes changes, so stale cache entries are ignored
BOOTSTRAP_CACHE_VERSION = 1


def _bootstrap_key(kept: np.ndarray, seed: int | None, n_resamples: int, confidence: float,
                   n_dropped: int) -> str:
    """A seeded paired bootstrap is a function of the kept values (in order), the seed, the
    settings and scipy's resampling: reports recompute hundreds of them per run, each the same
    on a warm rerun, so they are kept on disk under this key."""
    import scipy

    digest = hashlib.sha256(np.ascontiguousarray(kept, dtype=np.float64).tobytes()).hexdigest()
    return stable_hash(["paired-bootstrap", BOOTSTRAP_CACHE_VERSION, scipy.__version__, digest,
                        0 if seed is None else int(seed), int(n_resamples), float(confidence),
                        int(n_dropped)])


def bootstrap_mean_ci(values: object, n_resamples: int = 10_000, confidence: float = 0.95,
                      rng: np.random.Generator | None = None,
                      seed: int | None = None) -> BootstrapResult:
    """Mean of ``values`` over instances with a percentile bootstrap interval (NaNs dropped)."""
    return paired_bootstrap(values, None, n_resamples=n_resamples, confidence=confidence,
                            rng=rng, seed=seed)


def unpaired_bootstrap(a: object, b: object, n_resamples: int = 10_000,
                       confidence: float = 0.95, rng: np.random.Generator | None = None,
                       seed: int | None = None) -> BootstrapResult:
    """Difference of means ``mean(a) − mean(b)`` of two independent samples of instances.

    For scores on *different* instance sets (the lengths may differ); a and b are resampled
    independently, NaNs dropped from each (``n`` is the total kept). On the same instances use
    :func:`paired_bootstrap`, whose interval is narrower when the two scores are correlated.
    """
    _check_settings(n_resamples, confidence)
    generator = _generator(rng, seed)
    first, second = _as_vector(a, "a"), _as_vector(b, "b")
    first_kept, second_kept = first[~np.isnan(first)], second[~np.isnan(second)]
    n_dropped = int(first.size - first_kept.size + second.size - second_kept.size)
    if first_kept.size == 0 or second_kept.size == 0:
        return _empty_result(confidence, n_dropped, n_resamples)
    return _percentile_bootstrap((first_kept, second_kept), _difference_of_means, generator,
                                 n_resamples, confidence, n_dropped)


def wilson_interval(values: object, confidence: float = 0.95) -> BootstrapResult:
    """A share of successes (values in [0, 1], one per unit) with its Wilson score interval.

    For accuracies over few questions, where a percentile bootstrap of all-correct answers
    would give the empty interval [1, 1]. The mean of fractional values (repeats averaged per
    unit) is treated as a share over ``n`` units. The interval is statsmodels'
    (``proportion_confint(..., method="wilson")``). Returned as a :class:`BootstrapResult` with
    ``n_resamples`` 0 (NaNs dropped, counted in ``n_dropped``).
    """
    from statsmodels.stats.proportion import proportion_confint

    _check_settings(1, confidence)
    vector = _as_vector(values, "values")
    kept = vector[~np.isnan(vector)]
    n_dropped = int(vector.size - kept.size)
    if kept.size == 0:
        return _empty_result(confidence, n_dropped, 0)
    if np.any((kept < 0) | (kept > 1)):
        raise DataError("a Wilson interval needs shares in [0, 1]")
    n, share = int(kept.size), float(kept.mean())
    low, high = proportion_confint(share * n, n, alpha=1.0 - confidence, method="wilson")
    return BootstrapResult(share, max(0.0, float(low)), min(1.0, float(high)),
                           float(confidence), math.sqrt(share * (1 - share) / n), n, n_dropped,
                           0)
