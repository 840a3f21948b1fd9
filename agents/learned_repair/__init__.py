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

One concept per module: :mod:`.rule` (the expected-F1 rule), :mod:`.classifier` (the model,
saved and loaded), :mod:`.evaluation` (offline scoring against PC-KCI and BCA_φ),
:mod:`.training` (fitting with a grouped cross-validated report), :mod:`.policy` (the
``learned-repair`` policy). ``python -m agents.learned_repair --dev-count 20 --out
agents/data/learned_repair`` trains and writes the model (``model.npz`` and ``model.json``: a
safe format, no pickle; :mod:`.safe_model`), its settings and its cross-validated report.
"""

from agents.learned_repair.classifier import (
    BOOSTING,
    CLASSIFIERS,
    MODEL_FEATURES,
    MODEL_FILE,
    REPORT_FILE,
    SHIPPED_MODEL_DIR,
    RepairClassifier,
    feature_matrix,
    load_classifier,
    make_classifier,
    save_classifier,
)
from agents.learned_repair.evaluation import (
    BCA_FILE,
    InstanceOutcome,
    algorithm_f1,
    bca_choices,
    compare_with_rl,
    comparison_table,
    evaluate_split,
    evaluation_table,
    repair_outcomes,
    summarize,
)
from agents.learned_repair.policy import LearnedRepairPolicy, load_learned_repair
from agents.learned_repair.rule import RepairPlan, adjacency_f1, expected_f1_selection, repair_plan
from agents.learned_repair.training import grouped_out_of_fold, train_classifier

__all__ = [
    "BCA_FILE",
    "BOOSTING",
    "CLASSIFIERS",
    "MODEL_FEATURES",
    "MODEL_FILE",
    "REPORT_FILE",
    "RepairPlan",
    "SHIPPED_MODEL_DIR",
    "InstanceOutcome",
    "LearnedRepairPolicy",
    "RepairClassifier",
    "adjacency_f1",
    "algorithm_f1",
    "bca_choices",
    "compare_with_rl",
    "comparison_table",
    "evaluate_split",
    "evaluation_table",
    "expected_f1_selection",
    "feature_matrix",
    "grouped_out_of_fold",
    "load_classifier",
    "load_learned_repair",
    "make_classifier",
    "repair_outcomes",
    "repair_plan",
    "save_classifier",
    "summarize",
    "train_classifier",
]
