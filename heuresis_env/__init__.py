"""Heuresis: Gymnasium environments for agentic causal discovery.

Importing this package is light: heavy modules (torch, causal-learn's searches, dcor)
load only when an algorithm or test that needs them runs.
"""

__version__ = "0.1.0"
