"""Kernel CI tests for large n: a block-subsampled KCI, and ``kci-auto`` (exact KCI up to a
sample size, an approximation above it).

Exact KCI (:mod:`~heuresis_env.discovery.citests.kci`) keeps n × n matrices: at n = 10,000
one is 800 MB and a conditional test costs O(n³) — out of reach on a laptop. Two ways round
it are registered:

* :class:`BlockKCI` (``"kci-block"``): the rows are split (after one seeded permutation) into
  ⌈n / block_size⌉ blocks of nearly equal size; exact KCI runs on each block, and since the
  blocks are independent samples, their statistics, gamma-null means and variances add up
  to one gamma approximation. Cost: n · block_size² instead of n³, memory block_size².
* RCoT (``"rcot"``, :mod:`~heuresis_env.discovery.citests.rcit`): random Fourier features,
  O(n) per test.

:class:`KCIAuto` (``"kci-auto"``) runs exact KCI when n ≤ ``threshold`` (default
:data:`AUTO_THRESHOLD`) and :data:`LARGE_N_TEST` above it — the choice made by
``benchmarks/bench_large_n.py`` (docs/performance.md, "Large n: an approximate kernel
test"). Below the threshold it *is* a KCI test (it delegates to a :class:`KCI` built with the
same parameters: same p-values, same disk-cache file); every result says which test ran
(``CIResult.method`` is ``"kci"`` or the approximation's name, as is :attr:`KCIAuto.method`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np

from heuresis_env.discovery.citests.base import CIResult, CITest, make_ci_test
from heuresis_env.discovery.citests.kci import KCI, _validated_settings, gamma_p_value
from heuresis_env.errors import HeuresisError

#: kci-auto runs exact KCI up to this many rows (inclusive) and the approximation above
AUTO_THRESHOLD = 2000
#: the approximation kci-auto runs above the threshold (chosen by benchmarks/bench_large_n.py)
LARGE_N_TEST = "rcot"
#: rows per block of kci-block (exact KCI costs ≈ 0.1 s per conditional test at n = 1,000)
DEFAULT_BLOCK_SIZE = 1000
#: bump when the numbers a BlockKCI computes change, so stale disk-cache entries are ignored
IMPLEMENTATION_VERSION = 1


def _nonnegative_int(test: str, name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise HeuresisError(f"{test} {name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


class BlockKCI(CITest):
    """KCI on disjoint blocks of rows, combined: Σ statistics against the gamma law with
    Σ means and Σ variances (the blocks are independent, so moments add).

    Parameters: ``block_size`` (rows per block, ≥ 50, default 1000; the number of blocks is
    ⌈n / block_size⌉ and their sizes differ by at most one), ``seed`` (int ≥ 0, default 0:
    the one row permutation that assigns rows to blocks, shared by every test so that the
    blocks' kernel caches are reused), and KCI's own parameters (``est_width``,
    ``width_scale``…, applied within each block: the empirical widths follow the block size;
    ``memory_mb`` is the budget of all blocks together).
    """

    name: ClassVar[str] = "kci-block"
    disk_cache_default: ClassVar[bool] = True
    seeded: ClassVar[bool] = True

    def __init__(self, data: np.ndarray, *, disk_cache: bool | None = None, **params: Any):
        block_size = _nonnegative_int(self.name, "block_size",
                                      params.pop("block_size", DEFAULT_BLOCK_SIZE), 50)
        seed = _nonnegative_int(self.name, "seed", params.pop("seed", 0), 0)
        kci_settings = _validated_settings(params)  # KCI's checks and defaults
        memory_mb = kci_settings.pop("memory_mb")
        super().__init__(data, disk_cache=disk_cache, block_size=block_size, seed=seed,
                         **kci_settings)
        order = np.random.default_rng(seed).permutation(self.n)
        count = math.ceil(self.n / block_size)
        self.blocks: list[np.ndarray] = [np.sort(rows) for rows in np.array_split(order, count)]
        self._kci_params = {**params, "memory_mb": memory_mb / count}
        self._block_tests: list[KCI] | None = None

    def cache_params(self) -> dict[str, Any]:
        return {**self.params, "implementation": IMPLEMENTATION_VERSION}

    def block_tests(self) -> list[KCI]:
        """One exact KCI per block (built on first use)."""
        if self._block_tests is None:
            self._block_tests = [KCI(self.data[rows], disk_cache=False, **self._kci_params)
                                 for rows in self.blocks]
        return self._block_tests

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        statistic = mean = variance = 0.0
        for block in self.block_tests():
            block_statistic, block_mean, block_variance = block.moments(x, y, s)
            statistic += block_statistic
            mean += block_mean
            variance += block_variance
        return statistic, gamma_p_value(statistic, mean, variance)


class KCIAuto(CITest):
    """Exact KCI when n ≤ ``threshold``, :data:`LARGE_N_TEST` above it.

    Parameters: ``threshold`` (int ≥ 1, default :data:`AUTO_THRESHOLD`), ``seed`` (int ≥ 0,
    default 0: the approximation's seed; unused by exact KCI), and KCI's parameters, which
    apply to exact KCI only: above the threshold any but ``memory_mb`` is an error (the
    approximation has its own kernel widths). ``disk_cache`` is passed to the test that runs,
    so below the threshold results share exact KCI's cache entries.

    The object answers through the test that runs (:attr:`delegate`): its results, its
    caches and its counters; ``CIResult.method`` names that test.
    """

    name: ClassVar[str] = "kci-auto"
    seeded: ClassVar[bool] = True

    def __init__(self, data: np.ndarray, *, disk_cache: bool | None = None, **params: Any):
        threshold = _nonnegative_int(self.name, "threshold",
                                     params.pop("threshold", AUTO_THRESHOLD), 1)
        seed = _nonnegative_int(self.name, "seed", params.pop("seed", 0), 0)
        kci_params = params
        _validated_settings(dict(kci_params))  # unknown or unsupported names fail here
        super().__init__(data, disk_cache=False, threshold=threshold, seed=seed, **kci_params)
        self.delegate: CITest
        if self.n <= threshold:
            self.delegate = make_ci_test("kci", self.data, disk_cache=disk_cache, **kci_params)
        else:
            ignored = sorted(set(kci_params) - {"memory_mb"})
            if ignored:
                raise HeuresisError(
                    f"kci-auto: the KCI parameter(s) {ignored} do not apply at n = {self.n} > "
                    f"threshold = {threshold}, where {LARGE_N_TEST} runs; drop them, or raise "
                    "the threshold to run exact KCI")
            self.delegate = make_ci_test(LARGE_N_TEST, self.data, disk_cache=disk_cache,
                                         seed=seed)
        self._memory = self.delegate._memory  # results() and n_cached read the delegate's

    @property
    def method(self) -> str:
        return self.delegate.name

    @property
    def n_computed(self) -> int:
        delegate = self.__dict__.get("delegate")
        return 0 if delegate is None else delegate.n_computed

    @n_computed.setter
    def n_computed(self, value: int) -> None:
        if value != 0:  # only the base class's initialisation sets it
            raise HeuresisError("kci-auto counts the tests of the test it delegates to")

    def test(self, x: int, y: int, conditioning_set: Iterable[int] = ()) -> CIResult:
        return self.delegate.test(x, y, conditioning_set)

    __call__ = test

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        result = self.delegate.test(x, y, s)
        return result.statistic, result.p_value

