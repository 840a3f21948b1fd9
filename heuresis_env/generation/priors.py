"""Training priors: the options of the ``train`` split's generator, as one seeded value.

A model trained on the benchmark's own size only (d = 10, n = 600, Erdős–Rényi graphs of
expected degree 2) learns that size: the first amortized model did, and fell below BOSS on
the larger hand-built networks. A :class:`TrainPrior` widens the stream: for train index k it
draws — from a seed of its own that hashes the prior and k, nothing else — the mechanism
family, the number of variables d, the number of rows n, the graph model and the expected
degree, and returns the :class:`~heuresis_env.generation.instances.InstanceKey` of that
instance. The key's split is ``train``, so every instance it names comes from seeds disjoint
from dev's, the unsealed test's and every sealed test's (the split is hashed into the key's
seed); the prior only chooses the key's options. The same prior and index give the same key on
every machine (the draws use integers and uniforms only).

:data:`TRAIN_PRIORS` names the priors: ``benchmark`` is the benchmark's own size (what the
first amortized model was trained on), ``wide`` the distribution the second is trained on —
d from 5 to 50 and n from 200 to 2,000 (both log-uniform), Erdős–Rényi, scale-free
(Barabási–Albert) and bounded in-degree graphs, expected degree 1 to 4, the six benchmark
families. The BNLearn structures and the Sachs data are never drawn: they stay out of
distribution.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.families import BENCHMARK_FAMILIES, get_family
from heuresis_env.generation.graph_models import GRAPH_MODELS
from heuresis_env.generation.instances import TRAIN_SPLIT_SIZE, InstanceKey

__all__ = ["TRAIN_PRIORS", "TrainPrior", "get_train_prior"]


@dataclass(frozen=True)
class TrainPrior:
    """The distribution of the train split's instance options (see the module docstring).

    ``d`` and ``n`` are inclusive ranges, each drawn log-uniformly (rounded; so small graphs,
    the cheaper ones and the benchmark's own size, are drawn as often as large ones per
    doubling of d);
    ``degree`` is a range drawn uniformly (a constant when low == high); the family and the
    graph model uniformly from their tuples.
    """

    name: str
    families: tuple[str, ...] = BENCHMARK_FAMILIES
    d: tuple[int, int] = (10, 10)
    n: tuple[int, int] = (600, 600)
    graph_models: tuple[str, ...] = ("er",)
    degree: tuple[float, float] = (2.0, 2.0)
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for family in self.families:
            spec = get_family(family)  # raises on an unknown name
            if spec.structure is not None:
                raise HeuresisError(f"train prior {self.name!r}: {family!r} has a fixed "
                                    "structure; a prior draws random graphs only")
        if not self.families or not self.graph_models:
            raise HeuresisError(f"train prior {self.name!r} needs families and graph models")
        for model in self.graph_models:
            if model not in GRAPH_MODELS:
                raise UnknownNameError("graph model", model, GRAPH_MODELS)
        for what, bounds, floor in (("d", self.d, 2), ("n", self.n, 10)):
            if not (all(isinstance(v, int) for v in bounds) and floor <= bounds[0] <= bounds[1]):
                raise HeuresisError(f"train prior {self.name!r}: {what} must be integers "
                                    f"{floor} <= low <= high, got {bounds!r}")
        lowest, highest = self.degree
        if not (math.isfinite(lowest) and math.isfinite(highest) and 0 < lowest <= highest):
            raise HeuresisError(f"train prior {self.name!r}: degree must satisfy "
                                f"0 < low <= high, got {self.degree!r}")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("description")
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @property
    def digest(self) -> str:
        """SHA-256 of the prior's options (its seed and its provenance record)."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(f"heuresis-train-prior:{text}".encode()).hexdigest()

    def key(self, index: int) -> InstanceKey:
        """The train instance the prior draws at ``index`` (0 ≤ index < 2³¹)."""
        if isinstance(index, bool) or not isinstance(index, int | np.integer) \
                or not 0 <= index < TRAIN_SPLIT_SIZE:
            raise HeuresisError(f"a train index must be an integer in 0..{TRAIN_SPLIT_SIZE - 1}"
                                f", got {index!r}")
        digest = self.digest
        entropy = [int(digest[i:i + 8], 16) for i in range(0, 64, 8)] + [int(index)]
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
        family = self.families[int(rng.integers(len(self.families)))]
        d = _log_uniform(self.d, float(rng.random()))
        n = _log_uniform(self.n, float(rng.random()))
        model = self.graph_models[int(rng.integers(len(self.graph_models)))]
        drawn = self.degree[0] + float(rng.random()) * (self.degree[1] - self.degree[0])
        # two decimals: a readable key and file name, and no float-printing ambiguity
        degree = min(round(drawn, 2), float(d - 1))
        return InstanceKey(family, "train", int(index), d=d, n=n, graph_model=model,
                           degree=degree)

    def keys(self, start: int, count: int) -> Iterator[InstanceKey]:
        for index in range(start, start + count):
            yield self.key(index)


def _log_uniform(bounds: tuple[int, int], u: float) -> int:
    low, high = bounds
    value = int(round(math.exp(math.log(low) + u * (math.log(high) - math.log(low)))))
    return min(max(value, low), high)


TRAIN_PRIORS: dict[str, TrainPrior] = {
    "benchmark": TrainPrior(
        "benchmark", description="the benchmark's own size: d = 10, n = 600, Erdos-Renyi "
                                 "graphs of expected degree 2 (the first amortized model's)"),
    "wide": TrainPrior(
        "wide", d=(5, 50), n=(200, 2000), graph_models=("er", "ba", "bounded"),
        degree=(1.0, 4.0),
        description="d 5-50 and n 200-2,000 (log-uniform), Erdos-Renyi, scale-free "
                    "and bounded in-degree graphs of expected degree 1-4, six families"),
}


def get_train_prior(name: str | TrainPrior, families: Sequence[str] | None = None
                    ) -> TrainPrior:
    """A named prior (optionally restricted to ``families``, e.g. for leave-one-family-out)."""
    prior = name if isinstance(name, TrainPrior) else TRAIN_PRIORS.get(str(name))
    if prior is None:
        raise UnknownNameError("train prior", name, TRAIN_PRIORS)
    if families is not None:
        kept = tuple(families)
        prior = TrainPrior(f"{prior.name}[{','.join(kept)}]", kept, prior.d, prior.n,
                           prior.graph_models, prior.degree, prior.description)
    return prior
