"""Compiled loops for NOTEARS: exp(M) of a small non-negative matrix and the parts of the
NOTEARS-MLP objective that are many small array operations.

At d = 10 an MLP objective evaluation is two BLAS products and a sigmoid over
d·hidden × n values, and around them some thirty small NumPy operations (the first layer
from W⁺ − W⁻, the locally connected layer, the residual, A = Σ W², exp(A), the penalties
and the gradient's assembly) that cost more in call overhead than in arithmetic: about half
of an evaluation at n = 200. Here each group is one loop compiled by Numba (a dependency of
``dcor`` already), in the same order of operations as the NumPy code it replaces except
for summation order. :func:`compiled` imports Numba (≈ 0.3 s; nothing else here needs it)
and compiles the kernels on first use, caching them on disk (``cache=True``: beside this
file, or in Numba's per-user cache when that is read-only), so a process pays a few seconds
once per installation and ≈ 0.3 s to load them after that. Until then the functions below
are plain Python (same results, far slower); after it the module's names are the compiled
functions.

Layout of the MLP's flat parameter vector (the reference's ``parameters()`` order): W⁺
(units × d, row j·hidden + m = unit m of output j), b⁺ (units), W⁻, b⁻, fc2 weight
(d × hidden), fc2 bias (d); the biases only when ``bias``.
"""

from __future__ import annotations

import math
import sys
import threading
from types import ModuleType

import numpy as np

INVERSE_FACTORIALS = 1.0 / np.array([math.factorial(k) for k in range(44)], dtype=np.float64)


