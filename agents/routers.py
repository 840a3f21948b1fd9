"""Scripted routers: the paper's router (spec section 3) and scratchpad routers (section 8).

- :func:`paper_router` is the paper's router exactly: PC-Fisher-z at α; the gap dCor − |r| of
  every pair it deleted, on a fixed random subsample of at most 300 rows; PC-KCI when at least
  τ of the deleted pairs are flagged, else PC-Fisher-z; on the KCI branch the restore step
  with a Holm correction (:func:`restore_deletions`). :class:`PaperRouterPolicy` plays it in
  an episode.
- :class:`ScratchpadRouter`, after the causal scratchpad of seed 001: it acts only through
  tools, starting from PC-Fisher-z's output, and keeps a :class:`Ledger` of hypotheses (one
  claim per pair), the evidence run for each and the surprises (evidence that reverses an
  earlier result); each surprise proposes the next test. :class:`BanditScratchpadRouter`
  keeps the same ledger and chooses the next kind of evidence with a bandit.

The decision rules, the families of conditioning sets and the budget handling are written
out in ``docs/policies.md``.
"""

from __future__ import annotations

import itertools
import math
import numbers
import time
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from heuresis_env.discovery.citests.base import CITest, make_ci_test, validate_data
from heuresis_env.discovery.citests.dcor import distance_correlation
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.graphs import EdgeMark, Graph, has_directed_cycle
from heuresis_env.discovery.pc import PCResult, pc, validate_names
from heuresis_env.policy import Policy

__all__ = [
    "BANDIT_STRATEGIES",
    "EVIDENCE_ACTIONS",
    "BanditScratchpadRouter",
    "Evidence",
    "Hypothesis",
    "Ledger",
    "PairGap",
    "PaperRouterPolicy",
    "ProposedTest",
    "RestoreAttempt",
    "RouterDecision",
    "ScratchpadRouter",
    "Surprise",
    "alternative_conditioning_sets",
    "bandit_scratchpad_router",
    "dcor_gaps",
    "holm_adjusted_p_values",
    "holm_rejections",
    "paper_router",
    "paper_router_policy",
    "restore_deletions",
    "scratchpad_router",
]

BRANCHES = ("pc-fisherz", "pc-kci")


# ---- argument checks -----------------------------------------------------------------------------

