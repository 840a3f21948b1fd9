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

Features (:data:`REPAIR_FEATURES`; ``nan`` where a feature does not exist or failed):

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

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from heuresis_env.cache import stable_hash
from heuresis_env.discovery.algorithms import cached_run_algorithm
from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.citests.gcm import GCM
from heuresis_env.discovery.pc import pc
from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.evidence.bootstrap import bootstrap_edge_frequencies
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
    """One column of the repair table: name, meaning, cost group and how the RL view scales it.

    ``scale`` maps the raw value into [−1, 1] for the RL view: "p" (a p-value, kept as is),
    "unit" (already in [0, 1]), "count4" (÷ 4, clipped), "gain" (tanh(20 · nats per row)).
    """

    name: str
    description: str
    group: str
    scale: str


REPAIR_FEATURES: tuple[RepairFeature, ...] = (
    RepairFeature("kept", "PC-KCI kept the pair (1) or deleted it (0)", "pc", "unit"),
    RepairFeature("set_size", "|S*|: the deleting set's size (a kept pair: the size of its "
                  "tested set with the largest KCI p-value)", "pc", "count4"),
    RepairFeature("kci_p", "KCI p-value at S* (a deleted pair: its deletion p-value)", "pc", "p"),
    RepairFeature("kci_p_empty", "KCI p-value at the empty set", "kci_subsets", "p"),
    RepairFeature("kci_p_subsets_min", "smallest KCI p-value over the subsets of S*",
                  "kci_subsets", "p"),
    RepairFeature("kci_p_subsets_max", "largest KCI p-value over the subsets of S*",
                  "kci_subsets", "p"),
    RepairFeature("fisherz_p", "Fisher-z p-value at S*", "fisherz", "p"),
    RepairFeature("fisherz_p_subsets_min", "smallest Fisher-z p-value over the subsets of S*",
                  "fisherz", "p"),
    RepairFeature("fisherz_p_subsets_max", "largest Fisher-z p-value over the subsets of S*",
                  "fisherz", "p"),
    RepairFeature("kci_p_narrow", "KCI p-value at S*, kernel widths 0.5 × the median "
                  "heuristic", "kci_widths", "p"),
    RepairFeature("kci_p_wide", "KCI p-value at S*, kernel widths 2 × the median heuristic",
                  "kci_widths", "p"),
    RepairFeature("gcm_p", "GCM p-value at S* (cross-fitted random-feature ridge)", "gcm", "p"),
    RepairFeature("ll_gain_max", "larger held-out log-likelihood gain (nats/row) of adding the "
                  "edge, over its two directions, given PC-KCI's possible parents", "local_score",
                  "gain"),
    RepairFeature("ll_gain_min", "smaller of the two directions' log-likelihood gains",
                  "local_score", "gain"),
    *(RepairFeature(f"keeps_{name.replace('-', '_')}", f"{name} has the pair adjacent",
                    "algorithms", "unit") for name in REFERENCE_ALGORITHMS),
    RepairFeature("reference_votes", "fraction of the reference algorithms that ran which "
                  "have the pair adjacent", "algorithms", "unit"),
    RepairFeature("pc_kci_bootstrap", "PC-KCI adjacency frequency over bootstrap resamples",
                  "bootstrap", "unit"),
    RepairFeature("common_neighbours", "common neighbours of the pair in PC-KCI's output",
                  "pc", "count4"),
)
REPAIR_FEATURE_NAMES = tuple(f.name for f in REPAIR_FEATURES)
#: cost groups, in the order they are computed
REPAIR_GROUPS = ("pc", "kci_subsets", "fisherz", "kci_widths", "gcm", "local_score",
                 "algorithms", "bootstrap")


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
        header = ("pair        status   S*               kci_p  kci{}  kciSmin  kciSmax  fz_p  "
                  "  fzSmin  fzSmax  kci.5w kci2w  gcm_p  llgain+ llgain- votes "
                  + " ".join(_short(a) for a in self.settings.get("algorithms", ()))
                  + " boot  cn")
        lines = [header]
        for k in rows:
            i, j = self.pairs[k]
            value = dict(zip(REPAIR_FEATURE_NAMES, self.values[k], strict=True))
            reference = "{" + ",".join(self.names[v] for v in self.reference_sets[k]) + "}"
            status = "kept" if value["kept"] == 1 else "deleted"
            votes = " ".join(f"{_flag(value[f'keeps_{a.replace(chr(45), chr(95))}']):>{len(_short(a))}}"
                             for a in self.settings.get("algorithms", ()))
            lines.append(
                f"{self.names[i] + ' - ' + self.names[j]:<11} {status:<8} {reference:<16} "
                f"{_p(value['kci_p'])} {_p(value['kci_p_empty'])} "
                f"{_p(value['kci_p_subsets_min'])}   {_p(value['kci_p_subsets_max'])}   "
                f"{_p(value['fisherz_p'])} {_p(value['fisherz_p_subsets_min'])}  "
                f"{_p(value['fisherz_p_subsets_max'])}  {_p(value['kci_p_narrow'])} "
                f"{_p(value['kci_p_wide'])} {_p(value['gcm_p'])} {_gain(value['ll_gain_max'])} "
                f"{_gain(value['ll_gain_min'])} {_fraction(value['reference_votes'])} {votes} "
                f"{_fraction(value['pc_kci_bootstrap'])} {_count(value['common_neighbours'])}")
        return "\n".join(lines)


