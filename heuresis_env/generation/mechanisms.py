"""Mechanism kinds: how a node's value is computed from its parents and its noise.

The table :data:`MECHANISM_KINDS`, name → :class:`MechanismKind` with
``draw_params(n_parents, ranges, rng) -> dict`` (JSON-able) and
``apply(parents_matrix, params, noise) -> values``, and the noise distributions
(:data:`NOISE_SAMPLERS`); the families of :mod:`heuresis_env.generation.families` are lists
of these kinds with parameter ranges, and :class:`~heuresis_env.generation.scm.SCM` applies
them. Every random draw and elementwise function comes from
:mod:`heuresis_env.generation.portable` (the same key gives the same bits everywhere).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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


def _unit_vector(rng: np.random.Generator, size: int) -> list[float]:
    """w ~ N(0, I) normalized to unit Euclidean norm."""
    w = draw_standard_normal(rng, size)
    norm = math.sqrt(math.fsum(np.multiply(w, w).tolist()))
    return np.divide(w, norm).tolist()


NOISE_SAMPLERS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "gaussian": draw_standard_normal,
    "t3": draw_unit_t3,
}


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
