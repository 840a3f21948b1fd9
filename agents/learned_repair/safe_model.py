"""The learned-repair classifier in a safe format: plain arrays (``model.npz``, read with
``allow_pickle=False``) and a JSON description (``model.json``) — no pickle.

:func:`export_model` turns a fitted scikit-learn model of either kind (histogram gradient
boosting, or the logistic pipeline of :func:`~agents.learned_repair.classifier.
make_classifier`) into arrays; :class:`BoostedTrees` and :class:`LogisticModel` predict from
those arrays with NumPy alone, to the same probabilities as scikit-learn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError

#: the format of model.npz / model.json
SAFE_MODEL_FORMAT = 1
_NODE_FIELDS = ("feature_idx", "num_threshold", "missing_go_to_left", "left", "right",
                "is_leaf", "value")


def _sigmoid(raw: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-raw))


class BoostedTrees:
    """Binary histogram gradient boosting: a baseline plus the leaf values of every tree, each
    tree walked on raw features (NaN follows the node's ``missing_go_to_left``)."""

    kind = "boosting"

    def __init__(self, arrays: Mapping[str, np.ndarray]):
        self.arrays = {name: np.asarray(arrays[name]) for name in
                       (*_NODE_FIELDS, "tree_offsets", "baseline")}
        self.n_features = int(np.asarray(arrays["n_features"]))

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise HeuresisError(f"the learned-repair model takes {self.n_features} features "
                                f"a row, got an array of shape {x.shape}")
        a = self.arrays
        raw = np.full(len(x), float(a["baseline"].reshape(-1)[0]))
        rows = np.arange(len(x))
        for start in a["tree_offsets"][:-1]:
            node = np.full(len(x), int(start))
            for _ in range(64):  # deeper than any tree of max_leaf_nodes=15
                leaf = a["is_leaf"][node].astype(bool)
                if leaf.all():
                    break
                value = x[rows, a["feature_idx"][node]]
                go_left = np.where(np.isnan(value), a["missing_go_to_left"][node].astype(bool),
                                   value <= a["num_threshold"][node])
                child = np.where(go_left, a["left"][node], a["right"][node]) + start
                node = np.where(leaf, node, child)
            raw += a["value"][node]
        p = _sigmoid(raw)
        return np.column_stack([1.0 - p, p])


class LogisticModel:
    """The logistic pipeline: −log10 of the p-value columns, median imputation with
    missingness indicators, standardization, a logistic regression."""

    kind = "logistic"

    def __init__(self, arrays: Mapping[str, np.ndarray], transform: Callable):
        self.arrays = {name: np.asarray(arrays[name]) for name in
                       ("statistics", "indicator_features", "mean", "scale", "coef",
                        "intercept")}
        self.transform = transform

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        a = self.arrays
        z = self.transform(np.asarray(x, dtype=np.float64))
        missing = np.isnan(z)
        filled = np.where(missing, a["statistics"][None, :], z)
        indicators = missing[:, a["indicator_features"].astype(int)].astype(np.float64)
        features = np.hstack([filled, indicators])
        scaled = (features - a["mean"]) / a["scale"]
        p = _sigmoid(scaled @ a["coef"].reshape(-1) + float(a["intercept"].reshape(-1)[0]))
        return np.column_stack([1.0 - p, p])


def export_model(model: Any) -> tuple[str, dict[str, np.ndarray]]:
    """The kind and arrays of a fitted scikit-learn model of either supported kind."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline

    if isinstance(model, HistGradientBoostingClassifier):
        if getattr(model, "is_categorical_", None) is not None or model.n_trees_per_iteration_ != 1:
            raise HeuresisError("only binary models on numeric features can be exported")
        nodes = [tree.nodes for (tree,) in model._predictors]
        offsets = np.cumsum([0, *(len(n) for n in nodes)])
        joined = np.concatenate(nodes)
        arrays = {name: np.ascontiguousarray(joined[name]) for name in _NODE_FIELDS}
        arrays.update(tree_offsets=offsets.astype(np.int64),
                      baseline=np.asarray(model._baseline_prediction, dtype=np.float64),
                      n_features=np.asarray(model.n_features_in_))
        return "boosting", arrays
    if isinstance(model, Pipeline):
        _, imputer, scaler, logistic = (step for _, step in model.steps)
        return "logistic", {
            "statistics": imputer.statistics_.astype(np.float64),
            "indicator_features": imputer.indicator_.features_.astype(np.int64),
            "mean": scaler.mean_.astype(np.float64), "scale": scaler.scale_.astype(np.float64),
            "coef": logistic.coef_.astype(np.float64),
            "intercept": logistic.intercept_.astype(np.float64)}
    raise HeuresisError(f"cannot export a {type(model).__name__} as a learned-repair model")


def build_model(kind: str, arrays: Mapping[str, np.ndarray], transform: Callable) -> Any:
    if kind == "boosting":
        return BoostedTrees(arrays)
    if kind == "logistic":
        return LogisticModel(arrays, transform)
    raise HeuresisError(f"unknown learned-repair model kind {kind!r}")


__all__ = ["SAFE_MODEL_FORMAT", "BoostedTrees", "LogisticModel", "build_model", "export_model"]
