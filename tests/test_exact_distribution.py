"""The exact sampler against the exact pmf at 10M draws, and against OpenDP.

Each case draws 10,000,000 values from a fixed-key ChaCha20 stream (`SeededWords`: the
secure source cannot be seeded, tests inject a word source) and checks them against the
pmf of the rational that `exact_noise` samples (computed in `exact_helpers` from the
formula, not from the sampler): the chi-square p-value must be >= 1e-6 and no bin may
deviate by more than the normal quantile of 1e-6 spread over the bins (Bonferroni). Each
check also rejects the pmf of a scale 3% off (so the tests can fail). A two-sample
chi-square compares the sampler with OpenDP's on a smaller sample.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from hierdp_core.privacy.exact import exact_noise
from hierdp_core.privacy.opendp_noise import opendp_apply
from tests.exact_helpers import SeededWords, fit_checks, gaussian_pmf, laplace_pmf, z_limit

N = 10_000_000
ALPHA = 1e-6

LAPLACE = [1.0, 10 / 3, 10.0, 1000.0]
GAUSSIAN = [1.0, 10.0, 100.0]


def _pmf(noise, scale_factor: float = 1.0):
    if noise.kind == "discrete-laplace":
        t, s = noise.num, noise.den
        r = int(60 * t / s) + 60
        return laplace_pmf(t * scale_factor, s, r)
    a, b = noise.num, noise.den
    r = int(12 * (a / b) ** 0.5) + 12
    return gaussian_pmf(a * scale_factor**2, b, r)


def _check(x, noise):
    k, p = _pmf(noise)
    pvalue, zmax = fit_checks(x, k, p)
    bins = int(np.sum(x.size * p >= 5))
    assert pvalue >= ALPHA, pvalue
    assert zmax <= z_limit(bins, ALPHA), (zmax, z_limit(bins, ALPHA))
    k, p = _pmf(noise, 1.03)  # power: a 3% error in the scale is detected
    pvalue, zmax = fit_checks(x, k, p)
    assert pvalue < ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("scale", LAPLACE, ids=[f"{s:g}" for s in LAPLACE])
def test_discrete_laplace_matches_its_pmf_at_10m_draws(scale):
    noise = exact_noise("discrete-laplace", scale)
    x = noise.sample(N, SeededWords(LAPLACE.index(scale) + 1))
    assert x.dtype == np.int64 and x.size == N
    _check(x, noise)


@pytest.mark.slow
@pytest.mark.parametrize("sigma", GAUSSIAN, ids=[f"{s:g}" for s in GAUSSIAN])
def test_discrete_gaussian_matches_its_pmf_at_10m_draws(sigma):
    noise = exact_noise("discrete-gaussian", sigma)
    x = noise.sample(N, SeededWords(10 + GAUSSIAN.index(sigma)))
    assert x.dtype == np.int64 and x.size == N
    _check(x, noise)


def _two_sample_pvalue(x: np.ndarray, y: np.ndarray) -> float:
    """Chi-square test that two integer samples share one distribution (bins with fewer
    than 10 draws in all pooled into the tails)."""
    lo, hi = min(x.min(), y.min()), max(x.max(), y.max())
    table = np.stack([np.bincount(x - lo, minlength=hi - lo + 1),
                      np.bincount(y - lo, minlength=hi - lo + 1)])
    total = table.sum(axis=0)
    keep = np.flatnonzero(total >= 10)
    first, last = keep[0], keep[-1]
    cols = [table[:, :first].sum(axis=1), *table[:, first:last + 1].T,
            table[:, last + 1:].sum(axis=1)]
    table = np.array([c for c in cols if c.sum() > 0]).T
    return float(stats.chi2_contingency(table)[1])


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "scale", "opendp_kind"),
                         [("discrete-laplace", 10 / 3, "laplace"),
                          ("discrete-gaussian", 3.0, "gaussian")])
def test_the_sampler_agrees_with_opendp(kind, scale, opendp_kind):
    noise = exact_noise(kind, scale)
    ours = noise.sample(200_000, SeededWords(21))
    sampled = noise.num / noise.den if kind == "discrete-laplace" else (
        noise.num / noise.den) ** 0.5
    theirs = opendp_apply(np.zeros(30_000, dtype=np.int64), opendp_kind, sampled, True)
    assert _two_sample_pvalue(ours, theirs) >= 1e-4
    shifted = opendp_apply(np.zeros(30_000, dtype=np.int64), opendp_kind, sampled * 1.15,
                           True)
    assert _two_sample_pvalue(ours, shifted) < 1e-4  # the test sees a 15% scale error
