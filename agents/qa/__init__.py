"""Policies for question episodes (``task="qa"``): the scripted tool policy ``qa-tools`` and the
language-model wrapper in question mode (``llm-qa``, and its code-only arm with
``toolbox="code"``). See ``docs/questions.md``."""

from agents.qa.llm import (
    MAX_ITERATIONS,
    QuestionLLMPolicy,
    make_question_llm_policy,
    read_answer,
)
from agents.qa.scripted import QuestionToolPolicy, question_tool_policy

__all__ = ["MAX_ITERATIONS", "QuestionLLMPolicy", "QuestionToolPolicy",
           "make_question_llm_policy", "question_tool_policy", "read_answer"]
