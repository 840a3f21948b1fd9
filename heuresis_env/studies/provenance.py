"""Where a policy's edges came from (Table 4): the algorithm outputs it called, re-run.

For every episode with a trace, the report reads the successful ``run_algorithm`` calls,
re-runs each through :func:`heuresis_env.discovery.algorithms.run_algorithm` with the seed the tool
used (so the output is the one the policy saw; results are cached on disk under the tool's own
cache keys, so outputs the episode already computed are read back), and compares the final
graph with PC-KCI's output on the instance:

- the **added edges**: pairs adjacent in the final graph but not in PC-KCI's output;
- the added edges that appear in **no output the policy called** (partial outputs count on the
  pairs they cover);
- the **repairs** of PC-KCI's output: the added pairs that are true edges against the
  true edges PC-KCI deleted (precision and recall of the restores), and the pairs PC-KCI
  kept that the final graph drops, against PC-KCI's false adjacencies (of the removals);
- the **merge of the called outputs**: merge_k over the full-variable outputs of the episode,
  with k chosen per policy and family in hindsight (merge*; an episode with fewer outputs than
  k merges with all of them, min(k, K)).

The hidden record is read to score graphs and count true edges; only the report does that.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heuresis_env.cache import ResultCache, stable_hash
from heuresis_env.discovery.algorithms import ALGORITHM_CACHE_VERSION, cached_run_algorithm
from heuresis_env.discovery.graph_merge import best_k, merge_k
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.run_format import (
    EpisodeRecord,
    InstanceId,
    RunDirectory,
    regenerate_instance,
)
from heuresis_env.graphs import Graph
from heuresis_env.metrics import adjacency_f1
from heuresis_env.seeding import int31_seed
from heuresis_env.trace_files import read_trace

#: the one key of the tool's argument record that names the algorithm
_RUN_ALGORITHM = "run_algorithm"


# ---- instances ----------------------------------------------------------------------------------

# ---- algorithm calls ------------------------------------------------------------------------------

@dataclass(frozen=True)
class AlgorithmCall:
    """One successful ``run_algorithm`` call of an episode, as its trace records it."""

    step: int
    name: str
    params: dict[str, Any]
    variables: tuple[str, ...] | None

    @property
    def signature(self) -> str:
        import json

        return json.dumps([self.name, self.params, self.variables], sort_keys=True, default=str)


def algorithm_calls(trace_path: str | os.PathLike) -> list[AlgorithmCall]:
    """The successful ``run_algorithm`` calls recorded in a trace file, in step order."""

    trace = read_trace(trace_path)
    calls = []
    for record in trace.steps:
        if record.get("tool") != _RUN_ALGORITHM or record.get("error"):
            continue
        args = record.get("args") or {}
        if not isinstance(args, dict) or not isinstance(args.get("name"), str):
            continue
        variables = args.get("variables")
        calls.append(AlgorithmCall(
            step=int(record.get("step", 0)), name=args["name"],
            params=dict(args.get("params") or {}),
            variables=None if variables is None else tuple(str(v) for v in variables)))
    return calls


def called_output(instance, call: AlgorithmCall):
    """The :class:`~heuresis_env.discovery.algorithms.AlgorithmResult` the call returned in its episode.

    Same data, arguments and seed as the ``run_algorithm`` tool, through the same cache
    (:func:`~heuresis_env.discovery.algorithms.cached_run_algorithm`): an output the episode
    computed is read back, not recomputed.
    """
    variables = None if call.variables is None else list(call.variables)
    return cached_run_algorithm(call.name, instance.X, instance.names, instance.sha256,
                                call.params, variables, int31_seed(instance.sha256))


def pc_kci_output(instance) -> Graph:
    """PC-KCI's output on the instance (α = 0.05), cached like a tool call."""
    result = called_output(instance, AlgorithmCall(0, "pc-kci", {}, None))
    if not result.ok:
        raise HeuresisError(f"PC-KCI failed on instance {instance.key}: {result.error}")
    return result.graph


# ---- per-episode provenance --------------------------------------------------------------------

@dataclass
class EpisodeProvenance:
    """The edges one episode added to PC-KCI's output and the outputs it called."""

    episode: EpisodeRecord
    n_calls: int
    n_added: int
    n_added_true: int
    n_added_unexplained: int        # added edges in no called output
    n_added_unexplained_true: int
    final_f1: float
    pc_kci_f1: float
    true_dag: Graph
    full_outputs: list[Graph] = field(default_factory=list)
    n_wrong_deletions: int = 0      # true edges PC-KCI's output lacks
    n_removed: int = 0              # pairs of PC-KCI's output the final graph drops
    n_removed_false: int = 0        # of those, not edges of the true DAG
    n_false_keeps: int = 0          # pairs of PC-KCI's output that are not true edges
    #: its cache key: names everything above but the record (instance, final graph, calls)
    key: str | None = None


