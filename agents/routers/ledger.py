"""The scratchpad's ledger: one hypothesis per pair, every piece of evidence run for it, the
surprises (evidence that reverses an earlier result, each proposing the next test) and the
decisions. After CausalEvolve's causal scratchpad; see ``docs/policies.md``.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from heuresis_env.errors import UnknownNameError

__all__ = [
    "EVIDENCE_ACTIONS",
    "NONPARAMETRIC",
    "SURPRISE_KINDS",
    "Evidence",
    "Hypothesis",
    "Ledger",
    "ProposedTest",
    "Surprise",
    "pair_key",
]

#: the kinds of evidence action a scratchpad router takes (the bandit's arms, in this order)
EVIDENCE_ACTIONS = ("kci_deleting_set", "dcor_marginal", "kci_neighbour_set", "dcor_confirm",
                    "orientation_probe")
#: the nonparametric tests whose verdicts the decision rules read
NONPARAMETRIC = ("kci", "dcor")
SURPRISE_KINDS = ("nonlinear_dependence", "vanishing_dependence")


def pair_key(x: str, y: str) -> tuple[str, str]:
    """The ledger's key of the pair x — y: its two names in sorted order."""
    return (x, y) if x <= y else (y, x)


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
        # field by field: ``dataclasses.asdict`` deep-copies every value, and a router's
        # ledger holds hundreds of these (it was most of an episode's transcript)
        record = {name: getattr(self, name) for name in _EVIDENCE_FIELDS}
        record["pair"] = list(self.pair)
        record["conditioning_set"] = list(self.conditioning_set)
        record["args"] = None if self.args is None else copy.deepcopy(self.args)
        return record


_EVIDENCE_FIELDS = tuple(f.name for f in fields(Evidence))


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
            return self.hypotheses[pair_key(x, y)]
        except KeyError:
            raise UnknownNameError("hypothesis pair", f"{x} - {y}",
                                   [f"{a} - {b}" for a, b in self.hypotheses]) from None

    def add_evidence(self, pair: tuple[str, str], **fields: Any) -> Evidence:
        evidence = Evidence(id=len(self.evidence), pair=pair_key(*pair), **fields)
        self.evidence.append(evidence)
        if evidence.pair in self.hypotheses:
            self.hypotheses[evidence.pair].evidence.append(evidence.id)
        return evidence

    def add_surprise(self, pair: tuple[str, str], kind: str, earlier: list[int], reversing: int,
                     proposed: ProposedTest | None, note: str) -> Surprise:
        if kind not in SURPRISE_KINDS:
            raise UnknownNameError("surprise kind", kind, SURPRISE_KINDS)
        surprise = Surprise(id=len(self.surprises), pair=pair_key(*pair), kind=kind,
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
