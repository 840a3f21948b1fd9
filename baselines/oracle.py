"""The ideal oracle: PC-KCI's output with every true edge it wrongly deleted restored.

It is the ceiling for repairing deletions, not for the task (docs/scores.md). A restored
edge gets its true direction (the oracle knows it); adjacency F1 does not depend on that
choice, SHD does — documented in docs/scores.md.
"""

from __future__ import annotations

from baselines.reference import reference_record
from heuresis_env.discovery import Deletion
from heuresis_env.generation import Instance
from heuresis_env.graphs import Graph

#: PC-KCI's default level (the algorithm registry's); the oracle's default
DEFAULT_ALPHA = 0.05


def restore_wrong_deletions(pc_graph: Graph, deletion_log: list[Deletion], true_dag: Graph) -> Graph:
    """Add back, with their true direction, the deleted pairs that are edges of ``true_dag``."""
    repaired = pc_graph.copy()
    for deletion in deletion_log:
        x, y = deletion.x, deletion.y
        if true_dag.adjacent(x, y) and not repaired.adjacent(x, y):
            if y in true_dag.children(x):
                repaired.add_directed(x, y)
            else:
                repaired.add_directed(y, x)
    return repaired


def ideal_oracle(instance: Instance, alpha: float = DEFAULT_ALPHA) -> Graph:
    """The oracle graph of one instance, from the (cached) PC-KCI reference result."""
    # the default level reads the plain PC-KCI reference result instead of running it again
    params = None if alpha == DEFAULT_ALPHA else {"alpha": alpha}
    record = reference_record(instance, "pc-kci", params)
    result = record.graph_result()
    if not result.ok:
        raise RuntimeError(f"PC-KCI failed on instance {instance.key}: {result.error}")
    log = [Deletion(**d) for d in result.extras["deletion_log"]]
    return restore_wrong_deletions(result.graph, log, instance.record.dag)
