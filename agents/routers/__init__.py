"""Scripted routers: the paper's router and the scratchpad routers.

"The paper" is the benchmark's paper, *Benchmarking and Enhancing Agentic Causal Discovery*;
the scratchpad follows the causal scratchpad of *CausalEvolve: Towards Open-Ended Discovery
with Causal Scratchpad*.

One concept per module:

- :mod:`~agents.routers.paper` — :func:`paper_router`, exactly the paper's router
  (PC-Fisher-z, the dCor − |r| screen, PC-KCI when enough deleted pairs are flagged, the
  restore step), and :class:`PaperRouterPolicy` playing it in an episode;
- :mod:`~agents.routers.holm` — Holm's step-down correction of the restore step's re-tests;
- :mod:`~agents.routers.ledger` — the scratchpad's :class:`Ledger` of hypotheses (one claim
  per pair), evidence and surprises (evidence that reverses an earlier result);
- :mod:`~agents.routers.scratchpad` — :class:`ScratchpadRouter`, after CausalEvolve's causal
  scratchpad: it acts only through tools, starting from PC-Fisher-z's output, and each
  surprise proposes the next test;
- :mod:`~agents.routers.bandit` — :class:`BanditScratchpadRouter`, the same ledger with a
  bandit choosing the next kind of evidence.

The decision rules, the families of conditioning sets and the budget handling are written
out in ``docs/policies.md``.
"""

from agents.routers.bandit import (
    BANDIT_STRATEGIES,
    BanditScratchpadRouter,
    bandit_scratchpad_router,
)
from agents.routers.holm import holm_adjusted_p_values, holm_rejections
from agents.routers.ledger import (
    EVIDENCE_ACTIONS,
    Evidence,
    Hypothesis,
    Ledger,
    ProposedTest,
    Surprise,
)
from agents.routers.paper import (
    PairGap,
    PaperRouterPolicy,
    RestoreAttempt,
    RouterDecision,
    alternative_conditioning_sets,
    dcor_gaps,
    paper_router,
    paper_router_policy,
    restore_deletions,
)
from agents.routers.scratchpad import ScratchpadRouter, scratchpad_router

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
