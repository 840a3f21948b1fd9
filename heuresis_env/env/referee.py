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

from heuresis_env.generation.datasets import public_description
from heuresis_env.generation.experiments import make_laboratory
from heuresis_env.generation.instances import Instance, InstanceKey, cached_instance
from heuresis_env.generation.record import NoGroundTruthError
from heuresis_env.generation.salts import SaltArgument, sealing_salt
from heuresis_env.graphs import Graph
from heuresis_env.metrics import score_graph

#: the scores of an episode on a table without a graph: none but the output's edge count
UNSCORED = ("f1", "precision", "recall", "shd", "nshd", "shd_cpdag")


@dataclass(frozen=True)
class PublicInstance:
    """The part of an instance an agent may see: key, data, names, data hash, and for a data
    table how its columns were prepared (``description``; empty for generated instances)."""

    key: InstanceKey
    X: np.ndarray
    names: tuple[str, ...]
    sha256: str
    sealed: bool
    description: str = ""
    has_ground_truth: bool = True


def make_referee(true_dag: Graph | None, true_cpdag: Graph | None) -> dict[str, Callable]:
    """Closures over the hidden graphs: scoring, fast F1, and the reveal after an episode.

    The true graphs live only in these closures' cells, never in an attribute of the
    environment, so ``vars(env)`` and attribute walks cannot reach them. Without a true graph
    (a data table given without one) the scores are None but the output's edge count, and
    anything that needs the truth raises :class:`NoGroundTruthError`.
    """
    if true_dag is None:
        return _referee_without_truth()
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


def _referee_without_truth() -> dict[str, Callable]:
    def scores(graph: Any) -> dict[str, Any]:
        return {**dict.fromkeys(UNSCORED), "n_edges": graph.n_edges()}

    def unavailable(*args: Any) -> Any:
        raise NoGroundTruthError("this data table has no true graph, so nothing can be scored "
                                 "(reward='shaped' and the F1 of a graph are unavailable)")

    return {"scores": scores, "f1_of_marks": unavailable, "f1_from_counts": unavailable,
            "is_true_pair": unavailable, "reveal": lambda: None}


def open_instance(key: InstanceKey, salt: SaltArgument, instance: Instance | None = None
                  ) -> tuple[PublicInstance, dict[str, Callable]]:
    """Generate (or reuse from this process) an instance, split into public part and referee;
    ``instance`` (a data table the environment was given) is used as it is. The referee's
    ``laboratory`` (an instance with an SCM only) draws experiments' rows
    (:func:`~heuresis_env.generation.experiments.make_laboratory`)."""
    if instance is None:
        instance = cached_instance(key, salt)
    public = PublicInstance(key=instance.key, X=instance.X, names=tuple(instance.names),
                            sha256=instance.sha256, sealed=instance.sealed,
                            description=public_description(instance),
                            has_ground_truth=instance.record.has_ground_truth)
    referee = make_referee(instance.record.dag, instance.record.cpdag)
    # the salt resolved now, as the instance was: a public split's experiments stay public
    laboratory = make_laboratory(instance, sealing_salt(instance.key.split, salt) or "")
    if laboratory is not None:
        referee["laboratory"] = laboratory
    return public, referee
