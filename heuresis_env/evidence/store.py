"""The evidence store: each bundle computed once per instance and kept on disk for every process.

An entry is keyed by the instance's data hash, what was computed, its parameters,
:data:`EVIDENCE_VERSION` (bump it whenever a computation changes) and the algorithms' cache
version (evidence reads the reference algorithms' outputs). A file lock per entry makes
concurrent processes (vector environments, worker pools) compute each entry once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from heuresis_env.cache import MemoCache, ResultCache, stable_hash
from heuresis_env.discovery.algorithms import ALGORITHM_CACHE_VERSION

#: bump when any computation of this package changes, so stale cache entries are not reused
EVIDENCE_VERSION = 2  # 2: the guided start uses PC's causal-learn orientation (issue 13)

_MEMORY: MemoCache[Any] = MemoCache(512)
#: other in-memory memos of this package, forgotten with :func:`clear_memory`
_OTHER_MEMORIES: list[MemoCache] = []


def cached_evidence(sha256: str, what: str, params: dict[str, Any],
                    compute: Callable[[], Any]) -> Any:
    """Return the cached value of (instance, what, params) or compute and store it once.

    Checked in order: this process's memory, the disk cache, then ``compute`` under a file
    lock (a second process waiting on the lock finds the first one's result on disk).
    """
    memory_key, key = _keys(sha256, what, params)
    value = _MEMORY.get(memory_key)
    if value is not None:
        return value
    value = ResultCache("evidence").get_or_compute(key, compute)
    return _MEMORY.set(memory_key, value)


def stored_evidence(sha256: str, what: str, params: dict[str, Any]) -> Any:
    """The cached value of (instance, what, params) if this process or the disk cache holds
    it, else None; never computes (a lazy reader uses a whole bundle computed earlier)."""
    memory_key, key = _keys(sha256, what, params)
    value = _MEMORY.get(memory_key)
    if value is not None:
        return value
    value = ResultCache("evidence").get(key)
    return None if value is None else _MEMORY.set(memory_key, value)


def _keys(sha256: str, what: str, params: dict[str, Any]) -> tuple[tuple, str]:
    """The in-memory key and the disk key of one entry."""
    return ((sha256, what, repr(sorted(params.items()))),
            stable_hash({"sha256": sha256, "what": what, "params": params,
                         "version": EVIDENCE_VERSION, "algorithms": ALGORITHM_CACHE_VERSION}))


def clear_memory() -> None:
    """Forget this process's in-memory copies (the disk cache stays)."""
    _MEMORY.clear()
    for memory in _OTHER_MEMORIES:
        memory.clear()


def forget_with_memory(memory: MemoCache) -> MemoCache:
    """Register an in-memory memo that :func:`clear_memory` also clears; returns it."""
    _OTHER_MEMORIES.append(memory)
    return memory