def episode_provenance(run: RunDirectory, episode: EpisodeRecord) -> EpisodeProvenance | None:
    """Provenance of one episode, or None when it has no trace, no final graph or no true
    graph (a data table given without one)."""

    if episode.trace_path is None or not episode.trace_path.is_file() or not episode.final_graph:
        return None
    calls = algorithm_calls(episode.trace_path)
    final_graph = dict(episode.final_graph)
    # on disk: a report recomputes this for every episode of every arm, and a warm rerun's
    # episodes have the same instance, final graph and calls. A generated instance is named
    # by its key, the salt's digest and its data hash (its truth follows from them); a data
    # table's truth comes from a file that may change, so it is regenerated and put in the key
    table = any(details.get("name") == episode.instance[0]
                for details in run.config.get("datasets") or ())
    identity = None if table else [run.instance_key(episode.instance),
                                   run.config.get("salt_digest"), episode.instance_sha256]
    cache = ResultCache("provenance")

    def key_of(*instance_part: Any) -> str:
        return stable_hash(["episode-provenance", PROVENANCE_CACHE_VERSION,
                            ALGORITHM_CACHE_VERSION, *instance_part, final_graph,
                            [call.signature for call in calls]])

    key = None if identity is None else key_of(identity)
    parts = None if key is None else cache.get(key)
    if isinstance(parts, dict):
        return EpisodeProvenance(episode=episode, key=key, **parts)
    instance = regenerate_instance(run, episode.instance, episode.instance_sha256)
    names = instance.names
    true_dag = instance.record.dag
    if true_dag is None:  # a data table without a graph: nothing to tell true edges by
        return None
    final = Graph.from_dict(final_graph)
    if set(final.names) != set(names):
        raise HeuresisError(f"{run.path}: the final graph of {episode.episode_id} is over "
                            f"{list(final.names)}, the instance over {list(names)}")
    if key is None:  # a data table: its truth, regenerated, is part of the key
        key = key_of([instance.sha256, true_dag.to_dict()])
        parts = cache.get(key)
    if not isinstance(parts, dict):
        parts = _provenance_parts(instance, final.restricted(names), true_dag, calls)
        cache.set(key, parts)
    return EpisodeProvenance(episode=episode, key=key, **parts)


#: bump when what :func:`episode_provenance` computes changes (stale cache entries are ignored)
PROVENANCE_CACHE_VERSION = 1


def _provenance_parts(instance, final: Graph, true_dag: Graph,
                      calls: list[AlgorithmCall]) -> dict[str, Any]:
    """Everything :class:`EpisodeProvenance` holds but the episode record."""
    names = instance.names
    pc_graph = pc_kci_output(instance)
    covered = np.zeros((len(names), len(names)), dtype=bool)
    full_outputs: list[Graph] = []
    seen: set[str] = set()
    for call in calls:
        if call.signature in seen:
            continue
        seen.add(call.signature)
        result = called_output(instance, call)
        if not result.ok:
            continue
        embedded = result.full_graph(names)
        covered |= embedded.skeleton()
        if call.variables is None or set(call.variables) == set(names):
            full_outputs.append(embedded)
    added = np.triu(final.skeleton() & ~pc_graph.skeleton(), 1)
    removed = np.triu(pc_graph.skeleton() & ~final.skeleton(), 1)
    truth = true_dag.skeleton()
    unexplained = added & ~covered
    return dict(
        n_calls=len(calls),
        n_added=int(added.sum()), n_added_true=int((added & truth).sum()),
        n_added_unexplained=int(unexplained.sum()),
        n_added_unexplained_true=int((unexplained & truth).sum()),
        final_f1=adjacency_f1(final, true_dag), pc_kci_f1=adjacency_f1(pc_graph, true_dag),
        full_outputs=full_outputs, true_dag=true_dag,
        n_wrong_deletions=int(np.triu(truth & ~pc_graph.skeleton(), 1).sum()),
        n_removed=int(removed.sum()), n_removed_false=int((removed & ~truth).sum()),
        n_false_keeps=int(np.triu(pc_graph.skeleton() & ~truth, 1).sum()))


