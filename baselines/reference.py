"""Reference results: every registered algorithm run on every instance, scored, cached.

The cache key is (instance SHA-256, algorithm, parameters, code version), so a second
``heuresis baselines`` run is instant and a code change invalidates exactly what it should.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from heuresis_env.cache import ResultCache, stable_hash
from heuresis_env.discovery import ALGORITHM_CACHE_VERSION, AlgorithmResult, run_algorithm
from heuresis_env.generation import Instance
from heuresis_env.metrics import score_graph
from heuresis_env.version import __version__

#: bump when a change here alters results (the package version is part of the key too)
CODE_VERSION = "2"  # 2: PC's default orientation is causal-learn's (issue 13)

#: the reference algorithms (docs/baselines.md), in the order tables list them
REFERENCE_ALGORITHMS: tuple[str, ...] = (
    "pc-fisherz", "pc-kci", "ges", "fci", "direct-lingam", "anm",
    "notears", "notears-mlp", "grasp", "boss",
)


@dataclass
class ReferenceRecord:
    """One algorithm on one instance: its serialized result and its scores (None on failure)."""

    algorithm: str
    instance_sha256: str
    result: dict[str, Any]
    scores: dict[str, float] | None = field(default=None)

    @property
    def ok(self) -> bool:
        return self.result.get("error") is None

    def graph_result(self) -> AlgorithmResult:
        return AlgorithmResult.from_dict(self.result)


def _cache_key(instance: Instance, algorithm: str, params: dict[str, Any] | None) -> str:
    key = {"instance": instance.sha256, "algorithm": algorithm, "params": params or {},
           "code": CODE_VERSION, "algorithms": ALGORITHM_CACHE_VERSION, "package": __version__}
    if instance.record.graph_model == "data":  # one table may come with different graphs
        truth = instance.record.dag
        key["truth"] = None if truth is None else stable_hash(truth.to_dict())
    return stable_hash(key)


def reference_cache_key(instance: Instance, algorithm: str,
                        params: dict[str, Any] | None = None) -> str:
    """The key of ``algorithm``'s record on ``instance`` in the ``reference`` cache."""
    return _cache_key(instance, algorithm, params)


def cached_reference_record(instance: Instance, algorithm: str,
                            params: dict[str, Any] | None = None) -> ReferenceRecord | None:
    """The cached record of ``algorithm`` on ``instance``, or None (nothing is run)."""
    return ResultCache("reference").get(_cache_key(instance, algorithm, params))


def reference_record(instance: Instance, algorithm: str,
                     params: dict[str, Any] | None = None, *, use_cache: bool = True) -> ReferenceRecord:
    """Run (or fetch from the cache) ``algorithm`` on ``instance`` and score it on the hidden DAG
    (``scores`` is None when the run failed or the instance has no true graph)."""
    cache = ResultCache("reference")
    key = _cache_key(instance, algorithm, params)
    if use_cache:
        hit = cache.get(key)
        if hit is not None:
            return hit
    result = run_algorithm(algorithm, instance.X, instance.names, params=params)
    truth = instance.record.dag  # None for a data table given without a graph: unscored
    scores = score_graph(result.graph, truth) if result.ok and truth is not None else None
    record = ReferenceRecord(algorithm, instance.sha256, result.to_dict(), scores)
    cache.set(key, record)
    return record


