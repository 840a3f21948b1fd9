"""The CI-test interface: x ⟂ y | S on one dataset, returning a statistic and a p-value.

A :class:`CITest` is bound to one data matrix. Results are cached in memory under an
order-independent key (``{x, y}`` unordered, ``S`` as a sorted tuple) and, for tests that
opt in (``disk_cache=True``), on disk under the data's SHA-256 so that other processes and
later runs reuse them.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar, NamedTuple

import numpy as np

from heuresis_env.cache import RecordLog, cache_root, stable_hash
from heuresis_env.data import data_sha256, validate_data
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError

#: conditioning tuple as given → sorted tuple of distinct ints (validated once, shared)
_NORMALIZED_SETS: dict[tuple, tuple[int, ...]] = {}
_MAX_NORMALIZED_SETS = 1_000_000
#: builds a CIResult without NamedTuple's keyword-handling ``__new__`` (hot path)
_new_tuple = tuple.__new__


class CIResult(NamedTuple):
    """One test's outcome. ``conditioning_set`` is sorted; ``x < y``.

    A named tuple rather than a dataclass: PC builds one per test and Fisher-z tests cost
    microseconds, so construction cost matters.
    """

    x: int
    y: int
    conditioning_set: tuple[int, ...]
    statistic: float
    p_value: float
    method: str

    def independent(self, alpha: float) -> bool:
        """The test's decision at level ``alpha``: independence is not rejected (p > α)."""
        return self.p_value > alpha


