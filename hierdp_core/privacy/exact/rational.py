"""The exact rational noise parameter that is sampled, and the privacy loss it gives.

A float scale is rounded UP (more noise, never less) to a rational chosen so that the
samplers' integers stay well inside int64 and their uniform draws reject little; the loss
is then computed from that rational exactly (`fractions.Fraction`) and rounded up to a
float, so the ledger holds the loss of the noise actually drawn:
- discrete Laplace of scale t/s with L1 sensitivity D: epsilon = D s / t;
- discrete Gaussian of variance sigma^2 = a/b with L2 sensitivity D: rho = D^2 b / (2 a).
"""

from __future__ import annotations

import math
from fractions import Fraction

from hierdp_core.errors import MechanismError

#: the sampled discrete Laplace scale t/s keeps t (the uniform draw's bound) below this, so
#: U and its Bernoulli fit 32-bit words
LAPLACE_T_MAX = 1 << 32
#: the discrete Gaussian's acceptance denominator 2 a b t^2 stays below this, leaving room
#: for m^2 (|Y| up to ~ 40 sigma) in int64
GAUSSIAN_DEN_MAX = 1 << 52
#: non-integer scales below this are sampled with t = `LAPLACE_T_MAX` (see `laplace_rational`)
POWER_T_BELOW = 1 << 16
_MAX_EXPONENT = 64  # finest power-of-two denominator tried
_INT_LIMIT = 1 << 62


def round_up(value: Fraction) -> float:
    """The smallest float >= ``value``."""
    f = float(value)
    return f if Fraction(f) >= value else math.nextafter(f, math.inf)


def _positive(x: float, what: str) -> Fraction:
    if not (math.isfinite(x) and x > 0):
        raise MechanismError(f"{what} must be positive and finite, got {x}")
    return Fraction(x)


def laplace_rational(scale: float) -> tuple[int, int]:
    """(t, s), coprime, with t/s >= ``scale``: the scale itself when it is a whole number
    up to `LAPLACE_T_MAX`; below `POWER_T_BELOW`, t = 2^32 and s = floor(2^32 / scale) (t
    a power of two, so the sampler's uniform draws below t and below U need no rejection;
    at most 1 + 2^-16 times the scale); otherwise the closest rational above whose
    denominator is a power of two at most 2^64 and whose t <= `LAPLACE_T_MAX` (or s = 1)."""
    x = _positive(scale, "a discrete Laplace scale")
    if x.denominator == 1 and x <= LAPLACE_T_MAX:
        return int(x), 1
    if x < POWER_T_BELOW:
        t, s = LAPLACE_T_MAX, math.floor(LAPLACE_T_MAX / x)
    else:
        t, s = math.ceil(x), 1
        for k in range(1, _MAX_EXPONENT + 1):
            if math.ceil(x * (1 << k)) > LAPLACE_T_MAX:
                break
            t, s = math.ceil(x * (1 << k)), 1 << k
    g = math.gcd(t, s)
    t, s = t // g, s // g
    if t > _INT_LIMIT or s > _INT_LIMIT:
        raise MechanismError(f"discrete Laplace scale {scale} is out of the supported range")
    return t, s


def gaussian_rational(sigma: float) -> tuple[int, int]:
    """(a, b), coprime, with a/b >= ``sigma``^2, b a power of two, as fine as the bound
    `GAUSSIAN_DEN_MAX` on 2 a b t^2 allows (b = 1 beyond it: the Python-int path)."""
    var = _positive(sigma, "a discrete Gaussian sigma") ** 2
    best = (math.ceil(var), 1)
    for k in range(1, _MAX_EXPONENT + 1):
        b = 1 << k
        a = math.ceil(var * b)
        t = math.isqrt(a // b) + 1
        if 2 * a * b * t * t > GAUSSIAN_DEN_MAX:
            break
        best = (a, b)
    a, b = best
    g = math.gcd(a, b)
    return a // g, b // g


def laplace_epsilon(t: int, s: int, sensitivity: float) -> float:
    """epsilon = D s / t of the discrete Laplace of scale t/s, rounded up."""
    return round_up(Fraction(sensitivity) * s / t)


def gaussian_rho(a: int, b: int, sensitivity: float) -> float:
    """rho = D^2 / (2 sigma^2) of the discrete Gaussian of variance a/b, rounded up."""
    return round_up(Fraction(sensitivity) ** 2 * b / (2 * a))
