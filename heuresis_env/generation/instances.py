"""Instances: keys, seeds, generation, the hidden record, and the on-disk store.

An instance is fully determined by its :class:`InstanceKey` — (family, split, index,
generator version) plus the size parameters d, n and the graph model — and, for the test
split only, an optional secret salt. Generation:

1. seeds: a ``numpy.random.SeedSequence`` whose entropy is the SHA-256 of the key (split
   included), plus the SHA-256 of the salt for a sealed test split; it spawns three
   independent streams — structure, permutation, data;
2. structure: the family's sampler draws the DAG and every node's mechanism and parameters
   (:func:`heuresis_env.generation.families.sample_scm`);
3. permutation: a uniformly random column order; columns are named X1..Xd *after* it;
4. data: the SCM's generation sample (n rows), capturing the map-output constants and the
   column means and sds; X = the sample with each column standardized (mean 0, variance 1,
   population convention).

Same key ⇒ byte-identical X and record on any machine (see :mod:`heuresis_env.generation.scm` for how
the arithmetic avoids platform-dependent code). :data:`GENERATOR_VERSION` must change
whenever a change to this pipeline changes any instance.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import math
import os
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.cache import MemoCache, cache_disabled, cache_root, stable_hash
from heuresis_env.data import data_sha256
from heuresis_env.errors import HeuresisError, InstanceFormatError, UnknownNameError
from heuresis_env.files import atomic_write_bytes, output_directory
from heuresis_env.generation.families import (
    FAMILIES,
    FAMILY_NAME_PATTERN,
    built_in_family,
    get_family,
    sample_scm,
)
from heuresis_env.generation.graph_models import GRAPH_MODELS
from heuresis_env.generation.record import HiddenRecord
from heuresis_env.generation.salts import (
    MIN_SALT_BITS,
    TEST_SALT_ENV,
    SaltArgument,
    check_salt,
    sealing_salt,
)
from heuresis_env.generation.scm import calibrate_scm, standardize_columns
from heuresis_env.progress import progress_bar

#: Bump whenever a change to the generator changes any generated instance.
GENERATOR_VERSION = "1"
#: Version of the saved-instance format (JSON + NPZ pair) and of the split manifest.
FORMAT_VERSION = 1
#: Size of the train split: an unbounded stream in practice (indices 0 .. 2³¹ − 1, far more
#: instances than any training run reads); a run or a command on it names its count.
TRAIN_SPLIT_SIZE = 2**31
#: Number of instances per split; indices run 0 .. size − 1. ``dev`` (selection, design,
#: training), ``test`` (evaluation only; sealed by a salt), ``train`` (a stream for learned
#: policies and amortized models, from seeds disjoint from dev's and from every test salt's).
SPLIT_SIZES: dict[str, int] = {"dev": 100, "test": 32, "train": TRAIN_SPLIT_SIZE}
#: splits whose size is a bound, not a default count: a count must be given
STREAM_SPLITS = ("train",)
#: Smallest number of rows accepted (the generator is meant for n ≥ 50; below 10 the
#: map-output and column standardizations are too noisy to define an instance).
MIN_ROWS = 10
#: the largest instance a key may ask for: variables, rows, and cells (d × n float64 values,
#: 160 MB at the cap), so a mistyped size is a clear error, not minutes of allocation
MAX_VARIABLES = 1_000
MAX_ROWS = 1_000_000
MAX_CELLS = 20_000_000
MANIFEST_NAME = "manifest.json"
#: default size of a family's instances (families with a fixed structure use its d)
DEFAULT_D, DEFAULT_N = 10, 600
#: the random graph models' default expected degree (a key's ``degree`` when None), and the
#: largest a key may ask for
DEFAULT_DEGREE, MAX_DEGREE = 2.0, 20.0
#: the graph model of a key: a random model, ``fixed`` (a family's known structure) or
#: ``data`` (a data table, whose graph — if any — was given with it)
KEY_GRAPH_MODELS = (*GRAPH_MODELS, "fixed", "data")


# ---- instance sources: data tables registered by name ------------------------------------------

@dataclass(frozen=True)
class InstanceSource:
    """A fixed instance under a family-like name: a data table (real data, a user's CSV).

    It has one instance, index 0, the same in both splits (there is no held-out split of one
    table); ``load`` builds it (called once per process and split, then memoized).
    """

    name: str
    d: int
    n: int
    load: Callable[[InstanceKey], Instance] = field(repr=False)
    description: str = ""
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)


_SOURCES: dict[str, InstanceSource] = {}


def register_source(source: InstanceSource) -> InstanceSource:
    """Register (or replace) a data-table source; its name works wherever a family's does."""
    if not re.fullmatch(FAMILY_NAME_PATTERN, source.name):
        raise HeuresisError(f"a data set's name must be letters, digits, '_' or '-' (not "
                            f"first), got {source.name!r}")
    if source.name in FAMILIES:
        raise HeuresisError(f"{source.name!r} is a generated family; give the data set "
                            "another name")
    _SOURCES[source.name] = source
    _GENERATED.clear()  # an instance of a replaced source must not be served again
    return source


def get_source(name: str) -> InstanceSource | None:
    """The registered data-table source ``name``, or None when it is not one."""
    return _SOURCES.get(name)


def available_sources() -> list[str]:
    return list(_SOURCES)


def split_size(family: str, split: str) -> int:
    """How many instances ``family`` has in ``split``: 1 for a data table, else SPLIT_SIZES."""
    if split not in SPLIT_SIZES:
        raise UnknownNameError("split", split, SPLIT_SIZES)
    return 1 if family in _SOURCES else SPLIT_SIZES[split]


def default_count(family: str, split: str, count: int | None) -> int:
    """``count`` checked against the split (0 .. its size), or the whole split when None — which
    a stream split (``train``) refuses: it has no whole to take."""
    size = split_size(family, split)
    if count is None:
        if split in STREAM_SPLITS and size > 1:
            raise HeuresisError(f"the {split} split is an unbounded stream of instances: give a "
                                f"count (e.g. --count 1000)")
        return size
    if not _is_int(count) or not 0 <= count <= size:
        raise HeuresisError(f"count for the {split} split must be an integer in 0..{size}, "
                            f"got {count!r}")
    return int(count)


def _resolve_size(family: str, d: int | None, n: int | None, graph_model: str | None
                  ) -> tuple[Any, Any, str]:
    """The key's d, n and graph model: a data table's and a fixed structure's are theirs
    (a differing explicit value is an error); other families default to 10, 600, ``er``."""
    source = _SOURCES.get(family)
    spec = FAMILIES.get(family)
    fixed: dict[str, Any] = {}
    if graph_model == "data" and d is not None and n is not None:
        pass  # a table's own key (a table being loaded, or a run's record): its source's
        # loader checks it against the table it holds
    elif source is not None:
        fixed = {"d": source.d, "n": source.n, "graph_model": "data"}
        what = f"data set {family!r} has {source.d} columns and {source.n} rows"
    elif spec is not None and spec.structure is not None:
        fixed = {"d": spec.structure.d, "graph_model": "fixed"}
        what = f"family {family!r} has a fixed structure of {spec.structure.d} variables"
    asked = {"d": d, "n": n, "graph_model": graph_model}
    for name, value in fixed.items():
        if asked[name] is not None and asked[name] != value:
            raise HeuresisError(f"{what}; {name} = {asked[name]!r} does not apply (leave it "
                                f"out, or pass {name} = {value!r})")
        asked[name] = value
    return (DEFAULT_D if asked["d"] is None else int(asked["d"]),
            DEFAULT_N if asked["n"] is None else int(asked["n"]),
            "er" if asked["graph_model"] is None else str(asked["graph_model"]))


# ---- keys and seeds -----------------------------------------------------------------------------

@dataclass(frozen=True)
class InstanceKey:
    """What fixes an instance: family, split, index, generator version, d, n, graph model and
    the graph's expected degree.

    ``d``, ``n`` and ``graph_model`` left as None take the family's: a fixed structure's d and
    ``fixed``, a data table's d, n and ``data``, else 10, 600 and ``er``. ``degree`` (the
    random graph model's expected degree) left as None is :data:`DEFAULT_DEGREE`; a key with
    the default degree hashes as it did before the field existed, so every earlier instance
    is unchanged. A fixed structure or a data table takes no degree.
    """

    family: str
    split: str
    index: int
    generator_version: str = GENERATOR_VERSION
    d: int | None = None
    n: int | None = None
    graph_model: str | None = None
    degree: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.family, str) or not re.fullmatch(FAMILY_NAME_PATTERN,
                                                                 self.family):
            raise HeuresisError(f"family must be a registered family name, got {self.family!r}")
        if self.split not in SPLIT_SIZES:
            raise UnknownNameError("split", self.split, SPLIT_SIZES)
        d, n, graph_model = _resolve_size(self.family, self.d, self.n, self.graph_model)
        size = split_size(self.family, self.split)
        if not _is_int(self.index) or not 0 <= self.index < size:
            raise HeuresisError(f"index of the {self.split} split must be an integer in "
                                f"0..{size - 1}, got {self.index!r}")
        if not _is_int(d) or not 2 <= d <= MAX_VARIABLES:
            raise HeuresisError(f"d must be an integer in 2..{MAX_VARIABLES:,}, got {d!r}")
        if not _is_int(n) or not MIN_ROWS <= n <= MAX_ROWS:
            raise HeuresisError(f"n must be an integer in {MIN_ROWS}..{MAX_ROWS:,} (≥ 50 "
                                f"recommended), got {n!r}")
        if d * n > MAX_CELLS:
            raise HeuresisError(f"d × n = {d:,} × {n:,} is more than {MAX_CELLS:,} values; "
                                "choose a smaller d or n")
        if graph_model not in KEY_GRAPH_MODELS:
            raise UnknownNameError("graph model", graph_model, KEY_GRAPH_MODELS)
        degree = self.degree
        if degree is not None:
            if isinstance(degree, bool) or not isinstance(degree, int | float | np.number) \
                    or not (math.isfinite(degree) and 0 < degree <= MAX_DEGREE):
                raise HeuresisError(f"degree must be a number in (0, {MAX_DEGREE}], got "
                                    f"{degree!r}")
            if graph_model not in GRAPH_MODELS:
                raise HeuresisError(f"degree applies to a random graph model "
                                    f"({', '.join(GRAPH_MODELS)}), not to {graph_model!r}")
            degree = float(degree)
            object.__setattr__(self, "degree", None if degree == DEFAULT_DEGREE else degree)
        object.__setattr__(self, "index", int(self.index))
        object.__setattr__(self, "d", int(d))
        object.__setattr__(self, "n", int(n))
        object.__setattr__(self, "graph_model", graph_model)
        object.__setattr__(self, "generator_version", str(self.generator_version))

    @property
    def size(self) -> tuple[int, int, str]:
        """(d, n, graph_model) as resolved at construction (never None)."""
        assert self.d is not None and self.n is not None and self.graph_model is not None
        return self.d, self.n, self.graph_model

    @property
    def expected_degree(self) -> float:
        """The random graph model's expected degree (:data:`DEFAULT_DEGREE` unless set)."""
        return DEFAULT_DEGREE if self.degree is None else self.degree

    def __str__(self) -> str:
        degree = "" if self.degree is None else f", degree {self.degree:g}"
        return (f"{self.family}/{self.split}/{self.index} (d={self.d}, n={self.n}, "
                f"{self.graph_model}{degree}, generator v{self.generator_version})")

    @property
    def slug(self) -> str:
        """A file-name stem, e.g. ``wild-dev-003-d10-n600-er-v1`` (``-deg3.5`` after the
        graph model when the degree is not the default)."""
        degree = "" if self.degree is None else f"-deg{self.degree:g}"
        return (f"{self.family}-{self.split}-{self.index:03d}-d{self.d}-n{self.n}-"
                f"{self.graph_model}{degree}-v{self.generator_version}")

    def to_dict(self) -> dict:
        out = {"family": self.family, "split": self.split, "index": self.index,
               "generator_version": self.generator_version, "d": self.d, "n": self.n,
               "graph_model": self.graph_model}
        if self.degree is not None:  # absent at the default: earlier keys hash as before
            out["degree"] = self.degree
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InstanceKey:
        try:
            return cls(**{k: data[k] for k in ("family", "split", "index")},
                       **{k: data[k] for k in ("generator_version", "d", "n", "graph_model",
                                               "degree")
                          if k in data})
        except (KeyError, TypeError) as exc:
            raise HeuresisError(f"bad instance key {dict(data)!r}: {exc}") from None

    @classmethod
    def parse(cls, text: str, d: int | None = None, n: int | None = None,
              graph_model: str | None = None) -> InstanceKey:
        """Parse ``family/split/index`` (e.g. ``wild/dev/3``)."""
        parts = str(text).strip().split("/")
        if len(parts) != 3 or not parts[2].isdigit():
            raise HeuresisError(f"an instance key reads family/split/index, e.g. 'wild/dev/3'; "
                                f"got {text!r}")
        return cls(parts[0], parts[1], int(parts[2]), d=d, n=n, graph_model=graph_model)


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def key_seed_sequence(key: InstanceKey, salt: SaltArgument = None) -> np.random.SeedSequence:
    """The instance's root seed: SHA-256 words of the key (and of the salt for a sealed test).

    Dev and test keys differ in ``split``, which is hashed, so their seeds differ by
    construction; the salt enters only for the test split.
    """
    return salted_seed_sequence(key.to_dict(), key.split, salt)


