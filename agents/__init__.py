"""Policies for Heuresis environments: routers, the language-model wrapper, RL policies.

Every policy implements :class:`Policy` (reset with the first observation and info, then map
observations to actions); :func:`run_episode` drives any of them.
"""

from heuresis_env.policy import EpisodeResult, EpisodeSettings, Policy, run_episode

__all__ = ["EpisodeResult", "EpisodeSettings", "Policy", "run_episode"]
