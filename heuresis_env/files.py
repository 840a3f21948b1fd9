"""Files and records on disk: strict-JSON values, atomic writes, and output folders.

Every file Heuresis writes whole (instances, run configs, cache entries, reports) goes through
:func:`atomic_write_bytes`, so a killed process leaves the old file or the new one, never a
torn one; every JSON record goes through :func:`json_safe`, so non-finite floats stay strict
JSON.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError

_PLAIN = frozenset({str, int, bool, type(None)})  # returned as they are (exact types only)


def json_safe(value: Any, *, null_non_finite: bool = False) -> Any:
    """A value with non-finite floats as strings (``"nan"``, ``"inf"``), so ``json.dumps``
    output is strict JSON — or, with ``null_non_finite``, as ``None`` (JSON's ``null``), for
    a protocol whose readers expect a number or null (MCP's structured content)."""
    kind = type(value)
    if kind in _PLAIN:  # the common leaves first: a set lookup instead of five isinstance calls
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return None if null_non_finite else str(value)
    if kind is float:
        return value
    if isinstance(value, dict):
        return {str(k): json_safe(v, null_non_finite=null_non_finite) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, null_non_finite=null_non_finite) for v in value]
    if isinstance(value, np.generic):
        return json_safe(value.item(), null_non_finite=null_non_finite)
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist(), null_non_finite=null_non_finite)
    return value


_ENCODE_STRING = json.encoder.encode_basestring_ascii
_CONSTANTS = {True: "true", False: "false", None: "null"}


class _Unusual(Exception):
    """A value :func:`json_indented` leaves to the standard library."""


class _Bound:
    """Where :func:`_write_indented` stops: at ``limit`` characters, counted only every few
    hundred tokens (a count per token would cost more than the writing it saves)."""

    EVERY = 256

    def __init__(self, limit: int):
        self.limit = limit
        self.tokens = self.EVERY  # the output's length in tokens at the next count

    def check(self, out: list[str]) -> None:
        if sum(map(len, out)) > self.limit:
            raise _Full
        self.tokens = len(out) + self.EVERY


class _Full(Exception):
    """The bounded writer has its characters."""


def _write_indented(value: Any, out: list[str], newline: str, step: str,
                    bound: _Bound | None = None) -> None:
    """Append ``value`` as ``json.dumps(json_safe(value), indent=…)`` writes it after
    ``newline`` (a newline and the current indentation); raise :class:`_Unusual` for anything
    but dicts with str keys, lists, tuples, NumPy values and plain leaves, and :class:`_Full`
    once ``bound`` has its characters."""
    kind = type(value)
    if kind is str:
        out.append(_ENCODE_STRING(value))
    elif kind is int:
        out.append(int.__repr__(value))
    elif kind is float:  # a non-finite float as json_safe writes it: a string
        out.append(float.__repr__(value) if math.isfinite(value)
                   else _ENCODE_STRING(str(value)))
    elif kind is bool or value is None:
        out.append(_CONSTANTS[value])
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = newline + step
        separator = "{" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _Unusual
            out.append(separator)
            out.append(_ENCODE_STRING(key))
            out.append(": ")
            _write_indented(item, out, inner, step, bound)
            separator = "," + inner
            if bound is not None and len(out) > bound.tokens:
                bound.check(out)
        out.append(newline + "}")
    elif kind is list or kind is tuple:
        if not value:
            out.append("[]")
            return
        inner = newline + step
        separator = "[" + inner
        for item in value:
            out.append(separator)
            _write_indented(item, out, inner, step, bound)
            separator = "," + inner
            if bound is not None and len(out) > bound.tokens:
                bound.check(out)
        out.append(newline + "]")
    elif isinstance(value, np.generic):
        _write_indented(value.item(), out, newline, step, bound)
    elif isinstance(value, np.ndarray):
        _write_indented(value.tolist(), out, newline, step, bound)
    else:
        raise _Unusual


