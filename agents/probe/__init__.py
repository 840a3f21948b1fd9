"""The name-only probe: what a language model knows of a causal structure from names alone.

``heuresis probe --backend heuristic|openai|anthropic --out DIR`` asks a model, with no data,
for the edges of the seven BNLearn networks and the directions of the Tübingen cause-effect
pairs, with controls (names replaced by indices; Heuresis instances that never had names),
and writes the scores and their table (``probe.json``, ``probe.md``; ``heuresis report
--probe DIR`` adds the table to a report). See ``docs/probe.md``.

The names below load on first use (:mod:`agents.faces`): the run's scores are written in the
report stage's probe format, and ``heuresis_env.reports`` loads the evaluation stage.
"""

from typing import TYPE_CHECKING

from agents.faces import lazy_face

if TYPE_CHECKING:  # what type checkers see; at run time each name loads on first use
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

#: public name → the module of this package that defines it
_EXPORTS = {
    "PROBE_HEURISTIC_MODEL": "heuristic", "ProbeHeuristicModel": "heuristic",
    "ARMS": "items", "NetworkItem": "items", "PairItem": "items", "network_items": "items",
    "pair_items": "items",
    "ProbeResult": "run", "orientation_accuracy": "run", "read_pair_answer": "run",
    "run_probe": "run", "score_network": "run", "write_probe": "run",
}

__all__ = [
    "ARMS", "NetworkItem", "PROBE_HEURISTIC_MODEL", "PairItem", "ProbeHeuristicModel",
    "ProbeResult", "network_items", "orientation_accuracy", "pair_items", "read_pair_answer",
    "run_probe", "score_network", "write_probe",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
