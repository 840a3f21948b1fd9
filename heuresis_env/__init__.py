"""Heuresis: Gymnasium environments for agentic causal discovery.

Importing this package registers ``Heuresis-{family}-v0`` for the six families with string
entry points, as Gymnasium's own environments do, so it stays light: heavy modules (torch,
causal-learn's searches, dcor) load only when an algorithm or test that needs them runs.
"""

from heuresis_env.registration import register_envs
from heuresis_env.version import __version__

__all__ = ["__version__", "register_envs"]

register_envs()
