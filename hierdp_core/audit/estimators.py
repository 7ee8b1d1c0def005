"""Estimators of the audit: one-sided Clopper-Pearson bounds, the choice of a threshold
event on one half of the trials, and the lower bound on epsilon it gives on the other half.

For an event E and neighbours D, D', ``ln((P[M(D) in E] - delta) / P[M(D') in E])`` is a lower
bound on the true epsilon. With p_lower / p_upper one-sided Clopper-Pearson bounds, the
reported bound is ``max(0, max over both directions of ln((p_lower(D, E) - delta) /
p_upper(D', E)))``. The event is selected on the first half of each side's trials (at a level
divided by the square root of the number of candidate events, which discounts lucky
small-count tail events) and estimated on the second, independent half; four bounds (a lower
and an upper one in each direction) at ``alpha / 4`` each (Bonferroni) make the maximum hold
with probability >= 1 - alpha jointly.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import betaincinv

from hierdp_core.errors import MechanismError

Statistics = Callable[[np.ndarray], dict[str, np.ndarray]]

_GRID = 256
SELECTION_PENALTY = 0.5
DIRECTIONS = ((1, 0, "D' vs D"), (0, 1, "D vs D'"))


def clopper_pearson_lower(k, n, alpha: float):
    """One-sided lower Clopper-Pearson bound at confidence ``1 - alpha`` for a binomial
    proportion with ``k`` successes in ``n`` trials: the ``alpha`` quantile of
    Beta(k, n - k + 1), and 0 when k = 0. Vectorised over ``k`` and ``n``."""
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    _check_counts(k, n, alpha)
    a = np.where(k > 0, k, 1.0)
    out = np.where(k > 0, betaincinv(a, n - k + 1, alpha), 0.0)
    return out[()] if out.ndim == 0 else out


def clopper_pearson_upper(k, n, alpha: float):
    """One-sided upper Clopper-Pearson bound at confidence ``1 - alpha``: the ``1 - alpha``
    quantile of Beta(k + 1, n - k), and 1 when k = n. Vectorised over ``k`` and ``n``."""
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    _check_counts(k, n, alpha)
    b = np.where(k < n, n - k, 1.0)
    out = np.where(k < n, betaincinv(k + 1, b, 1 - alpha), 1.0)
    return out[()] if out.ndim == 0 else out


def _check_counts(k: np.ndarray, n: np.ndarray, alpha: float) -> None:
    if not 0 < alpha < 1:
        raise MechanismError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise MechanismError("need 0 <= k <= n and n >= 1")


def log_ratio_bound(k_num, n_num, k_den, n_den, alpha: float, delta: float = 0.0):
    """Lower confidence bound on ln((p_num - delta) / p_den) from counts, with each of the two
    Clopper-Pearson bounds at level ``alpha`` (-inf where ``p_lower - delta <= 0``)."""
    lower = np.asarray(clopper_pearson_lower(k_num, n_num, alpha)) - delta
    upper = np.asarray(clopper_pearson_upper(k_den, n_den, alpha))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(lower > 0, np.log(np.where(lower > 0, lower, 1.0)) - np.log(upper),
                       -np.inf)
    return out[()] if out.ndim == 0 else out


def epsilon_lower_bound(samples: tuple[dict, dict], trials: int, alpha: float,
                        delta: float) -> tuple[dict, list[dict]]:
    """The best direction and both directions' results from the statistics of D and D'
    (``samples``: one dict {statistic: (trials,) array} per side)."""
    half = trials // 2
    a = alpha / 4  # Bonferroni: two Clopper-Pearson bounds in each of two directions
    directions = []
    for num, den, label in DIRECTIONS:
        sel = select_event(samples[num], samples[den], half, a, delta)
        directions.append(estimate_event(sel, samples[num], samples[den], half, a, delta,
                                         label))
    return max(directions, key=lambda r: r["bound"]), directions


def fit_statistics(out1: np.ndarray, out2: np.ndarray) -> Statistics:
    """A linear discriminant (diagonal covariance) and the coordinate with the largest
    standardised shift, both fitted on pilot outputs of D (out1) and D' (out2)."""
    m1, m2 = out1.mean(axis=0), out2.mean(axis=0)
    var = (out1.var(axis=0) + out2.var(axis=0)) / 2
    floor = 1e-12 * max(1.0, float(np.max(np.abs(np.concatenate([m1, m2])))) ** 2)
    var = np.maximum(var, floor)
    shift = m2 - m1
    w = shift / var
    if not np.any(w):
        w = np.ones_like(w)
    w = w / np.max(np.abs(w))
    j = int(np.argmax(np.abs(shift) / np.sqrt(var)))

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        return {"linear discriminant": out @ w, f"coordinate {j}": out[:, j]}

    return statistics


