"""Labelled evidence grids of many instances, computed in parallel and kept as data-only shards.

A **shard** is one ``.npz`` file (no pickle: ``numpy.savez`` of plain arrays, read back with
``allow_pickle=False``) holding up to ``shard_size`` instances of one family, split and size:
their evidence grids (:func:`heuresis_env.evidence.evidence_grid`, computed from the data
alone), the labels (the true DAG, from the hidden record), the instance keys and data hashes,
and the CPU seconds each part of the grid took. ``build_shards`` writes a shard only when all
its instances are done (atomically), so an interrupted build resumes where it stopped, and
every grid is also in the evidence cache. Sealed test instances are never written: their truth
stays in memory (:func:`instance_example`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import connect_ray
from heuresis_env.evidence import (
    GRID_EVIDENCE_VERSION,
    GRID_NODE_FEATURE_NAMES,
    GRID_PAIR_FEATURE_NAMES,
    evidence_grid,
    guided_start,
)
from heuresis_env.files import atomic_write_bytes
from heuresis_env.generation import InstanceKey, cached_instance, sealing_salt
from heuresis_env.threads import limit_threads, parallel_map

__all__ = ["Example", "ExampleSet", "SHARD_MANIFEST", "build_shards", "compute_examples",
           "examples_of", "instance_example", "load_examples", "shard_name"]

#: the file beside the shards naming their features and versions
SHARD_MANIFEST = "grid-manifest.json"


@dataclass(frozen=True)
class Example:
    """One instance's grid and labels (``dag[i, j]`` = 1 for a true edge i → j)."""

    family: str
    split: str
    index: int
    sha256: str
    pairs: np.ndarray  # (d, d, P) float32
    nodes: np.ndarray  # (d, N) float32
    dag: np.ndarray  # (d, d) int8
    seconds: dict[str, float]

    @property
    def skeleton(self) -> np.ndarray:
        return ((self.dag + self.dag.T) > 0).astype(np.int8)


def instance_example(key: InstanceKey, salt: str | None = None) -> Example:
    """The grid (computed or read from the evidence cache) and labels of one instance."""
    instance = cached_instance(key, salt)
    start = guided_start(instance.X, instance.names, instance.sha256)
    grid = evidence_grid(instance.X, instance.names, instance.sha256)
    # PC-KCI's wall seconds when it ran (the guided start; every guided episode needs it)
    seconds = {"pc_kci_wall": float(start.runtime), **grid.seconds}
    dag = instance.record.require_graph("labels").directed_adjacency().astype(np.int8)
    return Example(key.family, key.split, key.index, instance.sha256, grid.pairs, grid.nodes,
                   dag, seconds)


def shard_name(family: str, split: str, d: int, n: int, start: int) -> str:
    return f"{family}-{split}-d{d}-n{n}-{start:07d}.npz"


def _example_job(job: tuple) -> Example:
    family, split, index, d, n, salt = job
    return instance_example(InstanceKey(family, split, index, d=d, n=n), salt)


def _job_name(job: tuple) -> str:
    family, split, index, d, n, _ = job  # not the salt
    return f"{family} {split} instance {index} (d = {d}, n = {n})"


def compute_examples(jobs: Sequence[tuple], workers: int = 1, backend: str = "local",
                     address: str | None = None) -> Iterator[tuple[tuple, Example]]:
    """(job, example) for every job (family, split, index, d, n, salt), in order, computed by
    ``workers`` local processes (:func:`~heuresis_env.threads.parallel_map`, one BLAS thread
    each) or, with ``backend="ray"``, as Ray tasks (a local cluster of ``workers`` CPUs, or
    the cluster at ``address``; the evidence cache is the workers' own
    ``$HEURESIS_CACHE_DIR``)."""
    if backend not in ("local", "ray"):
        raise HeuresisError(f"backend must be 'local' or 'ray', got {backend!r}")
    if backend == "ray":
        yield from _ray_examples(jobs, workers, address)
        return
    yield from zip(jobs, parallel_map(_example_job, jobs, workers, threads=1,
                                      describe=_job_name), strict=True)


def _ray_job(job: tuple) -> Example:
    limit_threads(1)
    return _example_job(job)


