"""SCM layer: portable math and draws, graph models, mechanism kinds, sampling and do()."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation import portable
from heuresis_env.generation import scm as scm_module
from heuresis_env.generation.families import sample_scm
from heuresis_env.generation.graph_models import sample_dag
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.generation.mechanisms import MECHANISM_KINDS, get_mechanism_kind
from heuresis_env.generation.portable import draw_standard_normal, draw_unit_t3
from heuresis_env.generation.scm import SCM, NodeMechanism, calibrate_scm
from heuresis_env.graphs import has_directed_cycle


def _ulps(actual: np.ndarray, expected: np.ndarray) -> float:
    return float(np.max(np.abs(actual - expected) / np.spacing(np.abs(expected))))


# ---- portable math ------------------------------------------------------------------------------

def test_portable_functions_match_numpy_to_a_few_ulps():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 20, 20_000)
    clipped = np.clip(x, -700, 700)
    assert _ulps(portable.portable_exp(clipped), np.exp(clipped)) <= 2
    positive = np.abs(x) + 1e-3
    assert _ulps(portable.portable_log(positive), np.log(positive)) <= 3
    extremes = np.array([1e-300, 5e-324, 1e300, 1.0, 2.0, 0.5, 0.7071067811865476])
    assert _ulps(portable.portable_log(extremes), np.log(extremes)) <= 3
    assert _ulps(portable.portable_tanh(x / 10), np.tanh(x / 10)) <= 4
    tiny = rng.normal(0, 1e-6, 1000)
    assert _ulps(portable.portable_tanh(tiny), np.tanh(tiny)) <= 4
    assert _ulps(portable.portable_expm1(x / 40), np.expm1(x / 40)) <= 3
    small = np.abs(x) / 100
    assert _ulps(portable.portable_log1p(small), np.log1p(small)) <= 4
    softplus = np.logaddexp(0, x)
    assert np.max(np.abs(portable.portable_softplus(x) - softplus) / softplus) < 1e-14
    assert np.allclose(portable.portable_sigmoid(x), 1 / (1 + np.exp(-x)), rtol=1e-14,
                       atol=1e-300)
    # cos: the reduction to turns costs |x|·2⁻⁵³ of absolute accuracy, no more
    assert np.all(np.abs(portable.portable_cos(x) - np.cos(x)) <= 4e-16 * (1 + np.abs(x)))
    turns = rng.random(5000) * 7 - 3
    cos_t, sin_t = portable.portable_sincos_turns(turns)
    assert np.allclose(cos_t, np.cos(2 * np.pi * turns), atol=2e-15)
    assert np.allclose(sin_t, np.sin(2 * np.pi * turns), atol=2e-15)


def test_portable_log_rejects_non_positive_input():
    with pytest.raises(HeuresisError):
        portable.portable_log(np.array([1.0, 0.0]))


def test_exact_moments_and_sequential_dot():
    rng = np.random.default_rng(1)
    x = rng.normal(3, 2, 1001)
    assert portable.exact_mean(x) == pytest.approx(np.mean(x), rel=1e-14)
    assert portable.exact_sd(x) == pytest.approx(np.std(x), rel=1e-13)
    matrix = rng.normal(size=(50, 4))
    weights = [0.5, -1.0, 2.0, 0.25]
    assert np.allclose(portable.sequential_dot(matrix, weights), matrix @ weights,
                       rtol=1e-14, atol=1e-14)


# ---- random draws ----------------------------------------------------------------------------------

def test_box_muller_normals_are_standard_normal():
    z = draw_standard_normal(np.random.default_rng(2), 40_001)
    assert z.shape == (40_001,)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(z.mean()) < 0.02 and abs(z.var() - 1) < 0.03


def test_unit_t3_is_scaled_student_t3():
    t = draw_unit_t3(np.random.default_rng(3), 40_000)
    assert stats.kstest(t * math.sqrt(3), "t", args=(3,)).pvalue > 1e-3
    assert stats.kurtosis(t) > 3  # heavy tails (infinite in theory)
    # the quartiles of t₃/√3: ±t₃'s 75% point / √3 ≈ ±0.442
    assert np.median(np.abs(t)) == pytest.approx(stats.t.ppf(0.75, 3) / math.sqrt(3), abs=0.01)


def test_draws_are_reproducible_from_the_generator_state():
    a = draw_standard_normal(np.random.default_rng(5), 101)
    b = draw_standard_normal(np.random.default_rng(5), 101)
    assert a.tobytes() == b.tobytes()
    u = portable.draw_uniform(np.random.default_rng(6), 0.5, 2.0, 1000)
    assert u.min() >= 0.5 and u.max() < 2.0
    s = portable.draw_signed_uniform(np.random.default_rng(7), 0.5, 2.0, 1000)
    assert np.all((np.abs(s) >= 0.5) & (np.abs(s) <= 2.0))
    assert 400 < np.sum(s < 0) < 600


# ---- graph models --------------------------------------------------------------------------------

@pytest.mark.parametrize("d", [10, 30])
def test_er_mean_edge_count_is_d(d):
    rng = np.random.default_rng(d)
    counts = []
    for _ in range(600):
        adjacency = sample_dag(d, rng, "er")
        assert not has_directed_cycle(adjacency)
        counts.append(int(adjacency.sum()))
    p = 2 / (d - 1)
    pairs = d * (d - 1) / 2
    standard_error = math.sqrt(pairs * p * (1 - p) / len(counts))
    assert abs(np.mean(counts) - d) < 4 * standard_error


def test_er_with_two_variables_caps_the_probability():
    rng = np.random.default_rng(0)
    assert all(sample_dag(2, rng, "er").sum() == 1 for _ in range(20))


def test_er_causal_order_is_uniform_over_labels():
    rng = np.random.default_rng(11)
    d, trials = 6, 3000
    first = np.zeros(d)
    for _ in range(trials):
        adjacency = sample_dag(d, rng, "er", expected_degree=5.0)  # complete graph: one order
        first[np.argmin(adjacency.sum(axis=0))] += 1  # the unique source
    assert stats.chisquare(first).pvalue > 1e-3


@pytest.mark.parametrize("expected_degree,m", [(2.0, 1), (4.0, 2), (6.0, 3)])
def test_ba_edge_count_and_hub_direction(expected_degree, m):
    rng = np.random.default_rng(12)
    d = 20
    max_in, max_out = [], []
    for _ in range(100):
        adjacency = sample_dag(d, rng, "ba", expected_degree=expected_degree)
        assert not has_directed_cycle(adjacency)
        assert adjacency.sum() == m * (d - 1) - m * (m - 1) // 2
        assert np.all(adjacency.sum(axis=1)[adjacency.sum(axis=1) > 0] <= m)  # out-degree ≤ m
        max_in.append(adjacency.sum(axis=0).max())
        max_out.append(adjacency.sum(axis=1).max())
    # preferential attachment: hubs are effects with many parents
    assert np.mean(max_in) > 2 * np.mean(max_out)


def test_ba_degree_distribution_is_heavier_than_er():
    rng = np.random.default_rng(13)
    ba = [sample_dag(50, rng, "ba") for _ in range(40)]
    er = [sample_dag(50, rng, "er") for _ in range(40)]
    ba_max = np.mean([(a | a.T).sum(axis=0).max() for a in ba])
    er_max = np.mean([(a | a.T).sum(axis=0).max() for a in er])
    assert ba_max > er_max + 3


def test_sample_dag_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(HeuresisError, match="≥ 2"):
        sample_dag(1, rng)
    with pytest.raises(UnknownNameError, match="er"):
        sample_dag(5, rng, "sf")
    with pytest.raises(HeuresisError, match="positive"):
        sample_dag(5, rng, "er", expected_degree=0)


# ---- mechanism kinds -----------------------------------------------------------------------------

def _parents(rng, n=400, p=3):
    return rng.normal(0, 1.5, size=(n, p))


@pytest.mark.parametrize("kind_name", sorted(MECHANISM_KINDS))
def test_every_kind_draws_json_params_and_applies(kind_name):
    kind = get_mechanism_kind(kind_name)
    rng = np.random.default_rng(21)
    n_parents = 0 if kind.is_root else 3
    params = kind.draw_params(n_parents, kind.default_ranges, rng)
    assert json.loads(json.dumps(params)) == params
    parents = _parents(rng, p=n_parents)
    if kind.calibrate is not None:
        with pytest.raises(HeuresisError, match="not calibrated"):
            kind.apply(parents, params, np.zeros(len(parents)))
        params = {**params, **kind.calibrate(parents, params)}
    noise = scm_module.NOISE_SAMPLERS[kind.noise](rng, len(parents))
    values = kind.apply(parents, params, noise)
    assert values.shape == (len(parents),) and np.all(np.isfinite(values))
    assert np.std(values) > 0.1


def test_linear_mlp_and_fourier_match_their_formulas():
    rng = np.random.default_rng(22)
    parents = _parents(rng)
    noise = rng.normal(size=len(parents))
    linear = get_mechanism_kind("linear")
    params = linear.draw_params(3, linear.default_ranges, rng)
    assert np.all((np.abs(params["weights"]) >= 0.5) & (np.abs(params["weights"]) <= 2.0))
    expected = parents @ np.array(params["weights"]) + params["noise_scale"] * noise
    assert np.allclose(linear.apply(parents, params, noise), expected, rtol=1e-13, atol=1e-13)

    mlp = get_mechanism_kind("mlp")
    params = mlp.draw_params(3, mlp.default_ranges, rng)
    network = params["mean_network"]
    W, b, v = (np.array(network[k]) for k in ("hidden_weights", "hidden_biases",
                                              "output_weights"))
    assert W.shape == (10, 3) and b.shape == (10,) and v.shape == (10,)
    expected = np.tanh(parents @ W.T + b) @ v + params["noise_scale"] * noise
    assert np.allclose(mlp.apply(parents, params, noise), expected, rtol=1e-12, atol=1e-12)

    fourier = get_mechanism_kind("map_fourier")
    params = fourier.draw_params(3, fourier.default_ranges, rng)
    assert abs(np.linalg.norm(params["weights"]) - 1) < 1e-14
    z = parents @ np.array(params["weights"])
    signal = math.sqrt(2 / 10) * np.cos(np.outer(z, params["frequencies"])
                                        + params["phases"]) @ np.array(params["amplitudes"])
    params.update(fourier.calibrate(parents, params))
    standardized = (signal - signal.mean()) / signal.std()
    expected = standardized + params["noise_scale"] * noise
    assert np.allclose(fourier.apply(parents, params, noise), expected, atol=1e-11)


def test_map_outputs_are_standardized_on_the_calibration_sample():
    rng = np.random.default_rng(23)
    parents = _parents(rng, n=500)
    zero = np.zeros(len(parents))
    for name in ("map_piecewise_linear", "map_sigmoid", "map_fourier", "map_quadratic",
                 "map_abs"):
        kind = get_mechanism_kind(name)
        params = kind.draw_params(3, kind.default_ranges, rng)
        params.update(kind.calibrate(parents, params))
        signal = kind.apply(parents, params, zero)
        assert abs(signal.mean()) < 1e-12 and abs(signal.std() - 1) < 1e-12, name


def test_piecewise_linear_is_continuous_with_its_two_slopes():
    kind = get_mechanism_kind("map_piecewise_linear")
    rng = np.random.default_rng(24)
    parents = _parents(rng, n=1000, p=1)
    params = kind.draw_params(1, kind.default_ranges, rng)
    params.update(kind.calibrate(parents, params))
    z = parents[:, 0] * params["weights"][0]
    assert params["knot"] == pytest.approx(np.quantile(z, params["knot_quantile"]), abs=1e-12)
    assert 0.2 <= params["knot_quantile"] <= 0.8
    grid = np.linspace(-3, 3, 601)[:, None] / params["weights"][0]
    values = kind.apply(grid, params, np.zeros(601)) * params["output_sd"]
    slopes = np.diff(values) / np.diff(grid[:, 0] * params["weights"][0])
    knot = params["knot"]
    zs = grid[:-1, 0] * params["weights"][0]
    below = slopes[(zs + 0.01) < knot]
    above = slopes[zs > knot]
    assert np.allclose(below, params["slope_below"]) and np.allclose(above, params["slope_above"])
    assert np.max(np.abs(np.diff(values))) < 2.0 * 0.01 * 2 + 1e-9  # no jump at the knot


# ---- the SCM -----------------------------------------------------------------------------------

def _calibrated(family="lg", d=8, seed=0, n=500):
    rng = np.random.default_rng(seed)
    scm = sample_scm(family, d, rng)
    return calibrate_scm(scm, n, np.random.default_rng(seed + 1))


def test_calibrated_sample_reproduces_the_generation_sample():
    scm, raw = _calibrated("wild", d=10, seed=3)
    again = scm.sample(500, np.random.default_rng(4), standardize=False)
    assert again.tobytes() == raw.tobytes()
    standardized = scm.sample(500, np.random.default_rng(4))
    assert np.allclose(standardized.mean(axis=0), 0, atol=1e-12)
    assert np.allclose(standardized.var(axis=0), 1, atol=1e-12)


def test_scm_json_round_trip_samples_identically():
    scm, _ = _calibrated("gauntlet", d=10, seed=5)
    restored = SCM.from_dict(json.loads(json.dumps(scm.to_dict())))
    a = scm.sample(200, np.random.default_rng(9))
    b = restored.sample(200, np.random.default_rng(9))
    assert a.tobytes() == b.tobytes()
    assert restored.names == scm.names and restored.causal_order == scm.causal_order


def test_reordering_renames_and_keeps_the_model():
    scm, _ = _calibrated("anm", d=6, seed=6)
    order = [3, 0, 5, 1, 4, 2]
    names = [f"Y{i}" for i in range(6)]
    moved = scm.reordered(order, names)
    a = scm.sample(100, np.random.default_rng(1))
    b = moved.sample(100, np.random.default_rng(1))
    assert np.array_equal(a[:, order], b)
    assert np.array_equal(moved.adjacency, scm.adjacency[np.ix_(order, order)])


def _linear_weights(scm: SCM) -> np.ndarray:
    weights = np.zeros((scm.d, scm.d))
    for j, mechanism in enumerate(scm.mechanisms):
        for parent, w in zip(mechanism.parents, mechanism.params.get("weights", []),
                             strict=False):
            weights[scm.index(parent), j] = w
    return weights


def test_intervention_cuts_incoming_edges_and_matches_linear_total_effects():
    instance = generate_instance(InstanceKey("lg", "dev", 7, d=10))
    scm = instance.record.scm
    adjacency = scm.adjacency
    # a node with both ancestors and descendants
    candidates = [j for j in range(scm.d) if adjacency[:, j].any() and adjacency[j].any()]
    target = candidates[0] if candidates else int(np.argmax(adjacency.sum(axis=1)))
    name = scm.names[target]
    descendants = set(scm.descendants(name))
    x = 2.0
    n = 20_000
    observational = scm.sample(n, np.random.default_rng(31))
    intervened = scm.sample(n, np.random.default_rng(31), interventions={name: x})
    assert np.all(intervened[:, target] == x)
    raw = scm.sample(50, np.random.default_rng(31), interventions={name: x}, standardize=False)
    assert np.allclose(raw[:, target], scm.column_means[target] + scm.column_sds[target] * x)
    total_effect = np.linalg.inv(np.eye(scm.d) - _linear_weights(scm))  # [i, j]: i's effect on j
    raw_shift = scm.column_sds[target] * x + scm.column_means[target]
    for j, other in enumerate(scm.names):
        if j == target:
            continue
        if other in descendants:
            # E[X_j | do(X_t = v)] = T[t, j]·v (raw lg means are 0), in standardized units
            predicted = (total_effect[target, j] * raw_shift - scm.column_means[j]) \
                / scm.column_sds[j]
            standard_error = intervened[:, j].std() / math.sqrt(n)
            assert abs(intervened[:, j].mean() - predicted) < 5 * standard_error + 1e-9
            assert abs(intervened[:, j].mean() - observational[:, j].mean()) > 5 * standard_error
        else:
            # non-descendants: the very same draws, since every noise is drawn in causal order
            assert intervened[:, j].tobytes() == observational[:, j].tobytes()


def test_interventions_shift_descendants_in_nonlinear_families():
    shifted, total = 0, 0
    for family in ("anm", "wild", "gauntlet"):
        for index in range(4):
            scm = generate_instance(InstanceKey(family, "dev", index)).record.scm
            for j in range(scm.d):
                children = np.nonzero(scm.adjacency[j])[0]
                if not len(children):
                    continue
                obs = scm.sample(800, np.random.default_rng(j))
                do = scm.sample(800, np.random.default_rng(j), interventions={scm.names[j]: 2.5})
                for child in children:
                    total += 1
                    shifted += stats.ks_2samp(obs[:, child], do[:, child]).pvalue < 1e-3
    assert total >= 20
    assert shifted / total > 0.8


def test_sample_bad_input():
    scm, _ = _calibrated("lg", d=4)
    rng = np.random.default_rng(0)
    with pytest.raises(UnknownNameError, match="X1"):
        scm.sample(10, rng, interventions={"Z9": 1.0})
    with pytest.raises(HeuresisError, match="finite"):
        scm.sample(10, rng, interventions={"X1": float("nan")})
    with pytest.raises(HeuresisError, match="number"):
        scm.sample(10, rng, interventions={"X1": "high"})
    with pytest.raises(HeuresisError, match="positive integer"):
        scm.sample(0, rng)
    with pytest.raises(HeuresisError, match="Generator"):
        scm.sample(10, 123)
    uncalibrated = sample_scm("lg", 4, np.random.default_rng(0))
    with pytest.raises(HeuresisError, match="calibrate_scm"):
        uncalibrated.sample(10, rng)


def test_scm_validation():
    adjacency = np.array([[0, 1], [0, 0]], dtype=bool)
    root = NodeMechanism("root_gaussian", (), {"noise_scale": 1.0})
    child = NodeMechanism("linear", ("A",), {"weights": [1.0], "noise_scale": 1.0})
    SCM(("A", "B"), adjacency, (root, child))
    with pytest.raises(HeuresisError, match="parents"):
        SCM(("A", "B"), adjacency, (root, NodeMechanism("linear", (), {})))
    with pytest.raises(HeuresisError, match="DAG"):
        SCM(("A", "B"), np.ones((2, 2), dtype=bool) & ~np.eye(2, dtype=bool), (root, child))
    with pytest.raises(HeuresisError, match="root"):
        SCM(("A", "B"), adjacency, (root, NodeMechanism("root_gaussian", ("A",), {})))
    with pytest.raises(UnknownNameError, match="mechanism kind"):
        SCM(("A", "B"), adjacency, (root, NodeMechanism("spline", ("A",), {})))
    with pytest.raises(HeuresisError, match="topological"):
        SCM(("A", "B"), adjacency, (root, child), causal_order=(1, 0))