def salted_seed_sequence(payload: Mapping[str, Any], split: str,
                         salt: SaltArgument = None) -> np.random.SeedSequence:
    """A root seed for anything drawn per split (instances, question sets): SHA-256 words of
    ``payload``, and of the salt when ``split`` is a sealed test split."""
    digest = stable_hash(dict(payload))
    entropy = [int(digest[i : i + 8], 16) for i in range(0, 64, 8)]
    sealed = sealing_salt(split, salt)
    if sealed is not None:
        entropy += sealed.entropy
    return np.random.SeedSequence(entropy)


def instance_rngs(key: InstanceKey, salt: SaltArgument = None) -> dict[str, np.random.Generator]:
    """The three independent generators of an instance: ``structure``, ``permutation``, ``data``.

    ``record.scm.sample(key.n, instance_rngs(key)["data"])`` reproduces ``X`` exactly.
    """
    structure, permutation, data = key_seed_sequence(key, salt).spawn(3)
    return {"structure": np.random.Generator(np.random.PCG64(structure)),
            "permutation": np.random.Generator(np.random.PCG64(permutation)),
            "data": np.random.Generator(np.random.PCG64(data))}


# ---- the instance ---------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Instance:
    """One benchmark instance: the data table ``X`` (read-only, n × d, standardized, columns
    named ``names`` = X1..Xd) and the hidden record, which ``repr`` never shows."""

    key: InstanceKey
    X: np.ndarray
    names: tuple[str, ...]
    sha256: str
    record: HiddenRecord = field(repr=False)
    sealed: bool = False  # generated with a secret test salt

    def __repr__(self) -> str:
        return (f"Instance(key={self.key.family}/{self.key.split}/{self.key.index}, "
                f"shape={self.X.shape}, sha256={self.sha256[:12]}…"
                f"{', sealed' if self.sealed else ''})")

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array, dtype=np.float64)
    array.flags.writeable = False
    return array


