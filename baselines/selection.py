"""BCA_φ: the reference algorithm with the best mean adjacency F1 on development instances."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def select_bca(dev_f1: Mapping[str, Sequence[float]]) -> str:
    """The algorithm with the highest mean F1 (a failed run counts as F1 = 0).

    Ties are broken by the order of ``dev_f1`` (the reference order), so selection is
    deterministic. Failures count as 0 so that an algorithm cannot win by failing on hard
    instances.
    """
    if not dev_f1:
        raise ValueError("no development results to select from")
    best, best_mean = None, -np.inf
    for name, values in dev_f1.items():
        arr = np.nan_to_num(np.asarray(values, dtype=float), nan=0.0)
        mean = float(arr.mean()) if arr.size else -np.inf
        if mean > best_mean + 1e-12:
            best, best_mean = name, mean
    return best
