"""The paper's router, exactly: PC-Fisher-z at α; the gap dCor − |r| of every pair it
deleted, on a fixed random subsample of at most 300 rows; PC-KCI when at least τ of the
deleted pairs are flagged, else PC-Fisher-z; on the KCI branch the restore step with a Holm
correction (:func:`restore_deletions`). :class:`PaperRouterPolicy` plays it in an episode.

The decision rules are written out in ``docs/policies.md``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar

import numpy as np

from agents.checks import check_int, check_probability, check_real
from agents.routers.holm import holm_adjusted_p_values
from baselines.policies import edge_strings
from heuresis_env.cache import ResultCache, stable_hash
from heuresis_env.data import data_sha256, validate_data
from heuresis_env.discovery import (
    CITest,
    PCResult,
    distance_correlations,
    make_ci_test,
    pc,
    validate_names,
)
from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import Graph
from heuresis_env.policy import Policy

__all__ = [
    "BRANCHES",
    "PairGap",
    "PaperRouterPolicy",
    "RestoreAttempt",
    "RouterDecision",
    "alternative_conditioning_sets",
    "budget_left",
    "dcor_gaps",
    "paper_router",
    "paper_router_policy",
    "restore_deletions",
]

#: the router's two branches, as ``RouterDecision.branch`` names them
BRANCHES = ("pc-fisherz", "pc-kci")


@dataclass(frozen=True)
class PairGap:
    """The router's flag for one pair PC-Fisher-z deleted: dCor − |Pearson r| on the subsample."""

    x: str
    y: str
    conditioning_set: tuple[str, ...]
    fisherz_p_value: float
    distance_correlation: float
    abs_pearson_r: float
    gap: float
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["conditioning_set"] = list(self.conditioning_set)
        return record


@dataclass(frozen=True)
class RestoreAttempt:
    """The restore step on one pair PC-KCI deleted (KCI branch only).

    ``p_value`` is KCI's re-test at the deleting set, ``holm_adjusted_p`` its Holm-adjusted
    value across the instance's deleted pairs. Alternatives are tested only when Holm rejects;
    ``separating_set`` is the first alternative with p > α (which vetoes the restore).
    """

    x: str
    y: str
    conditioning_set: tuple[str, ...]
    deletion_p_value: float
    p_value: float
    holm_adjusted_p: float
    holm_rejected: bool
    alternatives_tested: tuple[tuple[str, ...], ...]
    separating_set: tuple[str, ...] | None
    separating_p_value: float | None
    restored: bool

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["conditioning_set"] = list(self.conditioning_set)
        record["alternatives_tested"] = [list(s) for s in self.alternatives_tested]
        record["separating_set"] = (None if self.separating_set is None
                                    else list(self.separating_set))
        return record


@dataclass
class RouterDecision:
    """What :func:`paper_router` did on one dataset, and the graph it returns."""

    branch: str
    graph: Graph
    n_deleted: int
    n_flagged: int
    flagged_fraction: float
    gaps: list[PairGap]
    restore_attempts: list[RestoreAttempt]
    fisherz_graph: Graph
    kci_graph: Graph | None
    alpha: float
    gap_threshold: float
    tau: float
    subsample_rows: int
    seed: int
    restore: bool
    runtime_seconds: float = 0.0

    @property
    def restores_attempted(self) -> int:
        return len(self.restore_attempts)

    @property
    def restores_accepted(self) -> int:
        return sum(attempt.restored for attempt in self.restore_attempts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "branch": self.branch, "graph": self.graph.to_dict(),
            "edges": [str(edge) for edge in self.graph.edges()],
            "n_deleted": self.n_deleted, "n_flagged": self.n_flagged,
            "flagged_fraction": self.flagged_fraction,
            "gaps": [gap.to_dict() for gap in self.gaps],
            "restores_attempted": self.restores_attempted,
            "restores_accepted": self.restores_accepted,
            "restore_attempts": [attempt.to_dict() for attempt in self.restore_attempts],
            "fisherz_graph": self.fisherz_graph.to_dict(),
            "kci_graph": None if self.kci_graph is None else self.kci_graph.to_dict(),
            "alpha": self.alpha, "gap_threshold": self.gap_threshold, "tau": self.tau,
            "subsample_rows": self.subsample_rows, "seed": self.seed, "restore": self.restore,
            "runtime_seconds": self.runtime_seconds,
        }