@dataclass
class ProvenanceCell:
    """Table 4's numbers for one policy on one family (or all families)."""

    label: str
    family: str
    n_episodes: int
    n_without_trace: int
    n_calls: int
    n_added: int
    n_added_true: int
    n_added_unexplained: int
    n_added_unexplained_true: int
    n_merge_episodes: int
    merge_k: int | None
    merge_f1: float
    policy_f1_on_merge_episodes: float
    pc_kci_f1: float
    merge_f1_by_k: list[float]
    merge_instances: list[InstanceId]
    merge_instance_f1: list[float]
    policy_instance_f1: list[float]
    n_wrong_deletions: int = 0
    n_removed: int = 0
    n_removed_false: int = 0
    n_false_keeps: int = 0
    #: per instance (mean over repeats): F1 of the final graph and of PC-KCI's output
    instances: list[InstanceId] = field(default_factory=list)
    final_instance_f1: list[float] = field(default_factory=list)
    pc_kci_instance_f1: list[float] = field(default_factory=list)

    @property
    def restore_precision(self) -> float:
        """Share of the added pairs that are true edges."""
        return self.n_added_true / self.n_added if self.n_added else math.nan

    @property
    def restore_recall(self) -> float:
        """Share of PC-KCI's wrong deletions (true edges it lacks) the policy restored."""
        return self.n_added_true / self.n_wrong_deletions if self.n_wrong_deletions else math.nan

    @property
    def removal_precision(self) -> float:
        """Share of the removed pairs of PC-KCI's output that are not true edges."""
        return self.n_removed_false / self.n_removed if self.n_removed else math.nan

    @property
    def removal_recall(self) -> float:
        """Share of PC-KCI's false adjacencies the policy removed."""
        return self.n_removed_false / self.n_false_keeps if self.n_false_keeps else math.nan


def _instance_means(keys: Sequence[InstanceId], values: Sequence[float]
                    ) -> tuple[list[InstanceId], list[float]]:
    sums: dict[InstanceId, list[float]] = {}
    for key, value in zip(keys, values, strict=True):
        sums.setdefault(key, []).append(value)
    ordered = list(sums)
    return ordered, [float(np.mean(sums[k])) for k in ordered]


def _merge_star(mergeable: Sequence[EpisodeProvenance]) -> tuple[int, list[float], list[float]]:
    """merge*: the k of the k-vote merge with the best mean F1 over these episodes' full
    outputs, the mean F1 of each k, and each episode's F1 at the chosen k. On disk by the
    episodes' keys (their outputs and truths follow from them): a report's largest
    recomputation, the same on a warm rerun."""
    def compute() -> tuple[int, list[float], list[float]]:
        k_best, means = best_k([p.full_outputs for p in mergeable],
                               [p.true_dag for p in mergeable], adjacency_f1, clip=True)
        values = [adjacency_f1(merge_k(p.full_outputs, min(k_best, len(p.full_outputs))),
                               p.true_dag) for p in mergeable]
        return k_best, list(means), values

    keys = [p.key for p in mergeable]
    if any(key is None for key in keys):
        return compute()
    key = stable_hash(["merge-star", PROVENANCE_CACHE_VERSION, keys])
    return ResultCache("provenance").get_or_compute(key, compute)


def provenance_cell(label: str, family: str,
                    items: Sequence[EpisodeProvenance], n_without_trace: int) -> ProvenanceCell:
    """Sum the episodes' counts and choose merge* over the episodes with a full output."""

    mergeable = [p for p in items if p.full_outputs]
    k_best: int | None = None
    means: list[float] = []
    merge_values: list[float] = []
    if mergeable:
        k_best, means, merge_values = _merge_star(mergeable)
    keys = [p.episode.instance for p in mergeable]
    merge_instances, merge_instance_f1 = _instance_means(keys, merge_values)
    _, policy_instance_f1 = _instance_means(keys, [p.final_f1 for p in mergeable])
    every = [p.episode.instance for p in items]
    instances, final_instance_f1 = _instance_means(every, [p.final_f1 for p in items])
    _, pc_kci_instance_f1 = _instance_means(every, [p.pc_kci_f1 for p in items])
    return ProvenanceCell(
        label=label, family=family, n_episodes=len(items), n_without_trace=n_without_trace,
        n_calls=sum(p.n_calls for p in items),
        n_added=sum(p.n_added for p in items),
        n_added_true=sum(p.n_added_true for p in items),
        n_added_unexplained=sum(p.n_added_unexplained for p in items),
        n_added_unexplained_true=sum(p.n_added_unexplained_true for p in items),
        n_merge_episodes=len(mergeable), merge_k=k_best,
        merge_f1=float(np.mean(merge_instance_f1)) if merge_instance_f1 else math.nan,
        policy_f1_on_merge_episodes=(float(np.mean(policy_instance_f1)) if policy_instance_f1
                                     else math.nan),
        pc_kci_f1=float(np.mean([p.pc_kci_f1 for p in items])) if items else math.nan,
        merge_f1_by_k=means, merge_instances=merge_instances,
        merge_instance_f1=merge_instance_f1, policy_instance_f1=policy_instance_f1,
        n_wrong_deletions=sum(p.n_wrong_deletions for p in items),
        n_removed=sum(p.n_removed for p in items),
        n_removed_false=sum(p.n_removed_false for p in items),
        n_false_keeps=sum(p.n_false_keeps for p in items),
        instances=instances, final_instance_f1=final_instance_f1,
        pc_kci_instance_f1=pc_kci_instance_f1)