def json_indented_head(value: Any, limit: int, indent: int = 1) -> tuple[str, bool]:
    """The first ``limit`` characters of :func:`json_indented` ``(value, indent)`` and whether
    that is the whole text, writing little more than those characters: a viewer showing the
    head of a large ledger does not indent all of it."""
    out: list[str] = []
    try:
        _write_indented(value, out, "\n", " " * indent, _Bound(limit))
    except _Full:
        return "".join(out)[:limit], False
    except _Unusual:
        text = json.dumps(json_safe(value), indent=indent)
        return text[:limit], len(text) <= limit
    text = "".join(out)
    return text[:limit], len(text) <= limit


def json_indented(value: Any, indent: int = 1) -> str:
    """``json.dumps(json_safe(value), indent=indent)``, the same text, two to three times
    faster: the standard library indents with its generic pure-Python encoder, a generator
    step and a chain of type checks per token, after :func:`json_safe` copied the value; here
    one recursive writer does both, with exact type dispatch and the C string encoder.
    Anything unusual (a subclass, a non-str key, an object) takes the standard library's
    path."""
    out: list[str] = []
    try:
        _write_indented(value, out, "\n", " " * indent)
    except _Unusual:
        return json.dumps(json_safe(value), indent=indent)
    return "".join(out)


def json_compact(value: Any, *, ensure_ascii: bool = True,
                 default: Callable[[Any], Any] | None = None) -> str:
    """``json.dumps(json_safe(value), separators=(",", ":"))`` without walking ``value`` in
    Python first: the C encoder writes it directly (NumPy values converted as they come), and
    only a value holding a non-finite float — which strict JSON cannot hold — or a key the
    encoder refuses takes :func:`json_safe`'s path. The text is the same, except for dict keys
    that are not strings: ``json_safe`` writes ``str(key)`` (``True`` as ``"True"``, and an
    int key merged with the equal string key), the fast path writes what ``json.dumps`` does
    (``"true"``, both keys kept). ``default`` is called, after the NumPy conversions, for any
    other object (``json.dumps``' own ``default``); without it such an object is a
    ``TypeError``."""
    def fallback(item: Any) -> Any:  # NumPy values as json_safe converts them
        if isinstance(item, np.generic):
            return item.item()
        if isinstance(item, np.ndarray):
            return item.tolist()
        if default is None:
            raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")
        return default(item)

    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=ensure_ascii,
                          allow_nan=False, default=fallback)
    except (ValueError, TypeError):  # a non-finite float, which json_safe spells as a
        pass  # string; a key json.dumps refuses (a tuple), which json_safe makes str(key)
    return json.dumps(json_safe(value), separators=(",", ":"), ensure_ascii=ensure_ascii,
                      allow_nan=False, default=default)


def json_line(record: Mapping[str, Any]) -> bytes:
    """One record as a strict-JSON line (non-finite floats as strings)."""
    return (json_compact(dict(record)) + "\n").encode("utf-8")


def _file_mode() -> int:
    """The mode a new file gets from ``open``: 0o666 less the process's umask."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_bytes(path: str | os.PathLike, payload: bytes, *, durable: bool = False,
                       mode: int | None = None) -> None:
    """Write ``payload`` to ``path`` through a temporary file and a rename.

    ``durable`` also syncs the file to disk before the rename (for records a crash must not
    lose, such as a run's configuration). The file gets ``mode``, or else the mode ``open``
    would give it (the user's umask), not the private mode of a temporary file; a missing
    folder is made with ``mode``'s owner bits as its own when ``mode`` is given.
    """
    path = Path(path)
    try:  # the folder is there but the first time: no mkdir call per file
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        if mode is not None:  # a private file gets a private folder, whatever the umask
            os.chmod(path.parent, 0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, _file_mode() if mode is None else mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def output_directory(path: str | os.PathLike, what: str = "output directory") -> Path:
    """Create ``path`` (and its parents) as a directory to write into, or raise a
    :class:`HeuresisError` that names the problem: a file in the way, a read-only or
    special file system, no permission. Every command that writes a folder starts here."""
    path = Path(path)
    blocker = next((p for p in [path, *path.parents] if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        where = "is" if blocker == path else f"lies under {blocker}, which is"
        raise HeuresisError(f"the {what} {path} {where} a file, not a directory; give a "
                            "directory path")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HeuresisError(f"cannot create the {what} {path}: {exc.strerror or exc}"
                            ) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise HeuresisError(f"cannot write into the {what} {path}: permission denied")
    return path