def _matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a @ b for square matrices, row by row (i-k-j order)."""
    d = a.shape[0]
    for i in range(d):
        for j in range(d):
            out[i, j] = 0.0
        for k in range(d):
            a_ik = a[i, k]
            for j in range(d):
                out[i, j] += a_ik * b[k, j]


def expm_nonnegative(m: np.ndarray, inverse_factorials: np.ndarray) -> np.ndarray:
    """exp(M) by scaling, a Taylor series in Paterson–Stockmeyer blocks and squaring.

    The algorithm of :func:`heuresis_env.discovery.notears.expm_nonnegative` (which
    documents it): M scaled by 2⁻ˢ to an ∞-norm ν ≤ ½, the series cut where the remainder
    bound ν^(K+1)/(K+1)!·e^ν < 10⁻¹⁸, evaluated in blocks of four terms, squared s times.
    """
    d = m.shape[0]
    norm = 0.0
    for i in range(d):
        row = 0.0
        for j in range(d):
            row += abs(m[i, j])
        norm = max(norm, row)
    squarings = 0
    if norm > 0.5:
        squarings = max(0, int(math.ceil(math.log2(norm / 0.5))))
    scale = 2.0 ** squarings
    nu = norm / scale
    degree, bound = 1, nu * nu / 2.0 * math.exp(nu)
    while bound > 1e-18 and degree < 39:
        degree += 1
        bound *= nu / (degree + 1)
    blocks = degree // 4 + 1
    powers = np.zeros((4, d, d))  # I, M, M², M³ of the scaled M
    for i in range(d):
        powers[0, i, i] = 1.0
        for j in range(d):
            powers[1, i, j] = m[i, j] / scale
    _matmul_into(powers[1], powers[1], powers[2])
    _matmul_into(powers[2], powers[1], powers[3])
    fourth = np.empty((d, d))
    _matmul_into(powers[3], powers[1], fourth)
    result = np.zeros((d, d))
    last = 4 * (blocks - 1)
    for i in range(d):
        for j in range(d):
            total = 0.0
            for p in range(4):
                total += inverse_factorials[last + p] * powers[p, i, j]
            result[i, j] = total
    product = np.empty((d, d))
    for block in range(blocks - 2, -1, -1):
        _matmul_into(fourth, result, product)
        for i in range(d):
            for j in range(d):
                total = 0.0
                for p in range(4):
                    total += inverse_factorials[4 * block + p] * powers[p, i, j]
                result[i, j] = product[i, j] + total
    for _ in range(squarings):
        _matmul_into(result, result, product)
        result, product = product, result
    return result


def mlp_layout(d: int, hidden: int, bias: bool) -> tuple[int, int, int, int]:
    """Offsets in the flat parameter vector (the layout in the module's text): where W⁻
    starts (W⁺ starts at 0, b⁺ at d·hidden·d), where the fc2 weight and the fc2 bias start,
    and the vector's size."""
    units = d * hidden
    negative = units * d + (units if bias else 0)
    fc2_weight = 2 * negative
    fc2_bias = fc2_weight + units
    return negative, fc2_weight, fc2_bias, fc2_bias + (d if bias else 0)


def mlp_first_layer(flat: np.ndarray, d: int, units: int, bias: bool,
                    out: np.ndarray) -> None:
    """out = [W⁺ − W⁻ | b⁺ − b⁻] (units × d, plus the bias column when ``bias``)."""
    negative, _, _, _ = mlp_layout(d, units // d, bias)
    for u in range(units):
        for i in range(d):
            out[u, i] = flat[u * d + i] - flat[negative + u * d + i]
        if bias:
            out[u, d] = flat[units * d + u] - flat[negative + units * d + u]


def mlp_fit_tail(activation: np.ndarray, flat: np.ndarray, bias: bool, target: np.ndarray,
                 hidden_gradient: np.ndarray, gradient: np.ndarray,
                 residual: np.ndarray) -> float:
    """½/n‖f(X) − X‖² from the hidden activations σ(z) (units × n) and its gradients.

    Writes ∂loss/∂z into ``hidden_gradient`` (units × n; the caller multiplies it by
    [X | 1] for the first layer's gradient) and ∂loss/∂(fc2 weight, fc2 bias) into their
    parts of ``gradient``; ``residual`` is scratch of length n. ``target`` is Xᵀ (d × n).
    """
    d, n = target.shape
    hidden = activation.shape[0] // d
    _, fc2_weight, fc2_bias, _ = mlp_layout(d, hidden, bias)
    inverse_n = 1.0 / n
    loss = 0.0
    for j in range(d):
        for s in range(n):
            residual[s] = 0.0
        for m in range(hidden):
            weight = flat[fc2_weight + j * hidden + m]
            row = activation[j * hidden + m]
            for s in range(n):
                residual[s] += weight * row[s]
        offset = flat[fc2_bias + j] if bias else 0.0
        for s in range(n):
            residual[s] = residual[s] + offset - target[j, s]
        loss += np.dot(residual, residual)
        for s in range(n):
            residual[s] *= inverse_n  # ∂loss/∂output j
        if bias:
            gradient[fc2_bias + j] = np.sum(residual)
        for m in range(hidden):
            unit = j * hidden + m
            weight = flat[fc2_weight + unit]
            row = activation[unit]
            gradient[fc2_weight + unit] = np.dot(row, residual)
            out = hidden_gradient[unit]
            for s in range(n):  # ∂loss/∂z = ∂loss/∂output · fc2 weight · σ(z)(1 − σ(z))
                a = row[s]
                out[s] = (weight * residual[s]) * ((1.0 - a) * a)
    return 0.5 * inverse_n * loss


def mlp_penalties(flat: np.ndarray, first_layer: np.ndarray, first_gradient: np.ndarray,
                  d: int, hidden: int, bias: bool, rho: float, alpha: float, lambda1: float,
                  lambda2: float, loss: float, inverse_factorials: np.ndarray,
                  gradient: np.ndarray) -> float:
    """The objective's value and the rest of its gradient, given the fit term.

    Value: loss + ½ρh² + αh + ½λ₂(‖W‖² + ‖fc2 weight‖²) + λ₁Σ(W⁺ + W⁻), h = tr(exp(A)) − d,
    A[i, j] = Σ_m W[j·hidden + m, i]². Writes the W⁺, b⁺, W⁻, b⁻ parts of ``gradient`` from
    the fit term's first-layer gradient (units × d(+1)) and adds λ₂·fc2 weight to the fc2
    weight part, which must already hold the fit term's. Returns the value.
    """
    units = d * hidden
    negative, fc2_weight, _, _ = mlp_layout(d, hidden, bias)
    a = np.zeros((d, d))
    l2 = 0.0
    for u in range(units):
        j = u // hidden
        for i in range(d):
            w = first_layer[u, i]
            a[i, j] += w * w
            l2 += w * w
    for k in range(units):
        w = flat[fc2_weight + k]
        l2 += w * w
    l1 = 0.0
    for k in range(units * d):
        l1 += flat[k] + flat[negative + k]
    exponential = expm_nonnegative(a, inverse_factorials)
    trace = 0.0
    for i in range(d):
        trace += exponential[i, i]
    h = trace - d
    value = loss + (0.5 * rho * h * h + alpha * h) + 0.5 * lambda2 * l2 + lambda1 * l1
    # ∂h/∂A = exp(A)ᵀ, so ∂h/∂W[j·hidden + m, i] = 2 W[j·hidden + m, i] exp(A)[j, i]
    factor = 2.0 * (rho * h + alpha)
    for u in range(units):
        j = u // hidden
        for i in range(d):
            w = first_layer[u, i]
            g = first_gradient[u, i] + lambda2 * w + w * (factor * exponential[j, i])
            gradient[u * d + i] = g + lambda1
            gradient[negative + u * d + i] = lambda1 - g
        if bias:
            gradient[units * d + u] = first_gradient[u, d]
            gradient[negative + units * d + u] = -first_gradient[u, d]
    for k in range(units):
        gradient[fc2_weight + k] += lambda2 * flat[fc2_weight + k]
    return value


#: the kernels, in the order they are compiled (a kernel calls only those before it)
KERNELS = ("_matmul_into", "expm_nonnegative", "mlp_layout", "mlp_first_layer",
           "mlp_fit_tail", "mlp_penalties")
_compiled = False
_compiling = threading.Lock()


def compiled() -> ModuleType:
    """This module, its kernels compiled by Numba (on the first call; then loaded from the
    disk cache): ``compiled().expm_nonnegative(...)``. Safe to call from several threads."""
    global _compiled
    if not _compiled:
        with _compiling:
            if not _compiled:
                import numba  # heavy; only NOTEARS needs it

                module = globals()
                for name in KERNELS:  # a kernel's callees are compiled when it compiles
                    module[name] = numba.njit(cache=True)(module[name])
                _compiled = True
    return sys.modules[__name__]
