"""Heuresis: Gymnasium environments for agentic causal discovery.

Importing this package registers ``Heuresis-{family}-v0`` for the six families with string
entry points, as Gymnasium's own environments do, so it stays light: heavy modules (torch,
causal-learn's searches, dcor) load only when an algorithm or test that needs them runs.
"""

from heuresis_env.registration import register_envs

__version__ = "0.1.0"

register_envs()
