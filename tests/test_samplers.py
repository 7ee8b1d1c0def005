"""Statistical tests of every noise sampler against its exact distribution.

Numpy mode uses fixed seeds and 200,000 draws: enough that every goodness-of-fit test below
also rejects the same distribution with its scale off by 10% (checked in each test, so the
tests can fail). Integer samplers: chi-square against the exact pmf (computed here, from the
unnormalised weights, independently of the code under test) with bins pooled so every
expected count is >= 5. Continuous samplers: Kolmogorov-Smirnov against scipy's laplace/norm.
Secure (OpenDP) mode runs the same tests on 20,000 draws.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.privacy import opendp_noise
from hierdp_core.privacy.samplers import (
    NOISES,
    DiscreteGaussian,
    Gaussian,
    Geometric,
    Laplace,
    NoiseSource,
)

N = 200_000
N_SECURE = 20_000
ALPHA = 1e-3  # reject a fit at p < ALPHA
WRONG = (1.1, 1 / 1.1)  # scale factors every fit test must detect

CASES = [
    ("laplace", 0.3), ("laplace", 1.0), ("laplace", 50.0),
    ("gaussian", 0.5), ("gaussian", 1.0), ("gaussian", 50.0),
    ("geometric", 0.3), ("geometric", 1.0), ("geometric", 2.5), ("geometric", 50.0),
    ("discrete-gaussian", 0.5), ("discrete-gaussian", 1.0), ("discrete-gaussian", 3.7),
    ("discrete-gaussian", 50.0),
]
CASE_IDS = [f"{name}-{scale:g}" for name, scale in CASES]


# ---- exact reference distributions (independent of hierdp_core) --------------------------
def exact_pmf(name: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Support and probabilities, normalised by summing the weights over a range whose
    outside mass is far below double precision."""
    if name == "geometric":
        r = int(60 * scale) + 60
        k = np.arange(-r, r + 1)
        w = np.exp(-np.abs(k) / scale)
    elif name == "discrete-gaussian":
        r = int(40 * scale) + 40
        k = np.arange(-r, r + 1)
        w = np.exp(-(k.astype(float) ** 2) / (2 * scale**2))
    else:
        raise ValueError(name)
    return k, w / w.sum()


def continuous_ref(name: str, scale: float):
    return stats.laplace(scale=scale) if name == "laplace" else stats.norm(scale=scale)


def exact_moments(name: str, scale: float) -> tuple[float, float, float]:
    """E[X^2], E|X|, E[X^4]."""
    if name == "laplace":
        return 2 * scale**2, scale, 24 * scale**4
    if name == "gaussian":
        return scale**2, scale * math.sqrt(2 / math.pi), 3 * scale**4
    k, p = exact_pmf(name, scale)
    k = k.astype(float)
    return float(p @ k**2), float(p @ np.abs(k)), float(p @ k**4)


def chi2_pvalue(x: np.ndarray, support: np.ndarray, probs: np.ndarray) -> float:
    """Chi-square goodness of fit of integer draws; bins with expected count < 5 are pooled
    into the two tails, and a tail still under 5 is merged into its neighbour."""
    n = len(x)
    keep = np.flatnonzero(n * probs >= 5)
    lo, hi = support[keep[0]], support[keep[-1]]
    assert np.all(n * probs[keep[0]:keep[-1] + 1] >= 5)  # unimodal: the kept bins are contiguous
    expected = [probs[support < lo].sum(), *probs[keep], probs[support > hi].sum()]
    inside = x[(x >= lo) & (x <= hi)] - lo
    observed = [np.sum(x < lo), *np.bincount(inside, minlength=hi - lo + 1), np.sum(x > hi)]
    expected, observed = n * np.asarray(expected), np.asarray(observed, dtype=float)
    for end, nxt in ((0, 1), (-1, -2)):
        if expected[end] < 5:
            expected[nxt] += expected[end]
            observed[nxt] += observed[end]
            expected[end] = observed[end] = 0
    used = expected > 0
    expected = expected[used] * n / expected[used].sum()
    return float(stats.chisquare(observed[used], expected).pvalue)


def fit_pvalue(x: np.ndarray, name: str, scale: float) -> float:
    if name in ("laplace", "gaussian"):
        return float(stats.kstest(x, continuous_ref(name, scale).cdf).pvalue)
    return chi2_pvalue(x, *exact_pmf(name, scale))


