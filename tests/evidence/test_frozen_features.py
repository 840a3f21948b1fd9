"""The evidence tables as they were frozen: the evidence grid, the repair table and the pair
statistics of two instances, bit for bit, with their channel names and their text.

The shipped amortized model reads the grid's channels by position, and the learned repair
and RL models the repair table's columns, so declaring the features differently (issue 43:
blocks that return named matrices, the text derived from the declarations) must leave every
array, name, channel order and printed table as it was. ``data/frozen_features.json`` holds
what the code before that change computed (the SHA-256 of each float32/float64 array's bytes,
its shape, the channel names and the full text tables); regenerate it only for a change that
is meant to move the features (and then bump the table's version):

    python tests/evidence/test_frozen_features.py > tests/evidence/data/frozen_features.json
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from heuresis_env.evidence import (
    GRID_NODE_FEATURE_NAMES,
    GRID_PAIR_FEATURE_NAMES,
    REPAIR_FEATURE_NAMES,
    STATISTICS_NODE_FEATURE_NAMES,
    STATISTICS_PAIR_FEATURE_NAMES,
    compute_evidence_grid,
    compute_pair_statistics,
    compute_repair_evidence,
)
from heuresis_env.generation import InstanceKey, generate_instance

FIXTURE = Path(__file__).parent / "data" / "frozen_features.json"
#: small instances of two families (the repair table with its default algorithms)
KEYS = {"lg-0": InstanceKey("lg", "dev", 0, d=8, n=300),
        "wild-1": InstanceKey("wild", "dev", 1, d=8, n=300)}


def _digest(array: np.ndarray) -> dict[str, Any]:
    return {"dtype": str(array.dtype), "shape": list(array.shape),
            "sha256": hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()}


def features(key: InstanceKey) -> dict[str, Any]:
    """What the fixture records of one instance."""
    instance = generate_instance(key)
    data, names, sha = instance.X, instance.names, instance.sha256
    grid = compute_evidence_grid(data, names, sha)
    repair = compute_repair_evidence(data, names, sha)
    statistics = compute_pair_statistics(data, names, sha)
    return {
        "grid_pairs": _digest(grid.pairs), "grid_nodes": _digest(grid.nodes),
        "grid_text": grid.table_text(),
        "repair_values": _digest(repair.values), "repair_pairs": _digest(repair.pairs),
        "repair_reference_sets": [list(s) for s in repair.reference_sets],
        "repair_text": repair.table_text(), "repair_text_kept": repair.table_text("kept", 4),
        "statistics_pairs": _digest(statistics.pairs),
        "statistics_nodes": _digest(statistics.nodes),
        "statistics_text": statistics.table_text(),
    }


def channels() -> dict[str, list[str]]:
    return {"grid_pairs": list(GRID_PAIR_FEATURE_NAMES), "grid_nodes": list(GRID_NODE_FEATURE_NAMES),
            "repair": list(REPAIR_FEATURE_NAMES),
            "statistics_pairs": list(STATISTICS_PAIR_FEATURE_NAMES),
            "statistics_nodes": list(STATISTICS_NODE_FEATURE_NAMES)}


def test_the_channels_are_named_and_ordered_as_frozen():
    assert channels() == json.loads(FIXTURE.read_text(encoding="utf-8"))["channels"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(KEYS))
def test_the_tables_are_bit_for_bit_as_frozen(name, tmp_path, monkeypatch):
    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path))  # computed here, not read back
    frozen = json.loads(FIXTURE.read_text(encoding="utf-8"))["instances"][name]
    now = features(KEYS[name])
    for part in frozen:
        assert now[part] == frozen[part], part


if __name__ == "__main__":
    json.dump({"channels": channels(),
               "instances": {name: features(key) for name, key in sorted(KEYS.items())}},
              sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
