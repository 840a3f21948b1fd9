"""The training stream: instances of a train prior with their pair statistics, a subsample of
their rows and their labels, kept as data-only shards.

The second amortized model reads the rows and the cheap pair statistics
(:mod:`heuresis_env.evidence.statistics`) of instances drawn from a train prior
(:mod:`heuresis_env.generation.priors`: d 5–50, n 200–2,000, three graph models, six
families). A **stream shard** is one ``.npz`` of plain arrays (``numpy.savez``, read with
``allow_pickle=False``) holding the consecutive train indices ``start .. start + size − 1`` of
one prior: instances of every size, concatenated, with offsets —

- ``pairs`` (Σ d², P) and ``nodes`` (Σ d, N): the statistics, float32;
- ``rows`` (Σ r·d) float16: r = min(n, :data:`STORED_ROWS`) rows of the standardized data
  (the first r rows: the generator's rows are exchangeable), what a row-reading model reads;
- ``dag`` (Σ d²) int8: the true DAG (labels; the train split is public);
- ``d``, ``n``, ``r``, ``index``, ``family``, ``graph_model``, ``degree``, ``sha256``,
  ``seconds`` (CPU seconds per block).

A shard is written atomically when all its instances are done, so an interrupted build
resumes with the next missing shard; ``python -m agents.amortized stream --prior wide
--count 20000 --out DIR`` rebuilds the same shards on any machine (the prior and the index
fix each instance). A test split is never streamed.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import (
    LOCAL_SCREEN_FEATURES,
    LOCAL_SCREEN_ROWS,
    LOCAL_SCREEN_VERSION,
    STATISTICS_NODE_FEATURE_NAMES,
    STATISTICS_PAIR_FEATURE_NAMES,
    STATISTICS_VERSION,
    compute_pair_statistics,
    local_screen,
)
from heuresis_env.files import atomic_write_bytes
from heuresis_env.generation import InstanceKey, TrainPrior, generate_instance, get_train_prior
from heuresis_env.threads import parallel_map

__all__ = ["STORED_ROWS", "StreamExample", "StreamSet", "build_screens", "build_stream",
           "load_stream", "screen_path", "stream_example", "stream_shard_name"]

#: rows of each instance kept in a shard (a row-reading model subsamples from them)
STORED_ROWS = LOCAL_SCREEN_ROWS  # 512: the local screen reads the stored rows
#: the file beside the shards naming their prior, features and versions
STREAM_MANIFEST = "stream-manifest.json"


@dataclass(frozen=True)
class StreamExample:
    """One instance: its key, statistics, stored rows and true DAG."""

    key: InstanceKey
    sha256: str
    pairs: np.ndarray  # (d, d, P) float32
    nodes: np.ndarray  # (d, N) float32
    rows: np.ndarray  # (r, d) float32 (float16 in a shard)
    dag: np.ndarray  # (d, d) int8, dag[i, j] = 1 for i -> j
    seconds: dict[str, float]

    @property
    def d(self) -> int:
        return int(self.dag.shape[0])


def stream_example(key: InstanceKey, searches: bool = True, salt: str | None = None,
                   with_labels: bool = True) -> StreamExample:
    """Generate the instance of ``key`` and compute its statistics (nothing is cached: a
    stream instance is read once). ``with_labels=False`` leaves the DAG all zero (an instance
    whose truth must not be held)."""
    instance = generate_instance(key, salt)
    statistics = compute_pair_statistics(instance.X, instance.names, instance.sha256, searches)
    d = instance.d
    dag = (instance.record.require_graph("labels").directed_adjacency().astype(np.int8)
           if with_labels else np.zeros((d, d), dtype=np.int8))
    rows = np.asarray(instance.X[:STORED_ROWS], dtype=np.float32)
    return StreamExample(key, instance.sha256, statistics.pairs, statistics.nodes, rows, dag,
                         dict(statistics.seconds))


def stream_shard_name(prior: TrainPrior, start: int) -> str:
    return f"stream-{prior.digest[:12]}-{start:09d}.npz"


def _job(job: tuple[TrainPrior, int, bool]) -> StreamExample:
    prior, index, searches = job
    return stream_example(prior.key(index), searches)


def _job_name(job: tuple[TrainPrior, int, bool]) -> str:
    prior, index, _ = job
    return f"train instance {index} of prior {prior.name}"


def _map(jobs: list[tuple[TrainPrior, int, bool]], workers: int) -> list[StreamExample]:
    """The jobs' examples in order, on ``workers`` processes (one BLAS thread each)."""
    return list(parallel_map(_job, jobs, workers, threads=1, describe=_job_name))