def draw(name: str, scale: float, n: int = N, seed: int = 0) -> np.ndarray:
    return NOISES[name](scale).sample(n, NoiseSource(seed=seed))


# ---- goodness of fit, numpy mode ----------------------------------------------------------
@pytest.mark.parametrize(("name", "scale"), CASES, ids=CASE_IDS)
def test_fits_exact_distribution_and_rejects_10pct_wrong_scale(name, scale):
    x = draw(name, scale, seed=101 + CASES.index((name, scale)))
    assert fit_pvalue(x, name, scale) >= ALPHA
    for factor in WRONG:  # power: the same test detects a 10% error in the scale
        assert fit_pvalue(x, name, scale * factor) < ALPHA, factor


def test_the_fit_tests_reject_a_wrong_shape():
    """A discrete Gaussian is not a geometric of the same variance, and vice versa."""
    dg = draw("discrete-gaussian", 3.0, seed=7)
    var = DiscreteGaussian(3.0).variance
    t = 1 / math.acosh(1 + 1 / var)  # geometric scale with variance 2a/(1-a)^2 = var
    assert Geometric(t).variance == pytest.approx(var)
    assert fit_pvalue(dg, "geometric", t) < ALPHA
    assert fit_pvalue(draw("geometric", t, seed=8), "discrete-gaussian", 3.0) < ALPHA
    assert fit_pvalue(draw("laplace", 1.0, seed=9), "gaussian", math.sqrt(2)) < ALPHA


