"""The scratchpad router with a bandit choosing the next kind of evidence (UCB1 or Thompson
sampling over :data:`~agents.routers.ledger.EVIDENCE_ACTIONS`); the ledger, reading rules and
budget are :class:`~agents.routers.scratchpad.ScratchpadBase`'s."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from agents.routers.ledger import EVIDENCE_ACTIONS, ProposedTest
from agents.routers.scratchpad import PendingAction, ScratchpadBase
from heuresis_env.data import data_sha256
from heuresis_env.errors import UnknownNameError
from heuresis_env.seeding import instance_rng

__all__ = ["BANDIT_STRATEGIES", "BanditScratchpadRouter", "bandit_scratchpad_router"]

BANDIT_STRATEGIES = ("ucb1", "thompson")


class BanditScratchpadRouter(ScratchpadBase):
    """The scratchpad router with a bandit choosing the next kind of evidence.

    Arms are the evidence actions in :data:`EVIDENCE_ACTIONS` that have a target; the reward
    of a pull is 1 when its result produced a surprise or changed a decision (or a restored
    edge's direction), else 0. ``strategy`` is ``"ucb1"`` (every available arm once, then the
    largest mean + √(2 ln t / n)) or ``"thompson"`` (Beta(1 + rewards, 1 + misses) draws).
    Ties and draws use a generator from :func:`heuresis_env.seeding.instance_rng`: the
    instance's data hash, then ``seed`` and the reset info's ``seed`` when the environment
    supplies one, so an episode is reproducible.
    """

    name = "scratchpad-bandit"

    def __init__(self, strategy: str = "ucb1", **options: Any):
        if strategy not in BANDIT_STRATEGIES:
            raise UnknownNameError("bandit strategy", strategy, BANDIT_STRATEGIES)
        super().__init__(**options)
        self.strategy = strategy

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        labels: list[str | int] = ["scratchpad-bandit", self.seed]
        episode = self._reset_seed
        if isinstance(episode, numbers.Integral) and not isinstance(episode, bool) and episode >= 0:
            labels += ["episode", int(episode)]
        self._rng = instance_rng(data_sha256(self._data), *labels)
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

    def _after_evidence(self, pending: PendingAction, changed: bool) -> None:
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