def _subsample_rows(n: int, subsample: int, seed: int) -> np.ndarray:
    """The router's fixed random subsample: min(n, subsample) distinct rows, sorted."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=min(n, subsample), replace=False))


def _abs_pearson(a: np.ndarray, b: np.ndarray) -> float:
    sa, sb = float(np.std(a)), float(np.std(b))
    if sa == 0.0 or sb == 0.0:
        return 0.0
    return float(abs(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb)))


def dcor_gaps(data: np.ndarray, pairs: Sequence[tuple[int, int]], subsample: int = 300,
              seed: int = 0) -> list[tuple[float, float, float]]:
    """(dCor, |Pearson r|, dCor − |r|) of each column pair on the router's fixed subsample.

    The subsample is ``min(n, subsample)`` rows drawn without replacement by
    ``numpy.random.default_rng(seed)``; both statistics use the same rows.
    """
    data = np.asarray(data, dtype=np.float64)
    rows = _subsample_rows(data.shape[0], subsample, seed)
    sub = data[rows]
    out = []
    for (i, j), dcor_value in zip(pairs, distance_correlations(sub, pairs), strict=True):
        abs_r = _abs_pearson(sub[:, i], sub[:, j])
        out.append((float(dcor_value), abs_r, float(dcor_value) - abs_r))
    return out


def alternative_conditioning_sets(graph: Graph, x: str, y: str,
                                  deleting_set: Sequence[str], max_size: int
                                  ) -> list[tuple[str, ...]]:
    """The alternative sets the restore step tries for a deleted pair x — y.

    Every T ⊆ adj(x) \\ {y} and every T ⊆ adj(y) \\ {x}, adjacency taken in ``graph`` (the PC
    graph), with |T| ≤ ``max_size`` and T ≠ the deleting set; each distinct set once, x's side
    first, then y's, each side in increasing size and ``itertools.combinations`` order of the
    graph's column order.
    """
    skeleton = graph.skeleton()
    index = {name: k for k, name in enumerate(graph.names)}
    seen = {frozenset(deleting_set)}
    out: list[tuple[str, ...]] = []
    for a, b in ((x, y), (y, x)):
        side = [graph.names[k] for k in np.nonzero(skeleton[index[a]])[0] if graph.names[k] != b]
        for size in range(0, min(max_size, len(side)) + 1):
            for combo in itertools.combinations(side, size):
                key = frozenset(combo)
                if key not in seen:
                    seen.add(key)
                    out.append(combo)
    return out


def restore_deletions(pc_result: PCResult, ci_test: CITest, alpha: float = 0.05
                      ) -> list[RestoreAttempt]:
    """The router's restore step: re-test every pair PC deleted and decide which to restore.

    A pair is restored only if (1) ``ci_test`` rejects independence at the deleting set after a
    Holm correction across all of ``pc_result``'s deletions, and (2) no alternative set
    (:func:`alternative_conditioning_sets` in PC's graph, |T| ≤ deleting level + 1) gives
    p > ``alpha``. ``ci_test`` must be bound to data whose columns are ``pc_result.names`` (the
    paper router passes PC's own test, i.e. the full sample).
    """
    alpha = check_probability("alpha", alpha)
    if ci_test.d != len(pc_result.names):
        raise HeuresisError(f"the CI test has {ci_test.d} columns but PC ran on "
                            f"{len(pc_result.names)} variables ({list(pc_result.names)})")
    column = {name: k for k, name in enumerate(pc_result.names)}
    deletions = list(pc_result.deletion_log)
    retests = [ci_test.test(column[d.x], column[d.y], [column[v] for v in d.conditioning_set])
               for d in deletions]
    adjusted = holm_adjusted_p_values([r.p_value for r in retests])
    attempts = []
    for deletion, retest, holm_p in zip(deletions, retests, adjusted, strict=True):
        rejected = bool(holm_p <= alpha)
        tested: list[tuple[str, ...]] = []
        separating, separating_p = None, None
        if rejected:
            for alternative in alternative_conditioning_sets(
                    pc_result.skeleton, deletion.x, deletion.y, deletion.conditioning_set,
                    deletion.level + 1):
                result = ci_test.test(column[deletion.x], column[deletion.y],
                                      [column[v] for v in alternative])
                tested.append(alternative)
                if result.p_value > alpha:
                    separating, separating_p = alternative, float(result.p_value)
                    break
        attempts.append(RestoreAttempt(
            x=deletion.x, y=deletion.y, conditioning_set=tuple(deletion.conditioning_set),
            deletion_p_value=float(deletion.p_value), p_value=float(retest.p_value),
            holm_adjusted_p=float(holm_p), holm_rejected=rejected,
            alternatives_tested=tuple(tested), separating_set=separating,
            separating_p_value=separating_p, restored=rejected and separating is None))
    return attempts


def paper_router(X: np.ndarray, names: Sequence[str], *, alpha: float = 0.05,
                 gap_threshold: float = 0.15, tau: float = 0.2, subsample: int = 300,
                 seed: int = 0, restore: bool = True) -> RouterDecision:
    """The paper's scripted router on data ``X`` (n × d) with column ``names``.

    PC-Fisher-z at ``alpha``; each pair it deleted is flagged when dCor − |r| ≥ ``gap_threshold``
    on a fixed subsample of ≤ ``subsample`` rows (seeded by ``seed``). If flagged / deleted ≥
    ``tau`` (and PC-Fisher-z deleted something), the result is PC-KCI's graph after the restore
    step (:func:`restore_deletions`, skipped when ``restore`` is False; a restored pair is added
    undirected); otherwise PC-Fisher-z's graph.
    """
    started = time.perf_counter()
    alpha = check_probability("alpha", alpha)
    gap_threshold = check_real("gap_threshold", gap_threshold)
    tau = check_probability("tau", tau, open_low=False, open_high=False)
    subsample = check_int("subsample", subsample, 2)
    seed = check_int("seed", seed, 0)
    if not isinstance(restore, bool):
        raise HeuresisError(f"restore must be True or False, got {restore!r}")
    data = validate_data(X)
    names = validate_names(names, data.shape[1])

    fisherz = pc(data, names, ci_test="fisherz", alpha=alpha)
    column = {name: k for k, name in enumerate(names)}
    pairs = [(column[d.x], column[d.y]) for d in fisherz.deletion_log]
    gaps = [PairGap(x=d.x, y=d.y, conditioning_set=tuple(d.conditioning_set),
                    fisherz_p_value=float(d.p_value), distance_correlation=dc,
                    abs_pearson_r=abs_r, gap=gap, flagged=bool(gap >= gap_threshold))
            for d, (dc, abs_r, gap) in zip(fisherz.deletion_log,
                                           dcor_gaps(data, pairs, subsample, seed), strict=True)]
    n_deleted = len(gaps)
    n_flagged = sum(g.flagged for g in gaps)
    fraction = n_flagged / n_deleted if n_deleted else 0.0

    branch, graph, kci_graph, attempts = "pc-fisherz", fisherz.graph.copy(), None, []
    if n_deleted and fraction >= tau:
        branch = "pc-kci"
        kci = make_ci_test("kci", data)
        kci_result = pc(None, names, ci_test=kci, alpha=alpha)
        kci_graph = kci_result.graph
        graph = kci_graph.copy()
        if restore:
            attempts = restore_deletions(kci_result, kci, alpha)
            for attempt in attempts:
                if attempt.restored:
                    graph.add_undirected(attempt.x, attempt.y)
    return RouterDecision(
        branch=branch, graph=graph, n_deleted=n_deleted, n_flagged=n_flagged,
        flagged_fraction=fraction, gaps=gaps, restore_attempts=attempts,
        fisherz_graph=fisherz.graph, kci_graph=kci_graph, alpha=alpha,
        gap_threshold=gap_threshold, tau=tau,
        subsample_rows=min(data.shape[0], subsample), seed=seed, restore=restore,
        runtime_seconds=time.perf_counter() - started)


# ---- as a policy --------------------------------------------------------------------------------

#: bump when what the router decides or how changes (stale policy-cache entries are ignored)
ROUTER_CACHE_VERSION = 1
T = TypeVar("T")


def cached_on_data(kind: str, version: int, data: np.ndarray, names: Sequence[str],
                   settings: Any, compute: Callable[[], T]) -> T:
    """``compute()``, a deterministic function of the data, the column names and
    ``settings``, kept in the policy process's own disk cache (beside the runner's, where the
    routers' CI tests already are) by the data's hash: a rerun on the same data reads it back.
    ``version`` is the caller's, bumped when what it computes changes."""
    key = stable_hash([kind, version, data_sha256(data), [str(n) for n in names], settings])
    return ResultCache("routers").get_or_compute(key, compute)


def budget_left(observation: Any) -> int:
    """Steps left before this action (the text view's ``budget_left``)."""
    try:
        return int(np.asarray(observation["budget_left"]).reshape(-1)[0])
    except (KeyError, TypeError, IndexError):
        return 1_000_000


class PaperRouterPolicy(Policy):
    """The paper's router as a policy: it computes :func:`paper_router` at reset from the reset
    info's public ``data`` and ``names``, then acts.

    With ``show_branch`` (default) it first calls ``run_algorithm`` for the chosen branch, so
    the trace shows which algorithm the router picked (its CI tests come from the disk cache
    the router just filled, so this costs a step, hardly any time), then submits the router's
    graph with ``submit(edges=...)``. Without it, or with fewer than two steps left, it
    submits in one step.
    """

    name = "router"
    interface = "text"

    def __init__(self, alpha: float = 0.05, gap_threshold: float = 0.15, tau: float = 0.2,
                 subsample: int = 300, seed: int = 0, restore: bool = True,
                 show_branch: bool = True):
        self.options = {"alpha": check_probability("alpha", alpha),
                        "gap_threshold": check_real("gap_threshold", gap_threshold),
                        "tau": check_probability("tau", tau, open_low=False, open_high=False),
                        "subsample": check_int("subsample", subsample, 2),
                        "seed": check_int("seed", seed, 0), "restore": bool(restore)}
        self.show_branch = bool(show_branch)
        self.decision: RouterDecision | None = None
        self._shown = False
        self._branch_graph_matches: bool | None = None
        self._submitted = False
        self._failure: str | None = None

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if "data" not in info or "names" not in info:
            raise HeuresisError("PaperRouterPolicy needs the reset info's public 'data' and "
                                "'names' (the text view of a Heuresis environment gives them)")
        data = validate_data(info["data"])
        names = [str(name) for name in info["names"]]
        # a deterministic function of the data and the options, kept in the policy's own
        # disk cache like its CI tests; runtime_seconds is this reset's (computed or read back)
        started = time.perf_counter()
        decision = cached_on_data("paper-router", ROUTER_CACHE_VERSION, data, names,
                                  self.options, lambda: paper_router(data, names, **self.options))
        self.decision = replace(decision, runtime_seconds=time.perf_counter() - started)
        self._shown = False
        self._branch_graph_matches = None
        self._submitted = False
        self._failure = None

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self.decision is None:
            raise HeuresisError("PaperRouterPolicy.act called before reset")
        if self._shown and self._branch_graph_matches is None:
            graph = (info.get("data") or {}).get("graph")
            self._branch_graph_matches = (graph is not None
                                          and Graph.from_dict(graph) == self._branch_graph())
        if self.show_branch and not self._shown and budget_left(observation) >= 2:
            self._shown = True
            return {"tool": "run_algorithm",
                    "args": {"name": self.decision.branch,
                             "params": {"alpha": self.decision.alpha}}}
        edges = edge_strings(self.decision.graph)
        if self._submitted:  # the router's edge list was refused
            self._failure = self._failure or (f"the router's edge list was refused "
                                              f"({info.get('error')})")
        elif edges is None:
            self._failure = ("the router's graph cannot be written as an edge list: the empty "
                             "graph was submitted instead")
        self._submitted = True
        return {"tool": "submit", "args": {"edges": edges if edges is not None else []}}

    def failure(self) -> str | None:
        return self._failure

    def _branch_graph(self) -> Graph:
        decision = self.decision
        return decision.kci_graph if decision.branch == "pc-kci" else decision.fisherz_graph

    def transcript(self) -> list[dict[str, Any]] | None:
        if self.decision is None:
            return None
        return [{"kind": "router_decision", "decision": self.decision.to_dict(),
                 "branch_tool_graph_matches": self._branch_graph_matches}]


def paper_router_policy(alpha: float = 0.05, gap_threshold: float = 0.15, tau: float = 0.2,
                        subsample: int = 300, seed: int = 0, restore: bool = True,
                        show_branch: bool = True) -> PaperRouterPolicy:
    """Entry-point factory of :class:`PaperRouterPolicy` (policy name ``router``)."""
    return PaperRouterPolicy(alpha=alpha, gap_threshold=gap_threshold, tau=tau,
                             subsample=subsample, seed=seed, restore=restore,
                             show_branch=show_branch)
