"""NOTEARS linear and MLP: the acyclicity function, recovery of known SEMs, reproducibility."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import scipy.linalg as slin

from heuresis_env.discovery.notears import (
    MLP_ENGINES,
    NotearsMlpObjective,
    acyclicity,
    expm_nonnegative,
    notears_linear,
    notears_mlp,
    prune_to_dag,
)
from heuresis_env.errors import DataError, HeuresisError, UnknownNameError
from heuresis_env.graphs import has_directed_cycle


def _linear_sem(weights: np.ndarray, n: int, rng: np.random.Generator,
                noise: str = "gaussian") -> np.ndarray:
    """Sample X = X W + E in topological order (W upper-triangular), unit-variance noise."""
    d = weights.shape[0]
    x = np.zeros((n, d))
    for j in range(d):
        e = rng.normal(size=n) if noise == "gaussian" else rng.uniform(-3 ** 0.5, 3 ** 0.5, n)
        x[:, j] = x @ weights[:, j] + e
    return x


TRUE_WEIGHTS = np.zeros((5, 5))
TRUE_WEIGHTS[0, 1] = 1.5
TRUE_WEIGHTS[1, 2] = -1.0
TRUE_WEIGHTS[0, 3] = 0.8
TRUE_WEIGHTS[3, 4] = 1.2
TRUE_WEIGHTS[2, 4] = -0.7


def test_expm_nonnegative_matches_scipy():
    rng = np.random.default_rng(0)
    # ∞-norms from 10⁻³ to 10³: from no squaring and a short series to ten squarings
    for d, scale in [(3, 0.01), (3, 0.1), (6, 0.5), (10, 1.0), (25, 0.4), (8, 3.0),
                     (10, 5.0), (1, 2.0)]:
        w = rng.normal(size=(d, d)) * scale
        m = w * w
        reference = slin.expm(m)
        np.testing.assert_allclose(expm_nonnegative(m), reference, rtol=1e-12)
    np.testing.assert_array_equal(expm_nonnegative(np.zeros((4, 4))), np.eye(4))
    # a signed matrix of small norm (the bound then uses |M|; cancellation is mild here)
    signed = rng.normal(size=(5, 5)) * 0.1
    np.testing.assert_allclose(expm_nonnegative(signed), slin.expm(signed), rtol=1e-12,
                               atol=1e-15)


def test_acyclicity_is_zero_exactly_for_dags():
    assert acyclicity(TRUE_WEIGHTS) == pytest.approx(0.0, abs=1e-12)
    cyclic = TRUE_WEIGHTS.copy()
    cyclic[4, 0] = 0.5  # closes 0 → 3 → 4 → 0
    assert acyclicity(cyclic) > 1e-3
    # h grows with the cycle's weight: h = tr(exp(W∘W)) − d ≥ Σ_k tr((W∘W)^k)/k!
    heavier = cyclic.copy()
    heavier[4, 0] = 1.0
    assert acyclicity(heavier) > acyclicity(cyclic)


def test_prune_to_dag_removes_the_weakest_cycle_edge():
    w = np.zeros((3, 3))
    w[0, 1], w[1, 2], w[2, 0] = 2.0, -0.4, 1.0
    pruned, removed = prune_to_dag(w)
    assert removed == 1
    assert pruned[1, 2] == 0 and pruned[0, 1] == 2.0 and pruned[2, 0] == 1.0
    unchanged, none_removed = prune_to_dag(TRUE_WEIGHTS)
    assert none_removed == 0
    np.testing.assert_array_equal(unchanged, TRUE_WEIGHTS)


def test_linear_recovers_an_equal_variance_gaussian_sem():
    # equal noise variances: the setting in which NOTEARS' least-squares loss identifies the DAG
    x = _linear_sem(TRUE_WEIGHTS, 2000, np.random.default_rng(1))
    result = notears_linear(x)
    assert result.converged and result.h <= 1e-8
    assert result.edges_removed_for_acyclicity == 0
    np.testing.assert_array_equal(result.adjacency, TRUE_WEIGHTS != 0)
    # the output of the reference code (xunzheng/notears linear.py, lambda1=0.1, l2 loss)
    # on this very sample; L1 and the augmented Lagrangian shrink every weight towards 0
    reference_output = np.array([
        [0.0, 1.3706, 0.0, 0.6134, 0.0],
        [0.0, 0.0, -0.9665, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0, -0.7077],
        [0.0, 0.0, 0.0, 0.0, 1.1788],
        [0.0, 0.0, 0.0, 0.0, 0.0],
    ])
    np.testing.assert_allclose(result.weights, reference_output, atol=5e-3)
    assert np.all(np.abs(result.weights) <= np.abs(TRUE_WEIGHTS) + 0.02)


def test_linear_threshold_and_penalty_parameters_act():
    x = _linear_sem(TRUE_WEIGHTS, 1000, np.random.default_rng(2), noise="uniform")
    dense = notears_linear(x, lambda1=0.0, w_threshold=0.0)
    sparse = notears_linear(x, lambda1=0.1, w_threshold=0.3)
    assert np.count_nonzero(dense.weights) > np.count_nonzero(sparse.weights)
    assert not has_directed_cycle(dense.adjacency)
    strict = notears_linear(x, w_threshold=1.0)
    assert np.all(np.abs(strict.weights[strict.weights != 0]) >= 1.0)


def test_linear_logistic_and_poisson_losses_run():
    rng = np.random.default_rng(3)
    n = 400
    a = rng.binomial(1, 0.5, size=n)
    b = rng.binomial(1, np.where(a == 1, 0.9, 0.1))
    c = rng.binomial(1, 0.5, size=n)
    binary = np.column_stack([a, b, c]).astype(float)
    logistic = notears_linear(binary, loss_type="logistic", lambda1=0.01)
    assert not has_directed_cycle(logistic.adjacency)
    assert logistic.adjacency[0, 1] or logistic.adjacency[1, 0]
    counts = rng.poisson(2.0, size=(n, 3)).astype(float)
    poisson = notears_linear(counts, loss_type="poisson")
    assert not has_directed_cycle(poisson.adjacency)


def test_linear_rejects_bad_input():
    x = _linear_sem(TRUE_WEIGHTS, 50, np.random.default_rng(4))
    with pytest.raises(UnknownNameError, match="l2"):
        notears_linear(x, loss_type="huber")
    with pytest.raises(HeuresisError, match="lambda1"):
        notears_linear(x, lambda1=-1)
    bad = x.copy()
    bad[3, 2] = np.nan
    with pytest.raises(DataError, match="NaN"):
        notears_linear(bad)


def _nonlinear_chain(seed: int, n: int = 200) -> np.ndarray:
    """a → b → c and a → d with nonlinear mechanisms; columns standardized."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = np.sin(2 * a) + 0.3 * rng.normal(size=n)
    c = b ** 2 + 0.3 * rng.normal(size=n)
    d = np.tanh(a) + 0.3 * rng.normal(size=n)
    x = np.column_stack([a, b, c, d])
    return (x - x.mean(axis=0)) / x.std(axis=0)


