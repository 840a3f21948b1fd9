"""The inspect solver: one Heuresis episode per sample, played by the language-model policy
through the eval's model, on the referee's side of this process.

Each sample names an instance (or a question) and the epoch its repeat. The solver builds the
policy — :class:`~agents.llm.policy.LLMPolicy`, or :class:`~agents.qa.llm.QuestionLLMPolicy`
on question episodes: the same prompts, final turn, parsing and wall-time reserve as
``heuresis evaluate --policy llm`` — over an :class:`~agents.inspect_task.backend.
InspectChatBackend`, and runs the episode exactly as the evaluation runner does
(:class:`~heuresis_env.evaluation.EpisodeRunner`: the environment built from the run's
settings alone, the seed a hash of the episode id, the step and wall budgets enforced by the
environment) in a worker thread, so tool calls never block inspect's event loop.

What the sample keeps is public: the policy's conversation as the sample's messages, the
episode's result record, trace and transcript in the sample's store (a question's truth cut
out of the record and the trace). The truth stays in the referee's closures; the outcome the
scorer reads stays in this process's memory (:data:`OUTCOMES`), never in the sample.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from agents.inspect_task.backend import InspectChatBackend, inspect_messages
from agents.llm import LLMPolicy
from agents.qa import MAX_ITERATIONS, QuestionLLMPolicy
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import (
    EpisodeRunner,
    EpisodeTask,
    RunSpec,
    episode_id,
    episode_seed,
    question_episode_id,
    worker_name,
)
from heuresis_env.files import json_compact
from heuresis_env.generation import SealedSalt, sealing_salt
from heuresis_env.graphs import Graph
from heuresis_env.policy import EpisodeSettings

__all__ = ["OUTCOMES", "STORE_RECORD", "STORE_TRACE", "STORE_TRANSCRIPT", "EpisodePlan",
           "answer_text", "heuresis_agent", "play_episode", "policy_name", "public_record", "public_trace",
           "sample_episode", "sealed_salt"]

#: the sample-store keys of an episode's public result record, trace (JSON lines) and the
#: policy's transcript (JSON)
STORE_RECORD, STORE_TRACE, STORE_TRANSCRIPT = ("heuresis_record", "heuresis_trace",
                                               "heuresis_transcript")


@dataclass(frozen=True)
class EpisodePlan:
    """What a task fixes for every episode: the task, the run's settings (budgets, prompt
    level, target, toolbox, guided start), the instance size and the policy's options."""

    task: str
    settings: EpisodeSettings
    d: int | None = None
    n: int | None = None
    name_mode: str = "anonymous"
    native_tools: bool = True
    max_iterations: int = MAX_ITERATIONS


def policy_name(model: Any) -> str:
    """The policy a run directory names for an inspect model: ``inspect/<provider/model>``."""
    return f"inspect/{model}"


def sealed_salt(split: str) -> SealedSalt | None:
    """The test salt of this process's environment for ``split`` (checked strong enough), or
    None. Read where it is used, never passed as a task, solver or scorer argument: inspect
    writes those arguments into the log."""
    return sealing_salt(split)


def sample_episode(metadata: Mapping[str, Any], epoch: int) -> EpisodeTask:
    """The episode a sample's epoch plays: repeat ``epoch − 1`` of its instance or question,
    with the evaluation runner's id and seed."""
    try:
        family, split = str(metadata["family"]), str(metadata["split"])
        index = int(metadata["index"])
        question = metadata.get("question")
    except (KeyError, TypeError, ValueError):
        raise HeuresisError("this sample was not made by a Heuresis task (its metadata lacks "
                            "family, split and index)") from None
    repeat = int(epoch) - 1
    if question is None:
        name = episode_id(family, split, index, repeat)
    else:
        name = question_episode_id(family, split, int(question), repeat)
    return EpisodeTask(name, family, split, index, repeat, episode_seed(name),
                       question=None if question is None else int(question))


