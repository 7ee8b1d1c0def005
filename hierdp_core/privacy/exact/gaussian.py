"""Exact discrete Gaussian: P(k) proportional to exp(-k^2 / (2 sigma^2)), sigma^2 = a / b.

Canonne, Kamath & Steinke (2020), Algorithm 3, vectorised: with t = floor(sigma) + 1,
propose Y from the discrete Laplace of scale t (`discrete_laplace`) and keep it with
probability exp(-(|Y| - sigma^2 / t)^2 / (2 sigma^2)). The proposal's exp(-|y| / t) times
this factor is exp(-y^2 / (2 sigma^2)) times a constant (expand the square), so a kept Y
has exactly the discrete Gaussian law. With m = |Y| t b - a the exponent is the rational
m^2 / (2 a b t^2), and the keep test is `bernoulli_exp` of that fraction: integers only.
m^2 and the denominator are int64 when they fit (checked per element); the rare elements
beyond (|Y| far in the tail), or every element when 2 a b t^2 itself does not fit, are
run through the same test with Python ints.
"""

from __future__ import annotations

import math

import numpy as np

from hierdp_core.errors import MechanismError
from hierdp_core.privacy.exact.bernoulli import bernoulli_exp
from hierdp_core.privacy.exact.laplace import discrete_laplace
from hierdp_core.privacy.exact.uniform import INT64_MAX, first, oversample, select

_M_MAX = math.isqrt(INT64_MAX)  # |m| <= this keeps m^2 in int64


def proposal_scale(a: int, b: int) -> int:
    """t = floor(sqrt(a / b)) + 1, exactly."""
    return math.isqrt(a // b) + 1


def _keep(y: np.ndarray, a: int, b: int, t: int, words) -> np.ndarray:
    """The acceptance test of each proposal ``y``."""
    den = 2 * a * b * t * t
    absy = np.abs(y)
    if den <= INT64_MAX and a <= _M_MAX:
        small = absy <= (_M_MAX + a) // (t * b)  # then -a <= m <= _M_MAX
    else:
        small = np.zeros(y.size, dtype=bool)
    keep = np.empty(y.size, dtype=bool)
    if small.any():
        m = select(absy, small) * (t * b) - a
        keep[small] = bernoulli_exp(m * m, den, words)
    if not small.all():  # the exact path with Python ints
        m = np.array([int(v) * t * b - a for v in absy[~small]], dtype=object)
        keep[~small] = bernoulli_exp(m * m, den, words)
    return keep


def _gaussian_acceptance(a: int, b: int, t: int) -> float:
    """About the fraction of proposals kept (batch sizing only): the discrete Gaussian's
    normaliser over the proposal's, clipped to [0.3, 1]."""
    sigma = math.sqrt(a / b)
    ratio = sigma * math.sqrt(2 * math.pi) * -math.expm1(-1 / t) / (1 + math.exp(-1 / t))
    return max(0.3, min(1.0, ratio))


def discrete_gaussian(a: int, b: int, size: int, words) -> np.ndarray:
    """``size`` independent draws with P(k) proportional to exp(-k^2 b / (2 a)) (int64)."""
    if not (a >= 1 and b >= 1):
        raise MechanismError(f"a discrete Gaussian sigma^2 = a/b needs a, b >= 1, got {a}/{b}")
    t = proposal_scale(a, b)
    accept = _gaussian_acceptance(a, b, t)
    parts, have = [], 0
    while have < size:
        y = discrete_laplace(t, 1, oversample(size - have, accept), words)
        y = select(y, _keep(y, a, b, t, words))
        parts.append(y)
        have += y.size
    return first(parts, size)