def generate_instance(key: InstanceKey, salt: SaltArgument = None) -> Instance:
    """Generate the instance of ``key`` (see the module docstring for the steps).

    ``salt`` seals the test split (default: ``$HEURESIS_TEST_SALT``); it is ignored for dev.
    """
    if not isinstance(key, InstanceKey):
        raise HeuresisError(f"expected an InstanceKey, got {type(key).__name__}")
    source = _SOURCES.get(key.family)
    if source is not None:
        return source.load(key)
    if key.generator_version != GENERATOR_VERSION:
        raise HeuresisError(f"this code generates version {GENERATOR_VERSION!r} instances; the "
                            f"key asks for version {key.generator_version!r}")
    spec = get_family(key.family)
    sealed = sealing_salt(key.split, salt)
    rngs = instance_rngs(key, sealed or "")
    d, n, graph_model = key.size
    internal = sample_scm(spec, d, rngs["structure"], graph_model=graph_model,
                          expected_degree=key.expected_degree,
                          names=[f"node{i}" for i in range(d)])
    order = rngs["permutation"].permutation(d)
    names = tuple(f"X{i + 1}" for i in range(d))
    scm, raw = calibrate_scm(internal.reordered(order.tolist(), names), n, rngs["data"])
    assert scm.column_means is not None and scm.column_sds is not None  # calibrated
    X = _frozen(standardize_columns(raw, scm.column_means, scm.column_sds))
    return Instance(key=key, X=X, names=names, sha256=data_sha256(X),
                    record=HiddenRecord.from_scm(scm, graph_model),
                    sealed=sealed is not None)


