"""Question mode of the environment (``task="qa"``): which question an episode asks, under
which column names, its statement, and the referee that scores its answer.

:class:`QuestionTask` is what :class:`~heuresis_env.env.core.HeuresisEnv` delegates to in a
question episode. It holds the configuration and, during an episode, the public question and
the referee's closures (:func:`heuresis_env.questions.make_question_referee`) — never the
question set or the truth, which stay in the questions module's cache and the closures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.instances import get_source
from heuresis_env.generation.record import NoSCMError
from heuresis_env.generation.salts import SaltArgument
from heuresis_env.questions import (
    KINDS,
    NAME_MODES,
    PublicQuestion,
    column_names,
    make_question_referee,
    question_set,
    questions_per_kind,
)


class QuestionTask:
    """Question episodes over one family and split: the set's questions ``questions`` (ids;
    default all), asked under ``name_mode`` column names."""

    def __init__(self, family: str, split: str, d: int, n: int, graph_model: str,
                 name_mode: str = "anonymous", questions: Sequence[int] | None = None,
                 salt_holder: Callable[[], SaltArgument] = lambda: None):
        if name_mode not in NAME_MODES:
            raise UnknownNameError("name mode", name_mode, NAME_MODES)
        if get_source(family) is not None:
            raise NoSCMError(f"question episodes need the structural causal model behind the "
                             f"data (their answers come from its graph and from sampling under "
                             f"do()); {family!r} is a data table, which has none")
        self.family, self.split, self.d, self.n = family, split, d, n
        self.graph_model, self.name_mode = graph_model, name_mode
        self.size = questions_per_kind(split) * len(KINDS)
        if questions is None:
            self.questions: tuple[int, ...] = tuple(range(self.size))
        else:
            self.questions = tuple(_question_id(q, self.size, split) for q in questions)
            if not self.questions:
                raise HeuresisError("questions must be a non-empty list of question ids")
        self._salt_holder = salt_holder
        self.public: PublicQuestion | None = None
        self.names: tuple[str, ...] = ()
        self._referee: dict[str, Callable] | None = None

    def choose(self, options: dict[str, Any], rng: np.random.Generator) -> int:
        """The question id of the next episode: ``options["question"]``, else a draw."""
        if options.get("index") is not None:
            raise HeuresisError("a question episode is picked by options={'question': q} (a "
                                "question id of the split's set), not by an instance index")
        if options.get("question") is not None:
            return _question_id(options["question"], self.size, self.split)
        return int(self.questions[int(rng.integers(len(self.questions)))])

    def open(self, question_id: int) -> PublicQuestion:
        """Start an episode on a question: its public part, names and referee."""
        questions = question_set(self.family, self.split, self.d, self.n, self.graph_model,
                                 self._salt_holder())
        question = questions.question(question_id)
        self.public = question.public
        self.names = column_names(self.name_mode, self.d, question.public.names_seed)
        self._referee = make_question_referee(question)
        return self.public

    def _opened(self) -> tuple[PublicQuestion, dict[str, Callable]]:
        """The open question's public part and referee (``open`` runs in ``reset``)."""
        if self.public is None or self._referee is None:
            raise HeuresisError("no question is open: call reset() first")
        return self.public, self._referee

    def info(self) -> dict[str, Any]:
        """The public question for ``reset``'s info (variables by position and by name)."""
        public, _ = self._opened()
        return {**public.to_dict(self.names), "text": public.text(self.names),
                "name_mode": self.name_mode}

    def statement(self, n: int, budget: str, tool_lines: Sequence[str]) -> str:
        """The first observation's text in a question episode."""
        (public, _), names = self._opened(), self.names
        kind = public.info
        naming = ("names and order carry no information" if self.name_mode == "anonymous"
                  else "the columns are in random order")
        return "\n".join([
            "TASK: answer a causal question about a data table.",
            "",
            f"The data X has {n} rows and {self.d} columns named {', '.join(names)}. An unknown "
            "structural causal model over a directed acyclic graph generated them; every "
            f"column is standardized and {naming}. The answer is judged against that model.",
            "",
            f"QUESTION ({kind.level} level, {kind.abbreviation}): {public.text(names)}",
            public.answer_format(names),
            "",
            "Each step is one action, a JSON object {\"tool\": NAME, \"args\": {...}}, for "
            "example",
            '  {"tool": "ci_test", "args": {"x": "' + names[0] + '", "y": "' + names[1]
            + '", "given": [], "method": "kci"}}',
            "Tool calls read evidence; graph edits change a working graph you may use as "
            f"scratch. Every action, a rejected one included, costs one step. {budget} When it "
            "runs out before you answer, the question counts as unanswered (wrong). A malformed "
            "answer is rejected and you may answer again.",
            "",
            "TOOLS (name(arguments) - what it does):",
            *tool_lines,
        ])

    def scores(self, answer: Any) -> dict[str, float]:
        return self._opened()[1]["scores"](answer)

    def outcome(self, answer: Any) -> dict[str, Any]:
        """The question, its truth and the answer: for the final info, after the episode."""
        return {**self._opened()[1]["outcome"](answer), "name_mode": self.name_mode}


def _question_id(value: Any, size: int, split: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) \
            or not 0 <= value < size:
        raise HeuresisError(f"a question id of the {split} set is an integer in 0..{size - 1}, "
                            f"got {value!r}")
    return int(value)
