"""One interface for every policy: language-model wrappers, RL policies, scripted routers and
the reference baselines.

It lives in ``heuresis_env`` so that the evaluation runner can drive any policy without
importing ``agents`` or ``baselines``; ``agents`` re-exports it for policy authors.

A policy is reset with the first observation and info, then maps each observation (and the
step's info) to one action: a JSON string or a dict ``{"tool": NAME, "args": {...}}`` on the
text view, an integer on the RL view. :func:`run_episode` drives any policy on any Heuresis
env and returns an :class:`EpisodeResult`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym

from heuresis_env.budgets import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MAX_STEPS,
    DEFAULT_TOKEN_BUDGET_PER_TURN,
)


@dataclass(frozen=True)
class EpisodeSettings:
    """The settings every policy in a comparison shares, imposed by the runner.

    The environment enforces the step and wall budgets; a language-model policy also obeys
    ``token_budget_per_turn``, ``prompt_level`` and ``target``. Scripted policies may ignore
    what does not apply to them, but they receive the same object. ``experiments`` is the
    experiment budget in rows (0: the observational benchmark; ``docs/experiments.md``).
    """

    max_steps: int = DEFAULT_MAX_STEPS
    max_seconds: float = DEFAULT_MAX_SECONDS
    token_budget_per_turn: int = DEFAULT_TOKEN_BUDGET_PER_TURN
    prompt_level: int = 1
    target: str = "none"
    guided: bool = False
    toolbox: str = "full"
    experiments: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON; an observational run's (experiments 0) as they were before
        experiments existed, so its stored config still matches."""
        settings = asdict(self)
        if not settings["experiments"]:
            del settings["experiments"]
        return settings


class Policy(ABC):
    """Base class of all policies. Subclasses set ``name`` and implement :meth:`act`."""

    name: str = "policy"
    #: "text" (JSON/dict actions) or "rl" (integer actions on the RL view)
    interface: str = "text"
    settings: EpisodeSettings = EpisodeSettings()

    def configure(self, settings: EpisodeSettings) -> None:
        """Receive the run's shared settings before the first episode (the runner calls it)."""
        self.settings = settings

    def reset(self, observation: Any, info: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Start an episode. The default keeps nothing."""

    @abstractmethod
    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """The next action for this observation."""

    def usage(self) -> dict[str, Any]:
        """Resources used in the current episode (tokens, cost, API retries); empty by default."""
        return {}

    def transcript(self) -> list[dict[str, Any]] | None:
        """The episode's full exchange with a model, for policies that have one."""
        return None

    def failure(self) -> str | None:
        """Why this episode's submission is not what the policy set out to submit, or None.

        A policy that was refused a tool it needs (an algorithm run that failed, a budget too
        small for its plan) or whose submission the environment rejected says so here; the
        runner records the reason as the episode's ``error``, so the episode is reported as
        errored rather than as a finished empty submission.
        """
        return None

    def notes(self) -> list[str]:
        """What a reader of the run should know about how the policy ran (e.g. a condition it
        was not made for); the runner keeps them with each episode and the run's summary
        lists them once. Empty by default."""
        return []

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (clients, servers)."""


class ReferencePolicy(Policy):
    """A reference that needs the hidden truth by definition (the ideal oracle).

    It is not an agent and never competes: ``heuresis evaluate`` runs it in the runner's own
    process — on the referee's side — and hands it the episode's instance (hidden record
    included) through :meth:`observe_truth` before each ``reset``; its runs and report rows
    are marked as references. Register it in the ``heuresis.references`` entry-point group
    (never in ``heuresis.policies``, whose members run in a separate process that holds no
    truth).
    """

    #: set by :meth:`observe_truth` for the coming episode
    instance: Any = None

    def observe_truth(self, instance: Any) -> None:
        """Receive the coming episode's :class:`~heuresis_env.generation.instances.Instance`."""
        self.instance = instance


@dataclass
class EpisodeResult:
    """What one episode produced: the final scores and how the episode ended."""

    policy: str
    instance: dict[str, Any]
    scores: dict[str, float]
    steps: int
    terminated: bool
    truncated: bool
    termination_reason: str
    wall_seconds: float
    total_reward: float
    usage: dict[str, Any] = field(default_factory=dict)
    final_graph: dict[str, Any] | None = None
    error: str | None = None

    @property
    def finished(self) -> bool:
        """True when the policy submitted (the reporting rule's "finished episode")."""
        return self.terminated and not self.truncated

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_episode(env: gym.Env, policy: Policy, *, seed: int | None = None,
                options: dict[str, Any] | None = None, max_actions: int = 100_000) -> EpisodeResult:
    """Drive ``policy`` on ``env`` from reset until the episode terminates or truncates.

    The env enforces the budgets; ``max_actions`` only guards against an env that never ends.
    """
    started = time.perf_counter()
    observation, info = env.reset(seed=seed, options=options)
    policy.reset(observation, info)
    instance = dict(info.get("instance", {}))
    total_reward, steps = 0.0, 0
    terminated = truncated = False
    while not (terminated or truncated):
        if steps >= max_actions:
            raise RuntimeError(f"episode did not end after {max_actions} actions")
        action = policy.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        total_reward += float(reward)
        steps += 1
    return EpisodeResult(
        policy=policy.name,
        instance=instance,
        scores=dict(info.get("scores", {})),
        steps=steps,
        terminated=bool(terminated),
        truncated=bool(truncated),
        termination_reason=str(info.get("termination_reason", "submitted" if terminated else "")),
        wall_seconds=time.perf_counter() - started,
        total_reward=total_reward,
        usage=policy.usage(),
        final_graph=info.get("final_graph"),
    )
