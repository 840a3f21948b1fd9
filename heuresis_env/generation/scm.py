"""Structural causal models: the :class:`SCM` that samples, the third of three layers.

Three layers, each a small part taking an explicit ``numpy.random.Generator``:

- **graph models** (:mod:`.graph_models`) — :func:`~.graph_models.sample_dag` (Erdős–Rényi,
  Barabási–Albert, or bounded in-degree over a uniformly random causal order);
- **mechanism kinds** (:mod:`.mechanisms`) — the table ``MECHANISM_KINDS``, name →
  ``MechanismKind`` with ``draw_params(n_parents, ranges, rng) -> dict`` (JSON-able) and
  ``apply(parents_matrix, params, noise) -> values``; the families of
  :mod:`heuresis_env.generation.families` are lists of these kinds with parameter ranges;
- **the SCM** (here) — a DAG over named columns, one mechanism per node, the constants
  captured at generation (map-output standardization, the piecewise knot, column means and
  sds), and :meth:`SCM.sample` for observational and interventional data ``do(X_i = x)``.

Portability: every random draw and every elementwise function comes from
:mod:`heuresis_env.generation.portable`, so the same key gives byte-identical data on every
machine; sums over parents and hidden units are explicit sequential loops.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.mechanisms import (
    NOISE_SAMPLERS,
    get_mechanism_kind,
)
from heuresis_env.generation.portable import (
    exact_mean,
    exact_sd,
)
from heuresis_env.graphs import Graph, has_directed_cycle, topological_order

# ---- the SCM ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeMechanism:
    """One node's mechanism: its kind, its parents (by name, in the order the params use) and
    its parameters (JSON-able, including the constants captured at generation)."""

    kind: str
    parents: tuple[str, ...]
    params: dict = field(hash=False)

    @property
    def noise(self) -> str:
        return get_mechanism_kind(self.kind).noise

    def to_dict(self) -> dict:
        return {"kind": self.kind, "parents": list(self.parents), "noise": self.noise,
                "params": self.params}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeMechanism:
        try:
            return cls(str(data["kind"]), tuple(str(p) for p in data["parents"]),
                       dict(data["params"]))
        except (KeyError, TypeError) as exc:
            raise HeuresisError(f"bad mechanism entry {data!r}: {exc}") from None


@dataclass
class SCM:
    """A structural causal model over named columns.

    ``adjacency[i, j]`` is True for ``names[i] → names[j]``; ``mechanisms[j]`` computes column
    j from its parents' *raw* (unstandardized) values and its noise. ``column_means`` and
    ``column_sds`` are the raw means and sds of the generation sample; :meth:`sample` divides
    by these stored constants, so new samples are in the same units as the instance's data.
    """

    names: tuple[str, ...]
    adjacency: np.ndarray
    mechanisms: tuple[NodeMechanism, ...]
    column_means: np.ndarray | None = None
    column_sds: np.ndarray | None = None
    causal_order: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        self.names = tuple(str(n) for n in self.names)
        d = len(self.names)
        if len(set(self.names)) != d:
            raise HeuresisError(f"duplicate variable names in {self.names}")
        self.adjacency = np.asarray(self.adjacency, dtype=bool)
        if self.adjacency.shape != (d, d):
            raise HeuresisError(f"adjacency has shape {self.adjacency.shape}, expected {(d, d)}")
        if has_directed_cycle(self.adjacency) or np.any(np.diag(self.adjacency)):
            raise HeuresisError("the SCM's graph must be a DAG")
        self.mechanisms = tuple(self.mechanisms)
        if len(self.mechanisms) != d:
            raise HeuresisError(f"{len(self.mechanisms)} mechanisms for {d} variables")
        for j, mechanism in enumerate(self.mechanisms):
            kind = get_mechanism_kind(mechanism.kind)
            expected = {self.names[i] for i in np.nonzero(self.adjacency[:, j])[0]}
            if set(mechanism.parents) != expected or len(mechanism.parents) != len(expected):
                raise HeuresisError(f"mechanism of {self.names[j]!r} lists parents "
                                    f"{list(mechanism.parents)}, the graph has {sorted(expected)}")
            if kind.is_root != (not expected):
                raise HeuresisError(f"{self.names[j]!r} has kind {kind.name!r}, which is for "
                                    f"{'root' if kind.is_root else 'non-root'} nodes")
        for attribute in ("column_means", "column_sds"):
            value = getattr(self, attribute)
            if value is not None:
                value = np.asarray(value, dtype=np.float64)
                if value.shape != (d,) or not np.all(np.isfinite(value)):
                    raise HeuresisError(f"{attribute} must be {d} finite numbers")
                setattr(self, attribute, value)
        if self.column_sds is not None and np.any(self.column_sds <= 0):
            raise HeuresisError("column_sds must be positive")
        if not self.causal_order:
            self.causal_order = tuple(topological_order(self.adjacency))
        self.causal_order = tuple(int(i) for i in self.causal_order)
        position = {node: k for k, node in enumerate(self.causal_order)}
        if sorted(position) != list(range(d)) or any(
                position[i] >= position[j] for i, j in zip(*np.nonzero(self.adjacency))):
            raise HeuresisError("causal_order is not a topological order of the graph")

    # ---- properties -------------------------------------------------------------------------
    @property
    def d(self) -> int:
        return len(self.names)

    @property
    def is_calibrated(self) -> bool:
        return self.column_means is not None and self.column_sds is not None

    def graph(self) -> Graph:
        """The DAG as a :class:`Graph` over the SCM's names."""
        return Graph.from_dag(self.adjacency, self.names)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise UnknownNameError("variable", name, self.names) from None

    def descendants(self, name: str) -> list[str]:
        """Names of the strict descendants of ``name``."""
        start = self.index(name)
        seen: set[int] = set()
        stack = [start]
        while stack:
            for child in np.nonzero(self.adjacency[stack.pop()])[0]:
                if int(child) not in seen:
                    seen.add(int(child))
                    stack.append(int(child))
        return [self.names[i] for i in sorted(seen)]

    def ancestral_subset(self, names: Sequence[str]) -> SCM:
        """The SCM over ``names`` and all their ancestors, in this SCM's column order.

        Every node keeps its mechanism and stored constants (its parents are in the set), so
        sampling the subset gives those columns the same distribution, interventional ones
        included, at the cost of only the nodes they depend on.
        """
        keep: set[int] = set()
        stack = [self.index(name) for name in names]
        while stack:
            node = stack.pop()
            if node not in keep:
                keep.add(node)
                stack.extend(int(p) for p in np.nonzero(self.adjacency[:, node])[0])
        order = sorted(keep)
        position = {old: k for k, old in enumerate(order)}
        return SCM(
            names=tuple(self.names[i] for i in order),
            adjacency=self.adjacency[np.ix_(order, order)],
            mechanisms=tuple(self.mechanisms[i] for i in order),
            column_means=None if self.column_means is None else self.column_means[order],
            column_sds=None if self.column_sds is None else self.column_sds[order],
            causal_order=tuple(position[i] for i in self.causal_order if i in keep))

    # ---- sampling ---------------------------------------------------------------------------
    def _simulate(self, n: int, rng: np.random.Generator,
                  raw_interventions: Mapping[int, float | np.ndarray],
                  calibrate: bool) -> tuple[np.ndarray, tuple[NodeMechanism, ...]]:
        """Raw values (n × d, column order) and the mechanisms with any calibrated constants.

        Every node's noise is drawn, in causal order, even when the node is intervened on, so
        that the same generator gives the non-descendants identical values with and without
        an intervention.
        """
        values = np.zeros((n, self.d), dtype=np.float64)
        mechanisms = list(self.mechanisms)
        for j in self.causal_order:
            mechanism = mechanisms[j]
            kind = get_mechanism_kind(mechanism.kind)
            noise = NOISE_SAMPLERS[kind.noise](rng, n)
            parent_columns = [self.index(p) for p in mechanism.parents]
            parents = values[:, parent_columns]
            if calibrate and kind.calibrate is not None:
                constants = kind.calibrate(parents, mechanism.params)
                mechanism = NodeMechanism(mechanism.kind, mechanism.parents,
                                          {**mechanism.params, **constants})
                mechanisms[j] = mechanism
            if j in raw_interventions:
                values[:, j] = raw_interventions[j]
            else:
                values[:, j] = kind.apply(parents, mechanism.params, noise)
        if not np.all(np.isfinite(values)):
            raise HeuresisError("the SCM produced non-finite values")
        return values, tuple(mechanisms)

    def sample(self, n: int, rng: np.random.Generator,
               interventions: Mapping[str, float | Sequence[float] | np.ndarray] | None = None,
               standardize: bool = True) -> np.ndarray:
        """Draw ``n`` rows (n × d, named column order), optionally under ``do(X_i = x)``.

        Interventions are given in the *standardized* units of the named column — the units
        of the instance's data — and are applied as the raw value ``mean_i + sd_i · x`` with
        the stored generation constants; the intervened column of the output therefore equals
        ``x`` exactly when ``standardize`` is True and ``mean_i + sd_i · x`` when False. A
        value may also be ``n`` numbers, one per row (a randomized experiment sets each row's
        value apart). Incoming edges of an intervened node are cut: its mechanism is not
        evaluated. With ``standardize=False`` the raw values are returned (what the
        mechanisms produce).
        """
        means, sds = self.column_means, self.column_sds
        if means is None or sds is None:
            raise HeuresisError("this SCM has no stored column constants; build it with "
                                "calibrate_scm(...) before sampling")
        n = _check_rows(n)
        if not isinstance(rng, np.random.Generator):
            raise HeuresisError("rng must be a numpy.random.Generator")
        raw_interventions: dict[int, float | np.ndarray] = {}
        standardized_values: dict[int, float | np.ndarray] = {}
        for name, value in (interventions or {}).items():
            j = self.index(name)
            checked = _intervention_value(name, value, n)
            standardized_values[j] = checked
            raw_interventions[j] = (float(means[j] + sds[j] * checked)
                                    if isinstance(checked, float)
                                    else np.add(np.multiply(checked, sds[j]), means[j]))
        raw, _ = self._simulate(n, rng, raw_interventions, calibrate=False)
        if not standardize:
            return raw
        standardized = np.divide(np.subtract(raw, means), sds)
        for j, value in standardized_values.items():
            standardized[:, j] = value  # exact, free of the round trip's rounding
        return standardized

    def reordered(self, order: Sequence[int], names: Sequence[str]) -> SCM:
        """The same SCM with column k holding old column ``order[k]``, renamed ``names[k]``."""
        order = [int(i) for i in order]
        if sorted(order) != list(range(self.d)) or len(names) != self.d:
            raise HeuresisError("order must be a permutation of the columns, one name each")
        rename = {self.names[old]: str(new) for old, new in zip(order, names, strict=True)}
        mechanisms = tuple(NodeMechanism(self.mechanisms[old].kind,
                                         tuple(rename[p] for p in self.mechanisms[old].parents),
                                         self.mechanisms[old].params) for old in order)
        new_position = {old: k for k, old in enumerate(order)}
        return SCM(
            names=tuple(names),
            adjacency=self.adjacency[np.ix_(order, order)],
            mechanisms=mechanisms,
            column_means=None if self.column_means is None else self.column_means[order],
            column_sds=None if self.column_sds is None else self.column_sds[order],
            causal_order=tuple(new_position[i] for i in self.causal_order),
        )

    # ---- serialization ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "names": list(self.names),
            "adjacency": self.adjacency.astype(int).tolist(),
            "causal_order": list(self.causal_order),
            "mechanisms": {name: m.to_dict() for name, m in zip(self.names, self.mechanisms,
                                                                strict=True)},
            "column_means": None if self.column_means is None else self.column_means.tolist(),
            "column_sds": None if self.column_sds is None else self.column_sds.tolist(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SCM:
        try:
            names = [str(n) for n in data["names"]]
            mechanisms = tuple(NodeMechanism.from_dict(data["mechanisms"][n]) for n in names)
            return cls(names=tuple(names), adjacency=np.asarray(data["adjacency"]),
                       mechanisms=mechanisms, column_means=data.get("column_means"),
                       column_sds=data.get("column_sds"),
                       causal_order=tuple(data.get("causal_order") or ()))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, HeuresisError):
                raise
            raise HeuresisError(f"bad SCM record: {exc!r}") from None


