"""Training the classifier on development instances of several families, with a report
cross-validated by instance (GroupKFold: no instance has pairs on both sides of a split)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.learned_repair.classifier import (
    BOOSTING,
    MODEL_FEATURES,
    RepairClassifier,
    save_classifier,
)
from agents.learned_repair.evaluation import repair_outcomes, summarize
from heuresis_env.studies import PairRecord, study

__all__ = ["grouped_out_of_fold", "train_classifier"]


def grouped_out_of_fold(records: Sequence[PairRecord], kind: str = "boosting",
                        folds: int = 5, seed: int = 0,
                        family_features: bool = False) -> np.ndarray:
    """Each pair's probability from a model fitted without its instance (GroupKFold)."""
    from sklearn.model_selection import GroupKFold

    groups = np.array([r.instance for r in records])
    out = np.full(len(records), np.nan)
    for train, held in GroupKFold(n_splits=folds).split(groups, groups=groups):
        classifier = RepairClassifier(kind, family_features, seed)
        classifier.fit([records[k] for k in train])
        out[held] = classifier.predict_records([records[k] for k in held])
    return out


def train_classifier(families: Sequence[str], dev_count: int, kind: str = "boosting",
                     out_dir: str | Path | None = None, seed: int = 0,
                     progress=None, d: int = 10, n: int = 600, folds: int = 5,
                     family_features: bool = False) -> dict[str, Any]:
    """Fit the classifier on the first ``dev_count`` development instances of each family
    (computing or reading their evidence), with a grouped cross-validated report."""
    started = time.perf_counter()
    records, _ = study(families, range(dev_count), "dev", progress=progress, d=d, n=n)
    evidence_seconds = time.perf_counter() - started
    started = time.perf_counter()
    oof = grouped_out_of_fold(records, kind, folds=folds, seed=seed,
                              family_features=family_features)
    outcomes = repair_outcomes(records, oof)
    report: dict[str, Any] = {
        "classifier": kind, "settings": BOOSTING if kind == "boosting" else {},
        "features": list(MODEL_FEATURES), "family_features": bool(family_features),
        "families": list(families), "dev_count": dev_count, "d": d, "n": n,
        "seed": seed, "cross_validated": {"all": summarize(outcomes)},
    }
    for family in families:
        mine = [o for o in outcomes if o.family == family]
        if mine:
            report["cross_validated"][family] = summarize(mine)
    model = RepairClassifier(kind, family_features, seed).fit(records)
    report["training_seconds"] = time.perf_counter() - started
    report["evidence_seconds"] = evidence_seconds
    if out_dir is not None:
        save_classifier(model, report, out_dir)
    report["model"] = model
    return report
