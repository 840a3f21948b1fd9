"""Repair evidence: per-pair features that can tell PC-KCI's wrong decisions from its right ones.

One row per unordered pair, for the pairs PC-KCI deleted (is the deletion wrong: a weak true
edge the test missed?) and the pairs it kept (is the edge a false positive?). Every feature
is computed from the data and PC-KCI's output alone (the hidden record is never read), once
per instance, and cached on disk through :func:`~heuresis_env.evidence.store.cached_evidence`.

**The reference set** S* of a pair anchors the test features: for a deleted pair it is the
set at which PC-KCI deleted it; for a kept pair it is the set, among those PC-KCI tested the
pair at (every subset, of at most :data:`MAX_KEPT_SET_SIZE` variables, of adj(x) \\ {y} or
adj(y) \\ {x} in PC-KCI's output — PC tests every one of them before it stops), with the
largest KCI p-value: the set that came closest to deleting the edge. PC tests every subset
of a deleting set before the set itself, so the KCI features below read PC's own tests
from the disk cache and cost nothing once the guided start is computed.

Features (:data:`REPAIR_FEATURES`; ``nan`` where a feature does not exist or failed), each
declared once, in the block of :data:`REPAIR_BLOCKS` (a cost group) that computes it
(:mod:`.features`), with its column in the text table when it has one; the columns keep the
order the shipped learned-repair and RL models read (:data:`SHIPPED_ORDER`):

- ``kept`` — 1 if PC-KCI kept the pair, 0 if it deleted it;
- ``set_size`` — |S*| (for a deleted pair: the level of the deletion);
- ``kci_p`` — KCI p-value at S* (a deleted pair's deletion p-value);
- ``kci_p_empty``, ``kci_p_subsets_min``, ``kci_p_subsets_max`` — KCI at ∅, and the
  smallest and largest KCI p-value over every subset of S* (S* and ∅ included);
- ``fisherz_p``, ``fisherz_p_subsets_min``, ``fisherz_p_subsets_max`` — the same with Fisher-z;
- ``kci_p_narrow``, ``kci_p_wide`` — KCI at S* with the median-heuristic kernel widths
  × 0.5 and × 2 (:data:`WIDTH_SCALES`);
- ``gcm_p`` — the generalised covariance measure at S* with cross-fitted random-feature
  ridge regressions (:mod:`heuresis_env.discovery.citests.gcm`);
- ``ll_gain_max``, ``ll_gain_min`` — the cross-validated gain in held-out log-likelihood per
  row (nats) from adding x to y's possible parents in PC-KCI's output (its parents and
  undirected neighbours, x excluded) and y to x's, the larger and the smaller of the two
  (a local score; same regressor, 5 folds);
- ``keeps_<algorithm>`` — whether each reference algorithm of :data:`REFERENCE_ALGORITHMS`
  has the pair adjacent (those of :data:`DEFAULT_ALGORITHMS` unless asked; the others' columns
  are nan) (default parameters, the instance seed: the same cached runs as the
  ``run_algorithm`` tool); ``reference_votes`` — the fraction of those that ran which do;
- ``pc_kci_bootstrap`` — PC-KCI's adjacency frequency over :data:`BOOTSTRAPS` bootstrap
  resamples of ``BOOTSTRAP_FRACTION`` · n rows (nan when ``bootstraps=0``);
- ``common_neighbours`` — the number of common neighbours of x and y in PC-KCI's output.

Cost (seconds per instance at d = 10, n = 600 on one core) and each feature's AUC for
wrong-vs-right deletions are measured in ``docs/rl.md``.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from heuresis_env.cache import stable_hash
from heuresis_env.discovery.algorithms import cached_run_algorithm
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.citests.gcm import GCM
from heuresis_env.discovery.pc import pc
from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.evidence.bootstrap import bootstrap_edge_frequencies
from heuresis_env.evidence.features import (
    EvidenceContext,
    FeatureBlock,
    TableRow,
    TextColumn,
    pair_features,
    run_blocks,
    stack,
    table_lines,
)
from heuresis_env.evidence.pairs import unordered_pairs
from heuresis_env.evidence.start import ALPHA, GuidedStart, guided_start
from heuresis_env.evidence.store import cached_evidence
from heuresis_env.seeding import instance_rng, int31_seed

#: bump when a repair feature's computation changes (it is part of the cache key)
REPAIR_EVIDENCE_VERSION = 2
#: reference algorithms whose adjacency can be a feature (default parameters, instance seed)
REFERENCE_ALGORITHMS = ("ges", "grasp", "boss", "notears-mlp", "direct-lingam", "fci")
#: those run by default: NOTEARS-MLP is left out, it alone costs 15–40 s per instance at
#: d = 10, n = 600 (docs/rl.md, the cost table); its column is then missing (nan)
DEFAULT_ALGORITHMS = ("ges", "grasp", "boss", "direct-lingam", "fci")
#: kernel-width multipliers of the median heuristic for the extra KCI tests
WIDTH_SCALES = (0.5, 2.0)
#: largest conditioning set considered when finding a kept pair's reference set
MAX_KEPT_SET_SIZE = 4
#: PC-KCI bootstrap resamples (0: the feature is left out) and their size as a fraction of n
BOOTSTRAPS = 0
BOOTSTRAP_FRACTION = 0.5


@dataclass(frozen=True)
class RepairFeature:
    """One column of the repair table: name, meaning, cost group (the block that computes it)
    and how the RL view scales it; ``column`` its place in the table's text (None: not shown).

    ``scale`` maps the raw value into [−1, 1] for the RL view: "p" (a p-value, kept as is),
    "unit" (already in [0, 1]), "count4" (÷ 4, clipped), "gain" (tanh(20 · nats per row)).
    """

    name: str
    description: str
    group: str
    scale: str
    column: TextColumn | None = None


@dataclass(frozen=True)
class RepairEvidence:
    """The repair table of one instance: one row per unordered pair (i < j).

    ``values[k, f]`` is feature f (:data:`REPAIR_FEATURE_NAMES`) of pair k, nan when missing;
    ``reference_sets[k]`` is the pair's S* (column indices); ``seconds`` the CPU seconds
    spent per cost group (one core: BLAS runs one thread) and ``wall_seconds`` the elapsed
    time (larger on a loaded machine); a group read from a cache (PC's KCI tests, the
    reference algorithms' outputs) costs what reading it cost; ``settings`` what was computed.
    """

    names: tuple[str, ...]
    sha256: str
    pairs: np.ndarray
    values: np.ndarray
    reference_sets: tuple
    seconds: dict[str, float]
    wall_seconds: dict[str, float] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)

    def column(self, name: str) -> np.ndarray:
        return self.values[:, REPAIR_FEATURE_NAMES.index(name)]

    def pair_index(self, i: int, j: int) -> int:
        i, j = (i, j) if i < j else (j, i)
        return i * len(self.names) - i * (i + 1) // 2 + (j - i - 1)

    def observation(self) -> tuple[np.ndarray, np.ndarray]:
        """(values scaled into [−1, 1] with 0 where missing, availability) for the RL view."""
        scaled = np.array(self.values, dtype=np.float64)
        for column, feature in enumerate(REPAIR_FEATURES):
            if feature.scale == "count4":
                scaled[:, column] = np.minimum(scaled[:, column] / 4.0, 1.0)
            elif feature.scale == "gain":
                scaled[:, column] = np.tanh(20.0 * scaled[:, column])
        available = ~np.isnan(scaled)
        return (np.where(available, np.clip(np.nan_to_num(scaled), -1.0, 1.0), 0.0),
                available)

    def table_text(self, which: str = "all", limit: int | None = None) -> str:
        """The table as text (what the ``repair_evidence`` tool shows)."""
        kept = self.column("kept")
        rows = [k for k in range(len(self.pairs))
                if which == "all" or (which == "kept") == bool(kept[k] == 1)]
        if limit is not None:
            rows = rows[:limit]
        columns = [(feature.column, functools.partial(self._cell, c))
                   for c, feature in enumerate(REPAIR_FEATURES) if feature.column is not None]
        labels = ((f"{self.names[self.pairs[k][0]]} - {self.names[self.pairs[k][1]]}", k)
                  for k in rows)
        return "\n".join(table_lines(self, "pair", "{:<11}", columns, labels))

    def _cell(self, column: int, row: int) -> tuple[float]:
        return (self.values[row, column],)


def _subsets(conditioning: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [s for size in range(len(conditioning) + 1)
            for s in itertools.combinations(conditioning, size)]


def _safe_p(test, i: int, j: int, conditioning: tuple[int, ...]) -> float:
    try:
        return float(test.test(i, j, conditioning).p_value)
    except (DataError, HeuresisError, np.linalg.LinAlgError):
        return math.nan


def _reference_sets(kci, guided: GuidedStart, column: dict[str, int], pairs: np.ndarray,
                    skeleton: np.ndarray) -> list[tuple[tuple[int, ...], float]]:
    """S* and its KCI p-value for every pair (see the module docstring)."""
    deleted = {}
    for deletion in guided.deletion_log:
        i, j = column[deletion.x], column[deletion.y]
        deleted[(min(i, j), max(i, j))] = (
            tuple(sorted(column[v] for v in deletion.conditioning_set)), float(deletion.p_value))
    out = []
    for i, j in pairs.tolist():
        if (i, j) in deleted:
            out.append(deleted[(i, j)])
            continue
        best: tuple[tuple[int, ...], float] | None = None
        seen: set[tuple[int, ...]] = set()
        for a, b in ((i, j), (j, i)):
            neighbours = [v for v in np.flatnonzero(skeleton[a]).tolist() if v != b]
            for size in range(min(len(neighbours), MAX_KEPT_SET_SIZE) + 1):
                for conditioning in itertools.combinations(neighbours, size):
                    if conditioning in seen:
                        continue
                    seen.add(conditioning)
                    p = _safe_p(kci, i, j, conditioning)
                    if best is None or (not math.isnan(p) and (math.isnan(best[1]) or p > best[1])):
                        best = (conditioning, p)
        assert best is not None  # the empty set is always tried
        out.append(best)
    return out


@dataclass
class _RepairContext(EvidenceContext):
    """What the repair table's blocks share: the data, the pairs, and values derived once
    (the guided start, PC-KCI's KCI test, each pair's reference set, the GCM test)."""

    given: GuidedStart | None
    algorithms: tuple[str, ...]
    bootstraps: int

    @property
    def pairs(self) -> np.ndarray:
        return self.once("pairs", lambda: unordered_pairs(self.d))

    @property
    def guided(self) -> GuidedStart:
        return self.once("guided", lambda: self.given if self.given is not None
                         else guided_start(self.data, self.names, self.sha256))

    @property
    def skeleton(self) -> np.ndarray:
        return self.once("skeleton", lambda: self.guided.graph.skeleton())

    @property
    def kci(self) -> Any:
        return self.once("kci", lambda: make_ci_test("kci", self.data))

    @property
    def references(self) -> list[tuple[tuple[int, ...], float]]:
        """S* and its KCI p-value for every pair (the module docstring)."""
        return self.once("references", lambda: _reference_sets(
            self.kci, self.guided, self.column, self.pairs, self.skeleton))

    @property
    def gcm(self) -> Any:
        return self.once("gcm", lambda: make_ci_test("gcm", self.data,
                                                     seed=int31_seed(self.sha256)))

    def rows(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """(i, j, S*) of every pair, in row order."""
        return [(i, j, conditioning) for (i, j), (conditioning, _)
                in zip(self.pairs.tolist(), self.references, strict=True)]

    def column_of_nan(self) -> np.ndarray:
        return np.full(len(self.pairs), np.nan)


def _pc(c: _RepairContext) -> dict[str, np.ndarray]:
    out = {name: c.column_of_nan() for name in ("kept", "set_size", "kci_p",
                                                "common_neighbours")}
    skeleton = c.skeleton
    for row, ((i, j), (conditioning, p)) in enumerate(zip(c.pairs.tolist(), c.references,
                                                            strict=True)):
        out["kept"][row] = float(skeleton[i, j])
        out["set_size"][row] = float(len(conditioning))
        out["kci_p"][row] = p
        out["common_neighbours"][row] = float(np.sum(skeleton[i] & skeleton[j]))
    return out


def _kci_subsets(c: _RepairContext) -> dict[str, np.ndarray]:
    out = {name: c.column_of_nan() for name in ("kci_p_empty", "kci_p_subsets_min",
                                                "kci_p_subsets_max")}
    for row, (i, j, conditioning) in enumerate(c.rows()):
        p_values = [_safe_p(c.kci, i, j, s) for s in _subsets(conditioning)]
        out["kci_p_empty"][row] = p_values[0]
        out["kci_p_subsets_min"][row] = float(np.nanmin(p_values))
        out["kci_p_subsets_max"][row] = float(np.nanmax(p_values))
    return out


def _fisherz(c: _RepairContext) -> dict[str, np.ndarray]:
    out = {name: c.column_of_nan() for name in ("fisherz_p", "fisherz_p_subsets_min",
                                                "fisherz_p_subsets_max")}
    fisherz = make_ci_test("fisherz", c.data)
    for row, (i, j, conditioning) in enumerate(c.rows()):
        fisherz_p = np.array([_safe_p(fisherz, i, j, s) for s in _subsets(conditioning)])
        out["fisherz_p"][row] = fisherz_p[-1]
        if not np.all(np.isnan(fisherz_p)):
            out["fisherz_p_subsets_min"][row] = float(np.nanmin(fisherz_p))
            out["fisherz_p_subsets_max"][row] = float(np.nanmax(fisherz_p))
    return out


def _kci_widths(c: _RepairContext) -> dict[str, np.ndarray]:
    out = {}
    for scale, name in zip(WIDTH_SCALES, ("kci_p_narrow", "kci_p_wide"), strict=True):
        test = make_ci_test("kci", c.data, est_width="median", width_scale=scale)
        out[name] = np.array([_safe_p(test, i, j, conditioning)
                              for i, j, conditioning in c.rows()], dtype=np.float64)
    return out


def _gcm(c: _RepairContext) -> dict[str, np.ndarray]:
    return {"gcm_p": np.array([_safe_p(c.gcm, i, j, conditioning)
                               for i, j, conditioning in c.rows()], dtype=np.float64)}


def _local_score(c: _RepairContext) -> dict[str, np.ndarray]:
    skeleton = c.skeleton
    possible_parents = skeleton & ~c.guided.graph.directed_adjacency().T  # [k, j]: k → j or k — j
    if not isinstance(c.gcm, GCM):
        raise HeuresisError(f"the local score needs the gcm test's fitter, got {type(c.gcm)}")
    fitter = c.gcm.fitter
    out = {name: c.column_of_nan() for name in ("ll_gain_max", "ll_gain_min")}
    for row, (i, j) in enumerate(c.pairs.tolist()):
        gains = []
        for cause, effect in ((i, j), (j, i)):
            parents = [k for k in np.flatnonzero(possible_parents[:, effect]).tolist()
                       if k != cause]
            gains.append(fitter.log_likelihood_gain(effect, parents, cause))
        out["ll_gain_max"][row] = max(gains)
        out["ll_gain_min"][row] = min(gains)
    return out


def _keeps(algorithm: str) -> str:
    return f"keeps_{algorithm.replace('-', '_')}"


def _algorithms(c: _RepairContext) -> dict[str, np.ndarray]:
    out = {_keeps(name): c.column_of_nan() for name in REFERENCE_ALGORITHMS}
    out["reference_votes"] = c.column_of_nan()
    pairs = c.pairs
    votes = np.zeros(len(pairs))
    ran = 0
    seconds = c.once("algorithm_seconds", dict)
    for algorithm in c.algorithms:
        if _keeps(algorithm) not in out:
            raise HeuresisError(f"{algorithm!r} is not a reference algorithm of the repair "
                                f"table; known: {list(REFERENCE_ALGORITHMS)}")
        result = cached_run_algorithm(algorithm, c.data, c.names, c.sha256, {}, None,
                                      int31_seed(c.sha256))
        seconds[algorithm] = float(result.runtime_seconds)
        graph = result.full_graph(c.names) if result.ok else None
        if graph is None:
            continue
        ran += 1
        adjacency = graph.skeleton()[pairs[:, 0], pairs[:, 1]].astype(np.float64)
        out[_keeps(algorithm)] = adjacency
        votes += adjacency
    if ran:
        out["reference_votes"] = votes / ran
    return out


def _bootstrap(c: _RepairContext) -> dict[str, np.ndarray]:
    if not c.bootstraps:
        return {"pc_kci_bootstrap": c.column_of_nan()}
    alpha = c.guided.alpha
    frequencies, _, _ = bootstrap_edge_frequencies(
        c.data, int(c.bootstraps), BOOTSTRAP_FRACTION,
        instance_rng(c.sha256, "pc-kci-bootstrap"),
        lambda sample: pc(sample, c.names, ci_test=make_ci_test("kci", sample,
                                                                disk_cache=False),
                          alpha=alpha).skeleton)
    return {"pc_kci_bootstrap": frequencies[c.pairs[:, 0], c.pairs[:, 1]]}


def _p(value: float, row: TableRow | None = None) -> str:
    return "   -  " if math.isnan(value) else f"{value:6.3g}" if value >= 1e-3 else f"{value:6.0e}"


def _gain(value: float, row: TableRow | None = None) -> str:
    return "    -  " if math.isnan(value) else f"{value:+7.3f}"


def _fraction(value: float, row: TableRow | None = None) -> str:
    return "  -  " if math.isnan(value) else f"{value:5.2f}"


def _flag(value: float) -> str:
    return "-" if math.isnan(value) else "y" if value else "n"


def _count(value: float, row: TableRow | None = None) -> str:
    return " -" if math.isnan(value) else f"{int(value):2d}"


def _short(algorithm: str) -> str:
    return {"ges": "ges", "grasp": "grasp", "boss": "boss", "notears-mlp": "ntmlp",
            "direct-lingam": "lingam", "fci": "fci"}.get(algorithm, algorithm[:6])


def _status(value: float, row: TableRow) -> str:
    return "kept" if value == 1 else "deleted"


def _reference_set(value: float, row: TableRow) -> str:
    table = row.owner
    return "{" + ",".join(table.names[v] for v in table.reference_sets[row.index]) + "}"


def _votes_header(table: RepairEvidence) -> str:
    return " votes " + " ".join(_short(a) for a in table.settings.get("algorithms", ()))


def _votes(value: float, row: TableRow) -> str:
    """The share of votes, then each algorithm's flag under its name."""
    table = row.owner
    flags = " ".join(f"{_flag(table.column(_keeps(a))[row.index]):>{len(_short(a))}}"
                     for a in table.settings.get("algorithms", ()))
    return f"{_fraction(value)} {flags}"


def _r(name: str, description: str, scale: str, header: str | Callable[[Any], str] | None = None,
       cell: str = " {}", show: Callable[[Any, TableRow], Any] | None = None) -> RepairFeature:
    """A feature (its block fills the group); with a header, a column of the text table."""
    if header is None:
        return RepairFeature(name, description, "", scale)
    column = TextColumn(header, cell) if show is None else TextColumn(header, cell, show)
    return RepairFeature(name, description, "", scale, column)


def _block(name: str, compute: Callable[[_RepairContext], dict[str, np.ndarray]],
           *features: RepairFeature) -> FeatureBlock:
    return FeatureBlock(name, tuple(replace(f, group=name) for f in features), (), compute)


#: the cost groups, in computation order, each with the features it computes
REPAIR_BLOCKS: tuple[FeatureBlock, ...] = (
    _block("pc", _pc,
           _r("kept", "PC-KCI kept the pair (1) or deleted it (0)", "unit",
              "        status", " {:<8}", _status),
           _r("set_size", "|S*|: the deleting set's size (a kept pair: the size of its tested "
              "set with the largest KCI p-value)", "count4", "   S*", " {:<16}", _reference_set),
           _r("kci_p", "KCI p-value at S* (a deleted pair: its deletion p-value)", "p",
              "               kci_p", show=_p),
           _r("common_neighbours", "common neighbours of the pair in PC-KCI's output",
              "count4", "  cn", show=_count)),
    _block("kci_subsets", _kci_subsets,
           _r("kci_p_empty", "KCI p-value at the empty set", "p", "  kci{}", show=_p),
           _r("kci_p_subsets_min", "smallest KCI p-value over the subsets of S*", "p",
              "  kciSmin", show=_p),
           _r("kci_p_subsets_max", "largest KCI p-value over the subsets of S*", "p",
              "  kciSmax", "   {}", _p)),
    _block("fisherz", _fisherz,
           _r("fisherz_p", "Fisher-z p-value at S*", "p", "  fz_p", "   {}", _p),
           _r("fisherz_p_subsets_min", "smallest Fisher-z p-value over the subsets of S*", "p",
              "    fzSmin", show=_p),
           _r("fisherz_p_subsets_max", "largest Fisher-z p-value over the subsets of S*", "p",
              "  fzSmax", "  {}", _p)),
    _block("kci_widths", _kci_widths,
           _r("kci_p_narrow", "KCI p-value at S*, kernel widths 0.5 × the median heuristic",
              "p", "  kci.5w", "  {}", _p),
           _r("kci_p_wide", "KCI p-value at S*, kernel widths 2 × the median heuristic", "p",
              " kci2w", show=_p)),
    _block("gcm", _gcm,
           _r("gcm_p", "GCM p-value at S* (cross-fitted random-feature ridge)", "p", "  gcm_p",
              show=_p)),
    _block("local_score", _local_score,
           _r("ll_gain_max", "larger held-out log-likelihood gain (nats/row) of adding the "
              "edge, over its two directions, given PC-KCI's possible parents", "gain",
              "  llgain+", show=_gain),
           _r("ll_gain_min", "smaller of the two directions' log-likelihood gains", "gain",
              " llgain-", show=_gain)),
    _block("algorithms", _algorithms,
           *(_r(_keeps(name), f"{name} has the pair adjacent", "unit")
             for name in REFERENCE_ALGORITHMS),
           _r("reference_votes", "fraction of the reference algorithms that ran which have "
              "the pair adjacent", "unit", _votes_header, show=_votes)),
    _block("bootstrap", _bootstrap,
           _r("pc_kci_bootstrap", "PC-KCI adjacency frequency over bootstrap resamples",
              "unit", " boot", show=_fraction)),
)
#: the columns' order the shipped learned repair and RL models read (agents/data/); a new
#: feature follows them, in block order
SHIPPED_ORDER = (
    "kept", "set_size", "kci_p", "kci_p_empty", "kci_p_subsets_min", "kci_p_subsets_max",
    "fisherz_p", "fisherz_p_subsets_min", "fisherz_p_subsets_max", "kci_p_narrow",
    "kci_p_wide", "gcm_p", "ll_gain_max", "ll_gain_min",
    *(_keeps(name) for name in REFERENCE_ALGORITHMS), "reference_votes", "pc_kci_bootstrap",
    "common_neighbours")
REPAIR_FEATURES: tuple[RepairFeature, ...] = pair_features(REPAIR_BLOCKS, SHIPPED_ORDER)
REPAIR_FEATURE_NAMES = tuple(f.name for f in REPAIR_FEATURES)
#: cost groups, in the order they are computed
REPAIR_GROUPS = tuple(block.name for block in REPAIR_BLOCKS)


def compute_repair_evidence(data: np.ndarray, names: Sequence[str], sha256: str,
                            guided: GuidedStart | None = None,
                            algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
                            bootstraps: int = BOOTSTRAPS) -> RepairEvidence:
    """Compute the repair table of one instance (see the module docstring); seconds to a
    minute at d = 10, n = 600, most of it in the reference algorithms and the extra KCI tests.

    Runs on one core (BLAS limited to one thread: its small matrix products gain nothing from
    threads, and on a loaded machine threads that wait for each other cost up to 50 times).
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _compute(data, names, sha256, guided, algorithms, bootstraps)


def _compute(data: np.ndarray, names: Sequence[str], sha256: str, guided: GuidedStart | None,
             algorithms: Sequence[str], bootstraps: int) -> RepairEvidence:
    data = np.asarray(data, dtype=np.float64)
    n, d = data.shape
    context = _RepairContext(data, tuple(names), sha256, guided, tuple(algorithms), bootstraps)
    computed = run_blocks(REPAIR_BLOCKS, context, "repair table")
    pairs = context.pairs
    return RepairEvidence(
        names=context.names, sha256=sha256, pairs=pairs,
        values=stack(computed.values, REPAIR_FEATURES, (len(pairs),)),
        reference_sets=tuple(tuple(r[0]) for r in context.references),
        seconds=computed.cpu_seconds, wall_seconds=computed.wall_seconds,
        settings={"algorithms": list(context.algorithms), "bootstraps": int(bootstraps),
                  "algorithm_seconds": context.once("algorithm_seconds", dict),
                  "bootstrap_fraction": BOOTSTRAP_FRACTION, "width_scales": list(WIDTH_SCALES),
                  "alpha": context.guided.alpha, "n": n, "d": d})


def repair_evidence(data: np.ndarray, names: Sequence[str], sha256: str,
                    algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
                    bootstraps: int = BOOTSTRAPS, alpha: float = ALPHA) -> RepairEvidence:
    """The cached repair table of an instance (computed once per instance and settings).

    The key holds the guided start's graph, so a change of PC-KCI's output (a new
    orientation rule, say) recomputes the table instead of reusing a stale one.
    """
    guided = guided_start(data, names, sha256, alpha)
    params = {"version": REPAIR_EVIDENCE_VERSION, "algorithms": list(algorithms),
              "bootstraps": int(bootstraps), "alpha": alpha,
              "start": stable_hash(guided.graph.to_dict())}
    return cached_evidence(sha256, "repair_evidence", params,
                           lambda: compute_repair_evidence(data, names, sha256, guided,
                                                           algorithms, bootstraps))
