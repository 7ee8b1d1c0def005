"""Order statistics that hold a level: `rank` for a bootstrap's draws of one cell (a new
draw falls at or below it with probability at least the level) and
`confident_order_statistic` for a simulation every release of a table shares (the quantile
holds its level with a stated confidence over the draws; `tied_quantile` where draws tie
at it).
"""

from __future__ import annotations

import math

import numpy as np

#: `confident_order_statistic`: the chance that a quantile read from a simulation shared by
#: every release holds its level
QUANTILE_CONFIDENCE = 0.9
#: `binomial_quantile` sums the pmf over the mean +/- this many standard deviations
QUANTILE_TAIL_SD = 40
#: `tied_quantile`: draws within this share of each other tie (far above a float sum's
#: rounding error, far below the gap between sums of integer noises)
TIE = 1e-9


def rank(level: float, m: int) -> int:
    """The 0-based rank of the ceil(level (m + 1))-th smallest of m draws (the largest when
    beyond m): a new draw falls at or below it with probability at least ``level``."""
    return min(math.ceil(level * (m + 1)), m) - 1


def one_sided(level: float) -> float:
    """The level of the quantile of |error| that is a symmetric error's one-sided
    ``level`` quantile w (P(error <= w) >= level: P(|error| <= w) >= 2 level - 1); 0 for a
    level of 1/2 or less, whose w is 0 (`_confident_rank` and ``abs_quantile`` give 0 or
    the smallest draw there).

    >>> one_sided(0.9), one_sided(0.4)
    (0.8, 0.0)
    """
    return max(2 * level - 1, 0.0)


def binomial_quantile(q: float, m: int, p: float) -> int:
    """The q-quantile of Binomial(m, p) (0 < p < 1): the smallest k with P(X <= k) >= q, as
    ``scipy.stats.binom.ppf`` gives it (the same on 26,000 cases: m up to 2e7, p from 0.1
    to 0.999, q from 0.8 to 0.99; `tests/test_interval_quantiles.py` checks 5,800), without
    scipy, whose import costs a command-line release about 0.3 s of CPU. The pmf's ratios
    p(k + 1) / p(k) = (m - k) p / ((k + 1)(1 - p)) are summed in logs over the mean +/- 40
    standard deviations (the mass beyond is below e^-800), then normalised: a CDF exact to
    about 1e-12, so that only a q within that of a CDF value could be read otherwise."""
    mean, sd = m * p, math.sqrt(m * p * (1 - p))
    lo = max(0, math.floor(mean - QUANTILE_TAIL_SD * sd) - 10)
    hi = min(m, math.ceil(mean + QUANTILE_TAIL_SD * sd) + 10)
    k = np.arange(lo, hi, dtype=np.float64)
    ratios = np.log((m - k) / (k + 1)) + (math.log(p) - math.log1p(-p))
    log_pmf = np.concatenate(([0.0], np.cumsum(ratios)))
    pmf = np.exp(log_pmf - log_pmf.max())
    cdf = np.cumsum(pmf) / pmf.sum()
    return lo + min(int(np.searchsorted(cdf, q, side="left")), hi - lo)


def confident_order_statistic(sample: np.ndarray, level: float,
                              confidence: float = QUANTILE_CONFIDENCE) -> float:
    """The order statistic of a flat sample of m draws that holds at least ``level`` of
    their distribution with probability ``confidence`` over the draws (the largest when
    none does): the (k + 1)-th smallest holds F(X_(k+1)) >= level exactly when at most k
    draws fall below the level-quantile, so k is the ``confidence``-quantile of
    Binomial(m, level). For a simulation with a fixed public seed, whose draws every
    release of a table shares, `rank`'s average guarantee is not enough: one sample of
    1,000 draws left a root's coverage at 0.885 over 3,000 releases at nominal 0.9
    (k: `binomial_quantile`)."""
    k = _confident_rank(sample.size, level, confidence)
    return float(np.partition(sample, k)[k])


def _confident_rank(m: int, level: float, confidence: float = QUANTILE_CONFIDENCE) -> int:
    """The 0-based rank of `confident_order_statistic` among m draws (the smallest for a
    ``level`` of 0, which any draw holds)."""
    if level <= 0:
        return 0
    return min(binomial_quantile(confidence, m, level), m - 1)


def tied_quantile(sample: np.ndarray, level: float) -> tuple[float, float, float]:
    """`confident_order_statistic` c of a flat sample (its (k + 1)-th smallest), the
    largest draw below it (c itself when none) and the share of cells that take c so that
    c or the smaller one hold k + 1 of the draws on average (1 where no other draw ties
    at c; draws within `TIE` of c, relative, tie with it: a float estimate's sums of the
    same integer noises differ by rounding). With integer noise at a large budget the
    errors take a few values: [v - c, v + c] then held 0.99 of least squares' roots at
    nominal 0.9 (`counts.count_intervals`), the next smaller interval 0.89."""
    k = _confident_rank(sample.size, level)
    c = float(np.partition(sample, k)[k])
    held, below = int((sample <= c * (1 + TIE)).sum()), sample[sample < c * (1 - TIE)]
    if held <= k + 1 or not below.size:
        return c, c, 1.0
    return c, float(below.max()), (k + 1 - below.size) / (held - below.size)