_GENERATED: MemoCache[Instance] = MemoCache(256)

#: the disk cache's folder under the cache root (see :func:`stored_instance`)
INSTANCE_CACHE = "instances"
#: what the generator's output depends on besides the key: the modules that generate, and
#: the libraries whose arithmetic they call
_GENERATOR_SOURCES = ("generation/*.py", "graphs.py", "data.py", "cache.py")


@functools.cache
def generator_fingerprint() -> str:
    """A digest of the generator's source files and numpy's version (once per process): the
    disk cache of generated instances is kept per fingerprint, so a change to the generating
    code (even one that forgot to bump :data:`GENERATOR_VERSION`) is never served an earlier
    instance."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(f"{GENERATOR_VERSION}\0numpy {np.__version__}".encode())
    for path in sorted(p for pattern in _GENERATOR_SOURCES for p in package.glob(pattern)):
        digest.update(f"\0{path.relative_to(package).as_posix()}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def stored_instance(key: InstanceKey, salt: SaltArgument = None) -> Instance:
    """:func:`generate_instance`, kept on disk (``<cache>/instances/<fingerprint>/<slug>``,
    the JSON + NPZ pair of :func:`save_instance`) for generated instances of public splits:
    generating one takes milliseconds (calibration and a simulation of n rows), reading it back
    under one. The file is checked as :func:`load_instance` checks any (format, shapes, the
    data's SHA-256 against its record) and must hold the very key asked for; a file that
    fails is generated again and replaced.

    Never on disk: an instance sealed by a salt (its truth exists only in the memory of the
    processes that generate it), a data table (its own file is the source), a family that is
    not the package's own unchanged (:func:`~heuresis_env.generation.families.built_in_family`:
    a registered family, or a replaced mechanism kind, is code the fingerprint does not
    cover), and anything while ``$HEURESIS_NO_CACHE`` is set.
    """
    sealed = sealing_salt(key.split, salt)
    if (not built_in_family(key.family)  # a data table's name is never a built-in family
            or sealed is not None
            or cache_disabled() or key.generator_version != GENERATOR_VERSION):
        return generate_instance(key, sealed or "")
    stem = cache_root() / INSTANCE_CACHE / generator_fingerprint()[:20] / key.slug
    try:
        instance = load_instance(stem)
    except (InstanceFormatError, OSError):  # not there yet, damaged, unreadable: generated
        pass
    else:
        if instance.key == key and not instance.sealed:
            return instance
    instance = generate_instance(key, "")
    try:
        save_instance(instance, stem)
    except OSError:  # a read-only or full cache: the instance is still right, only not kept
        pass
    return instance


def cached_instance(key: InstanceKey, salt: SaltArgument = None) -> Instance:
    """:func:`stored_instance`, memoized in this process by the key and the salt's digest."""
    sealed = sealing_salt(key.split, salt)
    memo = (key, None if sealed is None else sealed.memo_key)
    return _GENERATED.get_or_compute(memo, lambda: stored_instance(key, sealed or ""))


