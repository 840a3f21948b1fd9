"""The name-only probe: what a language model knows of a causal structure from names alone.

``heuresis probe --backend heuristic|openai|anthropic --out DIR`` asks a model, with no data,
for the edges of the seven BNLearn networks and the directions of the Tübingen cause-effect
pairs, with controls (names replaced by indices; Heuresis instances that never had names),
and writes the scores and their table (``probe.json``, ``probe.md``; ``heuresis report
--probe DIR`` adds the table to a report). See ``docs/probe.md``.
"""

from agents.probe.heuristic import PROBE_HEURISTIC_MODEL, ProbeHeuristicModel
from agents.probe.items import ARMS, NetworkItem, PairItem, network_items, pair_items
from agents.probe.run import (
    ProbeResult,
    orientation_accuracy,
    read_pair_answer,
    run_probe,
    score_network,
    write_probe,
)

__all__ = [
    "ARMS", "PROBE_HEURISTIC_MODEL", "NetworkItem", "PairItem", "ProbeHeuristicModel",
    "ProbeResult", "network_items", "orientation_accuracy", "pair_items", "read_pair_answer",
    "run_probe", "score_network", "write_probe",
]
