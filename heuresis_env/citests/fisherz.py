"""Fisher-z test of zero partial correlation, from one cached correlation matrix."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

from heuresis_env.citests.base import CITest
from heuresis_env.errors import DataError


class FisherZ(CITest):
    """x ⟂ y | S for Gaussian data: z = atanh(r_xy·S)·√(n − |S| − 3), p = 2(1 − Φ(|z|)).

    Matches causal-learn's ``fisherz`` (same clipping of r to ±(1 − 1e-7)... see tests).
    """

    name = "fisherz"

    def __init__(self, data: np.ndarray, **params):
        super().__init__(data, **params)
        self.correlation = np.corrcoef(self.data, rowvar=False)

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        if not s:
            r = self.correlation[x, y]
        else:
            idx = [x, y, *s]
            sub = self.correlation[np.ix_(idx, idx)]
            try:
                precision = np.linalg.inv(sub)
            except np.linalg.LinAlgError:
                raise DataError(
                    f"the correlation matrix of columns {idx} is singular; "
                    "a variable is a linear function of the others"
                ) from None
            r = -precision[0, 1] / math.sqrt(abs(precision[0, 0] * precision[1, 1]))
        r = min(0.9999999, max(-0.9999999, float(r)))
        z = 0.5 * math.log((1 + r) / (1 - r))
        statistic = math.sqrt(self.n - len(s) - 3) * abs(z)
        p = 2 * (1 - float(ndtr(statistic)))
        return statistic, p
