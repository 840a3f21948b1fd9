"""The mechanism families as data, and the one sampler that reads them.

A family is a :class:`FamilySpec`: a root-noise entry and a list of mechanism entries, each
entry a mechanism kind of :mod:`heuresis_env.generation.scm` plus parameter ranges. Every non-root node
draws its entry independently and uniformly from the list (single-mechanism families have a
one-entry list), then the entry's parameters from its ranges. The six families of
``docs/families.md`` are rows of :data:`FAMILIES`; ``register_family`` adds a row, and nothing else
changes — :func:`sample_scm` has no per-family code path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.graph_models import sample_dag
from heuresis_env.generation.mechanisms import MECHANISM_KINDS, NOISE_SAMPLERS, get_mechanism_kind
from heuresis_env.generation.scm import SCM, NodeMechanism
from heuresis_env.generation.structures import (
    BNLEARN_LARGE_NETWORKS,
    BNLEARN_NETWORKS,
    BNLEARN_SHELF,
    Structure,
    bnlearn_family,
    bnlearn_structure,
)
from heuresis_env.graphs import topological_order


@dataclass(frozen=True)
class MechanismEntry:
    """A mechanism kind with parameter ranges overriding the kind's defaults.

    ``ranges`` maps a range name the kind reads (e.g. ``"noise_scale"``, ``"weight"``) to
    ``(low, high)``; a range with ``low == high`` is a constant.
    """

    kind: str
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        kind = get_mechanism_kind(self.kind)
        clean: dict[str, tuple[float, float]] = {}
        for name, value in dict(self.ranges).items():
            if name not in kind.default_ranges:
                known = ", ".join(sorted(kind.default_ranges)) or "none"
                raise HeuresisError(f"mechanism kind {self.kind!r} has no range {name!r}; "
                                    f"its ranges are: {known}")
            try:
                low, high = (float(v) for v in value)
            except (TypeError, ValueError):
                raise HeuresisError(f"range {name!r} of {self.kind!r} must be a pair "
                                    f"(low, high), got {value!r}") from None
            if not (math.isfinite(low) and math.isfinite(high) and 0 <= low <= high):
                raise HeuresisError(f"range {name!r} of {self.kind!r} must satisfy "
                                    f"0 ≤ low ≤ high (finite), got ({low}, {high})")
            clean[name] = (low, high)
        object.__setattr__(self, "ranges", clean)

    def resolved_ranges(self) -> dict[str, tuple[float, float]]:
        """Every range the kind reads: the kind's defaults overridden by this entry."""
        return {**get_mechanism_kind(self.kind).default_ranges, **self.ranges}

    def to_dict(self) -> dict:
        return {"kind": self.kind, "ranges": {k: list(v) for k, v in self.ranges.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MechanismEntry:
        return cls(str(data["kind"]), {k: tuple(v) for k, v in data.get("ranges", {}).items()})


#: what a family name may hold (it becomes part of gym ids, file names and episode ids)
FAMILY_NAME_PATTERN = r"[A-Za-z0-9_][A-Za-z0-9_-]*"


@dataclass(frozen=True)
class FamilySpec:
    """A mechanism family: the root-noise entry and the list non-root nodes draw from.

    ``structure``, when set, fixes the DAG (a known network): every instance draws its
    mechanisms on that graph, and its size d is the structure's.
    """

    name: str
    description: str
    root: MechanismEntry
    mechanisms: tuple[MechanismEntry, ...]
    structure: Structure | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(FAMILY_NAME_PATTERN, self.name):
            raise HeuresisError(f"family name must be letters, digits, '_' or '-' (not "
                                f"first), got {self.name!r}")
        if self.structure is not None and not isinstance(self.structure, Structure):
            raise HeuresisError(f"family {self.name!r}: structure must be a Structure, got "
                                f"{type(self.structure).__name__}")
        object.__setattr__(self, "mechanisms", tuple(self.mechanisms))
        if not self.mechanisms:
            raise HeuresisError(f"family {self.name!r} needs at least one mechanism entry")
        if not get_mechanism_kind(self.root.kind).is_root:
            raise HeuresisError(f"family {self.name!r}: the root entry's kind "
                                f"{self.root.kind!r} is not a root kind")
        for entry in self.mechanisms:
            if get_mechanism_kind(entry.kind).is_root:
                raise HeuresisError(f"family {self.name!r}: {entry.kind!r} is a root kind "
                                    "and cannot be a mechanism entry")

    @property
    def is_mixture(self) -> bool:
        return len(self.mechanisms) > 1

    @property
    def kinds(self) -> list[str]:
        """The kinds of the mechanism entries, in table order (with repeats)."""
        return [entry.kind for entry in self.mechanisms]

    def to_dict(self) -> dict:
        document = {"name": self.name, "description": self.description,
                    "root": self.root.to_dict(),
                    "mechanisms": [entry.to_dict() for entry in self.mechanisms]}
        if self.structure is not None:
            document["structure"] = self.structure.to_dict()
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FamilySpec:
        structure = data.get("structure")
        if isinstance(structure, Mapping):
            structure = Structure.from_dict(structure)
        return cls(str(data["name"]), str(data.get("description", "")),
                   MechanismEntry.from_dict(data["root"]),
                   tuple(MechanismEntry.from_dict(e) for e in data["mechanisms"]), structure)


def _root(low: float, high: float) -> MechanismEntry:
    return MechanismEntry("root_gaussian", {"noise_scale": (low, high)})


def _maps(noise: tuple[float, float]) -> list[MechanismEntry]:
    kinds = ("map_piecewise_linear", "map_sigmoid", "map_fourier", "map_quadratic", "map_abs")
    return [MechanismEntry(kind, {"noise_scale": noise}) for kind in kinds]


_LINEAR_WEIGHT = (0.5, 2.0)

#: The families of ``docs/families.md`` (name → spec); ``register_family`` adds more.
FAMILIES: dict[str, FamilySpec] = {}


def register_family(name: str, spec: FamilySpec | Mapping[str, Any]) -> FamilySpec:
    """Add a family (a :class:`FamilySpec` or its dict form); an existing name is replaced."""
    if isinstance(spec, Mapping):
        spec = FamilySpec.from_dict({**spec, "name": name})
    if not isinstance(spec, FamilySpec):
        raise HeuresisError(f"expected a FamilySpec, got {type(spec).__name__}")
    if spec.name != name:
        spec = FamilySpec(name, spec.description, spec.root, spec.mechanisms, spec.structure)
    FAMILIES[name] = spec
    return spec


def get_family(name: str) -> FamilySpec:
    """The family ``name``; an unknown name raises an error listing the known families."""
    try:
        return FAMILIES[name]
    except (KeyError, TypeError):
        raise UnknownNameError("family", name, FAMILIES) from None


def available_families() -> list[str]:
    """Registered family names: the built-in six in table order, the BNLearn structure
    families, then any registered later."""
    return list(FAMILIES)


#: the six mechanism families of ``docs/families.md`` (what ``--family all`` means)
BENCHMARK_FAMILIES = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")
#: the family names of every shipped BNLearn structure (the eleven of the shelf)
STRUCTURE_FAMILIES = tuple(bnlearn_family(network) for network in BNLEARN_SHELF)
#: names that stand for several families on the command line: ``bnlearn`` the seven networks
#: of the benchmark's appendix, ``bnlearn-large`` the four larger ones, ``shelf`` all eleven
FAMILY_GROUPS: dict[str, tuple[str, ...]] = {
    "all": BENCHMARK_FAMILIES,
    "bnlearn": tuple(bnlearn_family(network) for network in BNLEARN_NETWORKS),
    "bnlearn-large": tuple(bnlearn_family(network) for network in BNLEARN_LARGE_NETWORKS),
    "shelf": STRUCTURE_FAMILIES,
}


def expand_families(names: str | Sequence[str]) -> list[str]:
    """Family names with the groups of :data:`FAMILY_GROUPS` expanded (``all``: the six
    benchmark families; ``bnlearn``: the seven structures of the appendix; ``bnlearn-large``:
    the four larger ones; ``shelf``: all eleven), each checked; an unknown name lists the
    known ones."""
    names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    chosen: list[str] = []
    for name in (n for n in names if n):
        for family in FAMILY_GROUPS.get(name, (name,)):
            if family not in FAMILIES:
                raise UnknownNameError("family", family, [*FAMILIES, *FAMILY_GROUPS])
            chosen.append(family)
    if not chosen:
        raise HeuresisError(f"give at least one family; known: {', '.join(FAMILIES)}, or "
                            f"{' / '.join(FAMILY_GROUPS)}")
    return list(dict.fromkeys(chosen))


for _spec in (
    FamilySpec("lg", "linear Gaussian: Σ w X + σ ε, w ~ ±U[0.5, 2], σ ~ U[0.5, 2]",
               _root(0.5, 2.0),
               (MechanismEntry("linear", {"weight": _LINEAR_WEIGHT, "noise_scale": (0.5, 2.0)}),)),
    FamilySpec("anm", "additive noise, MLP mean: f(pa) + σ ε, σ ~ U[0.5, 1.5]",
               _root(0.5, 1.5), (MechanismEntry("mlp", {"noise_scale": (0.5, 1.5)}),)),
    FamilySpec("hetero", "MLP mean and MLP noise scale: f(pa) + (softplus(g(pa)) + 0.2) ε",
               _root(0.5, 1.5), (MechanismEntry("mlp_hetero"),)),
    FamilySpec("wild", "mixture: five standardized maps (σ ~ U[0.15, 0.35]), linear "
               "(σ ~ U[0.5, 1.5]), linear with t₃ noise, sigmoid with input-dependent noise",
               _root(0.5, 1.5),
               (*_maps((0.15, 0.35)),
                MechanismEntry("linear", {"weight": _LINEAR_WEIGHT, "noise_scale": (0.5, 1.5)}),
                MechanismEntry("linear_t3",
                               {"weight": _LINEAR_WEIGHT, "noise_scale": (0.5, 1.5)}),
                MechanismEntry("sigmoid_hetero", {"gain": (0.5, 2.0)}))),
    FamilySpec("mixed", "mixture: linear Gaussian, MLP (as anm), MLP with input-dependent "
               "noise (as hetero), linear with t₃ noise",
               _root(0.5, 2.0),
               (MechanismEntry("linear", {"weight": _LINEAR_WEIGHT, "noise_scale": (0.5, 2.0)}),
                MechanismEntry("mlp", {"noise_scale": (0.5, 1.5)}),
                MechanismEntry("mlp_hetero"),
                MechanismEntry("linear_t3",
                               {"weight": _LINEAR_WEIGHT, "noise_scale": (0.5, 2.0)}))),
    FamilySpec("gauntlet", "mixture of the widest set: five standardized maps, sigmoid with "
               "input-dependent noise, MLP, MLP with input-dependent noise; σ ~ U[0.15, 0.40], "
               "roots N(0, 1)",
               _root(1.0, 1.0),
               (*_maps((0.15, 0.40)),
                MechanismEntry("sigmoid_hetero", {"gain": (0.5, 2.0)}),
                MechanismEntry("mlp", {"noise_scale": (0.15, 0.40)}),
                MechanismEntry("mlp_hetero"))),
):
    register_family(_spec.name, _spec)

for _network in BNLEARN_SHELF:
    register_family(bnlearn_family(_network), FamilySpec(
        bnlearn_family(_network),
        f"the BNLearn '{_network}' DAG, anonymized, with the lg family's linear-Gaussian "
        "mechanisms: Σ w X + σ ε, w ~ ±U[0.5, 2], σ ~ U[0.5, 2]",
        FAMILIES["lg"].root, FAMILIES["lg"].mechanisms, bnlearn_structure(_network)))

#: the package's own families, mechanism kinds and noise distributions, as first registered
_BUILT_IN = (dict(FAMILIES), dict(MECHANISM_KINDS), dict(NOISE_SAMPLERS))


def built_in_family(name: str) -> bool:
    """Whether ``name`` is one of the package's families, unchanged: its spec, and every
    mechanism kind and noise distribution of the package, are the objects registered when
    the package loaded. Code outside the package decides what a replaced or added one draws,
    so only these are fixed by the package's source (what the disk cache of generated
    instances is keyed by)."""
    families, kinds, noises = _BUILT_IN
    return (name in families and FAMILIES.get(name) is families[name]
            and all(MECHANISM_KINDS.get(k) is v for k, v in kinds.items())
            and all(NOISE_SAMPLERS.get(k) is v for k, v in noises.items()))


def sample_scm(family: str | FamilySpec, d: int, rng: np.random.Generator,
               graph_model: str = "er", expected_degree: float = 2.0,
               names: Sequence[str] | None = None) -> SCM:
    """Draw an (uncalibrated) SCM from a family: a DAG (the family's fixed structure, in its
    node order, when it has one), then each node's entry and parameters.

    Draw order (fixed, so a seed fixes the SCM): the DAG, then for each node in causal order
    the entry index (uniform over the family's list; roots use the root entry) and the
    entry's parameters. Call :func:`heuresis_env.generation.scm.calibrate_scm` to draw the generation
    sample and capture its constants.
    """
    spec = family if isinstance(family, FamilySpec) else get_family(family)
    if not isinstance(rng, np.random.Generator):
        raise HeuresisError("rng must be a numpy.random.Generator")
    if spec.structure is not None:
        if d != spec.structure.d:
            raise HeuresisError(f"family {spec.name!r} has a fixed structure of "
                                f"{spec.structure.d} variables; d = {d} was asked")
        adjacency = spec.structure.adjacency()
    else:
        adjacency = sample_dag(d, rng, model=graph_model, expected_degree=expected_degree)
    names = tuple(names) if names is not None else tuple(f"X{i + 1}" for i in range(d))
    if len(names) != d:
        raise HeuresisError(f"{len(names)} names for d = {d} variables")
    mechanisms: list[NodeMechanism | None] = [None] * d
    for j in topological_order(adjacency):
        parents = tuple(names[i] for i in np.nonzero(adjacency[:, j])[0])
        if parents:
            entry = spec.mechanisms[int(rng.integers(len(spec.mechanisms)))]
        else:
            entry = spec.root
        kind = get_mechanism_kind(entry.kind)
        params = kind.draw_params(len(parents), entry.resolved_ranges(), rng)
        mechanisms[j] = NodeMechanism(entry.kind, parents, params)
    assert all(m is not None for m in mechanisms)  # a topological order visits every node
    return SCM(names, adjacency, tuple(m for m in mechanisms if m is not None))