def sample_matrix(values: np.ndarray, label: str, *, allow_constant: bool = False) -> np.ndarray:
    """One sample (a vector or an n × k matrix) as a finite float64 (n, k) matrix; a constant
    column is an error unless ``allow_constant`` (for statistics defined there, e.g. dCor = 0)."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise DataError(f"{label} must be a vector or an n × k matrix, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise DataError(f"{label} has NaN or infinite values")
    if not allow_constant and np.any(np.ptp(array, axis=0) == 0):
        raise DataError(f"{label} is constant; dependence cannot be measured")
    return array


class CITest(ABC):
    """Base class: subclasses set ``name`` and implement :meth:`_compute`.

    Parameters beyond the data are keyword arguments stored in ``self.params`` (they enter
    the disk-cache key). Randomized tests take an integer ``seed`` (or turn an ``rng`` into
    one themselves) and derive each call's generator from (seed, x, y, S), so a result does
    not depend on call order and stays cacheable.
    """

    name: ClassVar[str] = "abstract"
    #: whether results are also kept on disk (worth it only for slow tests)
    disk_cache_default: ClassVar[bool] = False
    #: whether the test takes a ``seed`` (the toolbox seeds such tests per instance)
    seeded: ClassVar[bool] = False

    def __init__(self, data: np.ndarray, *, disk_cache: bool | None = None, **params: Any):
        self.data = validate_data(data)
        self.n, self.d = self.data.shape
        self.params: dict[str, Any] = params
        self._memory: dict[tuple, CIResult] = {}
        self.n_computed = 0  # tests actually computed (not served from a cache)
        self._data_hash: str | None = None
        use_disk = self.disk_cache_default if disk_cache is None else disk_cache
        self._disk: RecordLog | None = None
        self._disk_entries: dict[str, Any] = {}
        if use_disk:
            key = stable_hash({"test": self.name, "params": self.cache_params()})[:16]
            self._disk = RecordLog(cache_root() / "ci" / self.data_hash / f"{self.name}-{key}.jsonl")
            self._disk_entries = self._disk.load()

    @property
    def method(self) -> str:
        """The name of the test that computes the results (``CIResult.method``): ``name``,
        except for a test that delegates (``kci-auto``)."""
        return self.name

    @property
    def data_hash(self) -> str:
        if self._data_hash is None:
            self._data_hash = data_sha256(self.data)
        return self._data_hash

    def cache_params(self) -> dict[str, Any]:
        """The parameters that change a result (default: all of ``self.params``)."""
        return self.params

    def _normalize(self, x: int, y: int,
                   conditioning_set: Iterable[int]) -> tuple[int, int, tuple[int, ...]]:
        s = tuple(sorted(set(conditioning_set))) if conditioning_set else ()
        if type(x) is not int or type(y) is not int or any(type(v) is not int for v in s):
            try:  # NumPy integers, strings of digits…: convert once, off the fast path
                x, y = int(x), int(y)
                s = tuple(sorted({int(v) for v in s}))
            except (TypeError, ValueError) as exc:
                raise HeuresisError(f"variables must be column indices: {exc}") from None
        d = self.d
        if not (0 <= x < d and 0 <= y < d and (not s or (s[0] >= 0 and s[-1] < d))):
            bad = [v for v in (x, y, *s) if not 0 <= v < d]
            raise HeuresisError(f"column index {bad[0]} out of range 0..{d - 1}")
        if x == y:
            raise HeuresisError(f"x and y must differ (both are {x})")
        if x in s or y in s:
            raise HeuresisError(f"the conditioning set {list(s)} contains x={x} or y={y}")
        return (x, y, s) if x < y else (y, x, s)

    def test(self, x: int, y: int, conditioning_set: Iterable[int] = ()) -> CIResult:
        """Test x ⟂ y | conditioning_set (column indices); symmetric in x and y."""
        # Fast path for the common call (Python ints, a conditioning tuple seen before): turning
        # a tuple into a sorted tuple of distinct ints does not depend on the data, so it is
        # memoized once per process; only the range checks remain per call.
        s = _NORMALIZED_SETS.get(conditioning_set) if type(conditioning_set) is tuple else None
        d = self.d
        if (s is not None and type(x) is int and type(y) is int and x != y
                and 0 <= x < d and 0 <= y < d and (not s or (s[0] >= 0 and s[-1] < d))
                and x not in s and y not in s):
            key = (x, y, s) if x < y else (y, x, s)
        else:
            key = self._normalize(x, y, conditioning_set)
            if type(conditioning_set) is tuple and len(_NORMALIZED_SETS) < _MAX_NORMALIZED_SETS:
                _NORMALIZED_SETS[conditioning_set] = key[2]
        memory = self._memory
        hit = memory.get(key)
        if hit is not None:
            return hit
        if self._disk is None:  # the common path, kept short: Fisher-z tests cost ~1 µs
            stat, p = self._compute(*key)
            self.n_computed += 1
            result = memory[key] = _new_tuple(CIResult, (
                *key, float(stat), 0.0 if p < 0.0 else (1.0 if p > 1.0 else float(p)), self.name))
            return result
        disk_key = None
        cached = None
        if self._disk is not None:
            disk_key = f"{key[0]},{key[1]}|{','.join(map(str, key[2]))}"
            cached = self._disk_entries.get(disk_key)
        if cached is not None:
            stat, p = cached
        else:
            stat, p = self._compute(*key)
            p = 0.0 if p < 0.0 else (1.0 if p > 1.0 else float(p))
            stat = float(stat)
            self.n_computed += 1
            if disk_key is not None:
                self._disk.append(disk_key, [stat, p])
                self._disk_entries[disk_key] = [stat, p]
        result = CIResult(key[0], key[1], key[2], stat, p, self.name)
        self._memory[key] = result
        return result

    __call__ = test

    def p_value(self, x: int, y: int, conditioning_set: Iterable[int] = ()) -> float:
        return self.test(x, y, conditioning_set).p_value

    def results(self) -> list[CIResult]:
        """Every result this test object has answered (or read back from its disk cache) in
        this process, in the order first asked."""
        return list(self._memory.values())

    @property
    def n_cached(self) -> int:
        return len(self._memory)

    @abstractmethod
    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        """Return (statistic, p-value) for x ⟂ y | s; x < y, s sorted, all validated."""


#: name → "module:Class" (imported lazily) or a CITest subclass
CI_TESTS: dict[str, str | type[CITest]] = {
    "fisherz": "heuresis_env.discovery.citests.fisherz:FisherZ",
    "kci": "heuresis_env.discovery.citests.kci:KCI",
    "rcit": "heuresis_env.discovery.citests.rcit:RCIT",
    "rcot": "heuresis_env.discovery.citests.rcit:RCoT",
    "kci-block": "heuresis_env.discovery.citests.large_n:BlockKCI",
    "kci-auto": "heuresis_env.discovery.citests.large_n:KCIAuto",
    "dcor": "heuresis_env.discovery.citests.dcor:DistanceCorrelation",
    "gcm": "heuresis_env.discovery.citests.gcm:GCM",
    "dsep": "heuresis_env.discovery.citests.dseparation:DSeparation",
}


def register_ci_test(name: str, cls: str | type[CITest]) -> None:
    """Add a CI test under ``name`` (a class or a ``"module:Class"`` path)."""
    CI_TESTS[name] = cls


def available_ci_tests() -> list[str]:
    return sorted(CI_TESTS)


def ci_test_class(name: str) -> type[CITest]:
    try:
        entry = CI_TESTS[name]
    except KeyError:
        raise UnknownNameError("CI test", name, CI_TESTS) from None
    if isinstance(entry, str):
        module, attr = entry.split(":")
        entry = getattr(importlib.import_module(module), attr)
        CI_TESTS[name] = entry
    return entry


def make_ci_test(name: str, data: np.ndarray, **params: Any) -> CITest:
    """Build the CI test ``name`` bound to ``data`` (``n × d``)."""
    return ci_test_class(name)(data, **params)