def _check_probability(name: str, value: Any, *, open_low: bool = True,
                       open_high: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise HeuresisError(f"{name} must be a number, got {value!r}")
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (low_ok and high_ok):
        interval = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
        raise HeuresisError(f"{name} must be in {interval}, got {value!r}")
    return float(value)


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise HeuresisError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


def _check_real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise HeuresisError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _pair(x: str, y: str) -> tuple[str, str]:
    return (x, y) if x <= y else (y, x)


# ---- Holm's step-down correction --------------------------------------------------------------------

def holm_adjusted_p_values(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values: p̃_(k) = max_{j ≤ k} min(1, (m − j + 1) p_(j)), in input order.

    Rejecting every hypothesis with p̃ ≤ α is Holm's step-down procedure at family-wise level α.
    """
    p = np.asarray(p_values, dtype=np.float64).ravel()
    if p.size and (not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1)):
        raise HeuresisError(f"p-values must lie in [0, 1], got {p.tolist()}")
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted


def holm_rejections(p_values: Sequence[float], alpha: float = 0.05) -> np.ndarray:
    """Which hypotheses Holm's procedure rejects at family-wise level ``alpha`` (input order)."""
    alpha = _check_probability("alpha", alpha)
    return holm_adjusted_p_values(p_values) <= alpha


# ---- the paper's router --------------------------------------------------------------------------

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
    for i, j in pairs:
        dcor_value = float(distance_correlation(sub[:, i], sub[:, j]))
        abs_r = _abs_pearson(sub[:, i], sub[:, j])
        out.append((dcor_value, abs_r, dcor_value - abs_r))
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
    alpha = _check_probability("alpha", alpha)
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
    """The paper's scripted router (spec section 3) on data ``X`` (n × d) with column ``names``.

    PC-Fisher-z at ``alpha``; each pair it deleted is flagged when dCor − |r| ≥ ``gap_threshold``
    on a fixed subsample of ≤ ``subsample`` rows (seeded by ``seed``). If flagged / deleted ≥
    ``tau`` (and PC-Fisher-z deleted something), the result is PC-KCI's graph after the restore
    step (:func:`restore_deletions`, skipped when ``restore`` is False; a restored pair is added
    undirected); otherwise PC-Fisher-z's graph.
    """
    started = time.perf_counter()
    alpha = _check_probability("alpha", alpha)
    gap_threshold = _check_real("gap_threshold", gap_threshold)
    tau = _check_probability("tau", tau, open_low=False, open_high=False)
    subsample = _check_int("subsample", subsample, 2)
    seed = _check_int("seed", seed, 0)
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


# ---- shared policy helpers -------------------------------------------------------------------------

def _budget_left(observation: Any) -> int:
    """Steps left before this action (the text view's ``budget_left``)."""
    try:
        return int(np.asarray(observation["budget_left"]).reshape(-1)[0])
    except (KeyError, TypeError, IndexError):
        return 1_000_000


def _edge_strings(graph: Graph) -> list[str] | None:
    from baselines.policies import edge_strings

    return edge_strings(graph)


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
        self.options = {"alpha": _check_probability("alpha", alpha),
                        "gap_threshold": _check_real("gap_threshold", gap_threshold),
                        "tau": _check_probability("tau", tau, open_low=False, open_high=False),
                        "subsample": _check_int("subsample", subsample, 2),
                        "seed": _check_int("seed", seed, 0), "restore": bool(restore)}
        self.show_branch = bool(show_branch)
        self.decision: RouterDecision | None = None
        self._shown = False
        self._branch_graph_matches: bool | None = None

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if "data" not in info or "names" not in info:
            raise HeuresisError("PaperRouterPolicy needs the reset info's public 'data' and "
                                "'names' (the text view of a Heuresis environment gives them)")
        self.decision = paper_router(info["data"], info["names"], **self.options)
        self._shown = False
        self._branch_graph_matches = None

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self.decision is None:
            raise HeuresisError("PaperRouterPolicy.act called before reset")
        if self._shown and self._branch_graph_matches is None:
            graph = (info.get("data") or {}).get("graph")
            self._branch_graph_matches = (graph is not None
                                          and Graph.from_dict(graph) == self._branch_graph())
        if self.show_branch and not self._shown and _budget_left(observation) >= 2:
            self._shown = True
            return {"tool": "run_algorithm",
                    "args": {"name": self.decision.branch,
                             "params": {"alpha": self.decision.alpha}}}
        edges = _edge_strings(self.decision.graph)
        return {"tool": "submit", "args": {"edges": edges if edges is not None else []}}

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


# ---- the scratchpad ledger -----------------------------------------------------------------------

#: the kinds of evidence action a scratchpad router takes (the bandit's arms, in this order)
EVIDENCE_ACTIONS = ("kci_deleting_set", "dcor_marginal", "kci_neighbour_set", "dcor_confirm",
                    "orientation_probe")
#: the nonparametric tests whose verdicts the decision rules read
NONPARAMETRIC = ("kci", "dcor")
SURPRISE_KINDS = ("nonlinear_dependence", "vanishing_dependence")


@dataclass
class Evidence:
    """One piece of evidence about a pair: a test's verdict at a conditioning set.

    ``source`` says where it came from: ``"ci_test"`` / ``"orientation_probe"`` (a tool call at
    env step ``step``), ``"run_algorithm"`` (PC-Fisher-z's verdict in the starting run) or
    ``"deletion_log"`` (a PC-KCI deletion read in the guided condition).
    """

    id: int
    pair: tuple[str, str]
    method: str
    conditioning_set: tuple[str, ...]
    outcome: str  # "dependent", "independent", "error" or an orientation ("X1 --> X2", "undecided")
    p_value: float | None
    statistic: float | None
    source: str
    step: int | None
    purpose: str
    tool: str | None = None
    args: dict[str, Any] | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["pair"] = list(self.pair)
        record["conditioning_set"] = list(self.conditioning_set)
        return record


@dataclass
class Surprise:
    """Evidence reversing an earlier result, with the test it proposes next."""

    id: int
    pair: tuple[str, str]
    kind: str
    earlier: list[int]
    reversing: int
    proposed: dict[str, Any] | None
    note: str

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["pair"] = list(self.pair)
        return record


@dataclass(frozen=True)
class ProposedTest:
    """A test the planner means to run: ``method`` on ``pair`` given ``given``."""

    pair: tuple[str, str]
    method: str
    given: tuple[str, ...]
    purpose: str
    reason: str = ""

    @property
    def key(self) -> tuple:
        return (self.pair, self.method, frozenset(self.given))

    def to_dict(self) -> dict[str, Any]:
        return {"pair": list(self.pair), "method": self.method, "given": list(self.given),
                "purpose": self.purpose, "reason": self.reason}


@dataclass
class Hypothesis:
    """A claim about one pair: ``"edge"`` or ``"no_edge"`` as PC-Fisher-z's output says.

    ``status``: ``open`` (still being examined), ``supported`` (the evidence agrees with the
    claim), ``revised`` (the router decided to restore or remove), ``unresolved`` (two tests
    disagree), ``untestable`` (no conditioning set to try).
    """

    pair: tuple[str, str]
    claim: str
    deleting_set: tuple[str, ...] | None
    fisherz_p_value: float | None
    gap: float
    abs_pearson_r: float
    candidate_sets: list[tuple[str, ...]]
    evidence: list[int] = field(default_factory=list)
    surprises: list[int] = field(default_factory=list)
    proposals: list[ProposedTest] = field(default_factory=list)
    status: str = "open"
    decision: str | None = None
    decision_evidence: list[int] = field(default_factory=list)
    direction: tuple[str, str] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "pair": list(self.pair), "claim": self.claim,
            "deleting_set": None if self.deleting_set is None else list(self.deleting_set),
            "fisherz_p_value": self.fisherz_p_value, "gap": self.gap,
            "abs_pearson_r": self.abs_pearson_r,
            "candidate_sets": [list(s) for s in self.candidate_sets],
            "evidence": list(self.evidence), "surprises": list(self.surprises),
            "pending_tests": [p.to_dict() for p in self.proposals], "status": self.status,
            "decision": self.decision, "decision_evidence": list(self.decision_evidence),
            "direction": None if self.direction is None else list(self.direction),
            "notes": list(self.notes),
        }


class Ledger:
    """The scratchpad: hypotheses by pair, every piece of evidence, surprises and decisions."""

    def __init__(self) -> None:
        self.hypotheses: dict[tuple[str, str], Hypothesis] = {}
        self.evidence: list[Evidence] = []
        self.surprises: list[Surprise] = []
        self.decisions: list[dict[str, Any]] = []
        self.notes: list[str] = []

    def add_hypothesis(self, hypothesis: Hypothesis) -> Hypothesis:
        self.hypotheses[hypothesis.pair] = hypothesis
        return hypothesis

    def hypothesis(self, x: str, y: str) -> Hypothesis:
        try:
            return self.hypotheses[_pair(x, y)]
        except KeyError:
            raise UnknownNameError("hypothesis pair", f"{x} - {y}",
                                   [f"{a} - {b}" for a, b in self.hypotheses]) from None

    def add_evidence(self, pair: tuple[str, str], **fields: Any) -> Evidence:
        evidence = Evidence(id=len(self.evidence), pair=_pair(*pair), **fields)
        self.evidence.append(evidence)
        if evidence.pair in self.hypotheses:
            self.hypotheses[evidence.pair].evidence.append(evidence.id)
        return evidence

    def add_surprise(self, pair: tuple[str, str], kind: str, earlier: list[int], reversing: int,
                     proposed: ProposedTest | None, note: str) -> Surprise:
        if kind not in SURPRISE_KINDS:
            raise UnknownNameError("surprise kind", kind, SURPRISE_KINDS)
        surprise = Surprise(id=len(self.surprises), pair=_pair(*pair), kind=kind,
                            earlier=list(earlier), reversing=reversing,
                            proposed=None if proposed is None else proposed.to_dict(), note=note)
        self.surprises.append(surprise)
        if surprise.pair in self.hypotheses:
            self.hypotheses[surprise.pair].surprises.append(surprise.id)
        return surprise

    def record_decision(self, hypothesis: Hypothesis, decision: str | None,
                        evidence: list[int], reason: str) -> None:
        hypothesis.decision = decision
        hypothesis.decision_evidence = list(evidence)
        self.decisions.append({"pair": list(hypothesis.pair), "decision": decision,
                               "evidence": list(evidence), "reason": reason})

    def evidence_of(self, hypothesis: Hypothesis) -> list[Evidence]:
        return [self.evidence[k] for k in hypothesis.evidence]

    def to_dict(self) -> dict[str, Any]:
        return {
            "hypotheses": [h.to_dict() for h in self.hypotheses.values()],
            "evidence": [e.to_dict() for e in self.evidence],
            "surprises": [s.to_dict() for s in self.surprises],
            "decisions": list(self.decisions),
            "notes": list(self.notes),
        }


# ---- scratchpad routers -------------------------------------------------------------------------

#: name of the graph memory entry holding PC-Fisher-z's output
START_GRAPH_NAME = "pc_fisherz"


@dataclass
class _Pending:
    """What the previous action was, so its result can be read from the next info."""

    kind: str  # run_algorithm, deletion_log, test, probe, edit, submit
    test: ProposedTest | None = None
    arm: str | None = None


class _ScratchpadPolicy(Policy):
    """Shared machinery of the scratchpad routers: the ledger, its reading rules, the budget.

    Subclasses choose the next evidence action (:meth:`_choose_test`).
    """

    interface = "text"

    def __init__(self, alpha: float = 0.05, gap_threshold: float = 0.15,
                 max_sets_per_pair: int = 4, max_neighbour_set_size: int = 2,
                 subsample: int = 300, seed: int = 0, examine_kept_edges: bool = True,
                 wall_fraction: float = 0.8):
        self.alpha = _check_probability("alpha", alpha)
        self.gap_threshold = _check_real("gap_threshold", gap_threshold)
        self.max_sets_per_pair = _check_int("max_sets_per_pair", max_sets_per_pair, 1)
        self.max_neighbour_set_size = _check_int("max_neighbour_set_size",
                                                 max_neighbour_set_size, 1)
        self.subsample = _check_int("subsample", subsample, 2)
        self.seed = _check_int("seed", seed, 0)
        self.examine_kept_edges = bool(examine_kept_edges)
        self.wall_fraction = _check_probability("wall_fraction", wall_fraction, open_high=False)
        self.ledger = Ledger()
        self._actions: list[dict[str, Any]] = []

    # ---- episode start ---------------------------------------------------------------------
    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if "data" not in info or "names" not in info:
            raise HeuresisError(f"{type(self).__name__} needs the reset info's public 'data' "
                                "and 'names' (the text view of a Heuresis environment gives them)")
        self.ledger = Ledger()
        self._actions = []
        self._names = tuple(str(n) for n in info["names"])
        self._data = validate_data(info["data"])
        validate_names(self._names, self._data.shape[1])
        self._guided = bool(info.get("guided", False))
        self._sha256 = str(info.get("sha256") or "")
        self._reset_seed = info.get("seed")
        self._started = time.perf_counter()
        self._phase = "start"
        self._pending: _Pending | None = None
        self._start_graph: Graph | None = None
        self._start_step: int | None = None
        self._executed: set[tuple] = set()
        self._agenda: list[tuple[str, str]] = []
        self._edits: list[dict[str, Any]] = []
        self._edit_errors: list[str] = []
        self._kci_kept: set[tuple[str, str]] = set()
        self._submit_rejected = False
        self._prior = self._local_prior()

    def _local_prior(self) -> dict[str, Any]:
        """PC-Fisher-z's deletion log and the dCor − |r| screen, computed from the public data.

        The same PC run the first tool call makes (same function and settings); it supplies the
        deleting sets, which the tool's result does not list, and orders the agenda.
        """
        names, data = self._names, self._data
        result = pc(data, names, ci_test="fisherz", alpha=self.alpha)
        deleted = {_pair(d.x, d.y): (tuple(d.conditioning_set), float(d.p_value))
                   for d in result.deletion_log}
        pairs = list(itertools.combinations(range(len(names)), 2))
        screen = dcor_gaps(data, pairs, self.subsample, self.seed)
        correlation = np.corrcoef(data, rowvar=False)
        gaps = {}
        for (i, j), (_, _, gap) in zip(pairs, screen, strict=True):
            r = correlation[i, j]
            gaps[_pair(names[i], names[j])] = (float(gap), float(abs(r)) if np.isfinite(r) else 0.0)
        return {"graph": result.graph, "deleted": deleted, "gaps": gaps}

    # ---- the action loop -----------------------------------------------------------------------
    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if not hasattr(self, "_phase"):
            raise HeuresisError(f"{type(self).__name__}.act called before reset")
        if self._pending is not None:
            self._absorb(self._pending, info)
            self._pending = None
        action = self._next_action(_budget_left(observation))
        self._actions.append(action)
        return action

    def _out_of_time(self) -> bool:
        limit = getattr(self.settings, "max_seconds", None)
        if limit is None:
            return False
        return time.perf_counter() - self._started >= self.wall_fraction * float(limit)

    def _next_action(self, budget: int) -> dict[str, Any]:
        if budget <= 1 or self._phase == "submit":
            return self._submit()
        if self._phase == "start":
            self._pending = _Pending("run_algorithm")
            return {"tool": "run_algorithm",
                    "args": {"name": "pc-fisherz", "params": {"alpha": self.alpha},
                             "save_as": START_GRAPH_NAME}}
        if self._phase == "deletion_log":
            self._pending = _Pending("deletion_log")
            return {"tool": "deletion_log", "args": {}}
        if self._phase == "evidence":
            decisions = sum(h.decision is not None for h in self.ledger.hypotheses.values())
            # keep room for: load_graph, one edit per decision (and one more), submit
            if budget >= decisions + 4 and not self._out_of_time():
                test, arm = self._choose_test()
                if test is not None:
                    self._executed.add(test.key)
                    self._pending = _Pending("probe" if test.method == "orientation_probe"
                                             else "test", test, arm)
                    return self._test_action(test)
            self._phase = "finalize"
        if self._phase == "finalize":
            self._phase = "edits"
            decided = [h for h in self.ledger.hypotheses.values() if h.decision is not None]
            if self._start_graph is not None and budget >= len(decided) + 2:
                self._edits = self._planned_edits(decided)
            else:
                self._edits = []
        if self._phase == "edits" and self._edits:
            self._pending = _Pending("edit")
            return self._edits.pop(0)
        return self._submit()

    def _test_action(self, test: ProposedTest) -> dict[str, Any]:
        x, y = test.pair
        if test.method == "orientation_probe":
            return {"tool": "orientation_probe", "args": {"x": x, "y": y}}
        return {"tool": "ci_test", "args": {"x": x, "y": y, "given": list(test.given),
                                            "method": test.method}}

    def _submit(self) -> dict[str, Any]:
        self._phase = "submit"
        self._pending = _Pending("submit")
        graph = self.final_graph()
        if graph is None or self._submit_rejected:
            return {"tool": "submit", "args": {}}
        edges = _edge_strings(graph)
        if edges is None:  # marks the edge list cannot express: submit the working graph
            return {"tool": "submit", "args": {}}
        return {"tool": "submit", "args": {"edges": edges, "evidence": self._all_steps()}}

    def _all_steps(self) -> list[int]:
        steps = sorted({e.step for h in self.ledger.hypotheses.values() if h.decision
                        for e in map(self.ledger.evidence.__getitem__, h.decision_evidence)
                        if e.step is not None})
        return steps[:512]

    # ---- reading results ------------------------------------------------------------------------
    def _absorb(self, pending: _Pending, info: dict[str, Any]) -> None:
        error = info.get("error")
        data = info.get("data") or {}
        step = info.get("step")
        if pending.kind == "run_algorithm":
            self._start_step = step
            if error is None and data.get("graph") is not None:
                self._start_graph = Graph.from_dict(data["graph"])
            else:
                self.ledger.notes.append(f"run_algorithm pc-fisherz failed: {error}; "
                                         "submitting the working graph")
                self._phase = "submit"
                return
            self._build_hypotheses()
            self._phase = "deletion_log" if self._guided else "evidence"
        elif pending.kind == "deletion_log":
            if error is None:
                self._read_deletion_log(data, step)
            else:
                self.ledger.notes.append(f"deletion_log failed: {error}")
            self._order_agenda()
            self._phase = "evidence"
        elif pending.kind in ("test", "probe"):
            changed = self._read_test(pending.test, info, step)
            self._after_evidence(pending, changed)
        elif pending.kind == "edit" and error is not None:
            self._edit_errors.append(str(error))
            self.ledger.notes.append(f"edit refused at step {step}: {error}")
        elif pending.kind == "submit" and error is not None:
            self._submit_rejected = True
            self.ledger.notes.append(f"submit refused at step {step}: {error}; "
                                     "submitting the working graph instead")

    def _after_evidence(self, pending: _Pending, changed: bool) -> None:
        """Hook for the bandit (reward); the plain router needs nothing."""

    def _build_hypotheses(self) -> None:
        graph = self._start_graph
        prior = self._prior
        if graph.skeleton().tolist() != prior["graph"].skeleton().tolist():
            self.ledger.notes.append("the local PC-Fisher-z run differs from the tool's; "
                                     "deleting sets are known only where both deleted the pair")
        skeleton = graph.skeleton()
        names = graph.names
        for i, j in itertools.combinations(range(len(names)), 2):
            x, y = names[i], names[j]
            pair = _pair(x, y)
            gap, abs_r = prior["gaps"][pair]
            if skeleton[i, j]:
                claim, deleting_set, p_value = "edge", None, None
                candidates = self._candidate_sets(x, y, None, 1, self.max_neighbour_set_size)
            else:
                claim = "no_edge"
                deleting_set, p_value = prior["deleted"].get(pair, ((), None))
                candidates = self._candidate_sets(x, y, deleting_set, 0, len(deleting_set) + 1)
            hypothesis = self.ledger.add_hypothesis(Hypothesis(
                pair=pair, claim=claim, deleting_set=deleting_set, fisherz_p_value=p_value,
                gap=gap, abs_pearson_r=abs_r, candidate_sets=candidates))
            if claim == "edge":
                self.ledger.add_evidence(
                    pair, method="fisherz", conditioning_set=(), outcome="dependent",
                    p_value=None, statistic=None, source="run_algorithm", step=self._start_step,
                    purpose="prior", note="kept by PC-Fisher-z: dependent at every set it tested")
            else:
                self.ledger.add_evidence(
                    pair, method="fisherz", conditioning_set=deleting_set, outcome="independent",
                    p_value=p_value, statistic=None, source="run_algorithm",
                    step=self._start_step, purpose="prior",
                    note="deleted by PC-Fisher-z at this set")
            if claim == "edge" and not candidates:
                hypothesis.status = "untestable"
        self._order_agenda()

    def _candidate_sets(self, x: str, y: str, exclude: tuple[str, ...] | None, min_size: int,
                        max_size: int) -> list[tuple[str, ...]]:
        """Conditioning sets to try for x — y, in order, at most ``max_sets_per_pair``.

        Subsets of adj(x) \\ {y} and adj(y) \\ {x} in PC-Fisher-z's graph, of size min_size..
        max_size, other than ``exclude``; sets holding more common neighbours of x and y come
        first, then larger sets, then the order of :func:`alternative_conditioning_sets`.
        """
        graph = self._start_graph
        family = alternative_conditioning_sets(graph, x, y, exclude or (), max_size)
        common = set(graph.neighbors(x)) & set(graph.neighbors(y))
        family = [s for s in family if len(s) >= min_size]
        ranked = sorted(enumerate(family),
                        key=lambda item: (-len(common & set(item[1])), -len(item[1]), item[0]))
        return [s for _, s in ranked][: self.max_sets_per_pair]

    def _read_deletion_log(self, data: dict[str, Any], step: int | None) -> None:
        deleted = set()
        for record in data.get("deletions", []):
            pair = _pair(str(record["x"]), str(record["y"]))
            deleted.add(pair)
            if pair not in self.ledger.hypotheses:
                continue
            evidence = self.ledger.add_evidence(
                pair, method="kci", conditioning_set=tuple(record["conditioning_set"]),
                outcome="independent", p_value=float(record["p_value"]),
                statistic=float(record["statistic"]), source="deletion_log", step=step,
                purpose="prior", tool="deletion_log",
                note="deleted by PC-KCI (the guided start) at this set")
            self._interpret(self.ledger.hypotheses[pair], evidence)
        self._kci_kept = {pair for pair, h in self.ledger.hypotheses.items()
                          if h.claim == "no_edge" and pair not in deleted}
        for pair in self._kci_kept:
            self.ledger.hypotheses[pair].notes.append("kept by PC-KCI (not in its deletion log)")

    def _read_test(self, test: ProposedTest, info: dict[str, Any], step: int | None) -> bool:
        """Record a tool result as evidence and apply the reading rules; True when it surprised
        or changed a decision."""
        error = info.get("error")
        data = info.get("data") or {}
        hypothesis = self.ledger.hypotheses[test.pair]
        surprises_before = len(self.ledger.surprises)
        decision_before = (hypothesis.decision, hypothesis.direction)
        if test.method == "orientation_probe":
            direction = None
            if error is None:
                for key in ("anm", "pairwise_lingam"):
                    verdict = (data.get(key) or {}).get("direction")
                    if verdict in ("x->y", "y->x"):
                        direction = test.pair if verdict == "x->y" else test.pair[::-1]
                        break
            outcome = "error" if error else ("undecided" if direction is None
                                             else f"{direction[0]} --> {direction[1]}")
            self.ledger.add_evidence(
                test.pair, method="orientation_probe", conditioning_set=(), outcome=outcome,
                p_value=None, statistic=None, source="orientation_probe", step=step,
                purpose=test.purpose, tool="orientation_probe",
                args={"x": test.pair[0], "y": test.pair[1]}, note=str(error or ""))
            hypothesis.direction = direction
        else:
            if error is None:
                p_value = float(data["p_value"])
                outcome = "independent" if p_value > self.alpha else "dependent"
                statistic = float(data["statistic"])
            else:
                p_value = statistic = None
                outcome = "error"
            evidence = self.ledger.add_evidence(
                test.pair, method=test.method, conditioning_set=tuple(test.given),
                outcome=outcome, p_value=p_value, statistic=statistic, source="ci_test",
                step=step, purpose=test.purpose, tool="ci_test",
                args={"x": test.pair[0], "y": test.pair[1], "given": list(test.given),
                      "method": test.method}, note=str(error or ""))
            hypothesis.proposals = [p for p in hypothesis.proposals if p.key != test.key]
            if outcome != "error":
                self._interpret(hypothesis, evidence)
        return (len(self.ledger.surprises) > surprises_before
                or (hypothesis.decision, hypothesis.direction) != decision_before)

    # ---- the reading rules -------------------------------------------------------------------------
    def _verdicts(self, hypothesis: Hypothesis) -> list[Evidence]:
        return [e for e in self.ledger.evidence_of(hypothesis)
                if e.method in NONPARAMETRIC and e.outcome in ("dependent", "independent")]

    def _next_candidate(self, hypothesis: Hypothesis, reason: str) -> ProposedTest | None:
        tried = {frozenset(e.conditioning_set) for e in self._verdicts(hypothesis)
                 if e.method == "kci"}
        for given in hypothesis.candidate_sets:
            test = ProposedTest(hypothesis.pair, "kci", given, "kci_neighbour_set", reason)
            if frozenset(given) not in tried and test.key not in self._executed:
                return test
        return None

    def _propose(self, hypothesis: Hypothesis, test: ProposedTest | None) -> None:
        if test is not None and test.key not in self._executed and all(
                p.key != test.key for p in hypothesis.proposals):
            hypothesis.proposals.append(test)

    def _close(self, hypothesis: Hypothesis, status: str) -> None:
        hypothesis.status = status
        hypothesis.proposals = []

    def _interpret(self, hypothesis: Hypothesis, evidence: Evidence) -> None:
        """Update a hypothesis after a nonparametric verdict: surprises, proposals, decision."""
        verdicts = self._verdicts(hypothesis)
        earlier = [e for e in verdicts if e.id != evidence.id]
        dependent_before = [e for e in earlier if e.outcome == "dependent"]
        independent_before = [e for e in earlier if e.outcome == "independent"]
        prior = [e.id for e in self.ledger.evidence_of(hypothesis) if e.purpose == "prior"
                 and e.method == "fisherz"]
        x, y = hypothesis.pair
        where = "{" + ", ".join(evidence.conditioning_set) + "}"
        if hypothesis.claim == "no_edge":
            if evidence.outcome == "dependent":
                proposal = None if independent_before else self._next_candidate(
                    hypothesis, f"{evidence.method} found {x} - {y} dependent given {where}")
                if not dependent_before:
                    self.ledger.add_surprise(
                        hypothesis.pair, "nonlinear_dependence", prior, evidence.id, proposal,
                        f"PC-Fisher-z deleted {x} - {y}, but {evidence.method} rejects "
                        f"independence given {where} (p = {evidence.p_value:.3g})")
                self._propose(hypothesis, proposal)
            else:
                if dependent_before and not independent_before:
                    proposal = None
                    if evidence.method == "kci":
                        proposal = ProposedTest(hypothesis.pair, "dcor", evidence.conditioning_set,
                                                "dcor_confirm", f"confirm the independence "
                                                f"given {where} with a second test")
                    self.ledger.add_surprise(
                        hypothesis.pair, "vanishing_dependence",
                        [e.id for e in dependent_before], evidence.id, proposal,
                        f"{x} - {y} is dependent at the other sets tried but independent "
                        f"given {where} (p = {evidence.p_value:.3g})")
                    hypothesis.proposals = []
                    self._propose(hypothesis, proposal)
                    if proposal is None:
                        self._close(hypothesis, "supported")
                elif dependent_before and evidence.purpose == "dcor_confirm":
                    self._close(hypothesis, "supported")
                elif not dependent_before:
                    self._close(hypothesis, "supported")
            if (evidence.purpose == "dcor_confirm" and evidence.outcome == "dependent"
                    and independent_before):
                self._close(hypothesis, "unresolved")
        else:  # a kept edge
            if evidence.outcome == "independent" and evidence.method == "kci":
                if not independent_before:
                    proposal = ProposedTest(hypothesis.pair, "dcor", evidence.conditioning_set,
                                            "dcor_confirm", f"confirm the independence given "
                                            f"{where} with a second test")
                    self.ledger.add_surprise(
                        hypothesis.pair, "vanishing_dependence",
                        prior + [e.id for e in dependent_before], evidence.id, proposal,
                        f"PC-Fisher-z kept {x} - {y}, but KCI finds it independent given "
                        f"{where} (p = {evidence.p_value:.3g})")
                    hypothesis.proposals = []
                    self._propose(hypothesis, proposal)
            elif evidence.method == "dcor" and evidence.purpose == "dcor_confirm":
                self._close(hypothesis, "revised" if evidence.outcome == "independent"
                            else "unresolved")
            elif evidence.outcome == "dependent" and not independent_before:
                proposal = self._next_candidate(
                    hypothesis, f"KCI found {x} - {y} dependent given {where}")
                self._propose(hypothesis, proposal)
                if proposal is None:
                    self._close(hypothesis, "supported")
        self._decide(hypothesis)

    def _decide(self, hypothesis: Hypothesis) -> None:
        """Restore / remove / keep from the evidence so far (rules in docs/policies.md)."""
        verdicts = self._verdicts(hypothesis)
        decision, support, reason = None, [], ""
        if hypothesis.claim == "no_edge":
            deleting = frozenset(hypothesis.deleting_set or ())
            at_deleting = [e for e in verdicts if frozenset(e.conditioning_set) == deleting
                           and e.outcome == "dependent"]
            independent = [e for e in verdicts if e.outcome == "independent"]
            alternatives = {frozenset(e.conditioning_set) for e in verdicts} - {deleting}
            if at_deleting and not independent and (alternatives or not hypothesis.candidate_sets):
                decision, support = "restore", [e.id for e in verdicts]
                reason = (f"dependent at the deleting set and at every one of "
                          f"{len(alternatives) + 1} conditioning sets tried")
        else:
            by_set: dict[frozenset, set[str]] = {}
            for e in verdicts:
                if e.outcome == "independent":
                    by_set.setdefault(frozenset(e.conditioning_set), set()).add(e.method)
            confirmed = [s for s, methods in by_set.items() if {"kci", "dcor"} <= methods]
            if confirmed:
                decision = "remove"
                support = [e.id for e in verdicts if frozenset(e.conditioning_set) in confirmed
                           and e.outcome == "independent"]
                reason = "KCI and distance correlation both find independence at one set"
        if decision != hypothesis.decision:
            self.ledger.record_decision(hypothesis, decision, support,
                                        reason or "the evidence no longer supports a change")
            if decision is not None:
                hypothesis.status = "revised"
                if decision == "remove":
                    hypothesis.proposals = []
            elif hypothesis.status == "revised":
                hypothesis.status = "open"

    # ---- choosing tests ----------------------------------------------------------------------------
    def _order_agenda(self) -> None:
        """Hypotheses in examination order (tiers in docs/policies.md)."""
        hypotheses = list(self.ledger.hypotheses.values())

        def tier(h: Hypothesis) -> tuple:
            if h.proposals:
                return (0, -h.gap)
            if h.claim == "no_edge":
                if h.gap >= self.gap_threshold:
                    return (1, 0 if h.pair in self._kci_kept else 1, -h.gap)
                if h.pair in self._kci_kept:
                    return (2, -h.gap)
                if h.deleting_set:  # partial correlation can miss a nonlinear path's screening
                    return (3, 1.0 if h.fisherz_p_value is None else h.fisherz_p_value)
                return (5, -h.gap)  # marginal, and the screen saw no nonlinear dependence
            if not self.examine_kept_edges:
                return (9,)
            in_triangle = bool(set(self._start_graph.neighbors(h.pair[0]))
                               & set(self._start_graph.neighbors(h.pair[1])))
            return (4, 0 if in_triangle else 1, h.abs_pearson_r)

        ordered = sorted(hypotheses, key=lambda h: (tier(h), h.pair))
        self._agenda = [h.pair for h in ordered if tier(h)[0] != 9]

    def _first_test(self, hypothesis: Hypothesis) -> ProposedTest | None:
        """The opening test of a hypothesis not examined yet (or its pending proposal)."""
        if hypothesis.status != "open":
            return None
        for proposal in hypothesis.proposals:
            if proposal.key not in self._executed:
                return proposal
        if len(self._verdicts(hypothesis)) > 0:
            return None
        x, y = hypothesis.pair
        if hypothesis.claim == "no_edge":
            given = hypothesis.deleting_set or ()
            if not given:
                test = ProposedTest(hypothesis.pair, "dcor", (), "dcor_marginal",
                                    f"PC-Fisher-z deleted {x} - {y} marginally; a linear test "
                                    "cannot see nonlinear dependence")
            else:
                test = ProposedTest(hypothesis.pair, "kci", given, "kci_deleting_set",
                                    f"re-test {x} - {y} nonparametrically at the set that "
                                    "deleted it")
        else:
            test = self._next_candidate(hypothesis, f"is the kept edge {x} - {y} separated by "
                                                    "a neighbour set?")
        return test if test is not None and test.key not in self._executed else None

    @abstractmethod
    def _choose_test(self) -> tuple[ProposedTest | None, str | None]:
        """The next test to run and why (the variants differ only here)."""

    def _orientation_candidates(self) -> list[Hypothesis]:
        if getattr(self.settings, "target", "none") == "none" or getattr(
                self.settings, "toolbox", "full") != "full":
            return []
        return [h for h in self.ledger.hypotheses.values() if h.decision == "restore"
                and (h.pair, "orientation_probe", frozenset()) not in self._executed]

    # ---- the final graph ------------------------------------------------------------------------
    def final_graph(self) -> Graph | None:
        """PC-Fisher-z's output with the decisions applied (None before the first result)."""
        if self._start_graph is None:
            return None
        graph = self._start_graph.copy()
        for hypothesis in self.ledger.hypotheses.values():
            x, y = hypothesis.pair
            if hypothesis.decision == "remove":
                graph.remove_edge(x, y)
            elif hypothesis.decision == "restore":
                self._add_restored(graph, hypothesis)
        return graph

    def _add_restored(self, graph: Graph, hypothesis: Hypothesis) -> None:
        x, y = hypothesis.pair
        if hypothesis.direction is not None:
            u, v = hypothesis.direction
            graph.add_directed(u, v)
            if not has_directed_cycle(graph.directed_adjacency()):
                return
        graph.add_undirected(x, y)

    def _planned_edits(self, decided: list[Hypothesis]) -> list[dict[str, Any]]:
        """load_graph of PC-Fisher-z's output, then one edit per decision with its evidence."""
        edits = [{"tool": "load_graph", "args": {"name": START_GRAPH_NAME, "evidence":
                                                 [self._start_step] if self._start_step else []}}]
        graph = self._start_graph.copy()
        for hypothesis in decided:
            x, y = hypothesis.pair
            steps = sorted({self.ledger.evidence[k].step for k in hypothesis.decision_evidence
                            if self.ledger.evidence[k].step is not None})
            if hypothesis.decision == "remove":
                graph.remove_edge(x, y)
                edits.append({"tool": "remove_edge", "args": {"x": x, "y": y,
                                                              "evidence": steps}})
            else:
                self._add_restored(graph, hypothesis)
                edge = graph.edge(x, y)
                directed = edge.mark_u != edge.mark_v
                u, v = (x, y) if not directed or edge.mark_v == EdgeMark.ARROW else (y, x)
                edits.append({"tool": "add_edge", "args": {"x": u, "y": v, "directed": directed,
                                                           "evidence": steps}})
        return edits

    # ---- reports -------------------------------------------------------------------------------
    def transcript(self) -> list[dict[str, Any]] | None:
        if not hasattr(self, "_phase"):
            return None
        return [{"kind": "scratchpad_ledger", "policy": self.name,
                 "ledger": self.ledger.to_dict(), "actions": list(self._actions),
                 "planner": self._planner_state()}]

    def _planner_state(self) -> dict[str, Any]:
        return {"agenda": [list(p) for p in self._agenda]}


class ScratchpadRouter(_ScratchpadPolicy):
    """Scratchpad router (spec section 8, seed 001) that acts only through tools.

    It runs PC-Fisher-z (``run_algorithm``, saved as ``pc_fisherz``), reads PC-KCI's deletion
    log in the guided condition, then examines hypotheses in agenda order, following each
    hypothesis's proposals (a surprise's proposed test first) until it is settled. It restores
    a deleted pair only when its dependence survives every conditioning set it tried, removes
    a kept edge only when KCI and distance correlation both find independence at one set, and
    submits PC-Fisher-z's output with these decisions before the step or wall budget ends.
    """

    name = "scratchpad"

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self._current: tuple[str, str] | None = None

    def _choose_test(self) -> tuple[ProposedTest | None, str | None]:
        hypotheses = self.ledger.hypotheses
        if self._current is not None:
            hypothesis = hypotheses[self._current]
            for proposal in hypothesis.proposals:
                if proposal.key not in self._executed:
                    return proposal, proposal.purpose
            self._current = None
        for pair in self._agenda:
            test = self._first_test(hypotheses[pair])
            if test is not None:
                self._current = pair
                return test, test.purpose
        for hypothesis in self._orientation_candidates():
            return (ProposedTest(hypothesis.pair, "orientation_probe", (), "orientation_probe",
                                 "direction of a restored edge"), "orientation_probe")
        return None, None


BANDIT_STRATEGIES = ("ucb1", "thompson")


class BanditScratchpadRouter(_ScratchpadPolicy):
    """The scratchpad router with a bandit choosing the next kind of evidence.

    Arms are the evidence actions in :data:`EVIDENCE_ACTIONS` that have a target; the reward
    of a pull is 1 when its result produced a surprise or changed a decision (or a restored
    edge's direction), else 0. ``strategy`` is ``"ucb1"`` (every available arm once, then the
    largest mean + √(2 ln t / n)) or ``"thompson"`` (Beta(1 + rewards, 1 + misses) draws).
    Ties and draws use a generator seeded by (``seed``, the instance hash, the reset info's
    ``seed`` when the environment supplies one), so an episode is reproducible.
    """

    name = "scratchpad-bandit"

    def __init__(self, strategy: str = "ucb1", **options: Any):
        if strategy not in BANDIT_STRATEGIES:
            raise UnknownNameError("bandit strategy", strategy, BANDIT_STRATEGIES)
        super().__init__(**options)
        self.strategy = strategy

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        words = [int(self._sha256[k:k + 8], 16) for k in range(0, min(len(self._sha256), 32), 8)
                 if all(c in "0123456789abcdefABCDEF" for c in self._sha256[k:k + 8])]
        episode = self._reset_seed
        entropy = [self.seed, *words]
        if isinstance(episode, numbers.Integral) and not isinstance(episode, bool) and episode >= 0:
            entropy.append(int(episode))
        self._rng = np.random.default_rng(np.random.SeedSequence(entropy))
        self._pulls = {arm: 0 for arm in EVIDENCE_ACTIONS}
        self._rewards = {arm: 0.0 for arm in EVIDENCE_ACTIONS}
        self._history: list[dict[str, Any]] = []

    def _targets(self) -> dict[str, ProposedTest]:
        """The next test each arm would run (arms without a target are left out)."""
        hypotheses = [self.ledger.hypotheses[pair] for pair in self._agenda]
        targets: dict[str, ProposedTest] = {}
        for hypothesis in hypotheses:
            for proposal in hypothesis.proposals:
                if proposal.key not in self._executed:
                    targets.setdefault(proposal.purpose, proposal)
        for hypothesis in hypotheses:
            if hypothesis.status != "open" or self._verdicts(hypothesis):
                continue
            x, y = hypothesis.pair
            if hypothesis.claim == "no_edge":
                given = hypothesis.deleting_set or ()
                kci = ProposedTest(hypothesis.pair, "kci", given, "kci_deleting_set",
                                   f"re-test {x} - {y} at the set that deleted it")
                if kci.key not in self._executed:
                    targets.setdefault("kci_deleting_set", kci)
                if not given:
                    dcor = ProposedTest(hypothesis.pair, "dcor", (), "dcor_marginal",
                                        f"PC-Fisher-z deleted {x} - {y} marginally")
                    if dcor.key not in self._executed:
                        targets.setdefault("dcor_marginal", dcor)
            elif "kci_neighbour_set" not in targets:
                test = self._next_candidate(hypothesis, f"is the kept edge {x} - {y} "
                                                        "separated by a neighbour set?")
                if test is not None:
                    targets["kci_neighbour_set"] = test
        for hypothesis in self._orientation_candidates():
            targets.setdefault("orientation_probe", ProposedTest(
                hypothesis.pair, "orientation_probe", (), "orientation_probe",
                "direction of a restored edge"))
            break
        return targets

    def _choose_test(self) -> tuple[ProposedTest | None, str | None]:
        targets = self._targets()
        if not targets:
            return None, None
        arms = [arm for arm in EVIDENCE_ACTIONS if arm in targets]
        if self.strategy == "ucb1":
            untried = [arm for arm in arms if self._pulls[arm] == 0]
            if untried:
                arm = untried[int(self._rng.integers(len(untried)))]
            else:
                total = sum(self._pulls[a] for a in arms)
                scores = np.array([self._rewards[a] / self._pulls[a]
                                   + math.sqrt(2.0 * math.log(total) / self._pulls[a])
                                   for a in arms])
                best = np.flatnonzero(scores >= scores.max() - 1e-12)
                arm = arms[int(best[int(self._rng.integers(len(best)))])]
        else:
            draws = [self._rng.beta(1.0 + self._rewards[a], 1.0 + self._pulls[a] - self._rewards[a])
                     for a in arms]
            arm = arms[int(np.argmax(draws))]
        return targets[arm], arm

    def _after_evidence(self, pending: _Pending, changed: bool) -> None:
        arm = pending.arm or (pending.test.purpose if pending.test else None)
        if arm not in self._pulls:
            return
        reward = 1.0 if changed else 0.0
        self._pulls[arm] += 1
        self._rewards[arm] += reward
        self._history.append({"arm": arm, "reward": reward,
                              "test": None if pending.test is None else pending.test.to_dict()})

    def _planner_state(self) -> dict[str, Any]:
        return {"agenda": [list(p) for p in self._agenda], "strategy": self.strategy,
                "pulls": dict(self._pulls), "rewards": dict(self._rewards),
                "history": list(self._history)}


def scratchpad_router(alpha: float = 0.05, gap_threshold: float = 0.15,
                      max_sets_per_pair: int = 4, max_neighbour_set_size: int = 2,
                      subsample: int = 300, seed: int = 0, examine_kept_edges: bool = True,
                      wall_fraction: float = 0.8) -> ScratchpadRouter:
    """Entry-point factory of :class:`ScratchpadRouter` (policy name ``scratchpad``)."""
    return ScratchpadRouter(alpha=alpha, gap_threshold=gap_threshold,
                            max_sets_per_pair=max_sets_per_pair,
                            max_neighbour_set_size=max_neighbour_set_size, subsample=subsample,
                            seed=seed, examine_kept_edges=examine_kept_edges,
                            wall_fraction=wall_fraction)


def bandit_scratchpad_router(strategy: str = "ucb1", alpha: float = 0.05,
                             gap_threshold: float = 0.15, max_sets_per_pair: int = 4,
                             max_neighbour_set_size: int = 2, subsample: int = 300,
                             seed: int = 0, examine_kept_edges: bool = True,
                             wall_fraction: float = 0.8) -> BanditScratchpadRouter:
    """Entry-point factory of :class:`BanditScratchpadRouter` (policy name
    ``scratchpad-bandit``)."""
    return BanditScratchpadRouter(strategy=strategy, alpha=alpha, gap_threshold=gap_threshold,
                                  max_sets_per_pair=max_sets_per_pair,
                                  max_neighbour_set_size=max_neighbour_set_size,
                                  subsample=subsample, seed=seed,
                                  examine_kept_edges=examine_kept_edges,
                                  wall_fraction=wall_fraction)
