"""The supervised repair reference: a classifier of PC-KCI's wrong decisions on the repair
table, and the policy ``learned-repair`` that acts on it.

**The classifier** estimates, for every pair of an instance, q = P(the pair is a true edge |
its row of the repair table) (:data:`~heuresis_env.evidence.REPAIR_FEATURE_NAMES`, the same
table the ``repair_evidence`` tool shows; ``kept`` is one of its columns, so one model
covers wrong deletions and false keeps). It is trained on development instances of all six
families with the hidden record as labels; its cross-validated figures are grouped by
instance (no instance has pairs on both sides of a split).

**The decision rule** maximises the expected adjacency F1 per instance. With q_k for every
pair and Q = Σ q_k, a graph with edge set E has expected F1 ≈ 2 Σ_{k∈E} q_k / (|E| + Q) (the
ratio of expectations); for a given |E| the best E holds the pairs of largest q, so
:func:`expected_f1_selection` tries every m = |E| and keeps the best; its F1* is the
instance's expected F1, and every selected pair clears q > F1*/2 (the threshold of Lipton,
Elkan & Naryanaswamy 2014). The policy restores a deleted pair only when it is selected and
removes a kept pair only when it is not.

``python -m agents.learned_repair --dev-count 20 --out agents/data/learned_repair`` trains
and writes the model (``model.pkl``), its settings and its cross-validated report.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import REPAIR_FEATURE_NAMES
from heuresis_env.generation.families import available_families
from heuresis_env.policy import Policy
from heuresis_env.studies.repair_signals import PairRecord, study

#: the model shipped with the package (``load_learned_repair`` without a path)
SHIPPED_MODEL_DIR = Path(__file__).resolve().parent / "data" / "learned_repair"
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


# ---- the decision rule ----------------------------------------------------------------------

def expected_f1_selection(probabilities: Sequence[float]) -> tuple[np.ndarray, float, float]:
    """The edge set maximising the expected adjacency F1, given each pair's probability of
    being a true edge: (selected mask, the expected F1*, the threshold F1*/2)."""
    q = np.clip(np.asarray(probabilities, dtype=np.float64), 0.0, 1.0)
    if q.size == 0:
        return np.zeros(0, dtype=bool), 1.0, 0.5
    order = np.argsort(-q, kind="stable")
    total = float(q.sum())
    cumulative = np.cumsum(q[order])
    sizes = np.arange(1, q.size + 1)
    expected = 2 * cumulative / (sizes + total)
    best = int(np.argmax(expected))
    f1_star = float(expected[best])
    if total == 0:  # no pair can be an edge: the empty graph
        return np.zeros(q.size, dtype=bool), 0.0, 0.0
    selected = np.zeros(q.size, dtype=bool)
    selected[order[:best + 1]] = True
    return selected, f1_star, f1_star / 2


def adjacency_f1(predicted: np.ndarray, truth: np.ndarray) -> float:
    """2TP / (2TP + FP + FN) over pairs (1 when both are empty), as ``metrics.score_graph``."""
    predicted, truth = np.asarray(predicted, bool), np.asarray(truth, bool)
    tp = int(np.sum(predicted & truth))
    denominator = 2 * tp + int(np.sum(predicted & ~truth)) + int(np.sum(~predicted & truth))
    return 1.0 if denominator == 0 else 2 * tp / denominator


# ---- the classifier -------------------------------------------------------------------------

def feature_matrix(records: Sequence[PairRecord]) -> np.ndarray:
    """The classifier's inputs (:data:`MODEL_FEATURES`) of each record, in that order."""
    columns = [_study_features().index(name) for name in MODEL_FEATURES]
    return np.array([[r.values[c] for c in columns] for r in records], dtype=np.float64)


def _study_features() -> tuple[str, ...]:
    from heuresis_env.studies.repair_signals import STUDY_FEATURES

    return STUDY_FEATURES


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
    from heuresis_env.evidence import REPAIR_FEATURES

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
        self.families = tuple(available_families())
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


@dataclass
class InstanceOutcome:
    """One instance repaired by the rule: F1 before and after, and what changed."""

    instance: str
    family: str
    f1_start: float
    f1_repaired: float
    f1_best_cut: float  # the same ranking cut at the best size in hindsight
    f1_oracle: float    # every wrong deletion restored (the ideal oracle)
    restored: int
    restored_true: int
    removed: int
    removed_false: int
    wrong_deletions: int
    false_keeps: int
    threshold: float


