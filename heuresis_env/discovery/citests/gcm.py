"""Generalised covariance measure (GCM; Shah & Peters, Ann. Statist. 2020) with a flexible
regressor and cross-fitting.

x ⟂ y | S is tested through the residuals of x and of y regressed on S: under the null,
T = √n · mean(r_x r_y) / sd(r_x r_y) is asymptotically standard normal when both
regressions are consistent. The regressor is ridge regression on S and random Fourier
features of each variable of S (:mod:`heuresis_env.discovery.regression`), and every residual comes from a fit
that did not see its row (``folds``-fold cross-fitting, one seeded split per dataset), so an
over-fitted regression cannot shrink the statistic towards zero. The variables are
replaced by their normal scores first (a valid CI test: conditional independence is
invariant under monotone maps of each variable, and it tames heavy tails). With S = ∅ the
test is the normal-approximation test of zero (normal-scores) correlation.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from heuresis_env.discovery.citests.base import CITest
from heuresis_env.discovery.regression import (
    FOLDS,
    RANDOM_FEATURES,
    CrossFitter,
    generalised_covariance_measure,
)
from heuresis_env.errors import HeuresisError, UnknownNameError

_PARAMETERS = ("seed", "folds", "features")


class GCM(CITest):
    """GCM with cross-fitted random-feature ridge regressions; seeded.

    Parameters: ``seed`` (int ≥ 0, default 0: the fold split and the random features),
    ``folds`` (cross-fitting folds, default 5), ``features`` (random Fourier features of the
    whole conditioning set, default 0: an additive regression). The statistic is |T|.
    """

    name: ClassVar[str] = "gcm"
    seeded: ClassVar[bool] = True

    def __init__(self, data: np.ndarray, *, disk_cache: bool | None = None, **params: Any):
        for key in params:
            if key not in _PARAMETERS:
                raise UnknownNameError("GCM parameter", key, _PARAMETERS)
        settings = {"seed": params.get("seed", 0), "folds": params.get("folds", FOLDS),
                    "features": params.get("features", RANDOM_FEATURES)}
        for key, low in (("seed", 0), ("folds", 2), ("features", 0)):
            value = settings[key]
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise HeuresisError(f"GCM {key} must be an integer ≥ {low}, got {value!r}")
            settings[key] = int(value)
        super().__init__(data, disk_cache=disk_cache, **settings)
        self.fitter = CrossFitter(self.data, np.random.default_rng(settings["seed"]),
                                  folds=settings["folds"], features=settings["features"])

    def _compute(self, x: int, y: int, s: tuple[int, ...]) -> tuple[float, float]:
        return generalised_covariance_measure(self.fitter, x, y, s)