# ---- exact summaries ------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "scale"), CASES, ids=CASE_IDS)
def test_variance_and_expected_abs_are_exact(name, scale):
    noise = NOISES[name](scale)
    second, first_abs, _ = exact_moments(name, scale)
    assert noise.variance == pytest.approx(second, rel=1e-9)
    assert noise.expected_abs == pytest.approx(first_abs, rel=1e-9)


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 50.0])
@pytest.mark.parametrize("cls", [Geometric, DiscreteGaussian])
def test_pmf_is_exact(cls, scale):
    k, p = exact_pmf(cls.name, scale)
    np.testing.assert_allclose(cls(scale).pmf(k), p, rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("scale", [0.3, 1.0, 50.0])
def test_cdf_matches_scipy(scale):
    x = np.linspace(-30, 30, 601) * scale
    np.testing.assert_allclose(Laplace(scale).cdf(x), stats.laplace(scale=scale).cdf(x),
                               rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(Gaussian(scale).cdf(x), stats.norm(scale=scale).cdf(x),
                               rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize(("name", "scale"), CASES, ids=CASE_IDS)
def test_monte_carlo_summaries_within_5_standard_errors(name, scale):
    noise = NOISES[name](scale)
    x = draw(name, scale, seed=202 + CASES.index((name, scale))).astype(float)
    second, first_abs, fourth = exact_moments(name, scale)
    se_var = math.sqrt((fourth - second**2) / N)  # the mean is known to be 0
    se_abs = math.sqrt((second - first_abs**2) / N)
    assert abs(np.mean(x**2) - noise.variance) < 5 * se_var
    assert abs(np.mean(np.abs(x)) - noise.expected_abs) < 5 * se_abs
    assert abs(np.mean(x)) < 5 * math.sqrt(second / N)
    a = noise.abs_quantile(0.95)
    se_q = math.sqrt(0.95 * 0.05 / N)
    assert np.mean(np.abs(x) <= a) > 0.95 - 5 * se_q
    if noise.integer:
        assert np.mean(np.abs(x) <= a - 1) < 0.95 + 5 * se_q
    else:
        assert np.mean(np.abs(x) <= a) < 0.95 + 5 * se_q


# ---- abs_quantile ---------------------------------------------------------------------------
QS = [0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 1 - 1e-9]


@pytest.mark.parametrize(("name", "scale"), CASES, ids=CASE_IDS)
def test_abs_quantile_is_the_smallest_value_covering_q(name, scale):
    noise = NOISES[name](scale)
    if not noise.integer:
        ref = continuous_ref(name, scale)
        for q in QS:
            a = noise.abs_quantile(q)
            assert a >= 0
            assert 2 * ref.sf(a) == pytest.approx(1 - q, rel=1e-9), q  # P(|X| > a) = 1 - q
        return
    k, p = exact_pmf(name, scale)
    for q in QS:
        a = noise.abs_quantile(q)
        assert isinstance(a, int)
        assert 1 - p[np.abs(k) > a].sum() >= q, q  # P(|X| <= a) >= q
        if a > 0:
            assert 1 - p[np.abs(k) > a - 1].sum() < q, q  # and a - 1 does not cover q


def test_abs_quantile_known_values():
    assert Laplace(2.0).abs_quantile(0.95) == pytest.approx(-2 * math.log(0.05))
    assert Gaussian(1.0).abs_quantile(0.95) == pytest.approx(1.959963984540054)
    assert Gaussian(1.0).abs_quantile(0.0) == 0.0
    assert Geometric(0.3).abs_quantile(0.5) == 0  # P(X = 0) = 0.93
    assert DiscreteGaussian(0.5).abs_quantile(0.95) == 1  # P(|X| <= 1) = 0.9997


@pytest.mark.parametrize("name", sorted(NOISES))
def test_abs_quantile_grows_with_q_and_scale(name):
    cls = NOISES[name]
    for scale in (0.5, 2.0, 20.0):
        qs = [cls(scale).abs_quantile(q) for q in QS]
        assert qs == sorted(qs)
    assert cls(2.0).abs_quantile(0.95) < cls(20.0).abs_quantile(0.95)


@pytest.mark.parametrize("q", [1.0, -0.1, 1.5, float("nan")])
@pytest.mark.parametrize("name", sorted(NOISES))
def test_abs_quantile_rejects_bad_levels(name, q):
    with pytest.raises(MechanismError):
        NOISES[name](1.0).abs_quantile(q)


# ---- calibration, dtypes, shapes, sources -----------------------------------------------------
def test_calibration():
    assert Laplace.for_epsilon(0.5, 2.0).scale == pytest.approx(4.0)
    assert Geometric.for_epsilon(2.0).scale == pytest.approx(0.5)
    assert Gaussian.for_zcdp(0.5).scale == pytest.approx(1.0)
    assert DiscreteGaussian.for_zcdp(0.125, 2.0).scale == pytest.approx(4.0)
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(BudgetError):
            Laplace.for_epsilon(bad)
        with pytest.raises(BudgetError):
            Gaussian.for_zcdp(bad)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(BudgetError):
            Geometric(bad)


@pytest.mark.parametrize(("size", "shape"), [(5, (5,)), ((2, 3), (2, 3)), ((), ()),
                                             (0, (0,)), ((0, 4), (0, 4))])
@pytest.mark.parametrize("name", sorted(NOISES))
def test_dtype_and_shape(name, size, shape):
    x = NOISES[name](1.5).sample(size, NoiseSource(seed=3))
    assert x.shape == shape
    assert x.dtype == (np.int64 if NOISES[name].integer else np.float64)


@pytest.mark.parametrize("name", sorted(NOISES))
def test_seeded_sources_reproduce(name):
    a = NOISES[name](2.0).sample(1000, NoiseSource(seed=11))
    b = NOISES[name](2.0).sample(1000, NoiseSource(seed=11))
    c = NOISES[name](2.0).sample(1000, NoiseSource(seed=12))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_geometric_draws_are_the_two_draws_in_turn():
    """Seeded releases are reproduced across versions: the draws of a size-n sample are n
    geometric draws, then n more, subtracted."""
    noise, size = Geometric(3.0), (4, 5)
    rng = np.random.default_rng(9)
    p = -math.expm1(-1.0 / noise.scale)
    expected = rng.geometric(p, size) - rng.geometric(p, size)
    got = noise.sample(size, NoiseSource(seed=9))
    assert got.dtype == np.int64 and np.array_equal(got, expected)


@pytest.mark.parametrize("scale", [0.5, 2.4663034623764317, 2.466303462376432, 3.0, 40.0,
                                   1e6, 1e12])
def test_geometric_draws_are_numpys_bit_for_bit(scale):
    """Geometric noise inverts the exponential draws itself (below p = 1/3, numpy's
    inversion; at or above, numpy's search): the numbers `Generator.geometric` gives, and
    the generator left in the same state. Scales 2.46630346237643(17|2) straddle p = 1/3
    (the first searched, the second inverted)."""
    noise, size = Geometric(scale), (3, 20_000)
    rng = np.random.default_rng(5)
    p = -math.expm1(-1.0 / scale)
    expected = rng.geometric(p, size) - rng.geometric(p, size)
    source = NoiseSource(seed=5)
    got = noise.sample(size, source)
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    assert source.rng.integers(1 << 62) == rng.integers(1 << 62)


def test_a_source_draws_from_the_generator_it_is_given():
    a = Laplace(1.0).sample(5, NoiseSource(generator=np.random.default_rng(21)))
    assert np.array_equal(a, Laplace(1.0).sample(5, NoiseSource(seed=21)))


def test_secure_source_cannot_be_seeded():
    with pytest.raises(ValueError, match="cannot be seeded"):
        NoiseSource(secure=True, seed=1)
    with pytest.raises(ValueError, match="cannot be seeded"):
        NoiseSource(secure=True, generator=np.random.default_rng(1))
    assert NoiseSource(secure=True).as_dict()["mode"] == "secure"
    assert NoiseSource(seed=4).as_dict() == {"mode": "exploration", "source": "numpy-pcg64",
                                             "seed": 4}


# ---- secure mode (OpenDP) ---------------------------------------------------------------------
SECURE_CASES = [("laplace", 1.0), ("gaussian", 2.0), ("geometric", 0.3), ("geometric", 3.0),
                ("discrete-gaussian", 0.5), ("discrete-gaussian", 3.0)]


def fitted(x: np.ndarray, drawn: str) -> np.ndarray:
    """``x`` as the fit of ``drawn`` takes it: integer noise as int64 (its floats hold whole
    numbers when it stands for continuous noise)."""
    return x.astype(np.int64) if NOISES[drawn].integer else x


#: what secure continuous noise on integer values is drawn as on the hierdp backend: its
#: exact integer counterpart at the same scale (`hierdp_core.privacy.secure_apply`)
COUNTERPART = {"laplace": "geometric", "gaussian": "discrete-gaussian"}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "scale"), SECURE_CASES,
                         ids=[f"{n}-{s:g}" for n, s in SECURE_CASES])
def test_secure_fits_exact_distribution(name, scale, monkeypatch):
    monkeypatch.setattr(opendp_noise, "_CHUNK_SIZE", 6000)  # 4 chunks on parallel threads
    integer = NOISES[name].integer
    zeros = np.zeros(N_SECURE, dtype=np.int64 if integer else float)
    for backend in ("hierdp",) if integer else ("hierdp", "opendp"):
        drawn = COUNTERPART[name] if backend == "hierdp" and not integer else name
        x = NOISES[name](scale).apply(zeros, NoiseSource(secure=True, backend=backend))
        assert x.dtype == zeros.dtype
        # a secure draw cannot be seeded, so a right sampler is rejected with probability
        # ALPHA (one CI run in about 170 over these cases); a rejection is checked on a
        # fresh draw, so a right sampler fails with probability ALPHA**2, a wrong one twice
        if fit_pvalue(fitted(x, drawn), drawn, scale) < ALPHA:
            again = NOISES[name](scale).apply(zeros, NoiseSource(secure=True, backend=backend))
            assert fit_pvalue(fitted(again, drawn), drawn, scale) >= ALPHA
        if drawn in COUNTERPART:
            assert len(np.unique(x)) == len(x)  # a continuum, not a coarse grid
        else:
            assert np.array_equal(x, np.rint(x))  # exact integer noise


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NOISES))
def test_secure_dtype_and_shape(name):
    src = NoiseSource(secure=True)
    dtype = np.int64 if NOISES[name].integer else np.float64
    for shape in [(5,), (2, 3), (), (0,)]:
        x = NOISES[name](1.5).apply(np.zeros(shape, dtype=np.int64), src)
        assert x.shape == shape
        assert x.dtype == dtype


