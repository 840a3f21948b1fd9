"""Question mode: causal questions about a table, answered exactly from the hidden model.

The second kind of episode (after recovering the whole graph): one question at one of four
levels — variable (independence), edge (direct cause, collider, confounding), graph (whole
and partial), effect (average treatment effect) — about an instance's columns, after the
tool-using causal agent of CausalAgent/CausalTQA. Its answers there came from PC and EconML
on the data; here they are exact: d-separation and the true DAG, and Monte Carlo under
``do()`` on the SCM. See ``docs/questions.md``.

- :mod:`.kinds` — the nine sub-types, their levels and answer types;
- :mod:`.truth` — the exact truth of each kind from the DAG and SCM;
- :mod:`.sets` — questions, and the seeded balanced question set per (family, split);
- :mod:`.names` — anonymous and decoy column names;
- :mod:`.scoring` — scores of an answer, and the referee closures over the truth.
"""

from heuresis_env.questions.kinds import ANSWER_TYPES, KINDS, LEVELS, QuestionKind, get_kind
from heuresis_env.questions.names import DECOY_WORDS, NAME_MODES, column_names, decoy_names
from heuresis_env.questions.scoring import (
    EFFECT_TOLERANCE,
    answer_json,
    make_question_referee,
    score_answer,
)
from heuresis_env.questions.sets import (
    QUESTIONS_PER_KIND,
    PublicQuestion,
    Question,
    QuestionSet,
    build_question_set,
    question_set,
    questions_per_kind,
)
from heuresis_env.questions.truth import (
    EffectTruth,
    GraphTarget,
    average_effect,
    graph_scores,
    has_common_cause,
    is_d_separated,
    is_direct_cause,
    latent_projection,
    unshielded_colliders,
)

__all__ = [
    "ANSWER_TYPES", "DECOY_WORDS", "EFFECT_TOLERANCE", "KINDS", "LEVELS", "NAME_MODES",
    "QUESTIONS_PER_KIND", "EffectTruth", "GraphTarget", "PublicQuestion", "Question",
    "QuestionKind", "QuestionSet", "answer_json", "average_effect", "build_question_set",
    "column_names", "decoy_names", "get_kind", "graph_scores", "has_common_cause",
    "is_d_separated", "is_direct_cause", "latent_projection", "make_question_referee",
    "question_set", "questions_per_kind", "score_answer", "unshielded_colliders",
]
