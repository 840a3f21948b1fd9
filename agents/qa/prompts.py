"""Prompts of the language-model policy in question mode: a CausalAgent-style ReAct protocol,
the tool levels it maps questions to, the code-only arm, and the final-answer turn.

The environment's first observation already holds the question, how to answer it, the
budgets and the tools; the system prompt adds the loop (Thought, one Action, Observation; at
most ``max_iterations`` of them) and how the tools answer each level of question, as in
CausalAgent (variable level: a CI test given the named variables; edge level: PC, then a query
on its graph; graph level: PC on all variables or the subset; effect level: an effect estimate
with the named covariates).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: the first words of the final-answer request
FINAL_ANSWER_MARKER = "FINAL TURN"

_PROTOCOL = (
    "You are a causal analysis agent. The user's first message describes a data table, asks "
    "one causal question about it and lists the tools. Answer the question from the data, "
    "with the tools. Work in a ReAct loop: write a short Thought (what you know, what to "
    "check next), then take exactly ONE Action{how}; you then receive its Observation. You "
    "have at most {iterations} iterations. As soon as you know the answer, call the answer "
    "tool with it: \"yes\" or \"no\", a number, or an edge list, as the question asks.")
_HOW_NATIVE = " by calling one tool"
_HOW_TEXT = (" by writing one JSON object {\"tool\": NAME, \"args\": {...}} at the end of your "
             "reply (a ```json block is fine) and nothing after it")

_TOOL_LEVELS = (
    "How the tools answer each level of question. Variable level (independence): ci_test of "
    "the two variables given exactly the conditioning variables the question names (none for "
    "marginal independence); fisherz tests linear dependence, kci also non-linear dependence; "
    "a p-value above 0.05 means independence is not rejected. Edge level (direct cause, "
    "collider, confounding): run_algorithm (pc-fisherz, or pc-kci for non-linear data) with "
    "save_as, then direct_cause, collider or confounder on the saved graph. Graph level: "
    "run_algorithm on all variables, or with variables set to the question's variables for a "
    "partial graph, and answer with its edges. Effect level: estimate_effect with the "
    "covariates the question names (else a back-door set, e.g. the treatment's parents in a "
    "graph); it returns the effect of one unit of the treatment, so multiply by the "
    "difference of the two values the question states.")

_CODE_ONLY = (
    "Your only tools are run_code — Python over the data array X (n rows x d columns, column "
    "names in the list names; numpy, scipy and scikit-learn are importable; print what you "
    "want to see) — and answer. Compute what the question needs in code (tests, "
    "regressions, a graph search), then answer.")


def question_system_prompt(toolbox: str, native_tools: bool, max_iterations: int) -> str:
    """The system prompt of a question episode."""
    parts = [_PROTOCOL.format(how=_HOW_NATIVE if native_tools else _HOW_TEXT,
                              iterations=max_iterations)]
    parts.append(_CODE_ONLY if toolbox == "code" else _TOOL_LEVELS)
    return "\n\n".join(parts)


def answer_instructions(question: Mapping[str, Any]) -> str:
    """How to give this question's answer in a plain reply."""
    answer_type = question.get("answer_type")
    if answer_type == "yes_no":
        return "Reply with yes or no only (or call answer)."
    if answer_type == "number":
        return "Reply with the number only (or call answer)."
    names: Sequence[str] = question.get("subset_names") or []
    return ("Reply with the edge list only, one edge per line (A --> B, A --- B, A <-> B), over "
            f"{', '.join(names)}; reply [] for no edges (or call answer).")


def final_answer_request(question: Mapping[str, Any], reason: str) -> str:
    """The last turn's request for the answer (``reason``: iterations, steps, time, error)."""
    why = {"steps": "the iteration or step budget is used up",
           "time": "the wall time is nearly over",
           "error": "the model service failed on the last turn"}.get(reason, reason)
    return (f"{FINAL_ANSWER_MARKER}: {why}. Do not call any tool other than answer. Give your "
            f"answer to the question now: {question.get('text', '')} "
            + answer_instructions(question))


def final_answer_retry(problem: str, question: Mapping[str, Any]) -> str:
    """The one retry after an answer that could not be read."""
    return (f"{FINAL_ANSWER_MARKER} (retry): your answer could not be read: {problem}. "
            + answer_instructions(question))
