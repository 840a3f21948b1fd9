"""On-disk caches shared across processes: a key-value store of results in a data-only format
(:mod:`heuresis_env.safe_data`: JSON and NumPy arrays, never pickle, so a planted entry cannot
run code in the process that reads it) and an append-only JSON-lines store of small records
(CI test results).

The root is ``$HEURESIS_CACHE_DIR`` or ``~/.cache/heuresis``. Writes are atomic (temporary
file + rename, or one ``write`` of a whole line under a file lock), so a killed process never
leaves a half-written entry that a later reader would trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Generic, TypeVar

from filelock import FileLock

from heuresis_env import safe_data
from heuresis_env.errors import HeuresisError

V = TypeVar("V")


def cache_root() -> Path:
    """The cache directory (created on first use), as an absolute path. ``$HEURESIS_CACHE_DIR``
    must name a folder of its own: the file system's root, the working folder and the home
    folder are refused (the policies' caches live beside it, and policy processes have it
    hidden from them)."""
    given = os.environ.get("HEURESIS_CACHE_DIR")
    root = Path(given if given else Path.home() / ".cache" / "heuresis").expanduser()
    resolved = Path(os.path.abspath(root))
    refused = {Path(resolved.anchor): "the file system's root", Path.cwd(): "the working folder",
               Path.home(): "the home folder"}
    for path, what in refused.items():
        if resolved == path:
            raise HeuresisError(f"HEURESIS_CACHE_DIR={given!r} names {what}; point it at a "
                                "folder of its own, e.g. ~/.cache/heuresis")
    resolved.mkdir(parents=True, exist_ok=True)
    return resolved


def cache_disabled() -> bool:
    return os.environ.get("HEURESIS_NO_CACHE", "") not in ("", "0")


def stable_hash(obj: Any) -> str:
    """SHA-256 of a JSON-serializable object, keys sorted: the same on every machine."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class MemoCache(Generic[V]):
    """This process's most recent results, bounded: least recently used entries leave first.

    The one in-memory memo of the package (instances, evidence bundles, algorithm outputs,
    the CI tests' kernel matrices); the disk caches below hold what outlives a process.
    Bounded by a number of entries and, when ``max_bytes`` is given, by the sizes passed to
    :meth:`set` (a value larger than the whole budget is returned but not kept).
    """

    def __init__(self, max_entries: int, max_bytes: int | None = None):
        if max_entries < 1:
            raise ValueError(f"max_entries must be ≥ 1, got {max_entries}")
        if max_bytes is not None and max_bytes < 0:
            raise ValueError(f"max_bytes must be ≥ 0, got {max_bytes}")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0

    def get(self, key: Hashable) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def set(self, key: Hashable, value: V, nbytes: int = 0) -> V:
        if self.max_bytes is not None and nbytes > self.max_bytes:
            return value
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        self._entries[key] = (value, nbytes)
        self._bytes += nbytes
        while len(self._entries) > self.max_entries or (
                self.max_bytes is not None and self._bytes > self.max_bytes):
            _, (_, size) = self._entries.popitem(last=False)
            self._bytes -= size
        return value

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The memoized value of ``key``, computing and keeping it on a miss."""
        value = self.get(key)
        return value if value is not None else self.set(key, compute())

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)


class ResultCache:
    """Values under ``<root>/<namespace>/<key[:2]>/<key>.npz`` (:mod:`heuresis_env.safe_data`);
    a value that format cannot hold is computed again each time, never stored. Each policy
    process has its own root (``…-policies/<policy>``)."""

    def __init__(self, namespace: str, root: Path | None = None):
        self.directory = (root or cache_root()) / namespace
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.npz"

    def get(self, key: str, default: Any = None) -> Any:
        if cache_disabled():
            return default
        path = self._path(key)
        try:
            payload = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return default  # none, or another user's: computed again
        try:
            return safe_data.loads(payload)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            try:
                path.unlink(missing_ok=True)  # stale, corrupt or foreign entry: recompute
            except OSError:
                pass
            return default

    def set(self, key: str, value: Any) -> None:
        if cache_disabled():
            return
        try:
            payload = safe_data.dumps(value)
        except safe_data.UnsupportedValue:
            return  # not data this format holds: computed again next time
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_or_compute(self, key: str, compute: Callable[[], Any]) -> Any:
        """The stored value of ``key``, else ``compute()`` stored once (None is not stored): a
        file lock per key makes a second process wait and read the first one's result."""
        value = self.get(key)
        if value is not None:
            return value
        if cache_disabled():
            return compute()
        lock_dir = self.directory / "locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        with FileLock(str(lock_dir / f"{key}.lock")):
            value = self.get(key)
            if value is None:
                value = compute()
                if value is not None:
                    self.set(key, value)
        return value


class RecordLog:
    """Append-only JSON lines ``{"k": key, "v": value}``; the last value of a key wins.

    Used where many small results accumulate per dataset (CI tests): one file per dataset,
    read once, appended a whole line per ``write`` call on a descriptor opened with
    ``O_APPEND``. The kernel places each such write at the end of the file and does not
    interleave it with another process's (on a local file system), so concurrent writers
    need no lock; a line cut short by a killed writer is skipped when the log is read. (A
    file lock per record cost ≈ 0.5 ms, more than a kernel-based CI test at n = 200.)
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def load(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if cache_disabled() or not self.path.exists():
            return out
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # a torn last line from a killed writer
                try:
                    rec = json.loads(line)
                    out[rec["k"]] = rec["v"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue
        return out

    def append(self, key: str, value: Any) -> None:
        if cache_disabled():
            return
        line = (json.dumps({"k": key, "v": value}, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            written = os.write(fd, line)
        finally:
            os.close(fd)
        if written != len(line):  # a full disk: the partial line is skipped when read
            raise OSError(f"appended {written} of {len(line)} bytes to {self.path}")