def test_secure_noise_is_never_drawn_alone():
    with pytest.raises(BudgetError, match="applied to the true values"):
        Laplace(1.0).sample(3, NoiseSource(secure=True))


@pytest.mark.parametrize("backend", ["hierdp", "opendp"])
@pytest.mark.parametrize(("name", "sensitivity", "budget"),
                         [("laplace", 2.0, 0.5), ("geometric", 1.0, 0.25),
                          ("gaussian", 1.0, 0.3), ("discrete-gaussian", 2 ** 0.5, 0.2)])
def test_secure_apply_logs_its_privacy_loss(name, sensitivity, budget, backend):
    cls = NOISES[name]
    noise = (cls.for_epsilon(budget, sensitivity) if cls in (Laplace, Geometric)
             else cls.for_zcdp(budget, sensitivity))
    src = NoiseSource(secure=True, backend=backend)
    values = np.arange(10, dtype=np.int64)
    for _ in range(2):  # two batches of one measurement: one log entry
        noise.apply(values, src, sensitivity=sensitivity, budget=budget, label="level 1")
    (entry,) = src.as_dict()["measurements"]
    assert entry["cells"] == 20 and entry["measurement"] == "level 1"
    assert entry["privacy_loss"] == pytest.approx(budget, rel=1e-6)
    assert entry["privacy_loss"] <= budget * (1 + 1e-9)
    # integer values: the exact sampler draws on the hierdp backend, continuous noise as its
    # integer counterpart (`secure_apply`)
    assert entry["sampler"] == ("hierdp-exact" if backend == "hierdp" else "opendp")
    assert ("drawn_as" in entry) == (backend == "hierdp" and not cls.integer)


