"""The direct L-BFGS-B driver: SciPy's iterates bit for bit, its counts and messages."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as sopt

from heuresis_env.discovery.lbfgsb import _fortran_setulb, minimize_lbfgsb
from heuresis_env.discovery.notears import NotearsMlpObjective, _initial_mlp_parameters

needs_fortran = pytest.mark.skipif(_fortran_setulb() is None,
                                   reason="SciPy's L-BFGS-B is not the Fortran routine")


def _scipy(fun, x0, lower, upper, maxiter=15000):
    calls = []

    def counted(x):
        calls.append(x.copy())
        return fun(x)

    solution = sopt.minimize(counted, x0, method="L-BFGS-B", jac=True,
                             bounds=sopt.Bounds(lower, upper), options={"maxiter": maxiter})
    return solution, calls


def _direct(fun, x0, lower, upper, maxiter=15000):
    calls = []

    def counted(x):
        calls.append(x.copy())
        return fun(x)

    return minimize_lbfgsb(counted, x0, lower, upper, maxiter, direct=True), calls


def _same(scipy_run, direct_run):
    (solution, scipy_calls), (result, direct_calls) = scipy_run, direct_run
    assert np.array_equal(result.x, solution.x)
    assert result.fun == solution.fun
    assert result.nfev == solution.nfev == len(direct_calls) == len(scipy_calls)
    assert result.nit == solution.nit
    assert result.message == solution.message
    for ours, theirs in zip(direct_calls, scipy_calls, strict=True):
        assert np.array_equal(ours, theirs)  # the same points, in the same order


def _bounded_quadratic(n: int, seed: int):
    """½(x − c)ᵀD(x − c) + ¼Σx⁴ with mixed bounds: free, lower, both, fixed, upper."""
    rng = np.random.default_rng(seed)
    diagonal, centre = rng.uniform(0.5, 50.0, n), rng.normal(scale=2.0, size=n)

    def fun(x):
        r = x - centre
        return (0.5 * float(r @ (diagonal * r)) + 0.25 * float(np.sum(x ** 4)),
                diagonal * r + x ** 3)

    kinds = np.arange(n) % 5
    lower = np.where(np.isin(kinds, (1, 2)), 0.0, -np.inf)
    upper = np.where(kinds == 2, 1.0, np.inf)
    lower[kinds == 3] = upper[kinds == 3] = 0.5  # fixed
    upper[kinds == 4] = -0.25
    return fun, rng.normal(size=n), lower, upper


@needs_fortran
@pytest.mark.parametrize("seed", [0, 1])
def test_direct_driver_takes_scipys_steps_on_a_bounded_problem(seed):
    fun, x0, lower, upper = _bounded_quadratic(60, seed)
    _same(_scipy(fun, x0, lower, upper), _direct(fun, x0, lower, upper))


@needs_fortran
def test_direct_driver_stops_at_the_iteration_limit_as_scipy_does():
    fun, x0, lower, upper = _bounded_quadratic(40, 2)
    scipy_run, direct_run = _scipy(fun, x0, lower, upper, 3), _direct(fun, x0, lower, upper, 3)
    _same(scipy_run, direct_run)
    assert direct_run[0].nit == 3 and "ITERATIONS" in direct_run[0].message


@needs_fortran
def test_direct_driver_takes_scipys_steps_on_a_notears_mlp_solve():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(80, 4))
    x[:, 1] += np.sin(2 * x[:, 0])
    objective = NotearsMlpObjective(x, hidden=3)
    objective.rho, objective.alpha = 100.0, 0.5
    lower, upper = objective.bounds()
    start = _initial_mlp_parameters(4, 3, True)
    _same(_scipy(objective, start, lower, upper), _direct(objective, start, lower, upper))


def test_the_scipy_path_gives_the_same_answer_and_bad_bounds_are_named():
    fun, x0, lower, upper = _bounded_quadratic(30, 3)
    through_scipy = minimize_lbfgsb(fun, x0, lower, upper, direct=False)
    solution, _ = _scipy(fun, x0, lower, upper)
    assert np.array_equal(through_scipy.x, solution.x) and through_scipy.nfev == solution.nfev
    assert np.all(through_scipy.x >= lower) and np.all(through_scipy.x <= upper)
    with pytest.raises(ValueError, match="greater than its upper bound"):
        minimize_lbfgsb(fun, x0, upper + 1.0, upper)
    with pytest.raises(ValueError, match="29 and 30 entries for 30 variables"):
        minimize_lbfgsb(fun, x0, lower[:-1], upper)