def _ray_examples(jobs: Sequence[tuple], workers: int, address: str | None
                  ) -> Iterator[tuple[tuple, Example]]:
    ray, connected_here = connect_ray(workers, address)
    try:
        task = ray.remote(num_cpus=1)(_ray_job)
        window = max(2 * workers, 2)  # tasks in flight: enough to keep every CPU busy
        pending = [task.remote(job) for job in jobs[:window]]
        for k, job in enumerate(jobs):
            example = ray.get(pending[k])
            pending[k] = None  # let the object store drop it
            if k + window < len(jobs):
                pending.append(task.remote(jobs[k + window]))
            yield job, example
    finally:
        if connected_here:
            ray.shutdown()


def examples_of(keys: Sequence[InstanceKey], salt: str | None = None, workers: int = 1,
                progress: Callable[[str], None] | None = None, backend: str = "local",
                address: str | None = None) -> ExampleSet:
    """The examples of ``keys``, kept in memory (a sealed split's truth never touches disk)."""
    jobs = [(k.family, k.split, k.index, k.d, k.n, salt) for k in keys]
    examples = []
    for count, (_, example) in enumerate(compute_examples(jobs, workers, backend, address), 1):
        examples.append(example)
        if progress is not None and (count % 25 == 0 or count == len(jobs)):
            progress(f"{count} of {len(jobs)} instances")
    return ExampleSet.from_examples(examples)


def _write_shard(path: Path, examples: Sequence[Example]) -> None:
    import io

    parts = sorted({part for e in examples for part in e.seconds})
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        pairs=np.stack([e.pairs for e in examples]),
        nodes=np.stack([e.nodes for e in examples]),
        dag=np.stack([e.dag for e in examples]),
        index=np.array([e.index for e in examples], dtype=np.int64),
        sha256=np.array([e.sha256 for e in examples]),
        family=np.array([e.family for e in examples]),
        split=np.array([e.split for e in examples]),
        seconds=np.array([[e.seconds.get(p, np.nan) for p in parts] for e in examples]),
        seconds_parts=np.array(parts),
        pair_features=np.array(GRID_PAIR_FEATURE_NAMES),
        node_features=np.array(GRID_NODE_FEATURE_NAMES),
        version=np.array(GRID_EVIDENCE_VERSION))
    atomic_write_bytes(path, buffer.getvalue())


def build_shards(families: Sequence[str], split: str, indices: Iterable[int], out_dir: str | Path,
                 d: int = 10, n: int = 600, workers: int = 1, shard_size: int = 50,
                 progress: Callable[[str], None] | None = None, backend: str = "local",
                 address: str | None = None) -> list[Path]:
    """Compute the grids of ``indices`` of every family and write them as shards of
    ``shard_size`` consecutive indices (shards already on disk are kept). Work is ordered
    shard by shard, families interleaved, so an interrupted build leaves every family with
    about as many finished shards. Returns the shard paths, in that order."""
    if sealing_salt(split) is not None:
        raise HeuresisError(f"the {split} split is sealed by a salt: its truth is never "
                            "written to disk (evaluate it in memory with instance_example)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / SHARD_MANIFEST).write_text(json.dumps({
        "version": GRID_EVIDENCE_VERSION, "pair_features": list(GRID_PAIR_FEATURE_NAMES),
        "node_features": list(GRID_NODE_FEATURE_NAMES), "d": d, "n": n}, indent=1) + "\n")
    indices = sorted({int(i) for i in indices})
    starts = sorted({i - i % shard_size for i in indices})
    plan: list[tuple[Path, list[tuple]]] = []
    for start in starts:
        for family in families:
            members = [i for i in indices if start <= i < start + shard_size]
            plan.append((out / shard_name(family, split, d, n, start),
                         [(family, split, i, d, n, None) for i in members]))
    todo = [(path, jobs) for path, jobs in plan if not path.exists()]
    if progress is not None:
        progress(f"{len(plan) - len(todo)} of {len(plan)} shards already on disk")
    pending: dict[Path, dict[int, Example]] = {path: {} for path, _ in todo}
    wanted = {path: len(jobs) for path, jobs in todo}
    owner = {job: path for path, jobs in todo for job in jobs}
    started = time.perf_counter()
    jobs = [job for _, members in todo for job in members]
    for job, example in compute_examples(jobs, workers, backend, address):
        path = owner[job]
        pending[path][example.index] = example
        if len(pending[path]) == wanted[path]:
            _write_shard(path, [pending[path][i] for i in sorted(pending[path])])
            del pending[path]
            if progress is not None:
                progress(f"{path.name} written ({time.perf_counter() - started:.0f} s)")
    return [path for path, _ in plan]