def _short(algorithm: str) -> str:
    return {"ges": "ges", "grasp": "grasp", "boss": "boss", "notears-mlp": "ntmlp",
            "direct-lingam": "lingam", "fci": "fci"}.get(algorithm, algorithm[:6])


def _p(value: float) -> str:
    return "   -  " if math.isnan(value) else f"{value:6.3g}" if value >= 1e-3 else f"{value:6.0e}"


def _gain(value: float) -> str:
    return "    -  " if math.isnan(value) else f"{value:+7.3f}"


def _fraction(value: float) -> str:
    return "  -  " if math.isnan(value) else f"{value:5.2f}"


def _flag(value: float) -> str:
    return "-" if math.isnan(value) else "y" if value else "n"


def _count(value: float) -> str:
    return " -" if math.isnan(value) else f"{int(value):2d}"


def _clock() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


def _lap(started: tuple[float, float], group: str, cpu: dict[str, float],
         wall: dict[str, float]) -> None:
    cpu[group] = time.process_time() - started[0]
    wall[group] = time.perf_counter() - started[1]


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
    names = tuple(names)
    n, d = data.shape
    column = {name: k for k, name in enumerate(names)}
    pairs = unordered_pairs(d)
    seconds: dict[str, float] = {}
    wall: dict[str, float] = {}
    values = np.full((len(pairs), len(REPAIR_FEATURES)), np.nan)
    index = {name: k for k, name in enumerate(REPAIR_FEATURE_NAMES)}

    def put(row: int, name: str, value: float) -> None:
        values[row, index[name]] = value

    started = _clock()
    guided = guided if guided is not None else guided_start(data, names, sha256)
    skeleton = guided.graph.skeleton()
    kci = make_ci_test("kci", data)
    references = _reference_sets(kci, guided, column, pairs, skeleton)
    for row, ((i, j), (conditioning, p)) in enumerate(zip(pairs.tolist(), references,
                                                            strict=True)):
        put(row, "kept", float(skeleton[i, j]))
        put(row, "set_size", float(len(conditioning)))
        put(row, "kci_p", p)
        put(row, "common_neighbours", float(np.sum(skeleton[i] & skeleton[j])))
    _lap(started, "pc", seconds, wall)

    started = _clock()
    for row, ((i, j), (conditioning, _)) in enumerate(zip(pairs.tolist(), references)):
        p_values = [_safe_p(kci, i, j, s) for s in _subsets(conditioning)]
        put(row, "kci_p_empty", p_values[0])
        put(row, "kci_p_subsets_min", float(np.nanmin(p_values)))
        put(row, "kci_p_subsets_max", float(np.nanmax(p_values)))
    _lap(started, "kci_subsets", seconds, wall)

    started = _clock()
    fisherz = make_ci_test("fisherz", data)
    for row, ((i, j), (conditioning, _)) in enumerate(zip(pairs.tolist(), references)):
        fisherz_p = np.array([_safe_p(fisherz, i, j, s) for s in _subsets(conditioning)])
        put(row, "fisherz_p", fisherz_p[-1])
        if not np.all(np.isnan(fisherz_p)):
            put(row, "fisherz_p_subsets_min", float(np.nanmin(fisherz_p)))
            put(row, "fisherz_p_subsets_max", float(np.nanmax(fisherz_p)))
    _lap(started, "fisherz", seconds, wall)

    started = _clock()
    for scale, name in zip(WIDTH_SCALES, ("kci_p_narrow", "kci_p_wide"), strict=True):
        test = make_ci_test("kci", data, est_width="median", width_scale=scale)
        for row, ((i, j), (conditioning, _)) in enumerate(zip(pairs.tolist(), references)):
            put(row, name, _safe_p(test, i, j, conditioning))
    _lap(started, "kci_widths", seconds, wall)

    started = _clock()
    gcm = make_ci_test("gcm", data, seed=int31_seed(sha256))
    for row, ((i, j), (conditioning, _)) in enumerate(zip(pairs.tolist(), references)):
        put(row, "gcm_p", _safe_p(gcm, i, j, conditioning))
    _lap(started, "gcm", seconds, wall)

    started = _clock()
    marks = guided.graph
    possible_parents = skeleton & ~marks.directed_adjacency().T  # [k, j]: k → j or k — j
    if not isinstance(gcm, GCM):
        raise HeuresisError(f"the local score needs the gcm test's fitter, got {type(gcm)}")
    fitter = gcm.fitter
    for row, (i, j) in enumerate(pairs.tolist()):
        gains = []
        for cause, effect in ((i, j), (j, i)):
            parents = [k for k in np.flatnonzero(possible_parents[:, effect]).tolist()
                       if k != cause]
            gains.append(fitter.log_likelihood_gain(effect, parents, cause))
        put(row, "ll_gain_max", max(gains))
        put(row, "ll_gain_min", min(gains))
    _lap(started, "local_score", seconds, wall)

    started = _clock()
    algorithms = tuple(algorithms)
    votes = np.zeros(len(pairs))
    ran = 0
    algorithm_seconds = {}
    for algorithm in algorithms:
        name = f"keeps_{algorithm.replace('-', '_')}"
        if name not in index:
            raise HeuresisError(f"{algorithm!r} is not a reference algorithm of the repair "
                                f"table; known: {list(REFERENCE_ALGORITHMS)}")
        result = cached_run_algorithm(algorithm, data, names, sha256, {}, None,
                                      int31_seed(sha256))
        algorithm_seconds[algorithm] = float(result.runtime_seconds)
        graph = result.full_graph(names) if result.ok else None
        if graph is None:
            continue
        ran += 1
        adjacency = graph.skeleton()[pairs[:, 0], pairs[:, 1]].astype(np.float64)
        values[:, index[name]] = adjacency
        votes += adjacency
    if ran:
        values[:, index["reference_votes"]] = votes / ran
    _lap(started, "algorithms", seconds, wall)

    started = _clock()
    if bootstraps:
        frequencies, _, _ = bootstrap_edge_frequencies(
            data, int(bootstraps), BOOTSTRAP_FRACTION, instance_rng(sha256, "pc-kci-bootstrap"),
            lambda sample: pc(sample, names, ci_test=make_ci_test("kci", sample,
                                                                  disk_cache=False),
                              alpha=guided.alpha).skeleton)
        values[:, index["pc_kci_bootstrap"]] = frequencies[pairs[:, 0], pairs[:, 1]]
    _lap(started, "bootstrap", seconds, wall)
    return RepairEvidence(
        names=names, sha256=sha256, pairs=pairs, values=values,
        reference_sets=tuple(tuple(r[0]) for r in references), seconds=seconds,
        wall_seconds=wall,
        settings={"algorithms": list(algorithms), "bootstraps": int(bootstraps),
                  "algorithm_seconds": algorithm_seconds,
                  "bootstrap_fraction": BOOTSTRAP_FRACTION, "width_scales": list(WIDTH_SCALES),
                  "alpha": guided.alpha, "n": n, "d": d})


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