def test_secure_apply_refuses_a_map_above_the_share():
    noise = Laplace.for_epsilon(1.0, 1.0)
    with pytest.raises(BudgetError, match="more than its share"):
        noise.apply(np.zeros(4), NoiseSource(secure=True), sensitivity=2.0, budget=1.0)


def test_exploration_apply_adds_a_seeded_draw():
    values = np.array([5, 7, 9])
    a = Geometric(2.0).apply(values, NoiseSource(seed=3))
    b = values + Geometric(2.0).sample(3, NoiseSource(seed=3))
    assert a.dtype == np.int64 and np.array_equal(a, b)



@pytest.mark.parametrize("width", [30_001, 101])  # over blocks; at most SMALL cells
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_exploration_geometric_is_added_in_blocks_bit_for_bit(dtype, width):
    """Geometric noise is added to integer values block by block
    (`numpy_geometric.BLOCK`; both halves at once for at most `numpy_geometric.SMALL`
    cells): every cell's value plus numpy's two geometric draws in turn, over blocks and on
    a strided view of the values as on a copy."""
    noise = Geometric(3.0)
    values = np.random.default_rng(1).integers(-1000, 1000, (3, width)).astype(dtype)[:, 1:]
    rng = np.random.default_rng(4)
    p = -math.expm1(-1.0 / noise.scale)
    expected = values + (rng.geometric(p, values.shape) - rng.geometric(p, values.shape))
    got = noise.apply(values, NoiseSource(seed=4))
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    assert np.array_equal(noise.apply(values.copy(), NoiseSource(seed=4)), expected)


def test_a_huge_discrete_gaussian_has_its_moments_without_its_support():
    """Beyond `_CONTINUOUS_SIGMA` the moments, quantile and interval mass come from closed
    forms (a fuzzed tiny budget made the support 181M values and ran out of memory): they
    agree with the exact sums over the support at the threshold, and a sigma of 10^12
    answers at once."""
    from hierdp_core.privacy import samplers

    sigma = samplers._CONTINUOUS_SIGMA * 1.0001
    closed = samplers.DiscreteGaussian(sigma)
    support = np.arange(-int(40 * sigma) - 1, int(40 * sigma) + 2)
    weights = np.exp(-(support.astype(float) ** 2) / (2 * sigma**2))
    pmf = weights / weights.sum()
    assert closed.variance == pytest.approx(float(np.sum(pmf * support.astype(float) ** 2)),
                                            rel=1e-12)
    assert closed.expected_abs == pytest.approx(float(np.sum(pmf * np.abs(support))),
                                                rel=1e-8)
    a = closed.abs_quantile(0.9)
    tail = 1 - pmf[np.abs(support) <= a].sum()
    assert tail <= 0.1 < 1 - pmf[np.abs(support) <= a - 1].sum()
    assert closed.mass_below(a) == pytest.approx(pmf[(support >= -a) & (support < a)].sum(),
                                                 abs=1e-9)
    assert closed.pmf(np.array([0]))[0] == pytest.approx(pmf[support == 0][0], rel=1e-12)
    huge = samplers.DiscreteGaussian(1e12)
    assert huge.variance == 1e24 and huge.abs_quantile(0.9) == pytest.approx(1.6449e12, rel=1e-4)


@pytest.mark.parametrize("scale", [0.5, 3.0, 80.0])
def test_the_geometric_interval_mass_is_its_pmf_summed(scale):
    noise = Geometric(scale)
    for a in (0, 1, 5, noise.abs_quantile(0.9)):
        assert noise.mass_below(a) == pytest.approx(float(noise.pmf(np.arange(-a, a)).sum()),
                                                    abs=1e-12)
