"""Portable arithmetic and random draws: the same bits on every CPU, library and platform.

Portability. The same key must give byte-identical data on every machine, so nothing here
depends on code whose rounding differs between CPUs or libraries:

- every random number comes from ``Generator.random`` (53 random bits of the PCG64 stream,
  scaled by 2⁻⁵³ — exact) or ``Generator.integers``/``permutation`` (integer algorithms);
  normals are drawn by Box–Muller and Student-t₃ from normals, both written here, instead of
  NumPy's ziggurat (which calls the C library's ``exp``/``log`` in its tails, and whose
  streams NumPy does not promise to keep across versions);
- ``exp``, ``log``, ``tanh``, ``cos``/``sin`` are evaluated here from additions,
  multiplications, divisions and ``ldexp``/``frexp``/``rint`` only (each correctly rounded
  by IEEE 754, one NumPy ufunc per operation so no compiler can fuse a multiply-add), rather
  than by NumPy's SIMD kernels, which differ in the last bit between AVX-512 and other CPUs;
  they are accurate to a few units in the last place;
- sums over parents and hidden units are explicit sequential loops (no BLAS ``dot``/
  ``matmul``, whose summation order depends on the library and CPU), and sums over rows
  (means, standard deviations) use ``math.fsum``, which is exactly rounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from heuresis_env.errors import HeuresisError

# ---- portable elementwise math ----------------------------------------------------------------

_LN2_HI = 6.93147180369123816490e-01  # ln 2 split so that k·_LN2_HI is exact (fdlibm)
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
_TWO_PI = 6.28318530717958647692e00
_INV_TWO_PI = 1.59154943091895335769e-01
_SQRT_HALF = 0.70710678118654752440
_EXP_COEFFICIENTS = [1.0 / math.factorial(k) for k in range(14)]  # Taylor, |r| ≤ ln2/2
_SIN_COEFFICIENTS = [(-1.0) ** k / math.factorial(2 * k + 1) for k in range(11)]  # |r| ≤ π/4
_COS_COEFFICIENTS = [(-1.0) ** k / math.factorial(2 * k) for k in range(11)]


def _horner(x: np.ndarray, coefficients: Sequence[float]) -> np.ndarray:
    """Σ_k c_k x^k by Horner's rule, one rounded multiply and one rounded add per step."""
    result = np.full_like(x, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        result = np.add(np.multiply(result, x), c)
    return result


def portable_exp(x: np.ndarray) -> np.ndarray:
    """exp(x), bit-reproducible across machines: Cody–Waite reduction and a Taylor polynomial."""
    x = np.clip(np.asarray(x, dtype=np.float64), -745.0, 709.0)
    k = np.rint(np.multiply(x, _INV_LN2))
    r = np.subtract(np.subtract(x, np.multiply(k, _LN2_HI)), np.multiply(k, _LN2_LO))
    return np.ldexp(_horner(r, _EXP_COEFFICIENTS), k.astype(np.int32))


def portable_expm1(x: np.ndarray) -> np.ndarray:
    """exp(x) − 1 without cancellation for small |x| (Taylor series below 0.5)."""
    x = np.asarray(x, dtype=np.float64)
    small = np.abs(x) < 0.5
    series = np.multiply(x, _horner(x, [1.0 / math.factorial(k + 1) for k in range(18)]))
    return np.where(small, series, np.subtract(portable_exp(x), 1.0))


def portable_log(x: np.ndarray) -> np.ndarray:
    """Natural log of positive x: frexp reduction to [√½, √2) and the atanh series."""
    x = np.asarray(x, dtype=np.float64)
    if np.any(~(x > 0)):
        raise HeuresisError("portable_log needs positive finite input")
    mantissa, exponent = np.frexp(x)
    low = mantissa < _SQRT_HALF
    mantissa = np.where(low, np.multiply(mantissa, 2.0), mantissa)
    exponent = np.where(low, exponent - 1, exponent).astype(np.float64)
    s = np.divide(np.subtract(mantissa, 1.0), np.add(mantissa, 1.0))
    s2 = np.multiply(s, s)
    series = _horner(s2, [1.0 / (2 * k + 1) for k in range(13)])
    log_mantissa = np.multiply(np.multiply(s, 2.0), series)
    return np.add(np.multiply(exponent, _LN2_HI),
                  np.add(np.multiply(exponent, _LN2_LO), log_mantissa))


def portable_log1p(x: np.ndarray) -> np.ndarray:
    """log(1 + x) for x > −1, with the standard correction for the rounding of 1 + x."""
    x = np.asarray(x, dtype=np.float64)
    w = np.add(x, 1.0)
    correction = np.divide(np.subtract(np.subtract(w, 1.0), x), w)
    return np.where(w == 1.0, x, np.subtract(portable_log(w), correction))


def portable_tanh(x: np.ndarray) -> np.ndarray:
    """tanh(x) = sign(x) · m / (m + 2) with m = expm1(2|x|)."""
    x = np.asarray(x, dtype=np.float64)
    m = portable_expm1(np.multiply(np.minimum(np.abs(x), 40.0), 2.0))
    return np.multiply(np.sign(x), np.divide(m, np.add(m, 2.0)))


def portable_softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + eˣ) = max(x, 0) + log1p(e^−|x|), stable for large |x|."""
    x = np.asarray(x, dtype=np.float64)
    return np.add(np.maximum(x, 0.0), portable_log1p(portable_exp(np.negative(np.abs(x)))))


def portable_sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function 1 / (1 + e^−x)."""
    return np.divide(1.0, np.add(1.0, portable_exp(np.negative(np.asarray(x, dtype=np.float64)))))


