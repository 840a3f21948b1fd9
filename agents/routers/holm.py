"""Holm's step-down correction, as the paper's router applies it to its re-tests.

The adjusted p-values are statsmodels' (``multipletests(method="holm")``; identical to the
formula below on every input we compared, ties included); this module adds the router's input
check and its rejection rule, adjusted p ≤ α.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agents.checks import check_probability
from heuresis_env.errors import HeuresisError

__all__ = ["holm_adjusted_p_values", "holm_rejections"]


def holm_adjusted_p_values(p_values: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values: p̃_(k) = max_{j ≤ k} min(1, (m − j + 1) p_(j)), in input order.

    Rejecting every hypothesis with p̃ ≤ α is Holm's step-down procedure at family-wise level α.
    """
    # statsmodels loads pandas: imported here, where the KCI branch's restore step needs it,
    # so that importing the routers stays light
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p_values, dtype=np.float64).ravel()
    if p.size and (not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1)):
        raise HeuresisError(f"p-values must lie in [0, 1], got {p.tolist()}")
    if p.size == 0:
        return p.copy()
    return multipletests(p, method="holm")[1]


def holm_rejections(p_values: Sequence[float], alpha: float = 0.05) -> np.ndarray:
    """Which hypotheses Holm's procedure rejects at family-wise level ``alpha`` (input order)."""
    alpha = check_probability("alpha", alpha)
    return holm_adjusted_p_values(p_values) <= alpha
