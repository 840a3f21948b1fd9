"""Heuresis: Gymnasium environments for agentic causal discovery.

Importing this package registers ``Heuresis-{family}-v0`` for the six families, the BNLearn
structures, the Sachs data and ``Heuresis-dataset-v0`` with string entry points, as
Gymnasium's own environments do, so it stays light: heavy modules (torch, causal-learn's
searches, dcor) load only when an algorithm or test that needs them runs.
``load_dataset("data.csv", graph="graph.txt" | None)`` turns a table into an instance.
"""

from heuresis_env.generation.datasets import load_dataset
from heuresis_env.registration import register_envs
from heuresis_env.version import __version__

__all__ = ["__version__", "load_dataset", "register_envs"]

register_envs()
