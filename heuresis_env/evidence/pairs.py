"""Pair evidence: per-pair features computed from the data alone, read by the RL view.

One row per unordered pair (i < j): the p-value with which PC-Fisher-z deleted the pair,
|Pearson r|, distance correlation and the gap dCor − |r| on a fixed subsample of at most 300
rows (the router's flag), the KCI p-value at Fisher-z's deleting set (the empty set for pairs
Fisher-z kept), the adjacency frequency of PC-Fisher-z over seeded bootstrap resamples, and
the p-value with which PC-KCI deleted the pair (the guided start's log). The hidden record
is never read.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heuresis_env.discovery.citests import make_ci_test
from heuresis_env.discovery.citests.dcor import distance_correlations
from heuresis_env.discovery.pc import pc
from heuresis_env.evidence.bootstrap import bootstrap_edge_frequencies
from heuresis_env.evidence.start import ALPHA, GuidedStart, guided_start
from heuresis_env.evidence.store import cached_evidence
from heuresis_env.seeding import instance_rng

#: rows of the fixed subsample for distance correlation and the gap (as the router)
DCOR_MAX_ROWS = 300
#: bootstrap resamples behind the stability feature
STABILITY_BOOTSTRAPS = 30
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
    return np.array([(i, j) for i in range(d) for j in range(i + 1, d)],
                    dtype=np.int64).reshape(-1, 2)


def _deletions_by_pair(deletion_log: Sequence, column: dict[str, int]) -> dict:
    out = {}
    for deletion in deletion_log:
        i, j = column[deletion.x], column[deletion.y]
        key = (min(i, j), max(i, j))
        out[key] = (deletion.p_value, tuple(sorted(column[v] for v in deletion.conditioning_set)))
    return out


def compute_pair_evidence(data: np.ndarray, names: Sequence[str], sha256: str,
                          guided: GuidedStart | None = None) -> PairEvidence:
    """Compute every per-pair feature (see the module docstring); seconds to minutes."""
    start = time.perf_counter()
    data = np.asarray(data, dtype=np.float64)
    names = tuple(names)
    n, d = data.shape
    column = {name: k for k, name in enumerate(names)}
    pairs = unordered_pairs(d)
    guided = guided if guided is not None else guided_start(data, names, sha256)

    fisherz = make_ci_test("fisherz", data)
    fisherz_result = pc(None, names, ci_test=fisherz, alpha=ALPHA)
    fisherz_deleted = _deletions_by_pair(fisherz_result.deletion_log, column)
    kci_deleted = _deletions_by_pair(guided.deletion_log, column)

    correlation = np.corrcoef(data, rowvar=False)
    rng = instance_rng(sha256, "dcor-subsample")
    rows = np.sort(rng.choice(n, size=min(n, DCOR_MAX_ROWS), replace=False))
    sub = data[rows]
    sub_correlation = np.corrcoef(sub, rowvar=False)

    kci = make_ci_test("kci", data)
    stability_rng = instance_rng(sha256, "stability")
    frequencies, _, _ = bootstrap_edge_frequencies(
        data, STABILITY_BOOTSTRAPS, 1.0, stability_rng,
        lambda sample: pc(sample, names, ci_test="fisherz", alpha=ALPHA).skeleton)

    n_pairs = len(pairs)
    screened = distance_correlations(sub, pairs.tolist())
    values = {name: np.full(n_pairs, np.nan) for name in FEATURE_NAMES}
    fisherz_sets: list[tuple[int, ...] | None] = []
    kci_sets: list[tuple[int, ...]] = []
    for row, (i, j) in enumerate(pairs.tolist()):
        deleted = fisherz_deleted.get((i, j))
        fisherz_sets.append(None if deleted is None else deleted[1])
        if deleted is not None:
            values["fisherz_deletion_p"][row] = deleted[0]
        if (i, j) in kci_deleted:
            values["kci_deletion_p"][row] = kci_deleted[(i, j)][0]
        values["abs_pearson_r"][row] = abs(correlation[i, j])
        dcor_value = float(screened[row])
        values["distance_correlation"][row] = dcor_value
        values["dcor_gap"][row] = dcor_value - abs(sub_correlation[i, j])
        conditioning = () if deleted is None else deleted[1]
        kci_sets.append(conditioning)
        values["kci_p_at_deleting_set"][row] = kci.test(i, j, conditioning).p_value
        values["stability"][row] = frequencies[i, j]
    return PairEvidence(
        names=names, sha256=sha256, pairs=pairs,
        fisherz_deletion_p=values["fisherz_deletion_p"],
        fisherz_deleting_sets=tuple(fisherz_sets),
        abs_pearson_r=values["abs_pearson_r"],
        distance_correlation=values["distance_correlation"],
        dcor_gap=values["dcor_gap"],
        kci_p_at_deleting_set=values["kci_p_at_deleting_set"],
        kci_conditioning_sets=tuple(kci_sets),
        stability=values["stability"],
        kci_deletion_p=values["kci_deletion_p"],
        runtime=time.perf_counter() - start,
    )


def pair_evidence(data: np.ndarray, names: Sequence[str], sha256: str) -> PairEvidence:
    """The cached pair evidence of an instance (computed once per instance)."""
    params = {"alpha": ALPHA, "dcor_rows": DCOR_MAX_ROWS, "bootstraps": STABILITY_BOOTSTRAPS}
    return cached_evidence(sha256, "pair_evidence", params,
                           lambda: compute_pair_evidence(data, names, sha256))