@dataclass
class ExampleSet:
    """Examples stacked for training: arrays over instances of one size d."""

    pairs: np.ndarray  # (m, d, d, P) float32
    nodes: np.ndarray  # (m, d, N)
    dag: np.ndarray  # (m, d, d) int8
    family: np.ndarray  # (m,) str
    split: np.ndarray
    index: np.ndarray
    sha256: np.ndarray
    seconds: np.ndarray  # (m, parts)
    seconds_parts: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.pairs.shape[0])

    @property
    def skeleton(self) -> np.ndarray:
        return ((self.dag + np.swapaxes(self.dag, 1, 2)) > 0).astype(np.int8)

    def subset(self, mask: np.ndarray) -> ExampleSet:
        return ExampleSet(self.pairs[mask], self.nodes[mask], self.dag[mask], self.family[mask],
                          self.split[mask], self.index[mask], self.sha256[mask],
                          self.seconds[mask], self.seconds_parts)

    @classmethod
    def from_examples(cls, examples: Sequence[Example]) -> ExampleSet:
        parts = tuple(sorted({p for e in examples for p in e.seconds}))
        return cls(np.stack([e.pairs for e in examples]), np.stack([e.nodes for e in examples]),
                   np.stack([e.dag for e in examples]),
                   np.array([e.family for e in examples]), np.array([e.split for e in examples]),
                   np.array([e.index for e in examples], dtype=np.int64),
                   np.array([e.sha256 for e in examples]),
                   np.array([[e.seconds.get(p, np.nan) for p in parts] for e in examples]),
                   parts)


def load_examples(paths: Iterable[str | Path]) -> ExampleSet:
    """Read shards (checked: the current grid version and feature lists, one d) into one set."""
    loaded: list[dict[str, Any]] = []
    for path in paths:
        with np.load(path, allow_pickle=False) as archive:
            shard = {key: archive[key] for key in archive.files}
        if (int(shard["version"]) != GRID_EVIDENCE_VERSION
                or tuple(shard["pair_features"]) != GRID_PAIR_FEATURE_NAMES
                or tuple(shard["node_features"]) != GRID_NODE_FEATURE_NAMES):
            raise HeuresisError(f"{path}: a shard of another evidence-grid version or feature "
                                f"list; rebuild it (build_shards)")
        loaded.append(shard)
    if not loaded:
        raise HeuresisError("no shards to load")
    sizes = {shard["pairs"].shape[1] for shard in loaded}
    if len(sizes) != 1:
        raise HeuresisError(f"shards of several sizes d = {sorted(sizes)}: load one d at a time")
    parts = tuple(str(p) for p in loaded[0]["seconds_parts"])
    seconds = []
    for shard in loaded:  # align each shard's cost columns to the first one's
        own = [str(p) for p in shard["seconds_parts"]]
        seconds.append(np.column_stack([shard["seconds"][:, own.index(p)] if p in own
                                        else np.full(len(shard["index"]), np.nan)
                                        for p in parts]))
    return ExampleSet(
        pairs=np.concatenate([s["pairs"] for s in loaded]),
        nodes=np.concatenate([s["nodes"] for s in loaded]),
        dag=np.concatenate([s["dag"] for s in loaded]),
        family=np.concatenate([s["family"] for s in loaded]),
        split=np.concatenate([s["split"] for s in loaded]),
        index=np.concatenate([s["index"] for s in loaded]),
        sha256=np.concatenate([s["sha256"] for s in loaded]),
        seconds=np.concatenate(seconds), seconds_parts=parts)
