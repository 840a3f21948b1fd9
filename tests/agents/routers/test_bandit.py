"""The bandit scratchpad router (agents.routers.bandit): reproducible given its seed, within
the step budget, under both strategies."""

from __future__ import annotations

import gymnasium as gym

import heuresis_env  # noqa: F401  (registers the environments)
from agents.routers import BanditScratchpadRouter
from heuresis_env.policy import run_episode
from tests.agents.routers.router_data import D, N


def test_bandit_is_deterministic_given_the_seed_and_stays_in_budget():
    env = gym.make("Heuresis-wild-v0", d=D, n=N, max_steps=12)
    runs = []
    for _ in range(2):
        policy = BanditScratchpadRouter(seed=7)
        result = run_episode(env, policy, seed=0, options={"index": 4})
        assert result.termination_reason == "submitted" and result.steps <= 12
        runs.append((result.scores, policy.transcript()))
    assert runs[0] == runs[1]
    planner = runs[0][1][0]["planner"]
    assert sum(planner["pulls"].values()) == len(planner["history"]) > 0
    thompson = BanditScratchpadRouter(strategy="thompson", seed=7)
    result = run_episode(env, thompson, seed=0, options={"index": 4})
    assert result.termination_reason == "submitted" and result.steps <= 12
