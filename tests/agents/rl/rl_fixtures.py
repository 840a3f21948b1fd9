"""What the RL tests share: tiny RL-view environments (wild, d = 5, n = 200), an audit of
refused or masked actions, and a model trained for 64 steps."""

from __future__ import annotations

import gymnasium as gym
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO

from agents.rl import PairwiseMaskablePolicy, PairwisePolicy, make_training_env, policy_config
from heuresis_env.policy import EpisodeSettings
from heuresis_env.registration import env_id, register_envs

register_envs()
TINY = {"d": 5, "n": 200}
SETTINGS = EpisodeSettings(max_steps=12, max_seconds=None, guided=True)


def rl_env(target: str = "none", **kwargs) -> gym.Env:
    options = {"indices": [0, 1], "max_steps": 60, **TINY, **kwargs}
    return gym.make(env_id("wild"), interface="rl", guided=True, target=target, **options)


class MaskAudit(gym.Wrapper):
    """Records every action the wrapped RL-view env refused or that its mask forbade."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.violations: list[int] = []
        self.actions: list[int] = []

    def step(self, action):
        if not self.env.unwrapped.action_masks()[int(action)]:
            self.violations.append(int(action))
        self.actions.append(int(action))
        observation, reward, terminated, truncated, info = self.env.step(action)
        if info.get("error"):
            self.violations.append(int(action))
        return observation, reward, terminated, truncated, info


def tiny_model(algo: str, architecture: str = "pairwise", seed: int = 0):
    env = make_training_env("wild", SETTINGS, [0, 1], n_envs=1, flatten=algo == "ppo",
                            step_cost=0.002, seed=seed, **TINY)
    if architecture == "pairwise":
        policy = PairwiseMaskablePolicy if algo == "maskable_ppo" else PairwisePolicy
        kwargs = {"hidden": 16}
    else:
        policy = "MultiInputPolicy" if algo == "maskable_ppo" else "MlpPolicy"
        kwargs = {"net_arch": [16]}
    cls = MaskablePPO if algo == "maskable_ppo" else PPO
    model = cls(policy, env, n_steps=32, batch_size=32, n_epochs=1, seed=seed, device="cpu",
                policy_kwargs=kwargs)
    model.learn(64)
    config = policy_config(algo, architecture, "wild", TINY["d"], TINY["n"], SETTINGS)
    return model, config