@pytest.mark.parametrize("engine", MLP_ENGINES)
def test_mlp_returns_a_dag_that_finds_the_nonlinear_adjacencies(engine):
    import torch

    x = _nonlinear_chain(1)
    torch.manual_seed(1234)
    state_before = torch.random.get_rng_state()
    threads_before = torch.get_num_threads()
    result = notears_mlp(x, seed=0, engine=engine)
    # the caller's torch RNG and thread setting are untouched
    assert torch.equal(torch.random.get_rng_state(), state_before)
    assert torch.get_num_threads() == threads_before
    assert not has_directed_cycle(result.adjacency)
    assert result.converged
    skeleton = result.adjacency | result.adjacency.T
    assert all(skeleton[i, j] for i, j in [(0, 1), (1, 2), (0, 3)])  # every true adjacency
    # the output of the reference code (xunzheng/notears nonlinear.py, NotearsMLP([4, 10, 1]),
    # lambda1 = lambda2 = 0.01, torch.manual_seed(0), float64) on this very sample
    reference_output = np.array([
        [0.0, 3.0664, 0.0, 1.3571],
        [0.0, 0.0, 0.0, 0.4038],
        [0.0, 0.4715, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
    ])
    np.testing.assert_allclose(result.weights, reference_output, atol=1e-2)
    assert result.raw_weights.shape == (4, 4) and np.all(np.diag(result.raw_weights) == 0)


def test_mlp_is_reproducible_for_a_seed():
    x = _nonlinear_chain(2, n=120)
    first = notears_mlp(x, seed=5, max_iter=3)
    second = notears_mlp(x, seed=5, max_iter=3)
    np.testing.assert_array_equal(first.raw_weights, second.raw_weights)
    other = notears_mlp(x, seed=6, max_iter=3)
    assert not np.array_equal(first.raw_weights, other.raw_weights)
    assert first.n_dual_steps <= 3


def test_mlp_rejects_bad_input():
    x = _nonlinear_chain(3, n=50)
    with pytest.raises(HeuresisError, match="hidden"):
        notears_mlp(x, hidden=0)
    with pytest.raises(DataError, match="shape"):
        notears_mlp(x[:, :1])
    with pytest.raises(UnknownNameError, match="numpy"):
        notears_mlp(x, engine="jax")


# ---- the optimized MLP against the straightforward reference-style implementation ----------

@pytest.fixture(scope="module")
def reference_style() -> ModuleType:
    """benchmarks/bench_notears.py: the reference code's ``NotearsMLP`` module, its autograd
    closure and its dual-ascent loop, written straightforwardly (the benchmark's baseline)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_notears.py"
    spec = importlib.util.spec_from_file_location("bench_notears", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _objective_points(size: int, objective: NotearsMlpObjective, rng: np.random.Generator):
    """Feasible points: W⁺, W⁻ ≥ 0 (0 on self-loops), other parameters signed."""
    lower, upper = objective.bounds()
    for scale in (0.05, 0.3):
        flat = rng.normal(scale=scale, size=size)
        yield np.clip(np.where(lower == 0, np.abs(flat), flat), lower, upper)


@pytest.mark.parametrize("bias", [True, False])
def test_mlp_objective_and_gradient_equal_the_reference_modules(reference_style, bias):
    import torch

    x = _nonlinear_chain(4, n=60)
    d, hidden = x.shape[1], 3
    torch.manual_seed(0)
    model = reference_style.ReferenceNotearsMLP(d, hidden, bias)
    x_torch = torch.from_numpy(x.copy())
    objectives = {engine: NotearsMlpObjective(x, hidden, 0.02, 0.03, bias, engine)
                  for engine in MLP_ENGINES}
    size = objectives["numpy"].size
    assert size == sum(p.numel() for p in model.parameters())
    rng = np.random.default_rng(7)
    for rho, alpha in [(1.0, 0.0), (1e3, 2.5)]:
        for flat in _objective_points(size, objectives["numpy"], rng):
            value, gradient = reference_style.reference_objective(
                model, x_torch, flat, rho, alpha, 0.02, 0.03)
            scale = max(1.0, float(np.abs(gradient).max()))
            results = {}
            for engine, objective in objectives.items():
                objective.rho, objective.alpha = rho, alpha
                results[engine] = objective(flat)
                assert results[engine][0] == pytest.approx(value, rel=1e-12)
                np.testing.assert_allclose(results[engine][1], gradient, rtol=0,
                                           atol=1e-11 * scale)
            assert results["numpy"][0] == pytest.approx(results["torch"][0], rel=1e-6, abs=1e-6)
            np.testing.assert_allclose(results["numpy"][1], results["torch"][1], atol=1e-6)
            h = objectives["numpy"].acyclicity(flat)
            with torch.no_grad():
                assert h == pytest.approx(float(model.h_func()), rel=1e-12, abs=1e-15)


def test_mlp_gradient_matches_finite_differences():
    x = _nonlinear_chain(5, n=40)
    objective = NotearsMlpObjective(x, hidden=2, engine="numpy")
    objective.rho, objective.alpha = 10.0, 0.5
    flat = next(_objective_points(objective.size, objective, np.random.default_rng(3)))
    _, gradient = objective(flat)
    step = 1e-6
    for index in np.random.default_rng(4).choice(objective.size, size=12, replace=False):
        shift = np.zeros(objective.size)
        shift[index] = step
        numeric = (objective(flat + shift)[0] - objective(flat - shift)[0]) / (2 * step)
        assert numeric == pytest.approx(gradient[index], rel=1e-5, abs=1e-8)


def test_mlp_short_run_equals_the_reference_style_run(reference_style):
    import torch

    # one inner solve of 100 L-BFGS-B iterations: short enough that rounding differences
    # between the implementations stay at rounding level (long runs amplify them to the
    # solver's tolerance, ~1e-3 on the weights, for the reference itself as well)
    x = _nonlinear_chain(1)
    with torch.random.fork_rng(devices=[]):
        reference_raw, reference_evaluations = reference_style.reference_notears_mlp(
            x, max_iter=1, max_inner_iter=100)
    results = {engine: notears_mlp(x, max_iter=1, max_inner_iter=100, engine=engine)
               for engine in MLP_ENGINES}
    for result in results.values():
        np.testing.assert_allclose(result.raw_weights, reference_raw, atol=1e-6)
        assert result.n_evaluations == reference_evaluations
        assert result.n_dual_steps == 1
    np.testing.assert_allclose(results["numpy"].raw_weights, results["torch"].raw_weights,
                               atol=1e-6)


def test_the_kernels_compile_once_when_several_threads_ask_at_once():
    """``notears_kernels.compiled()`` rebinds the module's functions to compiled ones; threads
    asking at once (an MCP server's episodes, say) must not wrap a kernel twice."""
    import subprocess
    import sys

    code = ("import threading, numpy as np\n"
            "from heuresis_env.discovery import notears_kernels as k\n"
            "errors = []\n"
            "def go():\n"
            "    try:\n"
            "        k.compiled().expm_nonnegative(np.eye(3), k.INVERSE_FACTORIALS)\n"
            "    except Exception as exc:\n"
            "        errors.append(repr(exc))\n"
            "threads = [threading.Thread(target=go) for _ in range(4)]\n"
            "[t.start() for t in threads]; [t.join() for t in threads]\n"
            "assert not errors, errors\n"
            "assert all(type(getattr(k, n)).__name__ == 'CPUDispatcher' for n in k.KERNELS)\n"
            "print('ok')\n")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=600)
    assert completed.stdout.strip() == "ok", completed.stderr[-3000:]


def test_the_compiled_kernels_equal_their_python_source():
    from heuresis_env.discovery import notears_kernels

    kernels = notears_kernels.compiled()
    rng = np.random.default_rng(5)
    for d, scale in [(4, 0.2), (10, 1.5)]:
        m = rng.random((d, d)) * scale
        np.testing.assert_allclose(
            kernels.expm_nonnegative(m, kernels.INVERSE_FACTORIALS),
            kernels.expm_nonnegative.py_func(m, kernels.INVERSE_FACTORIALS), rtol=1e-14)
    x = _nonlinear_chain(4, n=30)
    objective = NotearsMlpObjective(x, hidden=3)
    flat = next(_objective_points(objective.size, objective, rng))
    objective.rho, objective.alpha = 100.0, 0.3
    value, gradient = objective(flat)
    first = np.empty_like(objective._first_layer)
    kernels.mlp_first_layer.py_func(flat, objective.d, objective.d * 3, True, first)
    np.testing.assert_array_equal(first, objective._first_layer)
    fit = objective._fit
    activation = 1.0 / (1.0 + np.exp(-(first @ fit.inputs_transposed)))
    hidden_gradient, plain_gradient = np.empty_like(activation), np.zeros(objective.size)
    loss = kernels.mlp_fit_tail.py_func(activation, flat, True, fit.target_transposed,
                                        hidden_gradient, plain_gradient, np.empty(x.shape[0]))
    plain_value = kernels.mlp_penalties.py_func(
        flat, first, hidden_gradient @ fit.inputs, objective.d, 3, True, 100.0, 0.3,
        objective.lambda1, objective.lambda2, loss, kernels.INVERSE_FACTORIALS, plain_gradient)
    assert plain_value == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(plain_gradient, gradient, rtol=1e-10, atol=1e-12)