def generate_split(family: str, split: str, count: int | None = None, d: int | None = None,
                   n: int | None = None, salt: SaltArgument = None, progress: bool = False,
                   graph_model: str | None = None) -> list[Instance]:
    """The first ``count`` instances of a split (default: all of ``SPLIT_SIZES[split]``; the
    ``train`` stream needs a count)."""
    if family not in _SOURCES:
        get_family(family)
    count = default_count(family, split, count)
    keys = [InstanceKey(family, split, i, d=d, n=n, graph_model=graph_model)
            for i in range(count)]
    iterator = progress_bar(keys, show=progress, desc=f"{family}/{split}", unit="inst",
                            leave=False)
    return [generate_instance(key, salt=salt) for key in iterator]


# ---- the store ----------------------------------------------------------------------------------

def _stem(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_suffix("") if path.suffix in (".npz", ".json") else path


def _with(stem: Path, suffix: str) -> Path:
    """``stem`` plus a suffix, keeping any dots already in the stem's name."""
    return stem.parent / (stem.name + suffix)


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=1, allow_nan=False) + "\n").encode()


def save_instance(instance: Instance, path: str | os.PathLike) -> Path:
    """Write ``<stem>.npz`` (the array X) and ``<stem>.json`` (key, hash, record); return stem.

    ``path`` may be the stem or either file name. Both files are written atomically.
    """
    stem = _stem(path)
    document = {
        "format_version": FORMAT_VERSION,
        "key": instance.key.to_dict(),
        "sealed": instance.sealed,
        "sha256": instance.sha256,
        "names": list(instance.names),
        "shape": list(instance.X.shape),
        "record": instance.record.to_dict(),
    }
    arrays = io.BytesIO()
    np.savez(arrays, X=np.asarray(instance.X))
    atomic_write_bytes(_with(stem, ".npz"), arrays.getvalue())
    atomic_write_bytes(_with(stem, ".json"), _json_bytes(document))
    return stem