def _intervention_value(name: str, value: Any, n: int) -> float | np.ndarray:
    """An intervention's value checked: one finite number, or ``n`` finite numbers."""
    if isinstance(value, np.ndarray | list | tuple):
        try:
            values = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise HeuresisError(f"intervention values for {name!r} must be numbers") from None
        if values.shape != (n,) or not np.all(np.isfinite(values)):
            raise HeuresisError(f"intervention values for {name!r} must be {n} finite numbers "
                                f"(one per row), got shape {values.shape}")
        return values
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise HeuresisError(f"intervention value for {name!r} must be a number, "
                            f"got {value!r}") from None
    if not math.isfinite(number):
        raise HeuresisError(f"intervention value for {name!r} must be finite")
    return number


def _check_rows(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise HeuresisError(f"n must be a positive integer, got {n!r}")
    return int(n)


def calibrate_scm(scm: SCM, n: int, rng: np.random.Generator) -> tuple[SCM, np.ndarray]:
    """Draw the generation sample of an uncalibrated SCM and capture its constants.

    Returns the calibrated SCM (map-output means/sds, knots, column means/sds filled in) and
    the raw sample (n × d). Sampling the calibrated SCM with a generator in the same state
    reproduces this sample exactly.
    """
    n = _check_rows(n)
    raw, mechanisms = scm._simulate(n, rng, {}, calibrate=True)
    means = np.array([exact_mean(raw[:, j]) for j in range(scm.d)])
    sds = np.array([exact_sd(raw[:, j], means[j]) for j in range(scm.d)])
    if np.any(sds <= 0):
        constant = [scm.names[j] for j in np.nonzero(sds <= 0)[0]]
        raise HeuresisError(f"the generation sample has constant column(s) {constant}")
    calibrated = SCM(scm.names, scm.adjacency, mechanisms, means, sds, scm.causal_order)
    return calibrated, raw


def standardize_columns(raw: np.ndarray, means: np.ndarray, sds: np.ndarray) -> np.ndarray:
    """(raw − mean) / sd column by column (the operation :meth:`SCM.sample` uses)."""
    return np.divide(np.subtract(raw, means), sds)
