"""The referee: an instance split into what the agent may see and closures over the truth.

The true graphs live only in the closures' cells, never in an attribute of the environment,
so ``vars(env)`` and attribute walks cannot reach them (introspection of closures or of the
garbage collector is out of scope; ``docs/environment.md`` states what a policy in the
environment's process can reach, and ``heuresis evaluate`` runs policies in another process).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from heuresis_env.generation.instances import InstanceKey, cached_instance
from heuresis_env.graphs import Graph
from heuresis_env.metrics import score_graph


@dataclass(frozen=True)
class PublicInstance:
    """The part of an instance an agent may see: key, data, names, data hash."""

    key: InstanceKey
    X: np.ndarray
    names: tuple[str, ...]
    sha256: str
    sealed: bool


def make_referee(true_dag: Graph, true_cpdag: Graph) -> dict[str, Callable]:
    """Closures over the hidden graphs: scoring, fast F1, and the reveal after an episode.

    The true graphs live only in these closures' cells, never in an attribute of the
    environment, so ``vars(env)`` and attribute walks cannot reach them.
    """
    truth = true_dag.skeleton()
    n_true = int(np.count_nonzero(np.triu(truth, 1)))
    upper = np.triu(np.ones(truth.shape, dtype=bool), 1)

    def scores(graph: Any) -> dict[str, Any]:
        return score_graph(graph, true_dag, true_cpdag)

    def f1_of_marks(marks: np.ndarray) -> tuple[float, int, int]:
        """Adjacency F1 of a mark matrix, with its true positives and edge count."""
        predicted = (marks != 0) & upper
        true_positives = int(np.count_nonzero(predicted & truth))
        n_predicted = int(np.count_nonzero(predicted))
        return f1_from_counts(true_positives, n_predicted), true_positives, n_predicted

    def f1_from_counts(true_positives: int, n_predicted: int) -> float:
        denominator = n_predicted + n_true
        return 2.0 * true_positives / denominator if denominator else 1.0

    def is_true_pair(i: int, j: int) -> bool:
        return bool(truth[i, j])

    def reveal() -> Any:
        return true_dag.copy()

    return {"scores": scores, "f1_of_marks": f1_of_marks, "f1_from_counts": f1_from_counts,
            "is_true_pair": is_true_pair, "reveal": reveal}


def open_instance(key: InstanceKey, salt: str | None) -> tuple[PublicInstance, dict[str, Callable]]:
    """Generate (or reuse from this process) an instance, split into public part and referee."""
    instance = cached_instance(key, salt)
    public = PublicInstance(key=instance.key, X=instance.X, names=tuple(instance.names),
                            sha256=instance.sha256, sealed=instance.sealed)
    return public, make_referee(instance.record.dag, instance.record.cpdag)
