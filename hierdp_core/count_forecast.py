"""The a priori error per level of a counts release (issue 30 item 3), from its measurement
plan alone (the tree's shape and each level's exact noise; no count is read).

* ``least-squares`` (linear, so its error is the estimator applied to the noise):
  the exact variance P_v of every node's estimate (`gls_moments`) with each level's exact
  noise variance (integer noise has less than its Laplace or Gaussian model: 0.014 against
  0.08 for a geometric of epsilon 5). The mean |error| of a node: its own measurement's
  term c e (c = P_v / v_l, e the level's noise: its exact pmf for integer noise of
  standard deviation up to `EXACT_SD`, else Laplace or Gaussian) plus the rest taken as
  Gaussian of variance P_v - c^2 v_l, capped by the triangle bound sum_u |a_vu| E|e_u|
  (`gls_moments`), which is the nearer one when the noise is mostly 0 (integer noise
  of a large budget: a few rare non-zero terms, far from Gaussian).
* TopDown (``at_most``): an upper bound, the least-squares forecast (TopDown projects those
  estimates onto non-negative integers keeping every parent; the projection moves an
  estimate toward any non-negative truth, so small or empty units are off by less, by an
  amount that depends on the data; measured never above the bound beyond its standard
  error on the shapes of `benchmarks/bench_coverage.py`, rounding included).
* ``raw``: each level's own noise (its ledger's expected |error| and sd).

Every level's ``mae`` is the mean over its nodes of the point forecast; ``mae_low`` and
``mae_high`` the range's ends: equal to ``mae`` where the point holds (`is_point`), else
bounds that hold for any noise (`mae_bounds`); ``mae_low`` 0 for an upper bound
(``at_most``, TopDown).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.special import ndtr

from hierdp_core.privacy.gls_moments import GlsPasses, power_sums
from hierdp_core.privacy.split_optimiser import expected_abs

#: integer noise up to this standard deviation is summed over its pmf (beyond, the
#: continuous model of the same variance is within 1% of it)
EXACT_SD = 4.0
PAIR_DIGITS = 3  # `_discrete_plus_gaussian`: E|error| changes by under 0.1%
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def folded_normal_mean(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """E|mu + sd Z|, Z standard normal (|mu| where sd is 0)."""
    mu, sd = np.abs(mu), np.asarray(sd, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, mu / sd, np.inf)
        bell = np.where(sd > 0, sd * _SQRT_2_OVER_PI * np.exp(-0.5 * z * z), 0.0)
    return bell + mu * (1 - 2 * ndtr(-z))


def _discrete_plus_gaussian(noise, coefficient: np.ndarray, rest_sd: np.ndarray) -> np.ndarray:
    """E|c e + R| per node, e the integer ``noise`` (summed over its pmf) and R normal of sd
    ``rest_sd``; each distinct (c, sd) pair once, both rounded to `PAIR_DIGITS`
    significant digits (a ragged tree's nodes differ a little: a few thousand pairs, not
    one per node)."""
    keys = np.stack([_significant(coefficient), _significant(rest_sd)])
    pairs, inverse = np.unique(keys, axis=1, return_inverse=True)
    reach = int(math.ceil(40 * math.sqrt(noise.variance))) + 2
    k = np.arange(-reach, reach + 1)
    pmf = noise.pmf(k)
    means = folded_normal_mean(pairs[0][:, None] * k, pairs[1][:, None]) @ pmf
    return means[np.ravel(inverse)]


def _fourth_cumulant(noise) -> float:
    """kappa_4 of one cell's ``noise`` (0 for Gaussian noise)."""
    if noise.integer:
        reach = int(math.ceil(40 * math.sqrt(noise.variance))) + 2
        k = np.arange(-reach, reach + 1, dtype=float)
        return float(noise.pmf(k) @ k**4) - 3 * noise.variance**2
    return 3 * noise.variance**2 if noise.name == "laplace" else 0.0  # 24 b^4 - 3 (2 b^2)^2


