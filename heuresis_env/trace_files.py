"""The trace file format: one JSON-lines file per episode, written by the environment.

A trace holds a ``header`` record (everything needed to rebuild the environment and the
instance, except a secret test salt), one ``step`` record per action and an ``end`` record.
The environment writes traces (:mod:`heuresis_env.env.traces` decides what a step record
holds); replay, the studies and the reports read them with :func:`read_trace`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from heuresis_env.errors import HeuresisError, TraceFormatError
from heuresis_env.files import json_compact

TRACE_VERSION = 1




class TraceWriter:
    """Writes one episode's trace; each record is flushed as one line."""

    def __init__(self, path: str | os.PathLike, header: dict[str, Any]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO | None = open(self.path, "w", encoding="utf-8")  # noqa: SIM115
        self.write({"type": "header", "trace_version": TRACE_VERSION, **header})

    def write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            raise HeuresisError(f"the trace {self.path} is closed")
        self._file.write(json_compact(record) + "\n")
        self._file.flush()

    def close(self, end: dict[str, Any] | None = None) -> None:
        if self._file is None:
            return
        if end is not None:
            self.write({"type": "end", **end})
        self._file.close()
        self._file = None

    @property
    def closed(self) -> bool:
        return self._file is None


@dataclass
class Trace:
    """A parsed trace file."""

    path: Path
    header: dict[str, Any]
    steps: list[dict[str, Any]]
    end: dict[str, Any] | None


def read_trace(path: str | os.PathLike) -> Trace:
    """Parse a trace file; a missing header or a malformed line raises a clear error."""
    path = Path(path)
    if not path.is_file():
        raise TraceFormatError(f"no trace file at {path}")
    header, steps, end = None, [], None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TraceFormatError(f"{path}:{number}: not JSON ({exc.msg})") from None
            except RecursionError:
                raise TraceFormatError(f"{path}:{number}: its JSON nests too deeply to be "
                                       "a trace record") from None
            kind = record.get("type") if isinstance(record, dict) else None
            if kind == "header":
                header = record
            elif kind == "step":
                steps.append(record)
            elif kind == "end":
                end = record
            else:
                raise TraceFormatError(f"{path}:{number}: unknown record type {kind!r}")
    if header is None:
        raise TraceFormatError(f"{path} has no header record; it is not a Heuresis trace")
    if header.get("trace_version") != TRACE_VERSION:
        raise TraceFormatError(f"{path} is trace version {header.get('trace_version')!r}; "
                                  f"this code reads version {TRACE_VERSION}")
    return Trace(path, header, steps, end)
