"""Expensive per-instance evidence, computed once and cached on disk for every process.

Two bundles, each keyed by the instance's data hash, what was computed, its parameters and
:data:`EVIDENCE_VERSION` (bump it whenever a computation changes):

- the **guided seed**: PC with KCI at α = 0.05 — its CPDAG and deletion log, the starting
  graph and the ``deletion_log`` tool of the guided condition;
- the **pair evidence** read by the RL view, one row per unordered pair (i < j): the p-value
  with which PC-Fisher-z deleted the pair, |Pearson r|, distance correlation and the gap
  dCor − |r| on a fixed subsample of at most 300 rows (the router's flag), the KCI p-value at
  Fisher-z's deleting set (the empty set for pairs Fisher-z kept), the adjacency frequency of
  PC-Fisher-z over seeded bootstrap resamples, and the p-value with which PC-KCI deleted the
  pair (the guided seed's log).

Everything here is computed from the data alone; the hidden record is never read. A file lock
per entry makes concurrent processes (vector environments) compute each entry once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from heuresis_env.cache import ResultCache, cache_disabled, cache_root, stable_hash
from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import EdgeMark, Graph

#: bump when any computation below changes, so stale cache entries are not reused
EVIDENCE_VERSION = 1
#: significance level of every PC run here (the spec's default)
ALPHA = 0.05
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

_MEMORY: dict[tuple, Any] = {}
_MEMORY_LIMIT = 512


def _subseed(sha256: str, what: str) -> np.random.SeedSequence:
    """A seed sequence for one named computation on one instance."""
    words = [int(sha256[k:k + 8], 16) for k in range(0, 32, 8)]
    return np.random.SeedSequence([*words, *what.encode()])


def cached_evidence(sha256: str, what: str, params: dict[str, Any],
                    compute: Callable[[], Any]) -> Any:
    """Return the cached value of (instance, what, params) or compute and store it once.

    Checked in order: this process's memory, the disk cache, then ``compute`` under a file
    lock (a second process waiting on the lock finds the first one's result on disk).
    """
    memory_key = (sha256, what, repr(sorted(params.items())))
    if memory_key in _MEMORY:
        return _MEMORY[memory_key]
    key = stable_hash({"sha256": sha256, "what": what, "params": params,
                       "version": EVIDENCE_VERSION})
    store = ResultCache("evidence")
    value = store.get(key)
    if value is None:
        if cache_disabled():
            value = compute()
        else:
            from filelock import FileLock

            lock_dir = cache_root() / "evidence" / "locks"
            lock_dir.mkdir(parents=True, exist_ok=True)
            with FileLock(str(lock_dir / f"{key}.lock")):
                value = store.get(key)
                if value is None:
                    value = compute()
                    store.set(key, value)
    if len(_MEMORY) >= _MEMORY_LIMIT:
        _MEMORY.pop(next(iter(_MEMORY)))
    _MEMORY[memory_key] = value
    return value


def clear_memory() -> None:
    """Forget this process's in-memory copies (the disk cache stays)."""
    _MEMORY.clear()


# ---- the guided seed ---------------------------------------------------------------------------

@dataclass(frozen=True)
class GuidedSeed:
    """PC-KCI's output on one instance: the guided condition's starting graph and its log."""

    graph: Graph
    deletion_log: tuple  # of heuresis_env.pc.Deletion, in deletion order
    n_tests: int
    alpha: float
    ci_test: str
    runtime: float


def compute_guided_seed(data: np.ndarray, names: Sequence[str], alpha: float = ALPHA,
                        ci_test: str = "kci") -> GuidedSeed:
    """Run PC with ``ci_test`` (KCI by default) and keep what the guided condition shows."""
    from heuresis_env.pc import pc

    result = pc(data, names, ci_test=ci_test, alpha=alpha)
    return GuidedSeed(graph=result.graph, deletion_log=tuple(result.deletion_log),
                      n_tests=result.n_tests, alpha=alpha, ci_test=result.ci_test,
                      runtime=result.runtime)


def guided_seed(data: np.ndarray, names: Sequence[str], sha256: str,
                alpha: float = ALPHA) -> GuidedSeed:
    """The cached guided seed of an instance (PC-KCI, computed once per instance)."""
    return cached_evidence(sha256, "guided_seed", {"alpha": alpha, "ci_test": "kci"},
                           lambda: compute_guided_seed(data, names, alpha))


# ---- bootstrap edge frequencies -------------------------------------------------------------

def bootstrap_edge_frequencies(data: np.ndarray, n_boot: int, frac: float,
                               rng: np.random.Generator,
                               run: Callable[[np.ndarray], Graph | None]
                               ) -> tuple[np.ndarray, np.ndarray, int]:
    """How often each pair is adjacent, and each edge directed, over bootstrap resamples.

    Each resample draws ``round(frac · n)`` rows with replacement; ``run`` maps a data matrix
    to a graph over the same columns, or None when the algorithm failed on that resample
    (failed resamples are left out). Returns (adjacency frequencies, symmetric d × d;
    directed frequencies, ``[i, j]`` for i → j; number of successful resamples).
    """
    data = np.asarray(data, dtype=np.float64)
    n, d = data.shape
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 1:
        raise HeuresisError(f"n_boot must be a positive integer, got {n_boot!r}")
    if not 0 < frac <= 1:
        raise HeuresisError(f"frac must be in (0, 1], got {frac!r}")
    rows = max(10, int(round(frac * n)))
    adjacent = np.zeros((d, d), dtype=np.int64)
    directed = np.zeros((d, d), dtype=np.int64)
    successes = 0
    for _ in range(int(n_boot)):
        graph = run(data[rng.integers(0, n, size=rows)])
        if graph is None:
            continue
        successes += 1
        adjacent += graph.skeleton()
        directed += graph.directed_adjacency()
    scale = float(max(successes, 1))
    return adjacent / scale, directed / scale, successes


# ---- pair evidence ------------------------------------------------------------------------------

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
                          seed: GuidedSeed | None = None) -> PairEvidence:
    """Compute every per-pair feature (see the module docstring); seconds to minutes."""
    from heuresis_env.citests import make_ci_test
    from heuresis_env.citests.dcor_test import distance_correlation
    from heuresis_env.pc import pc

    start = time.perf_counter()
    data = np.asarray(data, dtype=np.float64)
    names = tuple(names)
    n, d = data.shape
    column = {name: k for k, name in enumerate(names)}
    pairs = unordered_pairs(d)
    seed = seed if seed is not None else guided_seed(data, names, sha256)

    fisherz = make_ci_test("fisherz", data)
    fisherz_result = pc(None, names, ci_test=fisherz, alpha=ALPHA)
    fisherz_deleted = _deletions_by_pair(fisherz_result.deletion_log, column)
    kci_deleted = _deletions_by_pair(seed.deletion_log, column)

    correlation = np.corrcoef(data, rowvar=False)
    rng = np.random.default_rng(_subseed(sha256, "dcor-subsample"))
    rows = np.sort(rng.choice(n, size=min(n, DCOR_MAX_ROWS), replace=False))
    sub = data[rows]
    sub_correlation = np.corrcoef(sub, rowvar=False)

    kci = make_ci_test("kci", data)
    stability_rng = np.random.default_rng(_subseed(sha256, "stability"))
    frequencies, _, _ = bootstrap_edge_frequencies(
        data, STABILITY_BOOTSTRAPS, 1.0, stability_rng,
        lambda sample: pc(sample, names, ci_test="fisherz", alpha=ALPHA).skeleton)

    n_pairs = len(pairs)
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
        dcor_value = float(distance_correlation(sub[:, i], sub[:, j]))
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