def category_indicators(categories, column: int = -1, name: str = "output") -> Statistics:
    """Statistics for a categorical output (e.g. a partition's code) in ``column``: one
    indicator per category of ``categories`` (fixed in advance, the same on both sides)."""
    categories = np.asarray(categories, dtype=float)

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        values = out[:, column]
        return {f"{name} {v:g}": (values == v).astype(float) for v in categories}

    return statistics


def thresholds(values: np.ndarray) -> np.ndarray:
    """Candidate thresholds: every distinct value if few, else quantiles dense in the tails."""
    u = np.unique(values)
    if u.size <= 2 * _GRID:
        return u
    tail = np.geomspace(1e-4, 0.05, 24)
    probs = np.unique(np.concatenate([tail, np.linspace(0, 1, _GRID), 1 - tail]))
    return np.unique(np.quantile(values, probs, method="inverted_cdf"))


def _counts(sorted_values: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
    n = sorted_values.size
    return {">=": n - np.searchsorted(sorted_values, t, side="left"),
            "<=": np.searchsorted(sorted_values, t, side="right")}


def select_event(num: dict, den: dict, half: int, alpha: float, delta: float) -> dict | None:
    """On the first half: the statistic, comparison and threshold with the largest bound."""
    candidates = []
    for key in num:
        if key not in den:
            continue
        a, b = num[key][:half], den[key][:half]
        t = thresholds(np.concatenate([a, b]))
        ka, kb = _counts(np.sort(a), t), _counts(np.sort(b), t)
        for op in (">=", "<="):
            candidates.append((key, op, t, ka[op], kb[op]))
    # the winner of many noisy comparisons is optimistic (and small-count events the most):
    # select with a level corrected for the number of candidates, which favours events whose
    # advantage is robust, i.e. those most likely to keep their bound on the held-out half
    n_events = sum(c[2].size for c in candidates)
    if not n_events:
        return None
    alpha = alpha / n_events ** SELECTION_PENALTY
    best = None
    for key, op, t, k_num, k_den in candidates:
        score = log_ratio_bound(k_num, half, k_den, half, alpha, delta)
        i = int(np.argmax(score))
        if np.isfinite(score[i]) and (best is None or score[i] > best["selection_bound"]):
            best = {"statistic": key, "op": op, "threshold": float(t[i]),
                    "selection_bound": float(score[i])}
    return best


def estimate_event(sel: dict | None, num: dict, den: dict, half: int, alpha: float,
                   delta: float, label: str) -> dict:
    """On the held-out half: the bound of the selected event."""
    if sel is None:
        return {"direction": label, "event": "no event separates the neighbours",
                "bound": 0.0, "estimate": 0.0}
    a, b = num[sel["statistic"]][half:], den[sel["statistic"]][half:]
    t = sel["threshold"]
    if sel["op"] == ">=":
        k_num, k_den = int(np.sum(a >= t)), int(np.sum(b >= t))
    else:
        k_num, k_den = int(np.sum(a <= t)), int(np.sum(b <= t))
    n_num, n_den = a.size, b.size
    bound = float(log_ratio_bound(k_num, n_num, k_den, n_den, alpha, delta))
    p_num, p_den = k_num / n_num, k_den / n_den
    with np.errstate(divide="ignore"):
        estimate = float(np.log(max(p_num - delta, 0.0)) - np.log(p_den)) if p_den > 0 \
            else math.inf
    top, bottom = label.split(" vs ")
    event = f"{sel['statistic']} {sel['op']} {t:.4g}"
    return {
        "direction": label,
        "event": (f"P[{event} | {top}] = {k_num}/{n_num} vs P[{event} | {bottom}] = "
                  f"{k_den}/{n_den}"),
        **sel,
        "k_num": k_num, "n_num": n_num, "k_den": k_den, "n_den": n_den,
        "p_lower": float(clopper_pearson_lower(k_num, n_num, alpha)),
        "p_upper": float(clopper_pearson_upper(k_den, n_den, alpha)),
        "estimate": estimate,
        "bound": bound,
    }