def _write(path: Path, examples: Sequence[StreamExample], prior: TrainPrior) -> None:
    parts = sorted({p for e in examples for p in e.seconds})
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        pairs=np.concatenate([e.pairs.reshape(-1, e.pairs.shape[-1]) for e in examples]),
        nodes=np.concatenate([e.nodes for e in examples]),
        rows=np.concatenate([e.rows.astype(np.float16).ravel() for e in examples]),
        dag=np.concatenate([e.dag.ravel() for e in examples]),
        d=np.array([e.d for e in examples], dtype=np.int64),
        n=np.array([e.key.n for e in examples], dtype=np.int64),
        r=np.array([e.rows.shape[0] for e in examples], dtype=np.int64),
        index=np.array([e.key.index for e in examples], dtype=np.int64),
        family=np.array([e.key.family for e in examples]),
        graph_model=np.array([e.key.graph_model for e in examples]),
        degree=np.array([e.key.expected_degree for e in examples]),
        sha256=np.array([e.sha256 for e in examples]),
        seconds=np.array([[e.seconds.get(p, np.nan) for p in parts] for e in examples]),
        seconds_parts=np.array(parts),
        pair_features=np.array(STATISTICS_PAIR_FEATURE_NAMES),
        node_features=np.array(STATISTICS_NODE_FEATURE_NAMES),
        version=np.array(STATISTICS_VERSION),
        prior=np.array(json.dumps(prior.to_dict(), sort_keys=True)))
    atomic_write_bytes(path, buffer.getvalue())


