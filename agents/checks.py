"""Argument checks shared by the routers and the RL training: a bad option is refused with an
error that names it and says what it must be."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

from heuresis_env.errors import HeuresisError, UnknownNameError

__all__ = ["check_choice", "check_int", "check_probability", "check_real"]


def check_probability(name: str, value: Any, *, open_low: bool = True,
                      open_high: bool = True) -> float:
    """``value`` as a float in (0, 1), with either end closed on request."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise HeuresisError(f"{name} must be a number, got {value!r}")
    low_ok = value > 0 if open_low else value >= 0
    high_ok = value < 1 if open_high else value <= 1
    if not (low_ok and high_ok):
        interval = f"{'(' if open_low else '['}0, 1{')' if open_high else ']'}"
        raise HeuresisError(f"{name} must be in {interval}, got {value!r}")
    return float(value)


def check_int(name: str, value: Any, low: int = 1) -> int:
    """``value`` as an int ≥ ``low`` (booleans refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise HeuresisError(f"{name} must be an integer ≥ {low}, got {value!r}")
    return int(value)


def check_real(name: str, value: Any) -> float:
    """``value`` as a finite float (booleans refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise HeuresisError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_choice(kind: str, value: str, choices: Sequence[str]) -> None:
    """Refuse a name outside ``choices``, listing them."""
    if value not in choices:
        raise UnknownNameError(kind, value, choices)