def play_episode(backend: InspectChatBackend, plan: EpisodePlan, episode: EpisodeTask) -> Any:
    """Run one episode with the language-model policy over ``backend`` (blocking: call it in a
    worker thread of the event loop); returns the runner's
    :class:`~heuresis_env.evaluation.episode.EpisodeOutcome`."""
    name = policy_name(backend.model)
    policy: LLMPolicy
    if plan.task == "qa":
        policy = QuestionLLMPolicy(backend, max_iterations=plan.max_iterations, name=name,
                                   native_tools=plan.native_tools)
    else:
        policy = LLMPolicy(backend, name=name, native_tools=plan.native_tools)
    spec = RunSpec(policy=name, policy_options={}, settings=plan.settings, d=plan.d, n=plan.n,
                   salt=sealed_salt(episode.split), task=plan.task, name_mode=plan.name_mode,
                   policy_isolation="inspect")
    runner = EpisodeRunner(spec, worker_name("inspect"), policy=policy)
    try:
        return runner.run(episode)
    finally:
        runner.close()


def public_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A result record without what only the referee may know: a question's truth."""
    public = copy.deepcopy(dict(record))
    if isinstance(public.get("question"), dict):
        public["question"].pop("truth", None)
    return public


def public_trace(text: str | None) -> str | None:
    """A trace without a question's truth (its end record states the question's outcome)."""
    if text is None:
        return None
    lines = []
    for line in text.splitlines():
        record = json.loads(line) if line.strip() else None
        if isinstance(record, dict) and isinstance(record.get("question"), dict) \
                and "truth" in record["question"]:
            record["question"].pop("truth")
            line = json_compact(record)
        lines.append(line)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


class _Outcomes:
    """Finished episodes by sample (its uuid), from the solver to the scorer, in memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._outcomes: dict[str, tuple[Any, EpisodePlan, EpisodeTask]] = {}

    def put(self, key: str, value: tuple[Any, EpisodePlan, EpisodeTask]) -> None:
        with self._lock:
            self._outcomes[key] = value

    def pop(self, key: str) -> tuple[Any, EpisodePlan, EpisodeTask] | None:
        with self._lock:
            return self._outcomes.pop(key, None)


#: the episodes the solver finished and the scorer has not scored yet
OUTCOMES = _Outcomes()


def answer_text(record: Mapping[str, Any]) -> str:
    """What the episode answered, as the sample's output: the final edge list, or the answer
    to the question."""
    question = record.get("question")
    if isinstance(question, dict):
        answer = question.get("answer")
        return "(unanswered)" if answer is None else json.dumps(answer)
    final = record.get("final_graph")
    return Graph.from_dict(final).to_text() if isinstance(final, dict) else "(no graph)"


@solver
def heuresis_agent(task: str = "graph", settings: dict[str, Any] | None = None,
                   d: int | None = None, n: int | None = None, name_mode: str = "anonymous",
                   native_tools: bool = True, max_iterations: int = MAX_ITERATIONS) -> Solver:
    """Play each sample's Heuresis episode with the language-model policy over the eval's model
    (see the module docstring) under the run's ``settings`` (an ``EpisodeSettings`` as a
    dict, default the defaults) and instance size."""
    plan = EpisodePlan(task=task, settings=EpisodeSettings(**(settings or {})), d=d, n=n,
                       name_mode=name_mode, native_tools=native_tools,
                       max_iterations=max_iterations)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        episode = sample_episode(state.metadata, state.epoch)
        backend = InspectChatBackend(get_model())
        outcome = await anyio.to_thread.run_sync(
            functools.partial(play_episode, backend, plan, episode))
        OUTCOMES.put(state.uuid, (outcome, plan, episode))
        record = public_record(outcome.record)
        state.store.set(STORE_RECORD, record)
        state.store.set(STORE_TRACE, public_trace(outcome.trace_text))
        transcript = (json.loads(outcome.transcript_text)
                      if outcome.transcript_text is not None else None)
        state.store.set(STORE_TRANSCRIPT, transcript)
        conversation = [event["message"] for event in transcript or []
                        if event.get("event") == "message"]
        if conversation:
            state.messages = inspect_messages(conversation)
        state.output = ModelOutput.from_content(model=str(backend.model),
                                                content=answer_text(record))
        state.completed = True
        return state

    return solve