def build_stream(prior: str | TrainPrior, start: int, count: int, out_dir: str | Path,
                 workers: int = 1, shard_size: int = 100, searches: bool = False,
                 progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the shards of train indices ``start .. start + count − 1`` of ``prior``
    (``start`` and ``count`` multiples of ``shard_size``); shards on disk are kept."""
    prior = get_train_prior(prior)
    if start % shard_size or count % shard_size:
        raise HeuresisError(f"start and count must be multiples of the shard size "
                            f"{shard_size}, got {start} and {count}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"prior": prior.to_dict(), "prior_name": prior.name, "digest": prior.digest,
                "statistics_version": STATISTICS_VERSION, "searches": searches,
                "pair_features": list(STATISTICS_PAIR_FEATURE_NAMES),
                "node_features": list(STATISTICS_NODE_FEATURE_NAMES),
                "stored_rows": STORED_ROWS, "shard_size": shard_size}
    atomic_write_bytes(out / STREAM_MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
    paths = [out / stream_shard_name(prior, s) for s in range(start, start + count, shard_size)]
    todo = [p for p in paths if not p.exists()]
    if progress is not None:
        progress(f"{len(paths) - len(todo)} of {len(paths)} shards already on disk")
    started = time.perf_counter()
    for done, path in enumerate(todo, 1):
        first = int(path.stem.rsplit("-", 1)[1])
        jobs = [(prior, i, searches) for i in range(first, first + shard_size)]
        examples = _map(jobs, workers)
        _write(path, examples, prior)
        if progress is not None:
            elapsed = time.perf_counter() - started
            left = elapsed / done * (len(todo) - done)
            progress(f"{path.name} written: {done} of {len(todo)} shards, {elapsed:.0f} s, "
                     f"about {left / 60:.0f} min left")
    return paths


def screen_path(shard: str | Path) -> Path:
    """The local-screen file beside a stream shard."""
    shard = Path(shard)
    return shard.with_name(f"screen-v{LOCAL_SCREEN_VERSION}-{shard.name}")


def _screen_job(rows: np.ndarray) -> np.ndarray:
    return local_screen(rows)


def build_screens(shards: Sequence[str | Path], workers: int = 1,
                  progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the local screen (:mod:`heuresis_env.evidence.local_screen`) of every instance
    of each shard beside it, from the shard's stored rows (the rows the screen reads at
    inference too); files on disk are kept, so an interrupted build resumes."""
    todo = [Path(s) for s in shards if not screen_path(s).exists()]
    if progress is not None:
        progress(f"{len(shards) - len(todo)} of {len(shards)} screens already on disk")
    started = time.perf_counter()
    for done, shard in enumerate(todo, 1):
        data = load_stream([shard])
        jobs = [data.example(k)[2] for k in range(len(data))]
        label = f"a screen of {shard.name}"
        screens = list(parallel_map(_screen_job, jobs, workers, threads=1,
                                    describe=lambda rows, label=label: label))
        buffer = io.BytesIO()
        np.savez_compressed(buffer, local=np.concatenate([x.reshape(-1, x.shape[-1])
                                                          for x in screens]),
                            sha256=data.sha256, version=np.array(LOCAL_SCREEN_VERSION),
                            features=np.array(LOCAL_SCREEN_FEATURES))
        atomic_write_bytes(screen_path(shard), buffer.getvalue())
        if progress is not None:
            elapsed = time.perf_counter() - started
            progress(f"{screen_path(shard).name} written: {done} of {len(todo)}, "
                     f"{elapsed:.0f} s, about {elapsed / done * (len(todo) - done) / 60:.0f} "
                     f"min left")
    return [screen_path(s) for s in shards]


def _read_screen(shard: Path, sha256: np.ndarray) -> np.ndarray:
    path = screen_path(shard)
    if not path.exists():
        raise HeuresisError(f"{shard.name}: no local screen beside it (build it with "
                            f"`heuresis amortized stream ... --screens`)")
    with np.load(path, allow_pickle=False) as archive:
        if (int(archive["version"]) != LOCAL_SCREEN_VERSION
                or tuple(archive["features"]) != LOCAL_SCREEN_FEATURES
                or not np.array_equal(archive["sha256"], sha256)):
            raise HeuresisError(f"{path}: a screen of another version or of other instances; "
                                f"delete it and build it again")
        return archive["local"]


@dataclass
class StreamSet:
    """Instances of several shards, kept as concatenated arrays with offsets."""

    pairs: np.ndarray
    nodes: np.ndarray
    rows: np.ndarray
    dag: np.ndarray
    d: np.ndarray
    n: np.ndarray
    r: np.ndarray
    index: np.ndarray
    family: np.ndarray
    graph_model: np.ndarray
    degree: np.ndarray
    sha256: np.ndarray
    seconds: np.ndarray
    seconds_parts: tuple[str, ...]
    #: the pairs carry each instance's local screen after its statistics
    screens: bool = False

    def __post_init__(self) -> None:
        self.pair_offset = np.concatenate([[0], np.cumsum(self.d ** 2)])
        self.node_offset = np.concatenate([[0], np.cumsum(self.d)])
        self.row_offset = np.concatenate([[0], np.cumsum(self.r * self.d)])

    def __len__(self) -> int:
        return int(len(self.d))

    def example(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(pairs (d, d, P), nodes (d, N), rows (r, d) float32, dag (d, d)) of instance k."""
        d = int(self.d[k])
        p0, n0, r0 = self.pair_offset[k], self.node_offset[k], self.row_offset[k]
        return (self.pairs[p0:p0 + d * d].reshape(d, d, -1), self.nodes[n0:n0 + d],
                self.rows[r0:r0 + int(self.r[k]) * d].reshape(-1, d).astype(np.float32),
                self.dag[p0:p0 + d * d].reshape(d, d))

    def select(self, keep: np.ndarray) -> StreamSet:
        """The instances where ``keep`` is True (in order)."""
        chosen = np.flatnonzero(keep)
        parts = [self.example(int(k)) for k in chosen]
        return StreamSet(
            np.concatenate([p.reshape(-1, p.shape[-1]) for p, _, _, _ in parts]),
            np.concatenate([nd for _, nd, _, _ in parts]),
            np.concatenate([rw.astype(np.float16).ravel() for _, _, rw, _ in parts]),
            np.concatenate([dg.ravel() for _, _, _, dg in parts]),
            self.d[chosen], self.n[chosen], self.r[chosen], self.index[chosen],
            self.family[chosen], self.graph_model[chosen], self.degree[chosen],
            self.sha256[chosen], self.seconds[chosen], self.seconds_parts, self.screens)

    @classmethod
    def from_examples(cls, examples: Sequence[StreamExample]) -> StreamSet:
        parts = tuple(sorted({p for e in examples for p in e.seconds}))
        return cls(
            np.concatenate([e.pairs.reshape(-1, e.pairs.shape[-1]) for e in examples]),
            np.concatenate([e.nodes for e in examples]),
            np.concatenate([e.rows.astype(np.float16).ravel() for e in examples]),
            np.concatenate([e.dag.ravel() for e in examples]),
            np.array([e.d for e in examples]), np.array([e.key.n for e in examples]),
            np.array([e.rows.shape[0] for e in examples]),
            np.array([e.key.index for e in examples]),
            np.array([e.key.family for e in examples]),
            np.array([e.key.graph_model for e in examples]),
            np.array([e.key.expected_degree for e in examples]),
            np.array([e.sha256 for e in examples]),
            np.array([[e.seconds.get(p, np.nan) for p in parts] for e in examples]), parts)


def load_stream(paths: Sequence[str | Path], screens: bool = False) -> StreamSet:
    """Read stream shards (checked: the statistics version and feature lists) into one set;
    with ``screens`` each instance's local screen (the file beside its shard) is appended to
    its pair statistics as :data:`LOCAL_SCREEN_FEATURES`."""
    loaded = []
    for path in paths:
        with np.load(path, allow_pickle=False) as archive:
            shard = {key: archive[key] for key in archive.files}
        if screens:
            shard["pairs"] = np.concatenate(
                [shard["pairs"], _read_screen(Path(path), shard["sha256"])], axis=1)
        if (int(shard["version"]) != STATISTICS_VERSION
                or tuple(shard["pair_features"]) != STATISTICS_PAIR_FEATURE_NAMES
                or tuple(shard["node_features"]) != STATISTICS_NODE_FEATURE_NAMES):
            raise HeuresisError(f"{path}: a shard of another statistics version or feature "
                                "list; rebuild it (python -m agents.amortized stream)")
        loaded.append(shard)
    if not loaded:
        raise HeuresisError("no stream shards to load")
    parts = tuple(str(p) for p in loaded[0]["seconds_parts"])
    seconds = []
    for shard in loaded:
        own = [str(p) for p in shard["seconds_parts"]]
        seconds.append(np.column_stack([shard["seconds"][:, own.index(p)] if p in own
                                        else np.full(len(shard["d"]), np.nan) for p in parts]))

    def joined(name: str) -> np.ndarray:
        return np.concatenate([s[name] for s in loaded])

    return StreamSet(joined("pairs"), joined("nodes"), joined("rows"), joined("dag"),
                     joined("d"), joined("n"), joined("r"), joined("index"), joined("family"),
                     joined("graph_model"), joined("degree"), joined("sha256"),
                     np.concatenate(seconds), parts, screens)


def stream_shards(directory: str | Path, prior: str | TrainPrior | None = None) -> list[Path]:
    """The stream shards in ``directory`` (of ``prior`` only when given), in index order."""
    pattern = ("stream-*.npz" if prior is None
               else f"stream-{get_train_prior(prior).digest[:12]}-*.npz")
    return sorted(Path(directory).glob(pattern))


def iter_keys(prior: str | TrainPrior, start: int, count: int) -> Iterator[InstanceKey]:
    yield from get_train_prior(prior).keys(start, count)
