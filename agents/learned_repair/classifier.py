"""The classifier of PC-KCI's wrong decisions: q = P(the pair is a true edge | its row of the
repair table), gradient boosting or logistic, saved and loaded with its feature list in a safe
format (``model.npz`` and ``model.json``, :mod:`agents.learned_repair.safe_model`; no
pickle)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.learned_repair.safe_model import SAFE_MODEL_FORMAT, build_model, export_model
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import REPAIR_FEATURE_NAMES, REPAIR_FEATURES
from heuresis_env.generation import BENCHMARK_FAMILIES
from heuresis_env.studies import STUDY_FEATURES, PairRecord

__all__ = ["BOOSTING", "CLASSIFIERS", "MODEL_FEATURES", "MODEL_FILE", "REPORT_FILE",
           "MODEL_META_FILE", "SHIPPED_MODEL_DIR", "RepairClassifier", "feature_matrix",
           "load_classifier", "make_classifier", "save_classifier"]

#: the model shipped with the package (``load_learned_repair`` without a path)
SHIPPED_MODEL_DIR = Path(__file__).resolve().parents[1] / "data" / "learned_repair"
MODEL_FILE = "model.npz"
#: the model's description beside its arrays (kind, inputs, families, format)
MODEL_META_FILE = "model.json"
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


def save_classifier(model: RepairClassifier, report: dict[str, Any],
                    out_dir: str | Path) -> Path:
    """Write the fitted classifier (``model.npz`` + ``model.json``) and its report."""
    import sklearn

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    kind, arrays = export_model(model.model)
    with open(out / MODEL_FILE, "wb") as f:
        np.savez(f, **arrays)
    meta = {"format": SAFE_MODEL_FORMAT, "kind": kind, "features": list(MODEL_FEATURES),
            "family_features": model.family_features, "families": list(model.families),
            "seed": model.seed, "sklearn": sklearn.__version__}
    (out / MODEL_META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    public = {k: v for k, v in report.items() if k != "model"}
    (out / REPORT_FILE).write_text(json.dumps(public, indent=2), encoding="utf-8")
    return out


def load_classifier(path: str | Path | None = None) -> RepairClassifier:
    """The fitted classifier saved in ``path`` (a folder or its ``model.npz``; default: the
    shipped one). Read as data only: nothing in the files can run code."""
    directory = Path(SHIPPED_MODEL_DIR if path is None else path)
    file = directory / MODEL_FILE if directory.is_dir() else directory
    if file.suffix == ".pkl":
        raise HeuresisError(f"{file} is a pickled model, which is no longer read (a pickle "
                            "can run code); convert it once with `python scripts/"
                            "convert_models.py`, or retrain it")
    meta_file = file.with_name(MODEL_META_FILE)
    if not file.is_file() or not meta_file.is_file():
        raise HeuresisError(f"no learned-repair model at {file} (with {meta_file.name}); "
                            "train one with `python -m agents.learned_repair --out DIR`")
    try:
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        with np.load(file, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError) as error:
        raise HeuresisError(f"cannot read the learned-repair model at {file}: {error}") from None
    if not isinstance(meta, dict) or meta.get("format") != SAFE_MODEL_FORMAT:
        raise HeuresisError(f"{meta_file} is not a learned-repair model description of format "
                            f"{SAFE_MODEL_FORMAT}")
    if meta.get("features") != list(MODEL_FEATURES):
        raise HeuresisError(f"the model at {file} was trained on the repair features "
                            f"{meta.get('features')}; this version has {list(MODEL_FEATURES)}; "
                            "retrain it")
    classifier = RepairClassifier(str(meta.get("kind")), bool(meta.get("family_features")),
                                  int(meta.get("seed", 0)))
    classifier.families = tuple(meta.get("families") or BENCHMARK_FAMILIES)
    try:
        classifier.model = build_model(classifier.kind, arrays, _logit_p_values)
    except KeyError as error:
        raise HeuresisError(f"the learned-repair model at {file} lacks the array "
                            f"{error}") from None
    return classifier