def portable_sincos_turns(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cos 2πt, sin 2πt) for an angle t in turns; the reduction t − q/4 is exact."""
    t = np.asarray(t, dtype=np.float64)
    quarter = np.rint(np.multiply(t, 4.0))
    fraction = np.subtract(t, np.multiply(quarter, 0.25))  # |fraction| ≤ 1/8, exact
    r = np.multiply(fraction, _TWO_PI)
    r2 = np.multiply(r, r)
    sin_r = np.multiply(r, _horner(r2, _SIN_COEFFICIENTS))
    cos_r = _horner(r2, _COS_COEFFICIENTS)
    q = np.mod(quarter, 4.0).astype(np.intp)
    cos_t = np.choose(q, [cos_r, np.negative(sin_r), np.negative(cos_r), sin_r])
    sin_t = np.choose(q, [sin_r, cos_r, np.negative(sin_r), np.negative(cos_r)])
    return cos_t, sin_t


def portable_cos(x: np.ndarray) -> np.ndarray:
    """cos(x) for moderate |x| (absolute error about |x|·2⁻⁵³)."""
    return portable_sincos_turns(np.multiply(np.asarray(x, dtype=np.float64), _INV_TWO_PI))[0]


def exact_mean(x: np.ndarray) -> float:
    """Mean of a 1-D array with an exactly rounded sum (``math.fsum``)."""
    values = np.asarray(x, dtype=np.float64).ravel()
    return math.fsum(values.tolist()) / values.size


def exact_sd(x: np.ndarray, mean: float | None = None) -> float:
    """Population standard deviation (ddof = 0) with exactly rounded sums."""
    values = np.asarray(x, dtype=np.float64).ravel()
    m = exact_mean(values) if mean is None else mean
    deviations = np.subtract(values, m)
    return math.sqrt(math.fsum(np.multiply(deviations, deviations).tolist()) / values.size)


def sequential_dot(matrix: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """``matrix @ weights`` (rows × k times k) summed left to right, without BLAS."""
    matrix = np.asarray(matrix, dtype=np.float64)
    total = np.zeros(matrix.shape[0], dtype=np.float64)
    for k, w in enumerate(weights):
        total = np.add(total, np.multiply(matrix[:, k], float(w)))
    return total


# ---- portable random draws ----------------------------------------------------------------------

def draw_uniform(rng: np.random.Generator, low: float, high: float,
                 size: int | None = None) -> float | np.ndarray:
    """U[low, high] as ``low + (high − low)·u`` with u from ``rng.random`` (no fused multiply-add)."""
    if size is None:
        return low + (high - low) * float(rng.random())
    return np.add(low, np.multiply(high - low, rng.random(size)))


def draw_signed_uniform(rng: np.random.Generator, low: float, high: float,
                        size: int | None = None) -> float | np.ndarray:
    """±U[low, high]: a fair random sign times U[low, high]."""
    if size is None:
        sign = -1.0 if rng.random() < 0.5 else 1.0
        return sign * draw_uniform(rng, low, high)
    signs = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    return np.multiply(signs, draw_uniform(rng, low, high, size))


def draw_standard_normal(rng: np.random.Generator, size: int) -> np.ndarray:
    """N(0, 1) draws by Box–Muller on ``rng.random`` pairs (reproducible across machines)."""
    pairs = (int(size) + 1) // 2
    u_radius = np.subtract(1.0, rng.random(pairs))  # in (0, 1], so the log is finite
    u_angle = rng.random(pairs)
    radius = np.sqrt(np.multiply(portable_log(u_radius), -2.0))
    cos_t, sin_t = portable_sincos_turns(u_angle)
    return np.concatenate([np.multiply(radius, cos_t), np.multiply(radius, sin_t)])[:size]


def draw_unit_t3(rng: np.random.Generator, size: int) -> np.ndarray:
    """Student-t with 3 degrees of freedom scaled to unit variance: Z / √(χ²₃) = t₃/√3."""
    z = draw_standard_normal(rng, size)
    chi = draw_standard_normal(rng, 3 * size).reshape(3, size)
    chi_square = np.add(np.add(np.multiply(chi[0], chi[0]), np.multiply(chi[1], chi[1])),
                        np.multiply(chi[2], chi[2]))
    return np.divide(z, np.sqrt(chi_square))
