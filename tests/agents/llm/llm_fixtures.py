"""What the language-model tests share: environments with a run's budgets, a policy on the
official ``openai`` client talking HTTP to the loopback :class:`agents.llm.server.ChatServer`
(which refuses malformed conversations as the real services do), and readers of the result."""

from __future__ import annotations

import gymnasium as gym

import heuresis_env  # noqa: F401 - registers the environments
from agents.llm.backends import OpenAIChatBackend, RetrySchedule
from agents.llm.policy import LLMPolicy
from agents.llm.server import ChatServer
from heuresis_env.graphs import Graph
from heuresis_env.policy import EpisodeSettings, run_episode

NAMES = [f"X{i}" for i in range(1, 6)]
FAST_RETRY = RetrySchedule(max_retries=3, base_delay=0.01, max_delay=0.05)


def make_env(settings: EpisodeSettings):
    """An environment with the settings' budgets, as the evaluation runner builds it."""
    return gym.make("Heuresis-wild-v0", d=5, n=200, max_steps=settings.max_steps,
                    max_seconds=settings.max_seconds, target=settings.target,
                    toolbox=settings.toolbox, guided=settings.guided, disable_env_checker=True)


def openai_policy(server: ChatServer, model: str = "scripted", timeout: float = 5.0,
                  **options) -> LLMPolicy:
    backend = OpenAIChatBackend(model, base_url=server.url, api_key="test", timeout=timeout,
                                retry=FAST_RETRY)
    return LLMPolicy(backend, **options)


def play(policy: LLMPolicy, settings: EpisodeSettings, index: int = 0):
    policy.configure(settings)
    env = make_env(settings)
    try:
        return run_episode(env, policy, seed=0, options={"index": index})
    finally:
        env.close()


def edges_of(result) -> set[str]:
    return {str(e) for e in Graph.from_dict(result.final_graph).edges()}


def messages_of(server: ChatServer, k: int) -> list[dict]:
    return server.requests[k].body["messages"]
