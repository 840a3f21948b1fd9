"""The guided start: PC-KCI's output on an instance, the guided condition's starting graph.

Its CPDAG is the working graph an episode starts from when ``guided=True``, and its deletion
log is what the ``deletion_log`` tool shows. Computed from the data alone, once per instance,
with the test the ``pc-kci`` algorithm runs (:data:`GUIDED_TEST`, ``kci-auto``): exact KCI up
to 2,000 rows, its large-n approximation above, so a guided episode on a 10,000-row table does
not wait for hours of O(n³) tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heuresis_env.discovery.citests.large_n import AUTO_THRESHOLD
from heuresis_env.discovery.pc import pc
from heuresis_env.evidence.store import cached_evidence
from heuresis_env.graphs import EdgeMark, Graph

#: significance level of every PC run of the evidence (the benchmark's default)
ALPHA = 0.05

#: the guided start's CI test, the ``pc-kci`` algorithm's: exact KCI up to AUTO_THRESHOLD
#: rows (bit-identical to ``kci``, the same KCI cache entries), the approximation above
GUIDED_TEST = "kci-auto"


@dataclass(frozen=True)
class GuidedStart:
    """PC-KCI's output on one instance: the guided condition's starting graph and its log."""

    graph: Graph
    deletion_log: tuple  # of heuresis_env.discovery.pc.Deletion, in deletion order
    n_tests: int
    alpha: float
    ci_test: str
    runtime: float


def compute_guided_start(data: np.ndarray, names: Sequence[str], alpha: float = ALPHA,
                        ci_test: str = GUIDED_TEST) -> GuidedStart:
    """Run PC with ``ci_test`` (:data:`GUIDED_TEST` by default; PC's default orientation,
    causal-learn's rule) and keep what the guided condition shows; ``ci_test`` on the result
    names the test that ran (``kci``, or the approximation above the threshold)."""
    result = pc(data, names, ci_test=ci_test, alpha=alpha)
    return GuidedStart(graph=result.graph, deletion_log=tuple(result.deletion_log),
                      n_tests=result.n_tests, alpha=alpha, ci_test=result.ci_test,
                      runtime=result.runtime)


def guided_start(data: np.ndarray, names: Sequence[str], sha256: str,
                alpha: float = ALPHA) -> GuidedStart:
    """The cached guided start of an instance (PC-KCI, computed once per instance).

    Up to the threshold the entry is keyed as exact KCI's, as before ``kci-auto`` (the same
    result bit for bit, so earlier caches stay valid); above it by the test that runs."""
    rows = int(np.shape(data)[0])
    key = "kci" if rows <= AUTO_THRESHOLD else GUIDED_TEST
    return cached_evidence(sha256, "guided_start", {"alpha": alpha, "ci_test": key},
                           lambda: compute_guided_start(data, names, alpha))


def start_graph_for_edits(graph: Graph) -> Graph:
    """A copy of a seed graph with only tails and arrows (other marks become undirected).

    PC's output is a CPDAG, but a conflicting v-structure can leave a bidirected edge; the RL
    view's operations know directed and undirected edges only.
    """
    marks = graph.marks.copy()
    odd = (marks == EdgeMark.CIRCLE) | ((marks == EdgeMark.ARROW) & (marks.T == EdgeMark.ARROW))
    odd = odd | odd.T
    marks[odd] = EdgeMark.TAIL
    return Graph(graph.names, marks)
