"""Model prices and cost (agents.llm.prices)."""

from __future__ import annotations

import json

import pytest

from agents.llm.prices import PRICES_ENV_VAR, ModelPrice, PriceTable
from heuresis_env.errors import HeuresisError


def test_price_lookup_and_cost(tmp_path, monkeypatch):
    monkeypatch.delenv(PRICES_ENV_VAR, raising=False)
    table = PriceTable.load()
    usage = {"prompt": 1_000_000, "completion": 1_000_000}
    assert table.cost("gpt-4o", usage) == pytest.approx(12.5)
    assert table.cost("gpt-4o-2024-08-06", usage) == pytest.approx(12.5)
    assert table.cost("gpt-4o-mini-2024-07-18", usage) == pytest.approx(0.75)
    assert table.cost("openai/gpt-4.1-mini", usage) == pytest.approx(2.0)
    assert table.cost("gpt-4o", {**usage, "cached_prompt": 400_000}) == pytest.approx(
        0.6 * 2.5 + 0.4 * 1.25 + 10.0)
    assert table.cost("gpt-4ox", usage) is None  # a longer name is not a snapshot
    assert table.cost("llama3.1:8b", usage) is None
    user = tmp_path / "prices.json"
    user.write_text(json.dumps({"models": {"llama3.1": {"input": 0, "output": 0},
                                           "gpt-4o": {"input": 1.0, "output": 2.0},
                                           "*": {"input": 5.0, "output": 5.0}}}))
    monkeypatch.setenv(PRICES_ENV_VAR, str(user))
    table = PriceTable.load()
    assert table.cost("llama3.1:8b", usage) == 0.0
    assert table.cost("gpt-4o", usage) == pytest.approx(3.0)
    assert table.cost("anything-else", usage) == pytest.approx(10.0)
    assert table.cost("gpt-4o-mini", usage) == pytest.approx(0.75)  # shipped entries remain
    assert ModelPrice(1.0, 2.0).cost({"prompt": 10, "completion": 5}) == pytest.approx(2e-5)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"models": {"m": {"input": -1, "output": 0}}}))
    with pytest.raises(HeuresisError, match="number ≥ 0"):
        PriceTable.load(bad)
    with pytest.raises(HeuresisError, match="does not exist"):
        PriceTable.load(tmp_path / "missing.json")
