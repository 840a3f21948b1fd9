"""The question kinds: four levels, nine sub-types, one answer type each (``docs/questions.md``).

A :class:`QuestionKind` names a sub-type, its level and abbreviation (as in CausalAgent's
CausalTQA tables), the type of answer it takes, and how its text reads. The exact truth of
each kind is in :mod:`heuresis_env.questions.truth`; how a question set draws them is in
:mod:`heuresis_env.questions.sets`.
"""

from __future__ import annotations

from dataclasses import dataclass

from heuresis_env.errors import UnknownNameError

#: levels, from data to intervention (the order of the report's tables)
LEVELS = ("variable", "edge", "graph", "effect")
#: answer types: yes/no, an edge list over the question's variables, a number
ANSWER_TYPES = ("yes_no", "edges", "number")


@dataclass(frozen=True)
class QuestionKind:
    """One sub-type of question: its level, answer type and a one-line definition."""

    name: str
    abbreviation: str
    level: str
    answer_type: str
    definition: str

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise UnknownNameError("question level", self.level, LEVELS)
        if self.answer_type not in ANSWER_TYPES:
            raise UnknownNameError("answer type", self.answer_type, ANSWER_TYPES)

    @property
    def balanced(self) -> bool:
        """Yes/no kinds: every question set holds as many "yes" as "no" questions of it."""
        return self.answer_type == "yes_no"


#: name → kind, in the order questions cycle through them in a question set
KINDS: dict[str, QuestionKind] = {kind.name: kind for kind in (
    QuestionKind("independence", "IT", "variable", "yes_no",
                 "x and y are d-separated by the empty set in the true DAG"),
    QuestionKind("conditional_independence", "CIT", "variable", "yes_no",
                 "x and y are d-separated by {z} in the true DAG"),
    QuestionKind("multi_conditional_independence", "MCIT", "variable", "yes_no",
                 "x and y are d-separated by a set of 2 or 3 variables in the true DAG"),
    QuestionKind("direct_cause", "CAUSE", "edge", "yes_no",
                 "the true DAG has the edge x --> y"),
    QuestionKind("collider", "COL", "edge", "yes_no",
                 "some z has x --> z <-- y in the true DAG, and x and y are not adjacent"),
    QuestionKind("confounding", "CONF", "edge", "yes_no",
                 "x and y have a common cause: an open back-door path x <-- ... <-- m --> ... "
                 "--> y (given the empty set) in the true DAG"),
    QuestionKind("whole_graph", "TOTAL", "graph", "edges",
                 "the Markov equivalence class of the true DAG: its adjacencies and "
                 "v-structures"),
    QuestionKind("partial_graph", "PARTIAL", "graph", "edges",
                 "the adjacencies and v-structures among a subset S of the variables, the "
                 "others unobserved (the latent projection of the true DAG onto S)"),
    QuestionKind("average_effect", "ATE", "effect", "number",
                 "E[y | do(x = b)] - E[y | do(x = a)] in the SCM, by Monte Carlo"),
)}


def get_kind(name: str) -> QuestionKind:
    """The kind called ``name`` (or by its abbreviation); unknown names list the known ones."""
    if name in KINDS:
        return KINDS[name]
    for kind in KINDS.values():
        if kind.abbreviation.lower() == str(name).lower():
            return kind
    raise UnknownNameError("question kind", name, KINDS)


def kinds_of_level(level: str) -> list[QuestionKind]:
    if level not in LEVELS:
        raise UnknownNameError("question level", level, LEVELS)
    return [kind for kind in KINDS.values() if kind.level == level]
