"""Exception classes shared across Heuresis; each message names the problem and the fix."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


class HeuresisError(ValueError):
    """Base class of every error Heuresis raises for bad input."""


class UnknownNameError(HeuresisError, KeyError):
    """A name (family, algorithm, CI test, tool, column) that is not registered.

    The message lists the known names and the closest matches, in the manner of
    Gymnasium's registration errors.
    """

    def __init__(self, kind: str, name: object, known: Iterable[str]):
        self.kind = kind
        self.name = name
        self.known = sorted(str(k) for k in known)
        close = difflib.get_close_matches(str(name), self.known, n=3)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        plural = kind[:-1] + "ies" if kind.endswith("y") and kind[-2:-1] not in "aeiou" else kind + "s"
        message = f"unknown {kind} {name!r}.{hint} Known {plural}: {', '.join(self.known)}."
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its own arguments, so it crosses a process boundary (a worker's error)
        # with its type, kind, name and known names
        return (type(self), (self.kind, self.name, self.known))


class InstanceFormatError(HeuresisError):
    """A saved instance or split that cannot be read: unknown format, truncated, or tampered."""


class RunFormatError(HeuresisError):
    """A run directory that cannot be read or resumed: no config, unknown format, mixed runs."""


class TraceFormatError(HeuresisError):
    """An episode trace that cannot be read: not JSON lines, no header, unknown version."""


class DataError(HeuresisError):
    """Data unfit for an analysis: NaN, a constant column, too few rows."""