def _read_json(path: Path, what: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except FileNotFoundError:
        raise InstanceFormatError(f"{what} not found: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InstanceFormatError(f"{what} {path} is truncated or not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise InstanceFormatError(f"{what} {path} is not a JSON object")
    version = document.get("format_version")
    if version != FORMAT_VERSION:
        raise InstanceFormatError(f"{what} {path} has format_version {version!r}; this code "
                                  f"reads version {FORMAT_VERSION} (regenerate the files)")
    return document


def load_instance(path: str | os.PathLike) -> Instance:
    """Read an instance written by :func:`save_instance`, verifying its SHA-256.

    Raises :class:`InstanceFormatError` on a missing, truncated or corrupt file, an unknown
    format version, or data whose hash does not match the record.
    """
    stem = _stem(path)
    document = _read_json(_with(stem, ".json"), "instance record")
    npz_path = _with(stem, ".npz")
    try:
        with np.load(npz_path, allow_pickle=False) as archive:
            X = archive["X"]
    except FileNotFoundError:
        raise InstanceFormatError(f"instance data not found: {npz_path}") from None
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise InstanceFormatError(f"instance data {npz_path} is truncated or corrupt "
                                  f"({type(exc).__name__}: {exc})") from None
    try:
        key = InstanceKey.from_dict(document["key"])
        record = HiddenRecord.from_dict(document["record"])
        names = tuple(str(n) for n in document["names"])
        expected_hash = str(document["sha256"])
        sealed = bool(document.get("sealed", False))
    except (KeyError, TypeError, HeuresisError) as exc:
        raise InstanceFormatError(f"instance record {stem}.json is malformed: {exc}") from None
    if X.dtype != np.float64 or X.ndim != 2 or list(X.shape) != [key.n, key.d]:
        raise InstanceFormatError(f"instance data {npz_path} has shape {X.shape} and dtype "
                                  f"{X.dtype}; the key says ({key.n}, {key.d}) float64")
    if record.dag is None or names != record.dag.names or len(names) != key.d:
        raise InstanceFormatError(f"instance record {stem}.json: column names do not match "
                                  "the record's graph")
    actual_hash = data_sha256(X)
    if actual_hash != expected_hash:
        raise InstanceFormatError(f"instance {stem}: SHA-256 of the data ({actual_hash[:16]}…) "
                                  f"does not match the record ({expected_hash[:16]}…); the "
                                  "files were modified or mixed up")
    return Instance(key=key, X=_frozen(X), names=names, sha256=actual_hash, record=record,
                    sealed=sealed)


def save_split(instances: Iterable[Instance], directory: str | os.PathLike) -> Path:
    """Save instances under ``directory`` (one JSON + NPZ pair each) and a manifest listing
    their keys, file stems and hashes; the manifest is written last."""
    directory = output_directory(directory, "split directory")
    entries = []
    for instance in instances:
        save_instance(instance, directory / instance.key.slug)
        entries.append({"key": instance.key.to_dict(), "file": instance.key.slug,
                        "sha256": instance.sha256, "sealed": instance.sealed})
    manifest = {"format_version": FORMAT_VERSION, "generator_version": GENERATOR_VERSION,
                "count": len(entries), "instances": entries}
    path = directory / MANIFEST_NAME
    atomic_write_bytes(path, _json_bytes(manifest))
    return path


def load_split(directory: str | os.PathLike) -> list[Instance]:
    """Load every instance listed in ``directory``'s manifest, in manifest order, checking
    each against the manifest's hash."""
    directory = Path(directory)
    manifest = _read_json(directory / MANIFEST_NAME, "split manifest")
    try:
        entries = list(manifest["instances"])
    except (KeyError, TypeError):
        raise InstanceFormatError(f"split manifest in {directory} has no instance list") from None
    instances = []
    for entry in entries:
        try:
            stem, expected_hash = directory / str(entry["file"]), str(entry["sha256"])
        except (KeyError, TypeError):
            raise InstanceFormatError(f"split manifest in {directory}: bad entry {entry!r}") \
                from None
        instance = load_instance(stem)
        if instance.sha256 != expected_hash:
            raise InstanceFormatError(f"{stem}: data hash differs from the split manifest's "
                                      "(the instance file was replaced)")
        instances.append(instance)
    return instances


def split_directory(root: str | os.PathLike, family: str, split: str) -> Path:
    """Where ``heuresis generate`` puts a split: ``<root>/<family>/<split>``."""
    return Path(root) / family / split


__all__: Sequence[str] = (
    "FORMAT_VERSION", "GENERATOR_VERSION", "MIN_SALT_BITS", "SPLIT_SIZES", "STREAM_SPLITS",
    "TEST_SALT_ENV",
    "TRAIN_SPLIT_SIZE", "Instance", "check_salt", "default_count",
    "InstanceKey", "InstanceSource", "available_sources",
    "get_source", "register_source", "split_size", "generate_instance", "generate_split",
    "instance_rngs", "key_seed_sequence", "salted_seed_sequence", "cached_instance",
    "stored_instance", "generator_fingerprint",
    "load_instance", "load_split", "save_instance", "save_split", "split_directory",
)
