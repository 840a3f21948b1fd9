"""The six families as data: table contents, registry, and statistical properties of the
mechanisms they generate (dependence on parents, heavy tails, input-dependent noise)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from scipy import stats

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.families import (
    FAMILIES,
    FamilySpec,
    MechanismEntry,
    available_families,
    get_family,
    register_family,
    sample_scm,
)
from heuresis_env.generation.instances import (
    InstanceKey,
    generate_instance,
    load_instance,
    save_instance,
)
from heuresis_env.generation.mechanisms import (
    _mlp_forward,
    get_mechanism_kind,
    mlp_hetero_scale,
    sigmoid_hetero_scale,
)
from heuresis_env.generation.portable import portable_tanh, sequential_dot

MAPS = ["map_piecewise_linear", "map_sigmoid", "map_fourier", "map_quadratic", "map_abs"]


# ---- the table ---------------------------------------------------------------------------------

def test_the_six_families_in_table_order():
    assert available_families()[:6] == ["lg", "anm", "hetero", "wild", "mixed", "gauntlet"]


@pytest.mark.parametrize("name,kinds", [
    ("lg", ["linear"]),
    ("anm", ["mlp"]),
    ("hetero", ["mlp_hetero"]),
    ("wild", MAPS + ["linear", "linear_t3", "sigmoid_hetero"]),
    ("mixed", ["linear", "mlp", "mlp_hetero", "linear_t3"]),
    ("gauntlet", MAPS + ["sigmoid_hetero", "mlp", "mlp_hetero"]),
])
def test_family_entries(name, kinds):
    spec = get_family(name)
    assert spec.kinds == kinds
    assert spec.is_mixture == (len(kinds) > 1)


@pytest.mark.parametrize("name,root,noise", [
    ("lg", (0.5, 2.0), {"linear": (0.5, 2.0)}),
    ("anm", (0.5, 1.5), {"mlp": (0.5, 1.5)}),
    ("hetero", (0.5, 1.5), {}),
    ("wild", (0.5, 1.5), {**{m: (0.15, 0.35) for m in MAPS}, "linear": (0.5, 1.5),
                          "linear_t3": (0.5, 1.5)}),
    ("mixed", (0.5, 2.0), {"linear": (0.5, 2.0), "mlp": (0.5, 1.5), "linear_t3": (0.5, 2.0)}),
    ("gauntlet", (1.0, 1.0), {**{m: (0.15, 0.40) for m in MAPS}, "mlp": (0.15, 0.40)}),
])
def test_family_noise_ranges(name, root, noise):
    spec = get_family(name)
    assert spec.root.kind == "root_gaussian"
    assert spec.root.resolved_ranges()["noise_scale"] == root
    for entry in spec.mechanisms:
        ranges = entry.resolved_ranges()
        if entry.kind in noise:
            assert ranges["noise_scale"] == noise[entry.kind]
        else:  # input-dependent noise: no further σ
            assert "noise_scale" not in ranges
        if entry.kind in ("linear", "linear_t3"):
            assert ranges["weight"] == (0.5, 2.0)
        if entry.kind == "sigmoid_hetero":
            assert ranges["gain"] == (0.5, 2.0)


def test_spec_dict_round_trip():
    for name in available_families():
        spec = get_family(name)
        assert FamilySpec.from_dict(spec.to_dict()) == spec


# ---- registry and validation -------------------------------------------------------------------

def test_unknown_family_lists_known_ones():
    with pytest.raises(UnknownNameError) as info:
        get_family("wilde")
    message = str(info.value)
    assert "'wild'" in message  # close match
    for name in ("lg", "anm", "hetero", "wild", "mixed", "gauntlet"):
        assert name in message


def test_entry_and_spec_validation():
    with pytest.raises(UnknownNameError, match="mechanism kind"):
        MechanismEntry("spline")
    with pytest.raises(HeuresisError, match="noise_scale"):
        MechanismEntry("mlp", {"noise": (0.1, 0.2)})
    with pytest.raises(HeuresisError, match="low ≤ high"):
        MechanismEntry("mlp", {"noise_scale": (2.0, 1.0)})
    with pytest.raises(HeuresisError, match="pair"):
        MechanismEntry("mlp", {"noise_scale": 0.3})
    root = MechanismEntry("root_gaussian")
    with pytest.raises(HeuresisError, match="at least one"):
        FamilySpec("empty", "", root, ())
    with pytest.raises(HeuresisError, match="root kind"):
        FamilySpec("bad", "", root, (root,))
    with pytest.raises(HeuresisError, match="not a root kind"):
        FamilySpec("bad", "", MechanismEntry("mlp"), (MechanismEntry("mlp"),))
    with pytest.raises(HeuresisError, match="family name"):
        FamilySpec("bad name", "", root, (MechanismEntry("mlp"),))


@pytest.fixture
def custom_family():
    spec = register_family("quadratic_chain", {
        "description": "every non-root node a quadratic map with small noise",
        "root": {"kind": "root_gaussian", "ranges": {"noise_scale": [1.0, 1.0]}},
        "mechanisms": [{"kind": "map_quadratic", "ranges": {"noise_scale": [0.1, 0.1]}}],
    })
    yield spec
    FAMILIES.pop("quadratic_chain", None)


def test_register_family_end_to_end(custom_family, tmp_path):
    assert "quadratic_chain" in available_families()
    instance = generate_instance(InstanceKey("quadratic_chain", "dev", 4, d=8, n=300))
    kinds = instance.record.mechanism_kinds()
    for name, kind in kinds.items():
        parents = instance.record.mechanisms[name]["parents"]
        assert kind == ("map_quadratic" if parents else "root_gaussian")
        if parents:
            assert instance.record.mechanisms[name]["params"]["noise_scale"] == 0.1
    assert np.allclose(np.asarray(instance.X).var(axis=0), 1, atol=1e-12)
    loaded = load_instance(save_instance(instance, tmp_path / "custom"))
    assert loaded.sha256 == instance.sha256
    assert loaded.record.mechanisms == instance.record.mechanisms


def test_register_family_accepts_a_spec_object_and_renames_it():
    spec = FamilySpec("tmp_a", "", MechanismEntry("root_gaussian"), (MechanismEntry("linear"),))
    try:
        registered = register_family("tmp_b", spec)
        assert registered.name == "tmp_b" and get_family("tmp_b").kinds == ["linear"]
    finally:
        FAMILIES.pop("tmp_b", None)


# ---- drawing from the table ----------------------------------------------------------------------

def test_mixtures_draw_entries_uniformly_and_within_ranges():
    for seed, name in enumerate(("wild", "mixed", "gauntlet")):
        spec = get_family(name)
        counts = collections.Counter()
        rng = np.random.default_rng(seed)
        for _ in range(120):
            scm = sample_scm(spec, 10, rng)
            for mechanism in scm.mechanisms:
                params = mechanism.params
                if not mechanism.parents:
                    assert mechanism.kind == "root_gaussian"
                    low, high = spec.root.resolved_ranges()["noise_scale"]
                    assert low <= params["noise_scale"] <= high
                    continue
                counts[mechanism.kind] += 1
                entry = spec.mechanisms[spec.kinds.index(mechanism.kind)]
                ranges = entry.resolved_ranges()
                if "noise_scale" in ranges:
                    assert ranges["noise_scale"][0] <= params["noise_scale"] \
                        <= ranges["noise_scale"][1]
                if "weights" in params and mechanism.kind.startswith(("map", "sigmoid")):
                    assert np.linalg.norm(params["weights"]) == pytest.approx(1, abs=1e-14)
        observed = [counts[k] for k in spec.kinds]
        assert stats.chisquare(observed).pvalue > 1e-3, (name, observed)


# ---- statistical properties of generated data ------------------------------------------------------

def _distance_matrix_centered(x: np.ndarray) -> np.ndarray:
    distances = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    return (distances - distances.mean(0) - distances.mean(1)[:, None] + distances.mean())


def _dcov_permutation_test(y: np.ndarray, x: np.ndarray, rng: np.random.Generator,
                           n_permutations: int = 49) -> tuple[float, float]:
    """(p-value, statistic / largest null statistic) of the distance-covariance test."""
    a, b = _distance_matrix_centered(y), _distance_matrix_centered(x)
    statistic = (a * b).mean()
    null = np.empty(n_permutations)
    for k in range(n_permutations):
        p = rng.permutation(len(y))
        null[k] = (a * b[np.ix_(p, p)]).mean()
    return (1 + np.sum(null >= statistic)) / (n_permutations + 1), statistic / null.max()


def _raw(instance) -> np.ndarray:
    scm = instance.record.scm
    return np.asarray(instance.X) * scm.column_sds + scm.column_means


def _parents_of(instance, raw, name):
    return raw[:, [instance.names.index(p) for p in instance.record.mechanisms[name]["parents"]]]


def test_every_mechanism_of_every_family_depends_on_its_parents():
    """No degenerate mechanisms: each node is far from independent of its parents (distance
    covariance, permutation test), for every mechanism kind in every family."""
    rng = np.random.default_rng(0)
    results = collections.defaultdict(list)
    for family in ("lg", "anm", "hetero", "wild", "mixed", "gauntlet"):
        for index in range(10):
            instance = generate_instance(InstanceKey(family, "dev", index, n=300))
            X = np.asarray(instance.X)
            for j, name in enumerate(instance.names):
                mechanism = instance.record.mechanisms[name]
                if not mechanism["parents"]:
                    continue
                p_value, ratio = _dcov_permutation_test(X[:, [j]],
                                                        _parents_of(instance, X, name), rng)
                results[(family, mechanism["kind"])].append((p_value, ratio))
    for family in ("lg", "anm", "hetero", "wild", "mixed", "gauntlet"):
        for kind in get_family(family).kinds:
            outcomes = np.array(results[(family, kind)])
            assert len(outcomes) >= 3, (family, kind)  # every entry was drawn and tested
            detected = np.mean(outcomes[:, 0] <= 0.02)
            assert detected >= 0.8, (family, kind, detected)
            assert np.median(outcomes[:, 1]) > 2.0, (family, kind)


def test_no_mechanism_is_degenerate_in_the_population():
    """The deterministic part of every node (its mean and, for input-dependent noise, its
    scale) varies with the parents: explained variance ≥ 0.1% of the noise variance."""
    smallest = {}
    for family in ("anm", "hetero", "wild", "mixed", "gauntlet"):
        for index in range(6):
            instance = generate_instance(InstanceKey(family, "dev", index))
            raw = _raw(instance)
            scm = instance.record.scm
            for mechanism in scm.mechanisms:
                if not mechanism.parents:
                    continue
                parents = raw[:, [scm.index(p) for p in mechanism.parents]]
                kind = get_mechanism_kind(mechanism.kind)
                mean_part = kind.apply(parents, mechanism.params, np.zeros(len(raw)))
                if mechanism.kind == "mlp_hetero":
                    scale = mlp_hetero_scale(parents, mechanism.params)
                elif mechanism.kind == "sigmoid_hetero":
                    scale = sigmoid_hetero_scale(parents, mechanism.params)
                else:
                    scale = np.full(len(raw), mechanism.params["noise_scale"])
                explained = (mean_part.var() + scale.var()) / np.mean(scale**2)
                key = (family, mechanism.kind)
                smallest[key] = min(smallest.get(key, np.inf), explained)
    assert min(smallest.values()) > 1e-3, smallest


def test_t3_nodes_are_heavy_tailed_and_gaussian_nodes_are_not():
    t3_kurtosis, gaussian_kurtosis = [], []
    for family in ("wild", "mixed"):
        for index in range(15):
            instance = generate_instance(InstanceKey(family, "dev", index))
            raw = _raw(instance)
            for j, name in enumerate(instance.names):
                mechanism = instance.record.mechanisms[name]
                if mechanism["kind"] not in ("linear", "linear_t3"):
                    continue
                params = mechanism["params"]
                residual = raw[:, j] - sequential_dot(_parents_of(instance, raw, name),
                                                      params["weights"])
                target = t3_kurtosis if mechanism["kind"] == "linear_t3" else gaussian_kurtosis
                target.append(stats.kurtosis(residual / params["noise_scale"]))
    assert len(t3_kurtosis) >= 10 and len(gaussian_kurtosis) >= 10
    assert np.median(t3_kurtosis) > 3.0 and np.min(t3_kurtosis) > 1.0
    assert abs(np.median(gaussian_kurtosis)) < 0.3 and np.max(gaussian_kurtosis) < 1.0
    # distributional check on the pooled t3 residuals (scaled back to t₃)
    assert stats.mannwhitneyu(t3_kurtosis, gaussian_kurtosis).pvalue < 1e-6


def test_input_dependent_noise_variance_depends_on_the_parents():
    """Residuals of hetero nodes (from the true mean function) have a variance that follows
    the parents: r² correlates with the true scale g(pa); in lg it does not."""
    correlations, p_values = [], []
    for family in ("hetero", "wild", "gauntlet"):
        for index in range(10):
            instance = generate_instance(InstanceKey(family, "dev", index))
            raw = _raw(instance)
            for j, name in enumerate(instance.names):
                mechanism = instance.record.mechanisms[name]
                params = mechanism["params"]
                if mechanism["kind"] == "mlp_hetero":
                    parents = _parents_of(instance, raw, name)
                    residual = raw[:, j] - _mlp_forward(parents, params["mean_network"])
                    scale = mlp_hetero_scale(parents, params)
                elif mechanism["kind"] == "sigmoid_hetero":
                    parents = _parents_of(instance, raw, name)
                    z = sequential_dot(parents, params["weights"])
                    residual = raw[:, j] - portable_tanh(z * params["gain_mean"])
                    scale = sigmoid_hetero_scale(parents, params)
                else:
                    continue
                result = stats.spearmanr(residual**2, scale)
                correlations.append(result.statistic)
                p_values.append(result.pvalue)
    assert len(correlations) >= 30
    assert np.median(correlations) > 0.3
    assert np.mean(np.array(p_values) < 0.01) > 0.85
    # control: in lg the squared residuals do not follow the parents
    control = []
    for index in range(10):
        instance = generate_instance(InstanceKey("lg", "dev", index))
        raw = _raw(instance)
        for j, name in enumerate(instance.names):
            params = instance.record.mechanisms[name]["params"]
            if "weights" not in params:
                continue
            parents = _parents_of(instance, raw, name)
            residual = raw[:, j] - sequential_dot(parents, params["weights"])
            control.append(stats.spearmanr(residual**2, np.abs(parents).sum(axis=1)).pvalue)
    assert np.mean(np.array(control) < 0.01) < 0.1
