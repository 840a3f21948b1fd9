"""Pair evidence: per-pair features computed from the data alone, read by the RL view.

One row per unordered pair (i < j): the p-value with which PC-Fisher-z deleted the pair,
|Pearson r|, distance correlation and the gap dCor − |r| on a fixed subsample of at most 300
rows (the router's flag), the kernel CI test's p-value at Fisher-z's deleting set (the empty
set for pairs Fisher-z kept; ``kci-auto``: exact KCI up to 2,000 rows, its large-n
approximation above), the adjacency frequency of PC-Fisher-z over seeded bootstrap resamples (up to
:data:`STABILITY_MAX_D` variables; missing above), and
the p-value with which PC-KCI deleted the pair (the guided start's log). The hidden record
is never read.

Two ways to the same numbers: :func:`pair_evidence` computes the whole table at once (cached
on disk); :class:`PairTable` computes the cheap columns (:data:`CHEAP_FEATURES`: one
PC-Fisher-z run, the correlation matrix, PC-KCI's deletion log) for every pair at once and a
pair's deferred columns (:data:`DEFERRED_FEATURES`) when asked for — the lazy RL view asks
when a pair is tested. :func:`compute_pair_evidence` is built from :class:`PairTable`, so the
two agree to the last bit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from heuresis_env.cache import MemoCache
from heuresis_env.discovery.citests import CITest, make_ci_test
from heuresis_env.discovery.citests.dcor import distance_correlations
from heuresis_env.discovery.pc import pc
from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.evidence.bootstrap import bootstrap_edge_frequencies
from heuresis_env.evidence.start import ALPHA, GuidedStart, guided_start
from heuresis_env.evidence.store import cached_evidence, forget_with_memory, stored_evidence
from heuresis_env.seeding import instance_rng

#: rows of the fixed subsample for distance correlation and the gap (as the router)
DCOR_MAX_ROWS = 300
#: bootstrap resamples behind the stability feature
STABILITY_BOOTSTRAPS = 30
#: the stability feature is computed up to this many variables; above, the column is missing
#: (30 PC-Fisher-z runs on bootstrap resamples cost about 4 minutes at d = 223, n = 600)
STABILITY_MAX_D = 100
#: the RL view's per-pair evidence features, in column order
FEATURE_NAMES = (
    "fisherz_deletion_p",
    "abs_pearson_r",
    "distance_correlation",
    "dcor_gap",
    "kci_p_at_deleting_set",
    "stability",
    "kci_deletion_p",
)
#: columns a :class:`PairTable` fills for every pair at once, cheaply (``kci_deletion_p``
#: once the guided start is given: PC-KCI's log, which the guided condition computes anyway)
CHEAP_FEATURES = ("fisherz_deletion_p", "abs_pearson_r", "kci_deletion_p")
#: columns a :class:`PairTable` computes pair by pair when asked (distance correlation on the
#: subsample, the KCI test) or, for stability, once for the whole table (PC-Fisher-z on every
#: bootstrap resample: the one deferred column that cannot be computed for one pair alone)
DEFERRED_FEATURES = ("distance_correlation", "dcor_gap", "kci_p_at_deleting_set", "stability")


@dataclass(frozen=True)
class PairEvidence:
    """Per-pair evidence for the RL view; arrays have one entry per unordered pair (i < j).

    ``nan`` marks an entry that does not exist (a pair PC kept has no deletion p-value).
    ``kci_conditioning_sets[k]`` is the set at which ``kci_p_at_deleting_set[k]`` was tested
    (column indices): Fisher-z's deleting set, or () for a pair Fisher-z kept.
    """

    names: tuple[str, ...]
    sha256: str
    pairs: np.ndarray  # (n_pairs, 2) int
    fisherz_deletion_p: np.ndarray
    fisherz_deleting_sets: tuple  # of tuple[int, ...] | None
    abs_pearson_r: np.ndarray
    distance_correlation: np.ndarray
    dcor_gap: np.ndarray
    kci_p_at_deleting_set: np.ndarray
    kci_conditioning_sets: tuple  # of tuple[int, ...]
    stability: np.ndarray
    kci_deletion_p: np.ndarray
    runtime: float

    def feature_matrix(self) -> np.ndarray:
        """(n_pairs, len(FEATURE_NAMES)) float64 with nan for missing entries."""
        return np.column_stack([getattr(self, name) for name in FEATURE_NAMES])

    def pair_index(self, i: int, j: int) -> int:
        """Row of the unordered pair {i, j}."""
        i, j = (i, j) if i < j else (j, i)
        d = len(self.names)
        return i * d - i * (i + 1) // 2 + (j - i - 1)


def unordered_pairs(d: int) -> np.ndarray:
    """(d(d−1)/2, 2) int64: the pairs i < j in the order (0,1), (0,2), …, (d−2,d−1)."""
    i, j = np.triu_indices(max(int(d), 0), 1)
    return np.column_stack([i, j]).astype(np.int64).reshape(-1, 2)


def _deletions_by_pair(deletion_log: Sequence, column: dict[str, int]) -> dict:
    out = {}
    for deletion in deletion_log:
        i, j = column[deletion.x], column[deletion.y]
        key = (min(i, j), max(i, j))
        out[key] = (deletion.p_value, tuple(sorted(column[v] for v in deletion.conditioning_set)))
    return out


#: the kernel CI test of ``kci_p_at_deleting_set``: exact KCI up to its threshold (the same
#: tests and KCI cache entries as before), the large-n approximation above it
KERNEL_TEST = "kci-auto"


def _pair_evidence_params() -> dict:
    return {"alpha": ALPHA, "dcor_rows": DCOR_MAX_ROWS, "bootstraps": STABILITY_BOOTSTRAPS,
            "kernel_test": KERNEL_TEST}


def fisherz_deletions(data: np.ndarray, names: Sequence[str], sha256: str
                      ) -> dict[str, np.ndarray]:
    """PC-Fisher-z's deletions on an instance (cached), one entry per unordered pair: ``p``
    the deletion p-value (nan: Fisher-z kept the pair) and the deleting set of pair k in
    ``members[starts[k]:starts[k + 1]]`` (column indices, sorted). Plain arrays, so that
    reading the entry back at d = 223 (24,753 pairs) takes milliseconds.

    Where PC-Fisher-z refuses the data (a ``DataError``: e.g. a singular correlation matrix,
    a variable a linear function of others, as on Andes under the ``lg`` mechanisms) the entry
    has no deletion (every ``p`` nan, every set empty) and ``error``, the reason."""
    names = tuple(names)

    def compute() -> dict[str, np.ndarray]:
        fisherz = make_ci_test("fisherz", np.asarray(data, dtype=np.float64))
        error: str | None = None
        try:
            log = pc(None, names, ci_test=fisherz, alpha=ALPHA).deletion_log
        except DataError as refused:
            log, error = [], str(refused)
        deleted = _deletions_by_pair(log, {name: k for k, name in enumerate(names)})
        pairs = unordered_pairs(len(names))
        p_values = np.full(len(pairs), np.nan)
        starts = np.zeros(len(pairs) + 1, dtype=np.int64)
        members: list[int] = []
        for row, (i, j) in enumerate(pairs.tolist()):
            found = deleted.get((i, j))
            if found is not None:
                p_values[row] = found[0]
                members.extend(found[1])
            starts[row + 1] = len(members)
        out = {"p": p_values, "starts": starts, "members": np.array(members, dtype=np.int64)}
        if error is not None:
            out["error"] = np.array(error)
        return out

    return cached_evidence(sha256, "pair_fisherz_deletions", {"alpha": ALPHA}, compute)


def stability_frequencies(data: np.ndarray, names: Sequence[str], sha256: str) -> np.ndarray:
    """The stability column's source (cached): PC-Fisher-z's adjacency frequency of every pair
    (d × d) over :data:`STABILITY_BOOTSTRAPS` seeded bootstrap resamples of all n rows; all
    nan (missing) where PC-Fisher-z refuses a resample (a ``DataError``: a singular
    correlation matrix)."""
    names = tuple(names)

    def compute() -> np.ndarray:
        values = np.asarray(data, dtype=np.float64)
        try:
            frequencies, _, _ = bootstrap_edge_frequencies(
                values, STABILITY_BOOTSTRAPS, 1.0, instance_rng(sha256, "stability"),
                lambda sample: pc(sample, names, ci_test="fisherz", alpha=ALPHA).skeleton)
        except DataError:
            return np.full((len(names), len(names)), np.nan)
        return frequencies

    return cached_evidence(sha256, "pair_stability",
                           {"alpha": ALPHA, "bootstraps": STABILITY_BOOTSTRAPS}, compute)


class PairTable:
    """One instance's pair evidence, computed on demand (see the module docstring).

    :meth:`cheap_matrix` holds the cheap columns of every pair and nan in the deferred ones;
    :meth:`row` computes a pair's deferred columns on first use and keeps them (the KCI test
    also lands in the KCI disk cache, stability in the evidence cache); :meth:`evidence` the
    whole :class:`PairEvidence`. When the whole table is already cached (memory or disk),
    rows are read from it. ``counts`` tells what this table computed itself: ``rows`` pairs
    whose deferred columns it computed, ``stability`` whole-table stability computations (or
    reads) it asked for.
    """

    def __init__(self, data: np.ndarray, names: Sequence[str], sha256: str,
                 reuse: bool = True):
        self._data = np.asarray(data, dtype=np.float64)
        if self._data.ndim != 2 or self._data.shape[1] < 2:
            raise HeuresisError(f"pair evidence needs an n × d table with d ≥ 2, got shape "
                                f"{self._data.shape}")
        self.names = tuple(names)
        self.sha256 = sha256
        n, d = self._data.shape
        if len(self.names) != d:
            raise HeuresisError(f"{len(self.names)} names for {d} columns")
        self.pairs = unordered_pairs(d)
        self.n_pairs = len(self.pairs)
        self.counts = {"rows": 0, "stability": 0}
        self._column = {name: k for k, name in enumerate(self.names)}
        self._whole: PairEvidence | None = (
            stored_evidence(sha256, "pair_evidence", _pair_evidence_params()) if reuse else None)
        self._sub: np.ndarray | None = None
        self._sub_correlation: np.ndarray | None = None
        self._stability: np.ndarray | None = None
        self._kci: CITest | None = None
        self._values = np.full((self.n_pairs, len(FEATURE_NAMES)), np.nan)
        self._done = np.zeros(self.n_pairs, dtype=bool)
        self._guided_given = False
        index = {name: k for k, name in enumerate(FEATURE_NAMES)}
        self._index = index
        #: why PC-Fisher-z could not run on the instance (then it shows no deletion), or None
        self.fisherz_error: str | None = None
        if self._whole is not None:
            self._sets = tuple(self._whole.fisherz_deleting_sets)
            whole = self._whole.feature_matrix()
            cheap = [index[name] for name in CHEAP_FEATURES if name != "kci_deletion_p"]
            self._values[:, cheap] = whole[:, cheap]
            return
        deleted = fisherz_deletions(self._data, self.names, sha256)
        if "error" in deleted:
            self.fisherz_error = str(deleted["error"])
        p_values, starts = deleted["p"], deleted["starts"].tolist()
        members = deleted["members"].tolist()
        self._sets = tuple(None if np.isnan(p_values[row])
                           else tuple(members[starts[row]:starts[row + 1]])
                           for row in range(self.n_pairs))
        self._values[:, index["fisherz_deletion_p"]] = p_values
        correlation = np.corrcoef(self._data, rowvar=False)
        self._values[:, index["abs_pearson_r"]] = np.abs(
            correlation[self.pairs[:, 0], self.pairs[:, 1]])

    # ---- the cheap part -------------------------------------------------------------------
    def add_guided(self, guided: GuidedStart) -> None:
        """Fill ``kci_deletion_p`` from the guided start's (PC-KCI's) deletion log."""
        if self._guided_given:
            return
        column = self._index["kci_deletion_p"]
        if self._whole is not None:
            self._values[:, column] = self._whole.kci_deletion_p
        else:
            deleted = _deletions_by_pair(guided.deletion_log, self._column)
            for row, (i, j) in enumerate(self.pairs.tolist()):
                if (i, j) in deleted:
                    self._values[row, column] = deleted[(i, j)][0]
        self._guided_given = True

    def cheap_matrix(self) -> np.ndarray:
        """(n_pairs, len(FEATURE_NAMES)): the cheap columns, nan in the deferred ones (and in
        ``kci_deletion_p`` until :meth:`add_guided`)."""
        out = self._values.copy()
        out[:, [self._index[name] for name in DEFERRED_FEATURES]] = np.nan
        return out

    def pair_index(self, i: int, j: int) -> int:
        """Row of the unordered pair {i, j}."""
        i, j = (i, j) if i < j else (j, i)
        d = len(self.names)
        return i * d - i * (i + 1) // 2 + (j - i - 1)

    def deleting_set(self, row: int) -> tuple[int, ...] | None:
        """PC-Fisher-z's deleting set of a pair (None: Fisher-z kept it)."""
        return self._sets[row]

    def conditioning_set(self, row: int) -> tuple[int, ...]:
        """The set the KCI column tests a pair at: Fisher-z's deleting set, or ()."""
        found = self._sets[row]
        return () if found is None else found

    # ---- the deferred part ----------------------------------------------------------------
    def row(self, row: int) -> np.ndarray:
        """Every feature of one pair (a copy; nan where missing), computing its deferred
        columns on first use."""
        self.compute_rows([row])
        return self._values[row].copy()

    def compute_rows(self, rows: Sequence[int]) -> None:
        """Compute the deferred columns of the pairs ``rows`` not computed yet."""
        todo = [int(r) for r in rows if not self._done[int(r)]]
        if not todo:
            return
        index = self._index
        deferred = [index[name] for name in DEFERRED_FEATURES]
        if self._whole is not None:
            self._values[np.ix_(todo, deferred)] = self._whole.feature_matrix()[
                np.ix_(todo, deferred)]
            self._done[todo] = True
            return
        if self._sub is None:
            n = self._data.shape[0]
            rng = instance_rng(self.sha256, "dcor-subsample")
            self._sub = self._data[np.sort(rng.choice(n, size=min(n, DCOR_MAX_ROWS),
                                                      replace=False))]
            self._sub_correlation = np.corrcoef(self._sub, rowvar=False)
            self._kci = make_ci_test(KERNEL_TEST, self._data)
        if self._stability is None and len(self.names) <= STABILITY_MAX_D:
            self._stability = stability_frequencies(self._data, self.names, self.sha256)
            self.counts["stability"] += 1
        assert self._sub_correlation is not None and self._kci is not None
        pairs = self.pairs[todo]
        screened = distance_correlations(self._sub, pairs.tolist())
        for k, (row, (i, j)) in enumerate(zip(todo, pairs.tolist(), strict=True)):
            dcor_value = float(screened[k])
            self._values[row, index["distance_correlation"]] = dcor_value
            self._values[row, index["dcor_gap"]] = dcor_value - abs(self._sub_correlation[i, j])
            self._values[row, index["kci_p_at_deleting_set"]] = self._kci.test(
                i, j, self.conditioning_set(row)).p_value
            if self._stability is not None:
                self._values[row, index["stability"]] = self._stability[i, j]
            self._done[row] = True
        self.counts["rows"] += len(todo)

    @property
    def n_computed(self) -> int:
        """Pairs whose deferred columns are known."""
        return int(self._done.sum())

    def evidence(self, guided: GuidedStart, runtime: float = 0.0) -> PairEvidence:
        """The whole table (every deferred column computed) as :class:`PairEvidence`."""
        self.add_guided(guided)
        self.compute_rows(range(self.n_pairs))
        values = {name: self._values[:, k].copy() for k, name in enumerate(FEATURE_NAMES)}
        return PairEvidence(
            names=self.names, sha256=self.sha256, pairs=self.pairs,
            fisherz_deletion_p=values["fisherz_deletion_p"],
            fisherz_deleting_sets=self._sets,
            abs_pearson_r=values["abs_pearson_r"],
            distance_correlation=values["distance_correlation"],
            dcor_gap=values["dcor_gap"],
            kci_p_at_deleting_set=values["kci_p_at_deleting_set"],
            kci_conditioning_sets=tuple(self.conditioning_set(r) for r in range(self.n_pairs)),
            stability=values["stability"],
            kci_deletion_p=values["kci_deletion_p"],
            runtime=runtime,
        )


def compute_pair_evidence(data: np.ndarray, names: Sequence[str], sha256: str,
                          guided: GuidedStart | None = None) -> PairEvidence:
    """Compute every per-pair feature (see the module docstring); seconds to minutes."""
    start = time.perf_counter()
    names = tuple(names)
    guided = guided if guided is not None else guided_start(data, names, sha256)
    table = PairTable(data, names, sha256, reuse=False)
    evidence = table.evidence(guided)
    return replace(evidence, runtime=time.perf_counter() - start)


def pair_evidence(data: np.ndarray, names: Sequence[str], sha256: str) -> PairEvidence:
    """The cached pair evidence of an instance (computed once per instance)."""
    return cached_evidence(sha256, "pair_evidence", _pair_evidence_params(),
                           lambda: compute_pair_evidence(data, names, sha256))


_TABLES: MemoCache[PairTable] = forget_with_memory(MemoCache(8))


def pair_table(data: np.ndarray, names: Sequence[str], sha256: str) -> PairTable:
    """This process's :class:`PairTable` of an instance: one per instance, so that the pairs
    an episode computed stay computed for the next reset of the same instance."""
    key = (sha256, tuple(names))
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES.set(key, PairTable(data, names, sha256))
    return table
