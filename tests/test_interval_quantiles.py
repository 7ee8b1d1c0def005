"""The quantile least squares reads from its noise simulation (`confident_order_statistic`):
the simulation's draws come from a public seed, so every release of one tree shares them,
and the quantile must hold its level for that one sample, not only on average over
samples (a root read from 1,000 draws at `rank` covered 0.885 over 3,000 releases)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from hierdp_core.intervals.quantiles import (
    QUANTILE_CONFIDENCE,
    binomial_quantile,
    confident_order_statistic,
    rank,
    tied_quantile,
)


@pytest.mark.parametrize(("m", "level"), [(20, 0.9), (1000, 0.9), (1000, 0.95), (50_000, 0.9)])
def test_the_quantile_holds_its_level_for_nine_samples_in_ten(m, level):
    """Uniform draws: the order statistic's value is the share of the distribution it holds.
    Over 2,000 samples the share holding the level is QUANTILE_CONFIDENCE within 4 binomial
    standard errors; `rank`'s order statistic holds it about half the time (the old rule)."""
    rng = np.random.default_rng(7)
    samples = rng.random((2000, m)) if m <= 1000 else rng.random((200, m))
    held = np.array([confident_order_statistic(s, level) >= level for s in samples])
    n = len(samples)
    k = min(int(binom.ppf(QUANTILE_CONFIDENCE, m, level)), m - 1)
    exact = binom.cdf(k, m, level)  # the chance that X_(k+1) holds the level
    assert exact >= QUANTILE_CONFIDENCE or k == m - 1  # 20 draws: the largest holds 0.88
    assert abs(held.mean() - exact) <= 4 * np.sqrt(exact * (1 - exact) / n)
    old = np.array([np.partition(s, rank(level, m))[rank(level, m)] >= level
                    for s in samples[:200]])
    assert old.mean() < 0.8 or m == 20  # at m = 20 the old rank is the largest draw


def test_too_few_draws_give_the_largest():
    sample = np.arange(5.0)
    assert confident_order_statistic(sample, 0.99) == 4.0


def test_tied_draws_take_the_smaller_value_in_a_share():
    """Draws that tie at the confident order statistic c (float sums of the same integer
    noises, equal within rounding): c or the largest draw below it, taken in the share
    with which they hold as many draws as c's rank on average; no tie, no share."""
    rng = np.random.default_rng(3)
    sample = rng.choice([0.0, 1.0, 2.0, 3.0], size=2000, p=[0.5, 0.3, 0.15, 0.05])
    sample = sample * (1 + rng.uniform(-1e-13, 1e-13, sample.size))  # rounding
    k = int(binom.ppf(QUANTILE_CONFIDENCE, sample.size, 0.9))
    c, smaller, share = tied_quantile(sample, 0.9)
    assert c == confident_order_statistic(sample, 0.9) and round(c) == 2
    assert round(smaller) == 1 and smaller == sample[sample < 1.5].max()
    held_c, held_smaller = (sample <= 2.5).sum(), (sample <= 1.5).sum()
    assert share * held_c + (1 - share) * held_smaller == pytest.approx(k + 1)
    assert 0 < share < 1
    smooth = rng.random(2000)
    assert tied_quantile(smooth, 0.9) == (confident_order_statistic(smooth, 0.9),) * 2 + (1.0,)
    assert tied_quantile(np.zeros(50), 0.9) == (0.0, 0.0, 1.0)  # nothing below: no step


def test_the_binomial_quantile_is_scipys():
    """`binomial_quantile` gives ``scipy.stats.binom.ppf``'s quantile (whose import a
    release no longer pays): every m to 300 and 4,000 random m up to 2e7, at the
    confidences and levels intervals use, and near the ends of p."""
    rng = np.random.default_rng(3)
    cases = [(q, m, p) for m in range(1, 301) for p in (0.5, 0.9, 0.99) for q in (0.9, 0.95)]
    cases += zip(rng.choice([0.8, 0.9, 0.95, 0.99], 4000),
                 (np.exp(rng.uniform(0, np.log(2e7), 4000)) + 1).astype(int),
                 rng.choice([0.1, 0.5, 0.8, 0.9, 0.95, 0.99, 0.999], 4000), strict=True)
    q, m, p = (np.array(v) for v in zip(*cases, strict=True))
    expected = binom.ppf(q, m, p).astype(int)
    ours = np.array([binomial_quantile(float(a), int(b), float(c)) for a, b, c in cases])
    assert (ours == expected).all()
    assert ((ours - 1) != expected).all()  # an off-by-one would fail
    assert (np.round(m * p).astype(int) != expected).sum() > 1000  # not the mean
