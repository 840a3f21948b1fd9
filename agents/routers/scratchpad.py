"""The scratchpad router, after CausalEvolve's causal scratchpad: it acts only through tools,
starting from PC-Fisher-z's output, keeps a :class:`Ledger` of hypotheses, evidence and
surprises, follows each surprise's proposed test, and submits PC-Fisher-z's output with the
decisions the evidence supports.

:class:`ScratchpadBase` holds what every scratchpad router shares (the ledger, its reading
rules, the budget); :class:`ScratchpadRouter` examines hypotheses in agenda order, and
:class:`~agents.routers.bandit.BanditScratchpadRouter` lets a bandit choose the next kind of
evidence. The rules are written out in ``docs/policies.md``.
"""

from __future__ import annotations

import itertools
import time
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.checks import check_int, check_probability, check_real
from agents.routers.ledger import (
    NONPARAMETRIC,
    Evidence,
    Hypothesis,
    Ledger,
    ProposedTest,
    pair_key,
)
from agents.routers.paper import (
    alternative_conditioning_sets,
    budget_left,
    cached_on_data,
    dcor_gaps,
)
from baselines.policies import edge_strings
from heuresis_env.data import validate_data
from heuresis_env.discovery import pc, validate_names
from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import EdgeMark, Graph, has_directed_cycle
from heuresis_env.policy import Policy

__all__ = ["START_GRAPH_NAME", "PendingAction", "ScratchpadBase", "ScratchpadRouter",
           "scratchpad_router"]

#: name of the graph memory entry holding PC-Fisher-z's output
START_GRAPH_NAME = "pc_fisherz"
#: bump when what the prior holds or how it is computed changes (stale entries are ignored)
PRIOR_CACHE_VERSION = 1


@dataclass
class PendingAction:
    """What the previous action was, so its result can be read from the next info."""

    kind: str  # run_algorithm, deletion_log, test, probe, edit, submit
    test: ProposedTest | None = None
    arm: str | None = None


