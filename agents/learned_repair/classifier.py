"""The classifier of PC-KCI's wrong decisions: q = P(the pair is a true edge | its row of the
repair table), gradient boosting or logistic, saved and loaded with its feature list."""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import REPAIR_FEATURE_NAMES, REPAIR_FEATURES
from heuresis_env.generation import BENCHMARK_FAMILIES
from heuresis_env.studies import STUDY_FEATURES, PairRecord

__all__ = ["BOOSTING", "CLASSIFIERS", "MODEL_FEATURES", "MODEL_FILE", "REPORT_FILE",
           "SHIPPED_MODEL_DIR", "RepairClassifier", "feature_matrix", "load_classifier",
           "make_classifier", "save_classifier"]

#: the model shipped with the package (``load_learned_repair`` without a path)
SHIPPED_MODEL_DIR = Path(__file__).resolve().parents[1] / "data" / "learned_repair"
MODEL_FILE = "model.pkl"
REPORT_FILE = "report.json"
CLASSIFIERS = ("boosting", "logistic")
#: the classifier's inputs: the columns of the default repair table (the table the tool
#: shows); NOTEARS-MLP's vote and PC-KCI's bootstrap frequency are not computed by default
MODEL_FEATURES = tuple(name for name in REPAIR_FEATURE_NAMES
                       if name not in ("keeps_notears_mlp", "pc_kci_bootstrap"))
#: gradient-boosting settings (fixed in advance, not tuned on any split)
BOOSTING = {"max_iter": 300, "learning_rate": 0.05, "max_leaf_nodes": 15,
            "min_samples_leaf": 20, "l2_regularization": 1.0}


def feature_matrix(records: Sequence[PairRecord]) -> np.ndarray:
    """The classifier's inputs (:data:`MODEL_FEATURES`) of each record, in that order."""
    columns = [STUDY_FEATURES.index(name) for name in MODEL_FEATURES]
    return np.array([[r.values[c] for c in columns] for r in records], dtype=np.float64)


def make_classifier(kind: str = "boosting", seed: int = 0) -> Any:
    """An unfitted classifier: scikit-learn's histogram gradient boosting (missing values
    handled natively) or a logistic regression on imputed, standardized features with
    missingness indicators."""
    if kind == "boosting":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(random_state=seed, **BOOSTING)
    if kind == "logistic":
        from sklearn.impute import SimpleImputer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import FunctionTransformer, StandardScaler

        return make_pipeline(
            FunctionTransformer(_logit_p_values),
            SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True),
            StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    raise HeuresisError(f"unknown classifier {kind!r}; known: {list(CLASSIFIERS)}")


def _logit_p_values(x: np.ndarray) -> np.ndarray:
    """−log10 of the p-value columns (a logistic model is linear in its inputs)."""
    out = np.array(x, dtype=np.float64, copy=True)
    scales = {f.name: f.scale for f in REPAIR_FEATURES}
    for column, name in enumerate(MODEL_FEATURES):
        if scales[name] == "p":
            out[:, column] = -np.log10(np.clip(out[:, column], 1e-300, 1.0))
    return out


class RepairClassifier:
    """The classifier with its inputs: the repair table's :data:`MODEL_FEATURES` and, with
    ``family_features``, a one-hot of the family (public: it names the environment, and
    reference votes mean different things in linear and non-linear families)."""

    def __init__(self, kind: str = "boosting", family_features: bool = False, seed: int = 0):
        make_classifier(kind, seed)  # unknown kinds fail here
        self.kind, self.family_features, self.seed = kind, bool(family_features), int(seed)
        self.families = tuple(BENCHMARK_FAMILIES)
        self.model: Any = None

    def inputs(self, x: np.ndarray, families: Sequence[str]) -> np.ndarray:
        if not self.family_features:
            return x
        onehot = np.array([[float(f == g) for g in self.families] for f in families])
        return np.hstack([x, onehot.reshape(len(x), len(self.families))])

    def fit(self, records: Sequence[PairRecord]) -> RepairClassifier:
        y = np.array([r.true_edge for r in records], dtype=int)
        x = self.inputs(feature_matrix(records), [r.family for r in records])
        self.model = make_classifier(self.kind, self.seed).fit(x, y)
        return self

    def probabilities(self, x: np.ndarray, families: Sequence[str]) -> np.ndarray:
        """P(true edge) for each row of repair-table features (:data:`MODEL_FEATURES`)."""
        if self.model is None:
            raise HeuresisError("the repair classifier is not fitted")
        return self.model.predict_proba(self.inputs(np.asarray(x, np.float64), families))[:, 1]

    def predict_records(self, records: Sequence[PairRecord]) -> np.ndarray:
        return self.probabilities(feature_matrix(records), [r.family for r in records])


def save_classifier(model: Any, report: dict[str, Any], out_dir: str | Path) -> Path:
    import sklearn

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / MODEL_FILE, "wb") as f:
        pickle.dump({"model": model, "features": list(MODEL_FEATURES),
                     "sklearn": sklearn.__version__}, f)
    public = {k: v for k, v in report.items() if k != "model"}
    (out / REPORT_FILE).write_text(json.dumps(public, indent=2), encoding="utf-8")
    return out


def load_classifier(path: str | Path | None = None) -> RepairClassifier:
    """The fitted classifier saved in ``path`` (default: the shipped one)."""
    directory = Path(SHIPPED_MODEL_DIR if path is None else path)
    file = directory / MODEL_FILE if directory.is_dir() else directory
    if not file.is_file():
        raise HeuresisError(f"no learned-repair model at {file}; train one with "
                            "`python -m agents.learned_repair --out DIR`")
    with open(file, "rb") as f:
        try:
            saved = pickle.load(f)
        except (AttributeError, ModuleNotFoundError) as error:
            raise HeuresisError(f"cannot read the learned-repair model at {file} ({error}); it "
                                "was saved by another version of agents.learned_repair; "
                                "retrain it") from error
    if saved.get("features") != list(MODEL_FEATURES):
        raise HeuresisError(f"the model at {file} was trained on the repair features "
                            f"{saved.get('features')}; this version has {list(MODEL_FEATURES)}; "
                            "retrain it")
    return saved["model"]
