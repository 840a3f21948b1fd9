"""The ``answer`` tool: ends a question episode (``task="qa"``) with a typed answer.

Its one argument takes the type of the episode's question: ``"yes"``/``"no"`` (or true/false)
for yes/no questions, a number for effects, an edge list over the question's variables for
graph questions. An answer of the wrong type, a variable outside the question, a malformed or
duplicate edge is an error observation and the episode goes on. The answer is stored by column
position (never by name) for the referee, so the column names — decoys included — never reach
scoring.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from heuresis_env.env.toolbox.graph_tools import parse_edge
from heuresis_env.env.toolbox.registry import (
    MAX_LIST_ITEMS,
    MAX_NAME_CHARS,
    Tool,
    ToolArgs,
    ToolResult,
    register_tool,
)
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.errors import HeuresisError
from heuresis_env.graphs import EdgeMark
from heuresis_env.questions import PublicQuestion

_YES = ("yes", "y", "true")
_NO = ("no", "n", "false")

EdgeList = Annotated[list[Annotated[str, Field(max_length=3 * MAX_NAME_CHARS)]],
                    Field(max_length=MAX_LIST_ITEMS)]


class AnswerArgs(ToolArgs):
    answer: bool | float | str | EdgeList = Field(
        description='the answer, typed by the question: "yes" or "no" for yes/no questions; '
                    'a number for effect questions; for graph questions an edge list over the '
                    'question\'s variables such as ["X1 --> X2", "X2 --- X3"] ([] for none)')


def _yes_no(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower().strip(".!") in _YES + _NO:
        return value.strip().lower().strip(".!") in _YES
    raise HeuresisError(f'this is a yes/no question: answer "yes" or "no", got {value!r}')


def _number(value: Any) -> float:
    if isinstance(value, bool) or isinstance(value, list):
        raise HeuresisError(f"this question asks for a number (an average effect), got "
                            f"{value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise HeuresisError(f"this question asks for a number (an average effect), got "
                            f"{value!r}") from None
    if not math.isfinite(number):
        raise HeuresisError(f"the answer must be a finite number, got {value!r}")
    return number


def _edge_texts(value: Any) -> list[str]:
    if isinstance(value, str):  # "A --> B, C --- D" or one edge a line
        text = value.strip()
        if text in ("", "[]"):
            return []
        return [part for part in re.split(r"[\n,;]+", text.strip("[]")) if part.strip()]
    if isinstance(value, list):
        return [str(item) for item in value]
    raise HeuresisError(f'this graph question takes an edge list such as ["A --> B", '
                        f'"B --- C"], got {value!r}')


def _edges(state: EpisodeState, question: PublicQuestion, value: Any) -> np.ndarray:
    """The edge list as a mark matrix over the question's variables (their order)."""
    position = {column: k for k, column in enumerate(question.subset)}
    marks = np.zeros((len(question.subset),) * 2, dtype=np.int8)
    seen: dict[frozenset[int], str] = {}
    allowed = ", ".join(state.names[c] for c in question.subset)
    for text in _edge_texts(value):
        try:
            edge = parse_edge(state, text.strip().strip("'\""))
        except HeuresisError as exc:
            raise HeuresisError(f"this graph question takes an edge list over {allowed}: "
                                f"{exc}") from None
        u, v = state.variable(edge.u), state.variable(edge.v)
        for column, name in ((u, edge.u), (v, edge.v)):
            if column not in position:
                raise HeuresisError(f"{name} is not one of the question's variables; the "
                                    f"graph is over {allowed}")
        pair = frozenset((position[u], position[v]))
        if pair in seen:
            raise HeuresisError(f"duplicate edge: {text!r} and {seen[pair]!r} join the same "
                                "pair; give each pair once")
        seen[pair] = text
        marks[position[v], position[u]] = int(edge.mark_u)
        marks[position[u], position[v]] = int(edge.mark_v)
    return marks


def _edges_text(state: EpisodeState, question: PublicQuestion, marks: np.ndarray) -> str:
    symbols = {int(EdgeMark.TAIL): "-", int(EdgeMark.ARROW): ">", int(EdgeMark.CIRCLE): "o"}
    names = [state.names[c] for c in question.subset]
    shown = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            if marks[a, b]:
                left = {"-": "-", ">": "<", "o": "o"}[symbols[int(marks[b, a])]]
                shown.append(f"{names[a]} {left}-{symbols[int(marks[a, b])]} {names[b]}")
    return f"{len(shown)} edges" + (f" ({', '.join(shown)})" if shown else "")


def read_answer(state: EpisodeState, value: Any) -> tuple[Any, str]:
    """The answer to the episode's question by column position, and how it reads."""
    question = state.question
    if question is None:
        raise HeuresisError("this episode has no question: answer ends a question episode "
                            "(task='qa'); submit ends a graph episode")
    if question.answer_type == "yes_no":
        answer = _yes_no(value)
        return answer, "yes" if answer else "no"
    if question.answer_type == "number":
        number = _number(value)
        return number, f"{number:g}"
    marks = _edges(state, question, value)
    return marks, _edges_text(state, question, marks)


def _answer(state: EpisodeState, args: AnswerArgs) -> ToolResult:
    answer, shown = read_answer(state, args.answer)
    state.answer = answer
    data = {"answer": answer.astype(int).tolist() if isinstance(answer, np.ndarray) else answer}
    return ToolResult(text=f"Answer recorded: {shown}. The episode is over.", data=data,
                      submitted=True)


register_tool(Tool(
    name="answer",
    description="Answer the episode's question; this ends the episode. Yes/no questions take "
                '"yes" or "no", effect questions a number, graph questions an edge list over '
                "the question's variables. An answer of the wrong type is rejected without "
                "ending the episode.",
    args_model=AnswerArgs, run=_answer, category="answer", tasks=("qa",), ends_episode=True))
