"""CI tests: agreement with causal-learn, calibration under the null, power, caching, input errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import stats

from heuresis_env.discovery.citests import CI_TESTS, make_ci_test
from heuresis_env.discovery.citests.base import CITest
from heuresis_env.discovery.citests.kci import (
    EPSILON,
    KCI,
    Gram,
    ResidualMaker,
    center_kernel,
    gaussian_kernel,
)
from heuresis_env.discovery.citests.rcit import (
    randomized_conditional_test,
    randomized_independence_test,
)
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError

ALL_TESTS = ["dcor", "fisherz", "kci", "rcit", "rcot"]  # the tests of data (dsep needs a DAG)


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    """On a shared machine multi-threaded BLAS on these small matrices only oversubscribes
    the cores (and can be tens of times slower); results do not depend on it."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield
FAST_PARAMS = {"dcor": {"method": "chi2"}}  # keeps the import of dcor (numba) out of most tests


def make(name: str, data: np.ndarray, **params) -> CITest:
    return make_ci_test(name, data, **{**FAST_PARAMS.get(name, {}), **params})


def nonlinear_data(seed: int, n: int) -> np.ndarray:
    """Six columns: 0, 1 exogenous; 2 = f(0, 1); 3 = g(2); 4 = h(1, 3); 5 = 0.5·0 + noise."""
    rng = np.random.default_rng(seed)
    data = rng.normal(size=(n, 6))
    data[:, 2] = np.sin(data[:, 0]) + 0.5 * data[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    data[:, 3] = np.tanh(data[:, 2]) + 0.4 * rng.standard_t(3, size=n)
    data[:, 4] = np.abs(data[:, 1]) * data[:, 3] + 0.3 * rng.normal(size=n)
    data[:, 5] += 0.5 * data[:, 0]
    return data


def linear_data(seed: int, n: int, d: int = 6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = np.triu(rng.uniform(0.5, 1.5, size=(d, d)) * (rng.uniform(size=(d, d)) < 0.5), 1)
    data = rng.normal(size=(n, d))
    for j in range(d):
        data[:, j] += data @ weights[:, j]
    return data


KCI_CASES = [
    (0, 1, ()), (2, 3, ()), (0, 5, ()),
    (0, 3, (2,)), (1, 3, (2,)), (2, 5, (0,)),
    (0, 4, (1, 3)), (3, 5, (0, 2)),
    (0, 4, (1, 2, 3)), (1, 5, (0, 2, 3)),
]


# -- KCI ≡ causal-learn ---------------------------------------------------------------------

@pytest.mark.parametrize(
    "data",
    [nonlinear_data(0, 150), nonlinear_data(1, 250), linear_data(2, 300)],
    ids=["nonlinear-n150", "nonlinear-n250", "linear-n300"],
)
def test_kci_agrees_with_causal_learn(data):
    from causallearn.utils.cit import CIT

    reference = CIT(data, "kci")
    ours = KCI(data, disk_cache=False)
    exact = KCI(data, disk_cache=False, truncate_spectrum=True)
    for x, y, s in KCI_CASES:
        expected = reference(x, y, list(s))
        assert abs(ours.p_value(x, y, s) - expected) < 1e-4, (x, y, s)
        # with causal-learn's eigenvalue cut-off too, only rounding error is left
        assert abs(exact.p_value(x, y, s) - expected) < 1e-8, (x, y, s)


def test_kci_statistic_is_causal_learns():
    from causallearn.utils.KCI.KCI import KCI_CInd, KCI_UInd

    data = nonlinear_data(3, 200)
    ours = KCI(data, disk_cache=False)
    _, statistic = KCI_UInd().compute_pvalue(data[:, [0]], data[:, [2]])
    assert ours.test(0, 2).statistic == pytest.approx(statistic, rel=1e-10)
    _, statistic = KCI_CInd().compute_pvalue(data[:, [0]], data[:, [4]], data[:, [1, 3]])
    assert ours.test(0, 4, (1, 3)).statistic == pytest.approx(statistic, rel=1e-8)


@pytest.mark.parametrize(
    "params",
    [{"est_width": "median"}, {"est_width": "manual", "kwidthx": 0.6, "kwidthy": 1.1, "kwidthz": 0.9}],
    ids=["median", "manual"],
)
def test_kci_width_options_agree_with_causal_learn(params):
    from causallearn.utils.cit import CIT

    data = nonlinear_data(4, 200)
    reference = CIT(data, "kci", **params)
    ours = KCI(data, disk_cache=False, truncate_spectrum=True, **params)
    for x, y, s in [(0, 2, ()), (0, 3, (2,)), (0, 4, (1, 3))]:
        assert abs(ours.p_value(x, y, s) - reference(x, y, list(s))) < 1e-8, (x, y, s)


@pytest.mark.parametrize("n", [150, 600, 1300])
def test_kci_empirical_widths_are_causal_learns(n):
    from causallearn.utils.KCI.GaussianKernel import GaussianKernel

    from heuresis_env.discovery.citests.kci import hsic_empirical_width, kci_empirical_width

    for dims in (1, 3):
        points = np.zeros((n, dims))
        hsic, kci = GaussianKernel(), GaussianKernel()
        hsic.set_width_empirical_hsic(points)
        kci.set_width_empirical_kci(points)
        assert hsic.width == pytest.approx(dims / hsic_empirical_width(n) ** 2)
        assert kci.width == pytest.approx(1 / kci_empirical_width(n) ** 2 / dims)


def test_kci_unconditional_agrees_with_causal_learn_at_large_n():
    from causallearn.utils.KCI.KCI import KCI_UInd

    data = nonlinear_data(13, 1300)
    ours = KCI(data, disk_cache=False)
    for x, y in [(0, 2), (0, 1), (3, 4)]:
        expected, statistic = KCI_UInd().compute_pvalue(data[:, [x]], data[:, [y]])
        result = ours.test(x, y)
        assert result.p_value == pytest.approx(expected, abs=1e-10)
        assert result.statistic == pytest.approx(statistic, rel=1e-9)


def test_low_rank_residual_maker_equals_dense_inverse():
    """R_z = ε (H K_z H + ε I)⁻¹: the low-rank form (1-D z) and the dense one (3-D z) both
    match the explicit inverse, applied to a dense kernel and to a factor."""
    rng = np.random.default_rng(5)
    n = 300
    points = rng.normal(size=(n, 3))
    other = center_kernel(gaussian_kernel(rng.normal(size=(n, 1)), 2.0))
    ranks = {}
    for dims in (1, 3):
        precision = 1.0 / 0.7**2 / dims
        maker = ResidualMaker.from_points(points[:, :dims], precision)
        ranks[dims] = maker.rank
        kz = center_kernel(gaussian_kernel(points[:, :dims], precision))
        explicit = EPSILON * np.linalg.pinv(kz + EPSILON * np.eye(n))
        expected = explicit @ other @ explicit
        assert np.abs(maker.residualize(Gram(dense=other)).full() - expected).max() < 1e-8
        factor = np.linalg.cholesky(other + 1e-9 * np.eye(n))
        via_factor = maker.residualize(Gram(factor=factor)).full()
        assert np.abs(via_factor - explicit @ (factor @ factor.T) @ explicit).max() < 1e-8
    assert ranks[1] < n // 2 and ranks[3] == n  # both paths were exercised


def test_kci_results_do_not_depend_on_the_matrix_cache():
    data = nonlinear_data(6, 200)
    roomy = KCI(data, disk_cache=False)
    cramped = KCI(data, disk_cache=False, memory_mb=0)
    for x, y, s in KCI_CASES:
        assert roomy.p_value(x, y, s) == pytest.approx(cramped.p_value(x, y, s), abs=1e-12)


# -- Fisher-z ≡ causal-learn ----------------------------------------------------------------

def test_fisherz_agrees_with_causal_learn():
    from causallearn.utils.cit import CIT

    rng = np.random.default_rng(7)
    data = linear_data(7, 400, d=8)
    reference = CIT(data, "fisherz")
    ours = make_ci_test("fisherz", data)
    for _ in range(120):
        x, y, *rest = rng.permutation(8)
        s = tuple(rest[: rng.integers(0, 5)])
        expected = reference(int(x), int(y), list(map(int, s)))
        result = ours.test(x, y, s)
        assert result.p_value == pytest.approx(expected, abs=1e-12, rel=1e-9)
        # the statistic is |z| √(n − |S| − 3)
        assert stats.norm.sf(result.statistic) * 2 == pytest.approx(expected, abs=1e-12, rel=1e-9)


def test_fisherz_singular_conditioning_set():
    rng = np.random.default_rng(8)
    data = rng.normal(size=(100, 4))
    data[:, 3] = data[:, 1] + 2 * data[:, 2]
    fisherz = make_ci_test("fisherz", data)
    with pytest.raises(DataError, match="singular"):
        fisherz.test(0, 3, (1, 2))
    with pytest.raises(DataError, match="singular"):
        fisherz.test(0, 1, (2, 3))


# -- RCIT / RCoT: seeded, and causal-learn's computation draw for draw ----------------------

@pytest.mark.parametrize("approx", ["lpd4", "hbe", "gamma", "chi2", "perm"])
def test_rcit_reproduces_causal_learn_given_the_same_draws(approx):
    from causallearn.utils.RCIT.RCIT import RCIT as ReferenceRCIT
    from causallearn.utils.RCIT.RCIT import RIT as ReferenceRIT

    data = nonlinear_data(9, 300)
    x, y, z = data[:, [0]], data[:, [4]], data[:, [1, 3]]
    saved = np.random.get_state()
    try:
        for draw_seed in (0, 1):
            np.random.seed(draw_seed)
            expected_p, expected_stat = ReferenceRIT(approx=approx).compute_pvalue(x, y)
            stat, p = randomized_independence_test(x, y, np.random.RandomState(draw_seed), approx)
            assert (stat, p) == pytest.approx((expected_stat, expected_p), abs=1e-12, rel=1e-9)
            for include_z in (True, False):
                np.random.seed(draw_seed)
                reference = ReferenceRCIT(approx=approx, rcit=include_z)
                expected_p, expected_stat = reference.compute_pvalue(x, y, z)
                stat, p = randomized_conditional_test(
                    x, y, z, np.random.RandomState(draw_seed), approx, include_z_in_y=include_z
                )
                assert (stat, p) == pytest.approx((expected_stat, expected_p), abs=1e-12, rel=1e-9)
    finally:
        np.random.set_state(saved)


@pytest.mark.parametrize("name", ["rcit", "rcot", "dcor"])
def test_randomized_tests_do_not_depend_on_call_order_or_global_state(name):
    data = nonlinear_data(10, 200)
    params = {"method": "permutation", "n_permutations": 49} if name == "dcor" else {}
    cases = [(0, 2, ()), (0, 3, (2,)), (1, 5, (0, 2))]
    forward = make_ci_test(name, data, seed=3, **params)
    first = [forward.test(*case) for case in cases]
    np.random.seed(123)  # the global RNG is not used
    backward = make_ci_test(name, data, seed=3, **params)
    second = [backward.test(*case) for case in reversed(cases)][::-1]
    assert [r.p_value for r in first] == [r.p_value for r in second]
    other_seed = make_ci_test(name, data, seed=4, **params)
    assert any(other_seed.test(*case).p_value != r.p_value for case, r in zip(cases, first))


def test_rcit_and_rcot_agree_without_conditioning_and_differ_with_it():
    data = nonlinear_data(11, 300)
    rcit, rcot = make_ci_test("rcit", data, seed=5), make_ci_test("rcot", data, seed=5)
    assert rcit.p_value(0, 2) == rcot.p_value(0, 2)
    assert rcit.p_value(0, 4, (1, 3)) != rcot.p_value(0, 4, (1, 3))


def test_rng_parameter_becomes_a_seed():
    data = nonlinear_data(12, 150)
    a = make_ci_test("rcit", data, rng=np.random.default_rng(99))
    b = make_ci_test("rcit", data, rng=np.random.default_rng(99))
    assert a.params["seed"] == b.params["seed"]
    assert a.p_value(0, 3, (2,)) == b.p_value(0, 3, (2,))


# -- calibration and power ------------------------------------------------------------------

def _null_p_values(name: str, conditional: bool, draws: int = 50, n: int = 200, **params) -> np.ndarray:
    """p-values of x ⟂ y (| z) on data where it holds: x = f(z) + e₁, y = g(z) + e₂."""
    p_values = []
    for seed in range(draws):
        rng = np.random.default_rng(1000 + seed)
        z = rng.normal(size=n)
        x = (np.tanh(z) if conditional else 0) + rng.normal(size=n)
        y = (0.5 * z**2 if conditional else 0) + rng.normal(size=n)
        test = make(name, np.column_stack([x, y, z]), disk_cache=False, **params)
        p_values.append(test.p_value(0, 1, (2,) if conditional else ()))
    return np.array(p_values)


@pytest.mark.parametrize(
    ("name", "conditional", "params"),
    [
        ("fisherz", False, {}),
        ("kci", False, {}),
        ("kci", True, {}),
        ("rcit", False, {}),
        ("rcit", True, {}),
        ("rcot", True, {}),
        ("dcor", False, {"method": "permutation", "n_permutations": 99}),
        ("dcor", True, {"method": "permutation", "n_permutations": 99}),
    ],
)
def test_p_values_are_uniform_under_the_null(name, conditional, params):
    p_values = _null_p_values(name, conditional, **params)
    assert stats.kstest(p_values, "uniform").pvalue > 0.001, np.sort(p_values)


def test_fisherz_calibrated_given_linear_confounder():
    """(Fisher-z's null is zero partial correlation: the confounding must be linear.)"""
    p_values = []
    for seed in range(50):
        rng = np.random.default_rng(2000 + seed)
        z = rng.normal(size=200)
        data = np.column_stack([z + rng.normal(size=200), -z + rng.normal(size=200), z])
        p_values.append(make_ci_test("fisherz", data).p_value(0, 1, (2,)))
    assert stats.kstest(p_values, "uniform").pvalue > 0.001


def test_dcor_chi2_is_conservative_under_the_null():
    p_values = _null_p_values("dcor", False, method="chi2")
    assert np.mean(p_values < 0.05) <= 0.05 and np.mean(p_values < 0.2) < 0.2


@pytest.mark.parametrize("name", ALL_TESTS)
def test_power_against_dependence(name):
    """Each test rejects a clear dependence (x ⟂ y | z false) at n = 300."""
    rng = np.random.default_rng(30)
    n = 300
    z = rng.normal(size=n)
    x = rng.normal(size=n) + 0.5 * z
    linear_y = x + 0.5 * z + 0.5 * rng.normal(size=n)
    quadratic_y = x**2 + 0.5 * z + 0.5 * rng.normal(size=n)
    data = np.column_stack([x, linear_y, quadratic_y, z])
    test = make(name, data, disk_cache=False)
    assert test.p_value(0, 1) < 0.001
    assert test.p_value(0, 1, (3,)) < 0.001
    if name != "fisherz":  # a kernel/distance test also sees a dependence with no correlation
        assert test.p_value(0, 2, (3,)) < 0.001


def test_kci_sees_what_fisherz_misses():
    rng = np.random.default_rng(31)
    x = rng.normal(size=300)
    data = np.column_stack([x, x**2 + 0.3 * rng.normal(size=300)])
    assert make_ci_test("fisherz", data).p_value(0, 1) > 0.01
    assert make_ci_test("kci", data, disk_cache=False).p_value(0, 1) < 1e-6


# -- distance correlation -------------------------------------------------------------------

def test_distance_correlation_matches_dcor():
    import dcor

    from heuresis_env.discovery.citests.dcor import distance_chi2_test, distance_correlation

    rng = np.random.default_rng(40)
    x = rng.normal(size=(120, 2))
    y = np.sin(x[:, :1]) + 0.5 * rng.normal(size=(120, 1))
    assert distance_correlation(x[:, 0], y[:, 0]) == pytest.approx(dcor.distance_correlation(x[:, 0], y[:, 0]), rel=1e-10)
    assert distance_correlation(x, y) == pytest.approx(dcor.distance_correlation(x, y), rel=1e-10)
    assert distance_correlation(x[:, 0], x[:, 0]) == pytest.approx(1.0)
    assert distance_correlation(x[:, 0], np.ones(120)) == 0.0
    # the χ² statistic is n V²ₙ / (a.. b..)
    statistic, _ = distance_chi2_test(x[:, 0], y[:, 0])
    a = np.abs(x[:, :1] - x[:, 0])
    b = np.abs(y - y[:, 0])
    expected = 120 * dcor.distance_covariance_sqr(x[:, 0], y[:, 0]) / (a.mean() * b.mean())
    assert statistic == pytest.approx(expected, rel=1e-10)


def test_distance_correlations_of_many_pairs_equal_the_single_pair_statistic(monkeypatch):
    import dcor

    from heuresis_env.discovery.citests import dcor as ours

    rng = np.random.default_rng(41)
    data = rng.normal(size=(150, 6))
    data[:, 1] = np.exp(data[:, 0]) + 0.3 * rng.normal(size=150)
    data[:, 4] = 2.0  # a constant column: dCor 0
    pairs = [(0, 1), (1, 0), (2, 5), (0, 4), (3, 3), (5, 1), (0, 1)]
    expected = [ours.distance_correlation(data[:, i], data[:, j]) for i, j in pairs]
    assert ours.distance_correlations(data, pairs).tolist() == expected  # to the last bit
    assert expected[0] == pytest.approx(dcor.distance_correlation(data[:, 0], data[:, 1]), rel=1e-10)
    assert expected[3] == 0.0 and expected[4] == pytest.approx(1.0)
    # a memory bound of two matrices (most pairs recompute one) changes nothing
    monkeypatch.setattr(ours, "_MEMORY_BYTES", 2 * 8 * 150**2)
    assert ours.distance_correlations(data, pairs).tolist() == expected
    with pytest.raises(DataError, match="column pair"):
        ours.distance_correlations(data, [(0, 6)])


def _distance_matrix_statistic(x: np.ndarray, y: np.ndarray) -> float:
    """n V²ₙ from the double-centred distance matrices (the O(n²) definition)."""
    a = np.abs(x[:, None] - x[None, :])
    b = np.abs(y[:, None] - y[None, :])
    a = a - a.mean(axis=0) - a.mean(axis=1)[:, None] + a.mean()
    b = b - b.mean(axis=0) - b.mean(axis=1)[:, None] + b.mean()
    return len(x) * float(np.mean(a * b))


@pytest.mark.parametrize("ties", [False, True], ids=["continuous", "ties"])
def test_pairing_statistics_equal_the_distance_matrix_definition(ties):
    from heuresis_env.discovery.citests.dcor import pairing_statistics, vector_self_statistic

    rng = np.random.default_rng(43)
    x = rng.normal(size=97)
    y = np.cos(2 * x) + 0.5 * rng.normal(size=97)
    if ties:  # discrete columns: equal values in x and in y
        x, y = np.round(x), np.round(2 * y)
    permutations = np.array([rng.permutation(97) for _ in range(6)])
    expected = [_distance_matrix_statistic(x, y)]
    expected += [_distance_matrix_statistic(x[p], y) for p in permutations]
    python = pairing_statistics(x, y, permutations, compiled=False)
    compiled = pairing_statistics(x, y, permutations)
    assert python == pytest.approx(expected, rel=1e-10, abs=1e-10)
    assert compiled == pytest.approx(python, rel=1e-12, abs=1e-12)
    assert vector_self_statistic(x) == pytest.approx(_distance_matrix_statistic(x, x), rel=1e-10)


def test_dcor_p_values_are_dcors_for_many_seeds():
    """Same data, 25 seeds, marginal and conditional: the O(n log n) permutation test draws
    dcor's permutations, so every p-value equals ``distance_covariance_test``'s exactly (a
    fortiori within Monte Carlo error); the statistic is dcor's distance correlation."""
    import dcor

    data = nonlinear_data(44, 180)
    cases = [(0, 2, ()), (0, 5, ()), (3, 5, ()), (0, 3, (2,)), (1, 3, (2,)), (0, 4, (1, 3))]
    differences = []
    for seed in range(25):
        test = make_ci_test("dcor", data, seed=seed, n_permutations=99, disk_cache=False)
        for x, y, s in cases:
            result = test.test(x, y, s)
            residual_x, residual_y = test.residuals(x, s), test.residuals(y, s)
            expected = dcor.independence.distance_covariance_test(
                residual_x, residual_y, num_resamples=99, random_state=test.generator(x, y, s))
            differences.append(result.p_value - expected.pvalue)
            assert result.statistic == pytest.approx(
                dcor.distance_correlation(residual_x, residual_y), rel=1e-9)
    assert max(map(abs, differences)) == 0.0


def test_dcor_residuals_are_shared_per_conditioning_set():
    data = nonlinear_data(45, 150)
    test = make_ci_test("dcor", data, n_permutations=19, disk_cache=False)
    test.test(0, 3, (2,))
    eigen = test._matrices.get(("eigen", (2,)))
    residual = test.residuals(0, (2,))
    test.test(0, 4, (2,))
    assert test._matrices.get(("eigen", (2,))) is eigen
    assert test.residuals(0, (2,)) is residual


def test_dcor_conditioning_options():
    data = nonlinear_data(42, 200)
    with pytest.raises(HeuresisError, match="marginal"):
        make(name="dcor", data=data, conditioning="none").test(0, 3, (2,))
    linear = make("dcor", data, conditioning="linear")
    design = np.column_stack([np.ones(200), linear.standardized[:, 2]])
    target = linear.standardized[:, 3]
    expected = target - design @ np.linalg.lstsq(design, target, rcond=None)[0]
    assert np.allclose(linear.residuals(3, (2,)), expected)


# -- caching --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ALL_TESTS)
def test_cache_is_order_independent(name):
    test = make(name, nonlinear_data(50, 120), disk_cache=False)
    first = test.test(3, 0, (4, 1))
    assert test.test(0, 3, (1, 4)) is first
    assert test.test(3, 0, [1, 4, 1]) is first
    assert test.n_computed == 1
    assert (first.x, first.y, first.conditioning_set) == (0, 3, (1, 4))


def test_disk_cache_is_shared_across_objects_and_keyed_by_data_and_parameters():
    data = nonlinear_data(51, 150)
    cases = [(0, 2, ()), (0, 3, (2,)), (1, 4, (2, 3))]
    first = KCI(data)
    expected = [first.p_value(*case) for case in cases]
    assert first.n_computed == len(cases)

    second = KCI(data.copy())
    assert [second.p_value(*case) for case in cases] == expected
    assert second.n_computed == 0

    changed = data.copy()
    changed[0, 0] += 1e-9
    other_data = KCI(changed)
    [other_data.p_value(*case) for case in cases]
    assert other_data.n_computed == len(cases)

    other_params = KCI(data, est_width="median")
    [other_params.p_value(*case) for case in cases]
    assert other_params.n_computed == len(cases)

    # the matrix-cache budget does not change results, so it does not change the key
    assert KCI(data, memory_mb=1).p_value(*cases[1]) == expected[1]


# -- bad input ------------------------------------------------------------------------------

def test_unknown_test_name_lists_the_known_ones():
    with pytest.raises(UnknownNameError) as error:
        make_ci_test("kcii", np.zeros((10, 2)))
    message = str(error.value)
    assert all(name in message for name in CI_TESTS)
    assert "'kci'" in message  # the close match


@pytest.mark.parametrize("name", ALL_TESTS)
def test_bad_data_and_bad_variables(name):
    data = nonlinear_data(60, 60)
    with_nan = data.copy()
    with_nan[5, 2] = np.nan
    with pytest.raises(DataError, match=r"NaN.*\[2\]"):
        make(name, with_nan)
    constant = data.copy()
    constant[:, 4] = 3.0
    with pytest.raises(DataError, match=r"constant"):
        make(name, constant)
    test = make(name, data, disk_cache=False)
    with pytest.raises(HeuresisError, match="differ"):
        test.test(1, 1)
    with pytest.raises(HeuresisError, match="contains"):
        test.test(0, 1, (1, 2))
    with pytest.raises(HeuresisError, match="out of range"):
        test.test(0, 6)
    with pytest.raises(HeuresisError, match="out of range"):
        test.test(0, 1, (-1,))


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("kci", {"kernelX": "Linear"}, "Gaussian"),
        ("kci", {"approx": False}, "gamma"),
        ("kci", {"use_gp": True}, "not supported"),
        ("kci", {"null_ss": 500}, "approx=False"),
        ("kci", {"est_width": "manual", "kwidthx": 1.0}, "kwidthy"),
        ("kci", {"kwidthx": 1.0}, "manual"),
        ("kci", {"est_width": "widest"}, "empirical"),
        ("kci", {"bandwidth": 1.0}, "est_width"),
        ("rcit", {"approx": "lpb4"}, "lpd4"),
        ("rcit", {"num_f": 0}, "≥ 1"),
        ("rcit", {"seed": -1}, "≥ 0"),
        ("rcot", {"rng": 3}, "Generator"),
        ("dcor", {"method": "exact"}, "permutation"),
        ("dcor", {"conditioning": "gp"}, "kernel"),
        ("dcor", {"method": "chi2", "n_permutations": 10}, "only"),
    ],
)
def test_bad_parameters_are_named(name, params, message):
    with pytest.raises(HeuresisError, match=message):
        make_ci_test(name, nonlinear_data(61, 50), **params)


def test_fisherz_needs_enough_rows():
    data = np.random.default_rng(62).normal(size=(6, 5))
    with pytest.raises(DataError, match="too few"):
        make_ci_test("fisherz", data).test(0, 1, (2, 3, 4))


# -- import hygiene -------------------------------------------------------------------------

def test_importing_the_ci_tests_stays_light():
    code = textwrap.dedent(
        """
        import sys
        import heuresis_env, heuresis_env.discovery.citests
        import heuresis_env.discovery.citests.fisherz, heuresis_env.discovery.citests.kci
        import heuresis_env.discovery.citests.rcit, heuresis_env.discovery.citests.dcor
        heavy = [m for m in sys.modules if m.split(".")[0] in ("dcor", "numba", "torch", "causallearn")]
        print(",".join(sorted(heavy)))
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
