"""The language-model policy in question mode (``llm-qa``): CausalAgent's ReAct loop over the
environment's tools, at most ``max_iterations`` (15) actions, ending with ``answer``.

It is :class:`~agents.llm.policy.LLMPolicy` — the same chat backends, conversation, accounting,
wall-time reserve and transcripts — with the question-mode system prompt
(:mod:`agents.qa.prompts`), the question's tool schemas (``answer`` instead of ``submit``) and
a final turn that asks for the answer: on the last iteration (or step, or near the wall time)
the model is asked to answer now; a reply that cannot be read is retried once; if both fail
the question is left unanswered and the policy spends the remaining steps without calling the
model. Run it with ``toolbox="code"`` for the code-only arm (``run_code`` and ``answer``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.llm import (
    FINAL_NOT_RUN_MESSAGE,
    BackendError,
    ChatBackend,
    ChatReply,
    EdgeListError,
    ExtractedAction,
    LLMPolicy,
    PendingCall,
    PriceTable,
    extract_action,
    make_llm_policy,
    parse_edge_list,
)
from agents.qa.prompts import final_answer_request, final_answer_retry, question_system_prompt
from heuresis_env.errors import HeuresisError

#: CausalAgent's default iteration limit
MAX_ITERATIONS = 15
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


@dataclass(frozen=True)
class _Read:
    value: Any = None
    problem: str | None = None
    reply: ChatReply | None = None
    extracted: ExtractedAction | None = None

    @property
    def native_answer(self) -> bool:
        """The answer came as a native call of the answer tool."""
        return (self.extracted is not None and self.extracted.source == "tool_call"
                and isinstance(self.extracted.action, dict)
                and self.extracted.action.get("tool") == "answer")


def read_answer(source: Any, question: Mapping[str, Any]) -> Any:
    """An answer of the question's type from a tool argument or a reply's text; raises
    :class:`HeuresisError` saying what is wrong."""
    answer_type = question.get("answer_type")
    if answer_type == "edges":
        try:
            return parse_edge_list(source, list(question.get("subset_names") or []))
        except EdgeListError as exc:
            raise HeuresisError(str(exc)) from None
    if isinstance(source, bool):
        if answer_type == "yes_no":
            return "yes" if source else "no"
        raise HeuresisError("the question asks for a number, not yes or no")
    if answer_type == "number":
        if isinstance(source, int | float):
            return float(source)
        text = str(source)
        marker = re.search(r"answer\s*(?:is)?\s*[:=]?\s*", text, re.IGNORECASE)
        found = _NUMBER.findall(text[marker.end():] if marker else text)
        if not found:
            raise HeuresisError("no number found; reply with the number only")
        return float(found[0] if marker else found[-1])
    found = _YES_NO.findall(str(source))
    if not found:
        raise HeuresisError('no "yes" or "no" found; reply with yes or no only')
    return found[-1].lower() if len(set(f.lower() for f in found)) == 1 else found[0].lower()


class QuestionLLMPolicy(LLMPolicy):
    """The ReAct language-model policy on question episodes (see the module docstring)."""

    def __init__(self, backend: ChatBackend, *, max_iterations: int = MAX_ITERATIONS,
                 name: str = "llm-qa", **options: Any):
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) \
                or max_iterations < 1:
            raise HeuresisError(f"max_iterations must be an integer ≥ 1, got {max_iterations!r}")
        super().__init__(backend, name=name, **options)
        self.max_iterations = max_iterations
        self._question: dict[str, Any] = {}
        self._final_turns = 0
        self._gave_up = False

    def reset(self, observation: Any, info: dict[str, Any]) -> None:
        question = info.get("question")
        if not isinstance(question, dict):
            raise HeuresisError("llm-qa answers questions: run it on question episodes "
                                "(task='qa'); the llm policy plays graph episodes")
        self._question = dict(question)
        self._final_turns = 0
        self._gave_up = False
        super().reset(observation, info)

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        if self._gave_up:
            return self._idle_action()
        return super().act(observation, info)

    def _idle_action(self) -> dict[str, Any]:
        """A step that asks nothing of the model, once the question is left unanswered (the
        episode then ends at its step budget, scored as unanswered)."""
        if "show_graph" in self._tool_names:
            return {"tool": "show_graph", "args": {}}
        return {"tool": "", "args": {}}  # the code toolbox: an error observation, a step

    def usage(self) -> dict[str, Any]:
        return {**super().usage(), "max_iterations": self.max_iterations}

    # ---- hooks -----------------------------------------------------------------------------
    def _system_prompt(self, info: dict[str, Any]) -> str:
        return question_system_prompt(self.settings.toolbox, self.native_tools,
                                      self.max_iterations)

    def _actions_left(self, steps_left: int) -> int:
        return min(steps_left, self.max_iterations - self._turns + 1)

    def _final_turn(self, reason: str) -> dict[str, Any]:
        self._final_turns += 1
        self._append({"role": "user", "content": final_answer_request(self._question, reason)})
        read = self._ask_answer("final")
        status = "answer"
        if read.value is None:
            if read.reply is not None:
                self._answer_calls(read.reply, FINAL_NOT_RUN_MESSAGE)
            self._append({"role": "user", "content": final_answer_retry(
                read.problem or "no answer", self._question)})
            read = self._ask_answer("final_retry")
            status = "answer_after_retry"
        self._pending = None
        if read.value is None or self._final_turns > 2:
            if read.reply is not None:
                self._answer_calls(read.reply, FINAL_NOT_RUN_MESSAGE)
            self._gave_up = True
            self._final_status = "unanswered"
            action: dict[str, Any] = self._idle_action()
        else:
            if read.native_answer:  # the environment's reply becomes this call's result
                self._pending = PendingCall(read.extracted.tool_call_id,
                                         read.extracted.ignored_tool_calls)
            elif read.reply is not None:
                self._answer_calls(read.reply, FINAL_NOT_RUN_MESSAGE)
            self._final_status = status
            action = {"tool": "answer", "args": {"answer": read.value}}
        self._event("final_turn", turn=self._turns, reason=reason, status=self._final_status,
                    answer=read.value, problems=[read.problem] if read.problem else [])
        self._event("action", turn=self._turns, steps_left=None, action=action,
                    source="final_turn", note=self._final_status, edges_normalized=False)
        return action

    def _ask_answer(self, purpose: str) -> _Read:
        """One model call for the answer, read from an answer call or from the text."""
        try:
            reply = self._call(purpose, self._final_deadline())
        except BackendError as exc:
            if exc.fatal:
                raise
            return _Read(problem=f"the model call failed ({exc})")
        self._append(reply.assistant_message())
        extracted = extract_action(reply, self._tool_names)
        action = extracted.action
        source: Any = reply.text or ""
        if isinstance(action, dict) and action.get("tool") == "answer" \
                and isinstance(action.get("args"), dict) and "answer" in action["args"]:
            source = action["args"]["answer"]
        try:
            return _Read(read_answer(source, self._question), reply=reply, extracted=extracted)
        except HeuresisError as exc:
            return _Read(problem=str(exc), reply=reply, extracted=extracted)


def make_question_llm_policy(backend: str | None = None, model: str | None = None,
                             base_url: str | None = None, api_key: str | None = None,
                             timeout: float | None = 120.0, max_retries: int = 5,
                             temperature: float | None = None,
                             prices: str | Mapping[str, Any] | None = None,
                             native_tools: bool | None = None, name: str = "llm-qa",
                             thinking_budget: int | None = None,
                             max_tokens_parameter: str | None = None,
                             wall_reserve_seconds: float | None = None,
                             max_iterations: int = MAX_ITERATIONS,
                             model_dir: str | None = None,
                             threads: int | None = None) -> QuestionLLMPolicy:
    """Build the question-mode policy from plain options (the ``llm-qa`` entry point); the
    backend options are those of :func:`agents.llm.policy.make_llm_policy` (``backend=local``:
    a real small model on this machine's CPU, run in this process)."""
    if backend == "heuristic":
        raise HeuresisError("the heuristic stand-in model plays graph episodes only; give "
                            "llm-qa a real model: a chat service (backend openai or "
                            "anthropic) or a local one (backend=local, model=smollm2-135m)")
    base = make_llm_policy(backend=backend, model=model, base_url=base_url, api_key=api_key,
                           timeout=timeout, max_retries=max_retries, temperature=temperature,
                           prices=prices, native_tools=native_tools, name=name,
                           thinking_budget=thinking_budget,
                           max_tokens_parameter=max_tokens_parameter,
                           wall_reserve_seconds=wall_reserve_seconds, model_dir=model_dir,
                           threads=threads)
    return QuestionLLMPolicy(base.backend, max_iterations=max_iterations, name=name,
                             prices=base.prices, native_tools=base.native_tools,
                             wall_reserve_seconds=wall_reserve_seconds,
                             resources=base.release_resources())


__all__ = ["MAX_ITERATIONS", "PriceTable", "QuestionLLMPolicy", "make_question_llm_policy",
           "read_answer"]