class ScratchpadBase(Policy):
    """Shared machinery of the scratchpad routers: the ledger, its reading rules, the budget.

    Subclasses choose the next evidence action (:meth:`_choose_test`).
    """

    interface = "text"

    def __init__(self, alpha: float = 0.05, gap_threshold: float = 0.15,
                 max_sets_per_pair: int = 4, max_neighbour_set_size: int = 2,
                 subsample: int = 300, seed: int = 0, examine_kept_edges: bool = True,
                 wall_fraction: float = 0.8):
        self.alpha = check_probability("alpha", alpha)
        self.gap_threshold = check_real("gap_threshold", gap_threshold)
        self.max_sets_per_pair = check_int("max_sets_per_pair", max_sets_per_pair, 1)
        self.max_neighbour_set_size = check_int("max_neighbour_set_size",
                                                 max_neighbour_set_size, 1)
        self.subsample = check_int("subsample", subsample, 2)
        self.seed = check_int("seed", seed, 0)
        self.examine_kept_edges = bool(examine_kept_edges)
        self.wall_fraction = check_probability("wall_fraction", wall_fraction, open_high=False)
        self.ledger = Ledger()
        self._actions: list[dict[str, Any]] = []

    # ---- episode start ---------------------------------------------------------------------------
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
        self._reset_seed = info.get("seed")
        self._started = time.perf_counter()
        self._phase = "start"
        self._pending: PendingAction | None = None
        self._start_graph: Graph | None = None
        self._start_step: int | None = None
        self._executed: set[tuple] = set()
        self._agenda: list[tuple[str, str]] = []
        self._edits: list[dict[str, Any]] = []
        self._edit_errors: list[str] = []
        self._kci_kept: set[tuple[str, str]] = set()
        self._submit_rejected = False
        self._failures: list[str] = []
        self._prior = self._local_prior()

    def _local_prior(self) -> dict[str, Any]:
        """PC-Fisher-z's deletion log and the dCor − |r| screen, computed from the public data.

        The same PC run the first tool call makes (same function and settings); it supplies the
        deleting sets, which the tool's result does not list, and orders the agenda. A
        deterministic function of the data and the settings, kept in the policy's own disk
        cache (like its CI tests), so a rerun on the same data reads it back.
        """
        return cached_on_data("scratchpad-prior", PRIOR_CACHE_VERSION, self._data, self._names,
                              [self.alpha, self.subsample, self.seed], self._compute_prior)

    def _compute_prior(self) -> dict[str, Any]:
        names, data = self._names, self._data
        result = pc(data, names, ci_test="fisherz", alpha=self.alpha)
        deleted = {pair_key(d.x, d.y): (tuple(d.conditioning_set), float(d.p_value))
                   for d in result.deletion_log}
        pairs = list(itertools.combinations(range(len(names)), 2))
        screen = dcor_gaps(data, pairs, self.subsample, self.seed)
        correlation = np.corrcoef(data, rowvar=False)
        gaps = {}
        for (i, j), (_, _, gap) in zip(pairs, screen, strict=True):
            r = correlation[i, j]
            abs_r = float(abs(r)) if np.isfinite(r) else 0.0
            gaps[pair_key(names[i], names[j])] = (float(gap), abs_r)
        return {"graph": result.graph, "deleted": deleted, "gaps": gaps}

    # ---- the action loop -------------------------------------------------------------------------
    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if not hasattr(self, "_phase"):
            raise HeuresisError(f"{type(self).__name__}.act called before reset")
        if self._pending is not None:
            self._absorb(self._pending, info)
            self._pending = None
        action = self._next_action(budget_left(observation))
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
            self._pending = PendingAction("run_algorithm")
            return {"tool": "run_algorithm",
                    "args": {"name": "pc-fisherz", "params": {"alpha": self.alpha},
                             "save_as": START_GRAPH_NAME}}
        if self._phase == "deletion_log":
            self._pending = PendingAction("deletion_log")
            return {"tool": "deletion_log", "args": {}}
        if self._phase == "evidence":
            decisions = sum(h.decision is not None for h in self.ledger.hypotheses.values())
            # keep room for: load_graph, one edit per decision (and one more), submit
            if budget >= decisions + 4 and not self._out_of_time():
                test, arm = self._choose_test()
                if test is not None:
                    self._executed.add(test.key)
                    self._pending = PendingAction("probe" if test.method == "orientation_probe"
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
            self._pending = PendingAction("edit")
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
        self._pending = PendingAction("submit")
        graph = self.final_graph()
        if graph is None or self._submit_rejected:
            return {"tool": "submit", "args": {}}
        edges = edge_strings(graph)
        if edges is None:  # marks the edge list cannot express: submit the working graph
            return {"tool": "submit", "args": {}}
        return {"tool": "submit", "args": {"edges": edges, "evidence": self._all_steps()}}

    def _all_steps(self) -> list[int]:
        steps = sorted({e.step for h in self.ledger.hypotheses.values() if h.decision
                        for e in map(self.ledger.evidence.__getitem__, h.decision_evidence)
                        if e.step is not None})
        return steps[:512]

    # ---- reading results -------------------------------------------------------------------------
    def _absorb(self, pending: PendingAction, info: dict[str, Any]) -> None:
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
                self._failures.append(f"run_algorithm pc-fisherz (its starting graph) failed: "
                                      f"{error}; the working graph was submitted")
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
            self._failures.append(f"its edge list was refused at step {step} ({error}); the "
                                  "working graph was submitted instead")

    def failure(self) -> str | None:
        return "; ".join(getattr(self, "_failures", [])) or None

    def _after_evidence(self, pending: PendingAction, changed: bool) -> None:
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
            pair = pair_key(x, y)
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
            pair = pair_key(str(record["x"]), str(record["y"]))
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

    # ---- the reading rules -----------------------------------------------------------------------
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

    # ---- choosing tests --------------------------------------------------------------------------
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

    # ---- the final graph -------------------------------------------------------------------------
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

    # ---- reports ---------------------------------------------------------------------------------
    def transcript(self) -> list[dict[str, Any]] | None:
        if not hasattr(self, "_phase"):
            return None
        return [{"kind": "scratchpad_ledger", "policy": self.name,
                 "ledger": self.ledger.to_dict(), "actions": list(self._actions),
                 "planner": self._planner_state()}]

    def _planner_state(self) -> dict[str, Any]:
        return {"agenda": [list(p) for p in self._agenda]}


class ScratchpadRouter(ScratchpadBase):
    """Scratchpad router (after CausalEvolve's causal scratchpad) that acts only through tools.

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
