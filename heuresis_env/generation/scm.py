"""Structural causal models: graph models, mechanism kinds, and the :class:`SCM` that samples.

Three layers, each a small part taking an explicit ``numpy.random.Generator``:

- **graph models** — :func:`sample_dag` (Erdős–Rényi, Barabási–Albert, or bounded in-degree
  over a uniformly random causal order);
- **mechanism kinds** — the table :data:`MECHANISM_KINDS`, name → :class:`MechanismKind`
  with ``draw_params(n_parents, ranges, rng) -> dict`` (JSON-able) and
  ``apply(parents_matrix, params, noise) -> values``; the families of
  :mod:`heuresis_env.generation.families` are lists of these kinds with parameter ranges;
- **the SCM** — a DAG over named columns, one mechanism per node, the constants captured
  at generation (map-output standardization, the piecewise knot, column means and sds), and
  :meth:`SCM.sample` for observational and interventional data ``do(X_i = x)``.

Portability: every random draw and every elementwise function comes from
:mod:`heuresis_env.generation.portable`, so the same key gives byte-identical data on every
machine; sums over parents and hidden units are explicit sequential loops.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.portable import (
    draw_signed_uniform,
    draw_standard_normal,
    draw_uniform,
    draw_unit_t3,
    exact_mean,
    exact_sd,
    portable_cos,
    portable_sigmoid,
    portable_softplus,
    portable_tanh,
    sequential_dot,
)
from heuresis_env.graphs import Graph, has_directed_cycle, topological_order


def _unit_vector(rng: np.random.Generator, size: int) -> list[float]:
    """w ~ N(0, I) normalized to unit Euclidean norm."""
    w = draw_standard_normal(rng, size)
    norm = math.sqrt(math.fsum(np.multiply(w, w).tolist()))
    return np.divide(w, norm).tolist()


NOISE_SAMPLERS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "gaussian": draw_standard_normal,
    "t3": draw_unit_t3,
}


# ---- graph models ----------------------------------------------------------------------------

GRAPH_MODELS = ("er", "ba", "bounded")
#: the largest in-degree of the ``bounded`` graph model (hand-built networks rarely exceed it)
BOUNDED_MAX_PARENTS = 3


def sample_dag(d: int, rng: np.random.Generator, model: str = "er",
               expected_degree: float = 2.0) -> np.ndarray:
    """A random DAG as a boolean adjacency (``[i, j]`` for i → j) over a uniformly random order.

    - ``"er"`` (Erdős–Rényi): each pair is joined with p = min(1, expected_degree / (d − 1)),
      the edge pointing from the earlier to the later node of the causal order; the mean edge
      count is expected_degree · d / 2 (= d at the default degree 2), except that for d = 2
      p is capped at 1.
    - ``"ba"`` (Barabási–Albert): nodes arrive one by one and each joins
      m = max(1, round(expected_degree / 2)) distinct earlier arrivals, chosen with
      probability proportional to their degree (uniformly while all degrees are 0). The causal
      order is the *reverse* arrival order, so each newcomer is a cause of the nodes it joins
      and hubs are effects with many parents (v-structures), as in the scale-free graphs of
      NOTEARS. The edge count is m(d − 1) − m(m − 1)/2, i.e. d − 1 at degree 2.
    - ``"bounded"`` (bounded in-degree, like hand-built networks such as the BNLearn ones):
      the node at causal position k > 0 draws its number of parents from a binomial with
      min(k, :data:`BOUNDED_MAX_PARENTS`) trials and mean min(expected_degree / 2, trials),
      then that many parents uniformly among the k earlier nodes; no node has more than
      :data:`BOUNDED_MAX_PARENTS` parents, and the mean edge count is close to
      expected_degree · d / 2 when that bound does not bind.

    Node labels are a uniformly random permutation of the causal order.
    """
    if not isinstance(d, int | np.integer) or d < 2:
        raise HeuresisError(f"d must be an integer ≥ 2, got {d!r}")
    if not (math.isfinite(expected_degree) and expected_degree > 0):
        raise HeuresisError(f"expected_degree must be a positive number, got {expected_degree!r}")
    d = int(d)
    order = rng.permutation(d)  # order[k] is the node at causal position k
    position_adjacency: np.ndarray = np.zeros((d, d), dtype=bool)  # over causal positions, upper triangular
    if model == "er":
        p = min(1.0, expected_degree / (d - 1))
        draws = rng.random((d, d))
        position_adjacency = np.triu(draws < p, k=1)
    elif model == "ba":
        m = max(1, int(round(expected_degree / 2)))
        degree = np.zeros(d, dtype=np.int64)
        for arrival in range(1, d):
            targets: list[int] = []
            for _ in range(min(m, arrival)):
                weights = degree[:arrival].copy()
                weights[targets] = 0
                total = int(weights.sum())
                if total == 0:  # no degree yet (or all taken): uniform over the remaining
                    candidates = [i for i in range(arrival) if i not in targets]
                    chosen = candidates[int(rng.integers(len(candidates)))]
                else:
                    threshold = int(rng.integers(total))
                    chosen = int(np.searchsorted(np.cumsum(weights), threshold, side="right"))
                targets.append(chosen)
            for target in targets:
                degree[arrival] += 1
                degree[target] += 1
                # arrival index a ↦ causal position d−1−a: the newcomer is earlier, a cause
                position_adjacency[d - 1 - arrival, d - 1 - target] = True
    elif model == "bounded":
        for position in range(1, d):
            trials = min(position, BOUNDED_MAX_PARENTS)
            probability = min(1.0, expected_degree / 2 / trials)
            # a binomial count and a uniform subset from uniform draws and a permutation only
            # (no libm call, so the same seed gives the same graph on every machine)
            count = int(np.count_nonzero(rng.random(trials) < probability))
            parents = rng.permutation(position)[:count]
            position_adjacency[parents, position] = True
    else:
        raise UnknownNameError("graph model", model, GRAPH_MODELS)
    adjacency = np.zeros((d, d), dtype=bool)
    adjacency[np.ix_(order, order)] = position_adjacency
    return adjacency


# ---- mechanism kinds ------------------------------------------------------------------------

MLP_HIDDEN_UNITS = 10
FOURIER_FEATURES = 10
SCALE_FLOOR = 0.2  # the + 0.2 of softplus(·) + 0.2 in input-dependent noise scales


@dataclass(frozen=True)
class MechanismKind:
    """One kind of mechanism: how to draw its parameters and how to compute a node from them.

    ``default_ranges`` names every range parameter the kind reads (a family entry may
    override any of them, and only them). ``calibrate``, when set, computes the constants
    that depend on the parents' distribution (map-output mean/sd, the piecewise knot) from
    the generation sample; ``apply`` then uses the stored constants.
    """

    name: str
    description: str
    noise: str  # key of NOISE_SAMPLERS
    default_ranges: Mapping[str, tuple[float, float]]
    draw_params: Callable[[int, Mapping[str, tuple[float, float]], np.random.Generator], dict]
    apply: Callable[[np.ndarray, dict, np.ndarray], np.ndarray]
    calibrate: Callable[[np.ndarray, dict], dict] | None = None
    is_root: bool = False


def _noise_scale(ranges: Mapping[str, tuple[float, float]], rng: np.random.Generator) -> float:
    low, high = ranges["noise_scale"]
    return float(draw_uniform(rng, low, high))


def _draw_mlp(n_inputs: int, rng: np.random.Generator) -> dict:
    """f(x) = vᵀ tanh(W x + b): W (hidden × inputs), b, v all N(0, 1); no output bias."""
    hidden = MLP_HIDDEN_UNITS
    draws = draw_standard_normal(rng, hidden * (n_inputs + 2))
    weights = draws[: hidden * n_inputs].reshape(hidden, n_inputs)
    return {
        "hidden_weights": weights.tolist(),
        "hidden_biases": draws[hidden * n_inputs : hidden * (n_inputs + 1)].tolist(),
        "output_weights": draws[hidden * (n_inputs + 1) :].tolist(),
    }


def _mlp_forward(inputs: np.ndarray, network: Mapping[str, Any]) -> np.ndarray:
    weights = np.asarray(network["hidden_weights"], dtype=np.float64)
    biases = np.asarray(network["hidden_biases"], dtype=np.float64)
    hidden = np.broadcast_to(biases, (inputs.shape[0], biases.size)).copy()
    for k in range(weights.shape[1]):
        hidden = np.add(hidden, np.multiply(inputs[:, k : k + 1], weights[:, k]))
    activation = portable_tanh(hidden)
    return sequential_dot(activation, network["output_weights"])


# root ------------------------------------------------------------------------------------------

def _root_params(n_parents, ranges, rng):
    return {"noise_scale": _noise_scale(ranges, rng)}


def _root_apply(parents, params, noise):
    return np.multiply(noise, params["noise_scale"])


# linear ----------------------------------------------------------------------------------------

def _linear_params(n_parents, ranges, rng):
    low, high = ranges["weight"]
    weights = [float(draw_signed_uniform(rng, low, high)) for _ in range(n_parents)]
    return {"weights": weights, "noise_scale": _noise_scale(ranges, rng)}


def _linear_apply(parents, params, noise):
    return np.add(sequential_dot(parents, params["weights"]),
                  np.multiply(noise, params["noise_scale"]))


# MLP -------------------------------------------------------------------------------------------

def _mlp_params(n_parents, ranges, rng):
    return {"mean_network": _draw_mlp(n_parents, rng), "noise_scale": _noise_scale(ranges, rng)}


def _mlp_apply(parents, params, noise):
    return np.add(_mlp_forward(parents, params["mean_network"]),
                  np.multiply(noise, params["noise_scale"]))


def _mlp_hetero_params(n_parents, ranges, rng):
    return {"mean_network": _draw_mlp(n_parents, rng), "scale_network": _draw_mlp(n_parents, rng),
            "scale_floor": SCALE_FLOOR}


def mlp_hetero_scale(parents: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """The noise scale g(pa) = softplus(MLP(pa)) + 0.2 of an ``mlp_hetero`` node."""
    return np.add(portable_softplus(_mlp_forward(parents, params["scale_network"])),
                  params["scale_floor"])


def _mlp_hetero_apply(parents, params, noise):
    return np.add(_mlp_forward(parents, params["mean_network"]),
                  np.multiply(mlp_hetero_scale(parents, params), noise))


# sigmoid with input-dependent noise ------------------------------------------------------------

def _sigmoid_hetero_params(n_parents, ranges, rng):
    low, high = ranges["gain"]
    return {"weights": _unit_vector(rng, n_parents),
            "gain_mean": float(draw_signed_uniform(rng, low, high)),
            "gain_scale": float(draw_signed_uniform(rng, low, high)),
            "scale_floor": SCALE_FLOOR}


def sigmoid_hetero_scale(parents: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """The noise scale softplus(b z) + 0.2 of a ``sigmoid_hetero`` node."""
    z = sequential_dot(parents, params["weights"])
    return np.add(portable_softplus(np.multiply(z, params["gain_scale"])), params["scale_floor"])


def _sigmoid_hetero_apply(parents, params, noise):
    z = sequential_dot(parents, params["weights"])
    mean = portable_tanh(np.multiply(z, params["gain_mean"]))
    return np.add(mean, np.multiply(sigmoid_hetero_scale(parents, params), noise))


# the five scalar maps on z = wᵀ pa, output standardized -----------------------------------------

def _map_params(extra: Callable[[Mapping[str, tuple[float, float]], np.random.Generator], dict]):
    def draw(n_parents, ranges, rng):
        params = {"weights": _unit_vector(rng, n_parents)}
        params.update(extra(ranges, rng))
        params["noise_scale"] = _noise_scale(ranges, rng)
        return params
    return draw


def _quantile(values: np.ndarray, q: float) -> float:
    """Linear-interpolation quantile (NumPy's default), computed with plain arithmetic."""
    ordered = np.sort(values)
    position = q * (ordered.size - 1)
    low = int(math.floor(position))
    high = min(low + 1, ordered.size - 1)
    fraction = position - low
    return float(ordered[low] + (ordered[high] - ordered[low]) * fraction)


def _piecewise(z, params):
    shifted = np.subtract(z, params["knot"])
    return np.where(shifted < 0, np.multiply(shifted, params["slope_below"]),
                    np.multiply(shifted, params["slope_above"]))


def _sigmoid_map(z, params):
    return portable_sigmoid(np.multiply(z, params["gain"]))


def _fourier(z, params):
    total = np.zeros_like(z)
    for amplitude, frequency, phase in zip(params["amplitudes"], params["frequencies"],
                                           params["phases"]):
        angle = np.add(np.multiply(z, frequency), phase)
        total = np.add(total, np.multiply(portable_cos(angle), amplitude))
    return np.multiply(total, math.sqrt(2.0 / len(params["amplitudes"])))


def _quadratic(z, params):
    return np.multiply(z, z)


def _absolute(z, params):
    return np.abs(z)


def _map_kind(name: str, description: str, map_function, extra_params, extra_ranges,
              needs_knot: bool = False) -> MechanismKind:
    def signal(parents, params):
        return map_function(sequential_dot(parents, params["weights"]), params)

    def apply(parents, params, noise):
        if "output_mean" not in params or (needs_knot and "knot" not in params):
            raise HeuresisError(f"mechanism {name!r} is not calibrated (no output_mean/output_sd)")
        standardized = np.divide(np.subtract(signal(parents, params), params["output_mean"]),
                                 params["output_sd"])
        return np.add(standardized, np.multiply(noise, params["noise_scale"]))

    def calibrate(parents: np.ndarray, params: dict[str, Any]) -> dict[str, float]:
        constants: dict[str, float] = {}
        if needs_knot:
            z = sequential_dot(parents, params["weights"])
            constants["knot"] = _quantile(z, params["knot_quantile"])
        values = signal(parents, {**params, **constants})
        mean = exact_mean(values)
        sd = exact_sd(values, mean)
        # a constant map output (possible only with constant parents) is left unscaled
        constants["output_mean"] = mean
        constants["output_sd"] = sd if sd > 0 else 1.0
        return constants

    return MechanismKind(name, description, "gaussian",
                         {**extra_ranges, "noise_scale": (0.15, 0.35)},
                         _map_params(extra_params), apply, calibrate)


def _piecewise_extra(ranges, rng):
    low, high = ranges["slope"]
    return {"slope_below": float(draw_signed_uniform(rng, low, high)),
            "slope_above": float(draw_signed_uniform(rng, low, high)),
            "knot_quantile": float(draw_uniform(rng, *ranges["knot_quantile"]))}


def _sigmoid_extra(ranges, rng):
    return {"gain": float(draw_signed_uniform(rng, *ranges["gain"]))}


def _fourier_extra(ranges, rng):
    return {"amplitudes": draw_standard_normal(rng, FOURIER_FEATURES).tolist(),
            "frequencies": draw_standard_normal(rng, FOURIER_FEATURES).tolist(),
            "phases": draw_uniform(rng, 0.0, 2 * math.pi, FOURIER_FEATURES).tolist()}


def _no_extra(ranges, rng):
    return {}


#: name → kind; ``register_mechanism_kind`` adds more.
MECHANISM_KINDS: dict[str, MechanismKind] = {}


def register_mechanism_kind(kind: MechanismKind) -> None:
    """Add (or replace) a mechanism kind, making it usable in family specs."""
    if not isinstance(kind, MechanismKind):
        raise HeuresisError(f"expected a MechanismKind, got {type(kind).__name__}")
    if kind.noise not in NOISE_SAMPLERS:
        raise UnknownNameError("noise distribution", kind.noise, NOISE_SAMPLERS)
    MECHANISM_KINDS[kind.name] = kind


def get_mechanism_kind(name: str) -> MechanismKind:
    """The mechanism kind ``name``; an unknown name lists the known ones."""
    try:
        return MECHANISM_KINDS[name]
    except KeyError:
        raise UnknownNameError("mechanism kind", name, MECHANISM_KINDS) from None


for _kind in (
    MechanismKind("root_gaussian", "root: σ ε, ε ~ N(0, 1)", "gaussian",
                  {"noise_scale": (0.5, 2.0)}, _root_params, _root_apply, is_root=True),
    MechanismKind("linear", "Σ w_i X_i + σ ε, w_i ~ ±U[weight], ε ~ N(0, 1)", "gaussian",
                  {"weight": (0.5, 2.0), "noise_scale": (0.5, 2.0)},
                  _linear_params, _linear_apply),
    MechanismKind("linear_t3", "Σ w_i X_i + σ t₃/√3, w_i ~ ±U[weight]", "t3",
                  {"weight": (0.5, 2.0), "noise_scale": (0.5, 1.5)},
                  _linear_params, _linear_apply),
    MechanismKind("mlp", "vᵀ tanh(W pa + b) + σ ε (10 tanh units, W, b, v ~ N(0, 1))",
                  "gaussian", {"noise_scale": (0.5, 1.5)}, _mlp_params, _mlp_apply),
    MechanismKind("mlp_hetero", "f(pa) + (softplus(g(pa)) + 0.2) ε, f and g independent MLPs",
                  "gaussian", {}, _mlp_hetero_params, _mlp_hetero_apply),
    MechanismKind("sigmoid_hetero", "tanh(a z) + (softplus(b z) + 0.2) ε, a, b ~ ±U[gain]",
                  "gaussian", {"gain": (0.5, 2.0)}, _sigmoid_hetero_params,
                  _sigmoid_hetero_apply),
    _map_kind("map_piecewise_linear", "piecewise linear in z, knot at a random quantile, "
              "slopes ±U[slope]; standardized + σ ε", _piecewise, _piecewise_extra,
              {"slope": (0.5, 2.0), "knot_quantile": (0.2, 0.8)}, needs_knot=True),
    _map_kind("map_sigmoid", "1/(1 + exp(−a z)), a ~ ±U[gain]; standardized + σ ε",
              _sigmoid_map, _sigmoid_extra, {"gain": (1.0, 3.0)}),
    _map_kind("map_fourier", "√(2/K) Σ α_k cos(ω_k z + β_k), K = 10; standardized + σ ε",
              _fourier, _fourier_extra, {}),
    _map_kind("map_quadratic", "z²; standardized + σ ε", _quadratic, _no_extra, {}),
    _map_kind("map_abs", "|z|; standardized + σ ε", _absolute, _no_extra, {}),
):
    register_mechanism_kind(_kind)


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
