"""Token prices and the cost of a model call, from a price table the user can edit.

The table is ``agents/llm/prices.json`` (USD per million tokens: ``input``, ``output`` and
optionally ``cached_input``). A user's table — a path given to the policy, or the path in
``$HEURESIS_PRICES`` — is laid over it, entry by entry. A model is priced by its exact name,
else by the longest listed name it extends with a snapshot date, ``-latest``, an Ollama
tag or a version pin (``gpt-4o-2024-08-06`` and ``llama3.1:8b`` find ``gpt-4o`` and
``llama3.1``; ``gpt-5-pro`` does not find ``gpt-5``), else by the ``"*"`` entry; a model with no price gets
cost ``None``, never a silent zero.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heuresis_env.errors import HeuresisError

#: the environment variable naming a user's price table
PRICES_ENV_VAR = "HEURESIS_PRICES"
DEFAULT_PRICES_PATH = Path(__file__).with_name("prices.json")
_FIELDS = ("input", "output", "cached_input")
#: what may follow a listed name in a longer name of the same model: a dated snapshot
#: ("-2024-08-06", "-20250929"), "-latest", an Ollama tag (":8b") or a version pin ("@...");
#: anything else ("gpt-5-pro", "o3-pro") is another model and needs its own entry
_SNAPSHOT_SUFFIX = re.compile(r"-\d{4}-?\d{2}-?\d{2}|-latest|[:@].+")


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens for one model."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, usage: Mapping[str, Any]) -> float:
        """USD for one call's usage (``prompt``, ``completion``, optional ``cached_prompt``)."""
        prompt = int(usage.get("prompt", 0) or 0)
        completion = int(usage.get("completion", 0) or 0)
        cached = min(prompt, int(usage.get("cached_prompt", 0) or 0))
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return ((prompt - cached) * self.input + cached * cached_rate
                + completion * self.output) / 1e6


def _price(model: str, entry: Any, source: str) -> ModelPrice:
    if not isinstance(entry, Mapping):
        raise HeuresisError(f"{source}: the price of {model!r} must be an object with input "
                            f"and output (USD per million tokens), got {entry!r}")
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        raise HeuresisError(f"{source}: unknown price field(s) {unknown} for {model!r}; the "
                            f"fields are {', '.join(_FIELDS)}")
    values: dict[str, float] = {}
    for field in _FIELDS:
        if field not in entry:
            if field != "cached_input":
                raise HeuresisError(f"{source}: the price of {model!r} lacks {field!r}")
            continue
        value = entry[field]
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or value < 0:
            raise HeuresisError(f"{source}: {model!r} {field} must be a number ≥ 0 (USD per "
                                f"million tokens), got {value!r}")
        values[field] = float(value)
    return ModelPrice(values["input"], values["output"], values.get("cached_input"))


def _read_table(source: str | Path | Mapping[str, Any]) -> tuple[dict[str, ModelPrice], str]:
    if isinstance(source, Mapping):
        data, name = source, "the price table"
    else:
        path = Path(source)
        name = str(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise HeuresisError(f"price table {name} does not exist") from None
        except json.JSONDecodeError as exc:
            raise HeuresisError(f"price table {name} is not valid JSON: {exc}") from None
    models = data.get("models") if isinstance(data, Mapping) else None
    if not isinstance(models, Mapping):
        raise HeuresisError(f"{name}: a price table is an object with 'models': "
                            '{"model-name": {"input": 2.5, "output": 10.0}, ...}')
    return {str(model): _price(str(model), entry, name) for model, entry in models.items()}, name


class PriceTable:
    """Model name → :class:`ModelPrice`, with prefix matching and a ``"*"`` fallback."""

    def __init__(self, prices: Mapping[str, ModelPrice], sources: tuple[str, ...] = ()):
        self.prices = dict(prices)
        self.sources = sources

    @classmethod
    def load(cls, override: str | Path | Mapping[str, Any] | None = None) -> PriceTable:
        """The shipped table, overlaid by ``$HEURESIS_PRICES`` and then by ``override``."""
        prices, source = _read_table(DEFAULT_PRICES_PATH)
        sources = [source]
        for extra in (os.environ.get(PRICES_ENV_VAR) or None, override):
            if extra is None:
                continue
            more, source = _read_table(extra)
            prices.update(more)
            sources.append(source)
        return cls(prices, tuple(sources))

    def lookup(self, model: str) -> ModelPrice | None:
        """The price of a model (exact, then longest prefix, then ``"*"``), or None."""
        if not model:
            return self.prices.get("*")
        names = [model]
        if "/" in model:  # "openai/gpt-4o", as routers and vLLM name models
            names.append(model.rsplit("/", 1)[1])
        for name in names:
            if name in self.prices:
                return self.prices[name]
        for name in names:
            matches = [key for key in self.prices if key != "*" and name.startswith(key)
                       and _SNAPSHOT_SUFFIX.fullmatch(name[len(key):])]
            if matches:
                return self.prices[max(matches, key=len)]
        return self.prices.get("*")

    def cost(self, model: str, usage: Mapping[str, Any]) -> float | None:
        """USD for one call, or None when the model has no price."""
        price = self.lookup(model)
        return None if price is None else price.cost(usage)