class EvidenceProvider:
    """Lazy access to one instance's evidence (computed or loaded on first use)."""

    def __init__(self, data: np.ndarray, names: Sequence[str], sha256: str):
        self._data = data
        self.names = tuple(names)
        self.sha256 = sha256

    def guided_seed(self) -> GuidedSeed:
        return guided_seed(self._data, self.names, self.sha256)

    def pair_evidence(self) -> PairEvidence:
        return pair_evidence(self._data, self.names, self.sha256)

    def warm(self, guided: bool = True, pairs: bool = True) -> None:
        """Compute (or load) the bundles now, e.g. before timing an RL run."""
        if guided:
            self.guided_seed()
        if pairs:
            self.pair_evidence()


def seed_graph_for_edits(graph: Graph) -> Graph:
    """A copy of a seed graph with only tails and arrows (other marks become undirected).

    PC's output is a CPDAG, but a conflicting v-structure can leave a bidirected edge; the RL
    view's operations know directed and undirected edges only.
    """
    marks = graph.marks.copy()
    odd = (marks == EdgeMark.CIRCLE) | ((marks == EdgeMark.ARROW) & (marks.T == EdgeMark.ARROW))
    odd = odd | odd.T
    marks[odd] = EdgeMark.TAIL
    return Graph(graph.names, marks)