def _significant(x: np.ndarray) -> np.ndarray:
    """``x`` (non-negative) rounded to `PAIR_DIGITS` significant digits."""
    with np.errstate(divide="ignore"):
        scale = 10.0 ** (np.floor(np.log10(np.where(x > 0, x, 1.0))) - PAIR_DIGITS + 1)
    return np.round(x / scale) * scale


def point_mae(noise, variance: np.ndarray, l1: np.ndarray) -> np.ndarray:
    """The mean |error| of nodes of one level whose estimates have ``variance`` and
    triangle bound ``l1``, the level measured with ``noise`` (None: not measured)."""
    if noise is None:  # no own term: the rest alone
        return np.minimum(_SQRT_2_OVER_PI * np.sqrt(variance), l1)
    c = variance / noise.variance
    own = c * c * noise.variance
    rest_sd = np.sqrt(np.maximum(variance - own, 0.0))
    if noise.integer and math.sqrt(noise.variance) <= EXACT_SD:
        model = _discrete_plus_gaussian(noise, c, rest_sd)
    elif noise.name in ("laplace", "geometric"):
        model = expected_abs(variance, own, zcdp=False)
    else:
        model = _SQRT_2_OVER_PI * np.sqrt(variance)
    return np.minimum(model, l1)


def mae_bounds(noise, variance: np.ndarray, l1: np.ndarray, k4: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on a node's E|error| that hold for any noise: above, min(sd, the triangle
    bound); below, the own term's E|c e| and Hoelder's E[X^2]^(3/2) / E[X^4]^(1/2) with
    E[X^4] = 3 sd^4 + sum_u a_vu^4 kappa_4(e_u)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        holder = np.nan_to_num(variance**1.5 / np.sqrt(3 * variance**2 + k4))
    own = 0.0 if noise is None else variance / noise.variance * noise.expected_abs
    return np.maximum(holder, own), np.minimum(np.sqrt(variance), l1)


def is_point(noises) -> bool:
    """Whether the point forecast holds (within 10% on every shape of the coverage
    benchmark): every measured level's noise continuous or integer of sd >= 1. Below, the
    noise is mostly 0 (a few rare non-zero terms) and the forecast is a range."""
    return all(n is None or not n.integer or n.variance >= 1.0 for n in noises)


def count_forecast(hierarchy, plans, family: str, root_invariant: bool = False,
                   at_most: bool = False) -> pd.DataFrame:
    """level_name, mae, mae_low, mae_high, rmse per level of a counts release of ``family``
    ("raw", "least-squares" or "topdown") measured by ``plans``
    (`mechanisms.measure.LevelPlan`, one per level), root first (module doc); ``at_most``
    (TopDown) makes the forecast an upper bound (mae_low 0)."""
    noises = [p.noise for p in plans]
    variance = np.array([np.inf if n is None else n.variance for n in noises])
    abs_mean = np.array([0.0 if n is None else n.expected_abs for n in noises])
    if family == "raw":  # NaN: a level not measured (the raw mechanisms publish none)
        mae = low = high = np.where(np.isinf(variance), np.nan, abs_mean)
        mse = np.where(np.isinf(variance), np.nan, variance)
    else:
        passes = GlsPasses.of(hierarchy, variance, root_invariant)
        var = passes.variances
        l1 = power_sums(passes, abs_mean, 1)
        mae = np.array([point_mae(n, p, b).mean()
                        for n, p, b in zip(noises, var, l1, strict=True)])
        mse = np.array([p.mean() for p in var])
        if is_point(noises):
            low = high = mae
        else:
            k4 = power_sums(passes, [0.0 if n is None else _fourth_cumulant(n)
                                     for n in noises], 4)
            bounds = [mae_bounds(*args) for args in zip(noises, var, l1, k4, strict=True)]
            low = np.array([lo.mean() for lo, _ in bounds])
            high = np.array([hi.mean() for _, hi in bounds])
    if at_most:
        low = np.zeros_like(mae)
    return pd.DataFrame({"level_name": list(hierarchy.level_names), "mae": mae,
                         "mae_low": low, "mae_high": high, "rmse": np.sqrt(mse)})
