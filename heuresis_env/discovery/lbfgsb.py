"""L-BFGS-B with bounds, as ``scipy.optimize.minimize(method="L-BFGS-B", jac=True)`` runs it,
without SciPy's per-evaluation wrapping.

NOTEARS and NOTEARS-MLP solve thousands of small bounded problems (an MLP's inner solve
evaluates its objective 10³–10⁴ times), and SciPy's driver costs about 0.2 ms an evaluation
around the Fortran routine itself (``ScalarFunction`` and ``MemoizeJac`` copying and
comparing the parameter vector, a result object per iteration) — as much as the routine.
:func:`minimize_lbfgsb` calls the same routine (``scipy.optimize._lbfgsb.setulb``) in the
same loop as SciPy's ``_minimize_lbfgsb`` with the same defaults (10 corrections,
``ftol`` 2.2e-9, ``gtol`` 1e-5, ``maxls`` 20, ``maxfun`` 15,000) and passes it the same
values, so its iterates, evaluation count and result are SciPy's bit for bit (a test runs
both); it skips an evaluation at a point equal to the last one, as SciPy's cache does.

The routine's calling convention is SciPy's private API, which changed when SciPy 1.15
translated L-BFGS-B to C: with any SciPy whose ``setulb`` is not the Fortran one this
module was written against, :func:`minimize_lbfgsb` calls ``scipy.optimize.minimize``
instead (same algorithm, same results, slower).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Objective = Callable[[np.ndarray], tuple[float, np.ndarray]]

_FTOL = 2.2204460492503131e-09  # SciPy's defaults for method="L-BFGS-B"
_GTOL = 1e-5
_MAXCOR = 10
_MAXLS = 20
_MAXFUN = 15000


@dataclass
class LbfgsbResult:
    """Where the solve ended: the point, its value, the counts and the routine's message."""

    x: np.ndarray
    fun: float
    nfev: int
    nit: int
    message: str


def _fortran_setulb() -> Callable[..., None] | None:
    """SciPy's Fortran ``setulb`` if it has the calling convention of SciPy < 1.15."""
    try:
        from scipy.optimize import _lbfgsb
    except ImportError:  # pragma: no cover - SciPy reorganised
        return None
    setulb = getattr(_lbfgsb, "setulb", None)
    doc = getattr(setulb, "__doc__", "") or ""
    expected = "setulb(m,x,l,u,nbd,f,g,factr,pgtol,wa,iwa,task,iprint,csave,lsave,isave,dsave,maxls"
    return setulb if doc.startswith(expected) else None


def minimize_lbfgsb(fun: Objective, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                    maxiter: int = 15000, *, direct: bool | None = None) -> LbfgsbResult:
    """Minimise ``fun`` (returning value and gradient) from ``x0`` within [lower, upper].

    Bounds are arrays of the length of ``x0``, ±inf where a side is free. ``direct=None``
    uses the direct driver when SciPy's routine has the expected convention; True insists
    on it (an error otherwise), False always goes through ``scipy.optimize.minimize``.
    """
    x0 = np.asarray(x0, dtype=np.float64).ravel()
    lower = np.asarray(lower, dtype=np.float64).ravel()
    upper = np.asarray(upper, dtype=np.float64).ravel()
    n = x0.size
    if lower.size != n or upper.size != n:
        raise ValueError(f"bounds have {lower.size} and {upper.size} entries for {n} variables")
    if np.any(lower > upper):
        raise ValueError("a lower bound is greater than its upper bound")
    setulb = _fortran_setulb() if direct is not False else None
    if direct and setulb is None:
        raise RuntimeError("SciPy's L-BFGS-B routine does not have the expected calling "
                           "convention (SciPy ≥ 1.15?); use direct=None")
    if setulb is None:
        import scipy.optimize as sopt

        solution = sopt.minimize(fun, x0, method="L-BFGS-B", jac=True,
                                 bounds=sopt.Bounds(lower, upper),
                                 options={"maxiter": maxiter})
        return LbfgsbResult(solution.x, float(solution.fun), int(solution.nfev),
                            int(solution.nit), str(solution.message))
    return _direct(setulb, fun, x0, lower, upper, maxiter)


def _direct(setulb: Callable[..., None], fun: Objective, x0: np.ndarray, lower: np.ndarray,
            upper: np.ndarray, maxiter: int) -> LbfgsbResult:
    """SciPy 1.13's ``_minimize_lbfgsb`` loop, less its wrappers (see the module's text)."""
    from scipy.optimize import _lbfgsb

    n, m = x0.size, _MAXCOR
    lower_finite, upper_finite = np.isfinite(lower), np.isfinite(upper)
    int_type = _lbfgsb.types.intvar.dtype
    # 0 free, 1 lower only, 2 both, 3 upper only: SciPy's ``bounds_map``
    nbd = np.where(lower_finite, np.where(upper_finite, 2, 1),
                   np.where(upper_finite, 3, 0)).astype(int_type)
    low_bnd = np.where(lower_finite, lower, 0.0)
    upper_bnd = np.where(upper_finite, upper, 0.0)
    x = np.clip(x0, lower, upper).astype(np.float64)
    # SciPy's ScalarFunction evaluates at the start point when it is built
    evaluated_at = x.copy()
    value, gradient = fun(x.copy())
    nfev = 1
    factr = _FTOL / np.finfo(float).eps
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m, np.float64)
    iwa = np.zeros(3 * n, int_type)
    task = np.zeros(1, "S60")
    csave = np.zeros(1, "S60")
    lsave = np.zeros(4, int_type)
    isave = np.zeros(44, int_type)
    dsave = np.zeros(29, np.float64)
    task[:] = "START"
    f: float | np.ndarray = np.array(0.0, np.float64)
    g: np.ndarray = np.zeros((n,), np.float64)
    iterations = 0
    while True:
        g = g.astype(np.float64)
        setulb(m, x, low_bnd, upper_bnd, nbd, f, g, factr, _GTOL, wa, iwa, task, -1, csave,
               lsave, isave, dsave, _MAXLS)
        state = task.tobytes()
        if state.startswith(b"FG"):
            if not np.array_equal(x, evaluated_at):
                evaluated_at = x.copy()
                value, gradient = fun(x.copy())
                nfev += 1
            f, g = float(value), np.asarray(gradient, dtype=np.float64)
        elif state.startswith(b"NEW_X"):
            iterations += 1
            if iterations >= maxiter:
                task[:] = "STOP: TOTAL NO. of ITERATIONS REACHED LIMIT"
            elif nfev > _MAXFUN:
                task[:] = "STOP: TOTAL NO. of f AND g EVALUATIONS EXCEEDS LIMIT"
        else:
            break
    message = task.tobytes().strip(b"\x00").strip().decode()
    return LbfgsbResult(x, float(f), nfev, iterations, message)
