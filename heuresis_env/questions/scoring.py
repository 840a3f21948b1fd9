"""Scoring an answer against a question's exact truth, and the referee that keeps the truth.

Answers reach scoring in canonical form, by column position (the environment's ``answer``
tool reads the agent's names): a bool for yes/no questions, a float for effects, a k × k mark
matrix over the question's variables for graphs; ``None`` for a question left unanswered.

Every question scores ``correct`` (1 or 0) and ``answered``; yes/no questions are correct when
the answer equals the truth, graph questions when it matches exactly (same adjacencies and
v-structures; ``f1``, ``precision``, ``recall`` and ``skeleton_exact`` grade it), effect
questions when it is within 10% of the effect (``abs_error``, ``rel_error``). An unanswered
question is wrong, with F1 0 and the errors undefined.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.questions.sets import Question
from heuresis_env.questions.truth import EffectTruth, GraphTarget, graph_scores

#: an effect answer is correct within this relative error
EFFECT_TOLERANCE = 0.10

Answer = bool | float | np.ndarray | None


def score_answer(question: Question, answer: Answer) -> dict[str, float]:
    """The scores of one answer (see the module docstring)."""
    truth = question.truth
    answered = answer is not None
    if isinstance(truth, bool):
        if answered and not isinstance(answer, bool | np.bool_):
            raise HeuresisError(f"a yes/no question takes a bool, got {type(answer).__name__}")
        return {"correct": float(answered and bool(answer) == truth),
                "answered": float(answered)}
    if isinstance(truth, GraphTarget):
        if not answered:
            return {"correct": 0.0, "answered": 0.0, "f1": 0.0, "precision": math.nan,
                    "recall": 0.0 if truth.n_edges else math.nan, "skeleton_exact": 0.0}
        scores = graph_scores(truth, np.asarray(answer))
        exact = scores.pop("exact")
        return {"correct": exact, "answered": 1.0, **scores}
    if isinstance(truth, EffectTruth):
        if not answered:
            return {"correct": 0.0, "answered": 0.0, "abs_error": math.nan,
                    "rel_error": math.nan}
        value = float(cast(float, answer))
        error = abs(value - truth.value)
        relative = error / abs(truth.value) if truth.value else math.inf
        return {"correct": float(relative <= EFFECT_TOLERANCE), "answered": 1.0,
                "abs_error": error, "rel_error": relative}
    raise HeuresisError(f"unknown truth type {type(truth).__name__}")


def answer_json(answer: Answer, names: tuple[str, ...] | None = None) -> Any:
    """A canonical answer as JSON: "yes"/"no", a number, or the mark matrix as lists."""
    if answer is None:
        return None
    if isinstance(answer, bool | np.bool_):
        return "yes" if answer else "no"
    if isinstance(answer, np.ndarray):
        return answer.astype(int).tolist()
    return float(answer)


def make_question_referee(question: Question) -> dict[str, Callable]:
    """Closures over a question's truth: ``scores(answer)`` and, after the episode,
    ``outcome(answer)`` (the public question, the truth and the answer as JSON).

    The truth lives only in these closures' cells (as the graph truth does in
    :func:`heuresis_env.env.referee.make_referee`).
    """

    def scores(answer: Answer) -> dict[str, float]:
        return score_answer(question, answer)

    def outcome(answer: Answer) -> dict[str, Any]:
        return {**question.public.to_dict(), "truth": question.truth_dict(),
                "answer": answer_json(answer)}

    return {"scores": scores, "outcome": outcome}
