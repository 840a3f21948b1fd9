"""The machinery of declared features: channel order, the blocks' checks, the derived text."""

from __future__ import annotations

import numpy as np
import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import GRID_BLOCKS, REPAIR_BLOCKS, REPAIR_FEATURES
from heuresis_env.evidence.features import (
    FeatureBlock,
    GridFeature,
    GridLayout,
    TextColumn,
    channel_order,
    grid_table,
    node_features,
    pair_features,
    run_blocks,
    stack,
)


def _blocks(returned: dict | None = None) -> tuple[FeatureBlock, ...]:
    return (
        FeatureBlock("first", (GridFeature("a", True, "a", TextColumn("  A", "  {:.1f}")),
                               GridFeature("b", False, "b")),
                     (GridFeature("m", False, "m", TextColumn(" M", " {:.0f}")),),
                     lambda c: returned if returned is not None else {
                         "a": np.full((2, 2), 1.0), "b": np.array([[0.0, 2.0], [3.0, 0.0]]),
                         "m": np.array([5.0, 6.0])}),
        FeatureBlock("second", (GridFeature("c", False, "c", TextColumn("  C(->,<-)",
                                                                        "  {:.0f},{:.0f}")),),
                     (), lambda c: {"c": np.array([[0.0, 7.0], [8.0, 0.0]])}),
    )


def test_channel_order_is_block_order_after_the_frozen_names():
    blocks = _blocks()
    assert [f.name for f in pair_features(blocks)] == ["a", "b", "c"]
    assert [f.name for f in pair_features(blocks, ("c", "a"))] == ["c", "a", "b"]
    assert [f.name for f in node_features(blocks)] == ["m"]
    with pytest.raises(HeuresisError, match="undeclared"):
        pair_features(blocks, ("z",))
    with pytest.raises(HeuresisError, match="twice"):
        channel_order([GridFeature("a", True, ""), GridFeature("a", False, "")])


def test_a_block_must_return_exactly_what_it_declares():
    with pytest.raises(HeuresisError, match="'first' returned"):
        run_blocks(_blocks({"a": np.zeros((2, 2))}), None, "test")
    computed = run_blocks(_blocks(), None, "test", skip=lambda b: b.name == "second")
    assert set(computed.values) == {"a", "b", "m"} and set(computed.cpu_seconds) == {"first"}
    pairs = stack(computed.values, pair_features(_blocks()), (2, 2))
    assert pairs.shape == (2, 2, 3) and pairs[0, 1, 1] == 2.0
    assert np.all(pairs[:, :, 2] == 0.0)  # the skipped block's feature: zeros


def test_the_text_table_derives_from_the_declarations():
    blocks = _blocks()
    computed = run_blocks(blocks, None, "test")
    pairs = stack(computed.values, pair_features(blocks), (2, 2))
    nodes = stack(computed.values, node_features(blocks), (2,))
    text = grid_table(None, ("X", "Y"), pairs, nodes, pair_features(blocks),
                      node_features(blocks), GridLayout("pair ", "{:<5}", "var", "{:<3}"))
    # "b" declares no column: not shown; "c" is ordered: i -> j, then j -> i
    assert text == "pair   A  C(->,<-)\nX - Y  1.0  7,8\n\nvar M\nX   5\nY   6"


def test_every_shown_column_is_a_declared_feature_and_groups_are_blocks():
    assert {f.group for f in REPAIR_FEATURES} == {b.name for b in REPAIR_BLOCKS}
    for block in REPAIR_BLOCKS:
        assert all(f.group == block.name for f in block.pair)
    shown = [f.name for b in GRID_BLOCKS for f in (*b.pair, *b.node) if f.column is not None]
    assert "abs_r" in shown and "abs_rank_r" not in shown
