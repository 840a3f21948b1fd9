"""A data table's identity and fitness: its hash, and the checks every analysis runs first.

The hash identifies an instance everywhere (caches, traces, seeds); the check turns data unfit
for an analysis into a :class:`~heuresis_env.errors.DataError` that names the columns.
"""

from __future__ import annotations

import hashlib

import numpy as np

from heuresis_env.errors import DataError


def data_sha256(data: np.ndarray) -> str:
    """SHA-256 of a matrix as C-contiguous float64 bytes (the instance hash uses the same)."""
    return hashlib.sha256(np.ascontiguousarray(data, dtype=np.float64).tobytes()).hexdigest()


def validate_data(data: np.ndarray, min_rows: int = 5) -> np.ndarray:
    """Check a data matrix (2-D, finite, enough rows, no constant column) and return float64."""
    x = np.asarray(data, dtype=np.float64)
    if x.ndim != 2:
        raise DataError(f"data must be a 2-D array (rows × columns), got shape {x.shape}")
    if x.shape[0] < min_rows:
        raise DataError(f"data has {x.shape[0]} rows; at least {min_rows} are needed")
    bad = ~np.isfinite(x)
    if bad.any():
        cols = sorted({int(c) for c in np.nonzero(bad)[1]})
        raise DataError(f"data has NaN or infinite values in column(s) {cols}")
    const = np.nonzero(np.ptp(x, axis=0) == 0)[0]
    if const.size:
        raise DataError(f"column(s) {const.tolist()} are constant; a CI test needs variation")
    return x
