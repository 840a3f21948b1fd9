"""How an episode ends: its budgets (the step limit a ``TimeLimit`` wrapper sets, the wall
time), the reason it ends after a step (submitted, or a budget spent), and its final scores."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

import gymnasium as gym
import numpy as np

from heuresis_env.env.tasks import QuestionTask
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.errors import HeuresisError

#: termination reasons reported in the final ``info``
TERMINATION_REASONS = ("submitted", "step_budget", "wall_time", "aborted", "replay_end")


def time_limit_around(env: gym.Env) -> int | None:
    """The step limit of a ``TimeLimit`` wrapper (``gym.make(..., max_episode_steps=k)``) that
    is calling into ``env`` right now, or None. Gymnasium never tells the environment about
    it, so the calling frames are asked (once per reset)."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(64):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if isinstance(owner, gym.wrappers.TimeLimit) and owner.unwrapped is env:
            return int(owner._max_episode_steps)
        frame = frame.f_back
    return None


def check_max_seconds(max_seconds: Any) -> float | None:
    """The wall-time budget in seconds: a positive number, or None for none."""
    if max_seconds is not None and (isinstance(max_seconds, bool) or not isinstance(
            max_seconds, int | float) or not max_seconds > 0):
        raise HeuresisError(f"max_seconds must be a positive number or None, "
                            f"got {max_seconds!r}")
    return None if max_seconds is None else float(max_seconds)


def end_reason(submitted: bool, steps_used: int, max_steps: int, max_seconds: float | None,
               elapsed_seconds: float) -> str | None:
    """Why the episode ends after this step ("submitted", "step_budget", "wall_time"), or
    None while it goes on."""
    if submitted:
        return "submitted"
    if steps_used >= max_steps:
        return "step_budget"
    if max_seconds is not None and elapsed_seconds >= max_seconds:
        return "wall_time"
    return None


def final_scores(truth: Mapping[str, Callable], task: QuestionTask | None,
                 state: EpisodeState) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The episode's scores as plain numbers (None where a table has no graph), from the
    referee's closures, or in a question episode from its task with the question's outcome."""
    question = None
    if task is None:
        scores = truth["scores"](state.working_graph)
    else:
        scores = task.scores(state.answer)
        question = {"question": task.outcome(state.answer)}
    scores = {k: (None if v is None else float(v) if isinstance(v, float | np.floating)
                  else int(v)) for k, v in scores.items()}
    return scores, question