def repair_outcomes(records: Sequence[PairRecord], probabilities: Sequence[float]
                    ) -> list[InstanceOutcome]:
    """Apply the expected-F1 rule instance by instance and score the result."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    by_instance: dict[str, list[int]] = {}
    for position, record in enumerate(records):
        by_instance.setdefault(record.instance, []).append(position)
    out = []
    for instance, rows in by_instance.items():
        kept = np.array([records[r].kept for r in rows])
        truth = np.array([records[r].true_edge for r in rows])
        q = probabilities[rows]
        selected, _, threshold = expected_f1_selection(q)
        order = np.argsort(-q, kind="stable")
        best_cut = max(adjacency_f1(np.isin(np.arange(len(q)), order[:m]), truth)
                       for m in range(len(q) + 1))
        out.append(InstanceOutcome(
            instance=instance, family=records[rows[0]].family,
            f1_start=adjacency_f1(kept, truth), f1_repaired=adjacency_f1(selected, truth),
            f1_best_cut=best_cut, f1_oracle=adjacency_f1(kept | truth, truth),
            restored=int(np.sum(selected & ~kept)), restored_true=int(np.sum(selected & ~kept & truth)),
            removed=int(np.sum(~selected & kept)), removed_false=int(np.sum(~selected & kept & ~truth)),
            wrong_deletions=int(np.sum(~kept & truth)), false_keeps=int(np.sum(kept & ~truth)),
            threshold=float(threshold)))
    return out


def summarize(outcomes: Sequence[InstanceOutcome], n_resamples: int = 10_000) -> dict[str, Any]:
    """Mean F1s, the paired interval of repaired − start, and restore/remove precision."""
    from heuresis_env.metrics import paired_bootstrap

    start = [o.f1_start for o in outcomes]
    gain = paired_bootstrap([o.f1_repaired for o in outcomes], start, n_resamples=n_resamples)
    best = paired_bootstrap([o.f1_best_cut for o in outcomes], start, n_resamples=n_resamples)
    restored = sum(o.restored for o in outcomes)
    removed = sum(o.removed for o in outcomes)
    wrong = sum(o.wrong_deletions for o in outcomes)
    false_keeps = sum(o.false_keeps for o in outcomes)
    return {
        "instances": len(outcomes),
        "f1_start": float(np.mean(start)),
        "f1_repaired": float(np.mean([o.f1_repaired for o in outcomes])),
        "f1_oracle": float(np.mean([o.f1_oracle for o in outcomes])),
        "gain": [gain.mean, gain.low, gain.high],
        "gain_best_cut": [best.mean, best.low, best.high],
        "restored": restored,
        "restore_precision": (sum(o.restored_true for o in outcomes) / restored
                              if restored else float("nan")),
        "restore_recall": (sum(o.restored_true for o in outcomes) / wrong
                           if wrong else float("nan")),
        "removed": removed,
        "remove_precision": (sum(o.removed_false for o in outcomes) / removed
                             if removed else float("nan")),
        "remove_recall": (sum(o.removed_false for o in outcomes) / false_keeps
                          if false_keeps else float("nan")),
    }


def bca_choices(path: str | Path) -> dict[str, str]:
    """BCA_φ per family from a ``heuresis baselines --json`` file (baselines/data/...)."""
    tables = json.loads(Path(path).read_text(encoding="utf-8"))["tables"]
    return {table["family"]: table["bca"] for table in tables}


def algorithm_f1(records: Sequence[PairRecord], algorithm: str) -> dict[str, float]:
    """Each instance's adjacency F1 of one reference algorithm's output, read from the repair
    table (``pc-kci`` is PC-KCI's own output, the ``kept`` column)."""
    from heuresis_env.studies.repair_signals import STUDY_FEATURES

    name = "kept" if algorithm == "pc-kci" else f"keeps_{algorithm.replace('-', '_')}"
    if name not in STUDY_FEATURES:
        raise HeuresisError(f"{algorithm!r} is not a column of the repair table")
    column = STUDY_FEATURES.index(name)
    by_instance: dict[str, tuple[list[float], list[bool]]] = {}
    for record in records:
        values, truth = by_instance.setdefault(record.instance, ([], []))
        values.append(record.values[column])
        truth.append(record.true_edge)
    out = {}
    for instance, (values, truth) in by_instance.items():
        if np.any(np.isnan(values)):
            raise HeuresisError(f"{algorithm} did not run on {instance}; no F1 to compare")
        out[instance] = adjacency_f1(np.array(values) == 1, np.array(truth))
    return out


def evaluate_split(model: Any, families: Sequence[str], split: str = "test", count: int = 32,
                   salt: str | None = None, bca: dict[str, str] | None = None,
                   n_resamples: int = 10_000, progress=None) -> dict[str, Any]:
    """The repaired F1 against PC-KCI and BCA_φ on ``count`` instances of each family.

    Computed from each instance's repair table and hidden record, the same decisions the
    ``learned-repair`` policy makes in an episode (a test checks that the two agree).
    """
    from heuresis_env.metrics import paired_bootstrap

    out: dict[str, Any] = {"split": split, "salted": salt is not None, "count": count,
                           "families": {}}
    for family in families:
        records, _ = study([family], range(count), split, salt, progress=progress)
        outcomes = repair_outcomes(records, model.predict_records(records))
        row = summarize(outcomes, n_resamples)
        repaired = [o.f1_repaired for o in outcomes]
        choice = (bca or {}).get(family, "pc-kci")
        bca_f1 = algorithm_f1(records, choice)
        versus_bca = paired_bootstrap(repaired, [bca_f1[o.instance] for o in outcomes],
                                      n_resamples=n_resamples)
        row.update(bca=choice, f1_bca=float(np.mean(list(bca_f1.values()))),
                   gain_vs_bca=[versus_bca.mean, versus_bca.low, versus_bca.high],
                   per_instance=[{"instance": o.instance, "f1_start": o.f1_start,
                                  "f1_repaired": o.f1_repaired, "f1_bca": bca_f1[o.instance],
                                  "restored": o.restored, "restored_true": o.restored_true,
                                  "removed": o.removed, "removed_false": o.removed_false}
                                 for o in outcomes])
        out["families"][family] = row
    everything = [r for row in out["families"].values() for r in row["per_instance"]]
    if everything:
        pooled = paired_bootstrap([r["f1_repaired"] for r in everything],
                                  [r["f1_bca"] for r in everything], n_resamples=n_resamples)
        out["all_families_gain_vs_bca"] = [pooled.mean, pooled.low, pooled.high]
    return out


# ---- training, saving, loading ----------------------------------------------------------------

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
        saved = pickle.load(f)
    if saved.get("features") != list(MODEL_FEATURES):
        raise HeuresisError(f"the model at {file} was trained on the repair features "
                            f"{saved.get('features')}; this version has {list(MODEL_FEATURES)}; "
                            "retrain it")
    return saved["model"]


# ---- the policy --------------------------------------------------------------------------------

class LearnedRepairPolicy(Policy):
    """Reads the ``repair_evidence`` table (guided condition), scores every pair with the
    classifier, and edits PC-KCI's output by the expected-F1 rule, then submits.

    Steps: one for the table, one per edit (most confident first: the largest |q − F1*/2|),
    one to submit; edits that the step budget cannot hold are dropped.
    """

    name = "learned-repair"
    interface = "text"

    def __init__(self, model: RepairClassifier):
        self.model = model
        self._plan: list[dict[str, Any]] = []
        self._stage = "read"
        self.decisions: list[dict[str, Any]] = []

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        if not info.get("guided", self.settings.guided):
            raise HeuresisError("learned-repair edits PC-KCI's output: run it in the guided "
                                "condition (guided=True)")
        self._plan, self._stage, self.decisions = [], "read", []
        self.family = str((info.get("instance") or {}).get("family", ""))

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self._stage == "read":
            self._stage = "plan"
            return {"tool": "repair_evidence", "args": {}}
        if self._stage == "plan":
            self._stage = "edit"
            rows = (info.get("data") or {}).get("rows") or []
            if info.get("error") is None and rows:
                self._plan = self._decide(rows)
            left = int(np.asarray(observation["budget_left"]).reshape(-1)[0])
            self._plan = self._plan[:max(left - 1, 0)]
        if self._plan:
            return self._plan.pop(0)
        self._stage = "done"
        return {"tool": "submit", "args": {}}

    def _decide(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        x = np.array([[np.nan if row[f] is None else row[f] for f in MODEL_FEATURES]
                      for row in rows], dtype=np.float64)
        q = self.model.probabilities(x, [self.family] * len(rows))
        selected, f1_star, threshold = expected_f1_selection(q)
        edits = []
        for row, probability, chosen in zip(rows, q, selected, strict=True):
            kept = bool(row["kept"])
            x_name, y_name = row["pair"]
            if chosen and not kept:
                edits.append((abs(probability - threshold), {
                    "tool": "add_edge", "args": {"x": x_name, "y": y_name, "directed": False}}))
            elif kept and not chosen:
                edits.append((abs(probability - threshold), {
                    "tool": "remove_edge", "args": {"x": x_name, "y": y_name}}))
            self.decisions.append({"pair": [x_name, y_name], "kept": kept,
                                   "probability": float(probability), "selected": bool(chosen)})
        self.expected_f1, self.threshold = f1_star, threshold
        edits.sort(key=lambda item: -item[0])
        return [edit for _, edit in edits]

    def transcript(self) -> list[dict[str, Any]] | None:
        return [{"decisions": self.decisions}]


def load_learned_repair(path: str | Path | None = None) -> LearnedRepairPolicy:
    """The ``learned-repair`` policy (entry point), with the shipped model unless ``path``."""
    return LearnedRepairPolicy(load_classifier(path))


def evaluation_table(result: dict[str, Any]) -> str:
    """A markdown table of :func:`evaluate_split`'s result, one row per family."""
    lines = ["| family | PC-KCI | BCA_φ | learned-repair | Δ vs PC-KCI [95%] | Δʳ vs BCA_φ [95%] "
             "| restored (true) | removed (false) | oracle |", "|---" * 9 + "|"]
    for family, row in result["families"].items():
        gain, versus = row["gain"], row["gain_vs_bca"]
        restored_true = sum(r["restored_true"] for r in row["per_instance"])
        removed_false = sum(r["removed_false"] for r in row["per_instance"])
        lines.append(
            f"| {family} | {row['f1_start']:.3f} | {row['bca']} {row['f1_bca']:.3f} | "
            f"{row['f1_repaired']:.3f} | {gain[0]:+.3f} [{gain[1]:+.3f}, {gain[2]:+.3f}] | "
            f"{versus[0]:+.3f} [{versus[1]:+.3f}, {versus[2]:+.3f}] | {row['restored']} "
            f"({restored_true}) | {row['removed']} ({removed_false}) | {row['f1_oracle']:.3f} |")
    pooled = result.get("all_families_gain_vs_bca")
    if pooled:
        lines.append(f"\nAll families, Δʳ vs BCA_φ: {pooled[0]:+.3f} [{pooled[1]:+.3f}, "
                     f"{pooled[2]:+.3f}] ({result['count']} instances per family, "
                     f"split {result['split']}{', salted' if result['salted'] else ''}).")
    return "\n".join(lines)


#: the shipped BCA_φ selection at d = 10, n = 600 (written by `heuresis baselines --json`)
BCA_FILE = Path(__file__).resolve().parents[1] / "baselines" / "data" / "bca_selection_d10_n600.json"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train or evaluate the learned-repair "
                                                 "classifier.")
    parser.add_argument("--families", default="all")
    parser.add_argument("--dev-count", type=int, default=20)
    parser.add_argument("--classifier", default="boosting", choices=CLASSIFIERS)
    parser.add_argument("--family-features", action="store_true",
                        help="also give the classifier the family (one-hot)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--out", help="train: write the model here")
    parser.add_argument("--evaluate", metavar="SPLIT",
                        help="evaluate the model at --model (default: the shipped one) on the "
                             "first --count instances of SPLIT ($HEURESIS_TEST_SALT seals test)")
    parser.add_argument("--model", help="the model directory to evaluate")
    parser.add_argument("--count", type=int, default=32)
    parser.add_argument("--json", help="evaluate: write the full result here")
    args = parser.parse_args(argv)
    families = available_families() if args.families == "all" else args.families.split(",")
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.evaluate:
        import os

        salt = os.environ.get("HEURESIS_TEST_SALT") or None
        bca = bca_choices(BCA_FILE) if BCA_FILE.is_file() else None
        result = evaluate_split(load_classifier(args.model), families, args.evaluate,
                                args.count, salt if args.evaluate == "test" else None, bca,
                                progress=say)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
        print(evaluation_table(result))
        return 0
    if not args.out:
        parser.error("--out is needed to train (or give --evaluate SPLIT)")
    report = train_classifier(families, args.dev_count, args.classifier, args.out, args.seed,
                              progress=say, d=args.d, n=args.n,
                              family_features=args.family_features)
    for name, summary in report["cross_validated"].items():
        gain = summary["gain"]
        print(f"{name}: F1 {summary['f1_start']:.3f} -> {summary['f1_repaired']:.3f} "
              f"({gain[0]:+.3f} [{gain[1]:+.3f}, {gain[2]:+.3f}]); restored {summary['restored']}"
              f" (precision {summary['restore_precision']:.2f}), removed {summary['removed']} "
              f"(precision {summary['remove_precision']:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
