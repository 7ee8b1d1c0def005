"""Data-independent range-query baselines (`hierdp_core.ranges.baselines`).

Tolerances come from the noise distribution, not from tuning. Means are checked within 5
standard errors of the truth. Variances are checked against the sampling variance of the
second moment of the exact noise (Laplace combinations; fourth cumulant 12 b^4 per Laplace
term, i.e. kurtosis 6, so the Gaussian chi-square tolerance would be too tight). The tree
least-squares step is compared with an explicit generalised least-squares solve built here,
independently of the module. The calibration numbers are the spec's section 4.5.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from release_inputs import UNIT_MEASUREMENT

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.baselines import (
    BASELINES,
    b_ary_tree,
    haar_cells,
    haar_coefficients,
    hb_branching,
    hb_estimate,
    hb_level_shares,
    hb_variance_bound,
    identity_estimate,
    level_shares,
    measure_tree,
    privelet_estimate,
    tree_estimate,
    tree_height,
    tree_least_squares_leaves,
    uniform_estimate,
)
from hierdp_core.ranges.workloads import random_ranges

Z = 5.0  # tolerance in standard errors
HISTOGRAM = np.array([0, 3, 50, 7, 0, 0, 120, 4, 9, 1, 0, 33, 2], dtype=float)  # n = 13


def geometric_weights(height: int) -> np.ndarray:
    """Cormode et al.'s 2^(1/3) per level, leaves heaviest (spec section 2.6)."""
    return 2.0 ** (np.arange(height + 1) / 3)


def estimator(key):
    """The baseline's estimator with the L1 sensitivity its mechanism's plan states (1;
    Privelet's per group of weighted coefficients)."""
    return partial(BASELINES[key][0], stage=UNIT_MEASUREMENT)


def tree_with(branching, weights_of_height):
    def estimate(x, epsilon, source):
        height = tree_height(np.shape(x)[-1], branching)
        return tree_estimate(x, epsilon, source, branching=branching,
                             level_weights=weights_of_height(height), stage=UNIT_MEASUREMENT)
    return estimate


UNBIASED = {
    "identity": partial(identity_estimate, stage=UNIT_MEASUREMENT),
    "privelet": partial(privelet_estimate, stage=UNIT_MEASUREMENT),
    "hb": partial(hb_estimate, stage=UNIT_MEASUREMENT),
    "tree b=2 uniform": tree_with(2, lambda h: None),
    "tree b=3 uniform": tree_with(3, lambda h: None),
    "tree b=2 geometric": tree_with(2, geometric_weights),
    "tree b=3 geometric": tree_with(3, geometric_weights),
    "tree b=3 root unmeasured": tree_with(3, hb_level_shares),
}


# ---- explicit references built here, independently of the module -----------------------------


def explicit_tree(n: int, branching: int) -> tuple[np.ndarray, np.ndarray]:
    """The tree's query matrix (one row per node covering at least one of the n cells, level
    by level, left to right) and each row's level."""
    height = 0
    while branching**height < n:
        height += 1
    rows, levels = [], []
    for level in range(height + 1):
        span = branching ** (height - level)
        for start in range(0, n, span):
            row = np.zeros(n)
            row[start:start + span] = 1
            rows.append(row)
            levels.append(level)
    return np.array(rows), np.array(levels)


def explicit_gls(matrix, levels, noisy, level_variance) -> np.ndarray:
    """Generalised least squares by a weighted lstsq over the measured rows: (n, k)."""
    node_variance = level_variance[levels]
    measured = np.isfinite(node_variance)
    weight = 1 / np.sqrt(node_variance[measured])
    solution, *_ = np.linalg.lstsq(matrix[measured] * weight[:, None],
                                   noisy[measured] * weight[:, None], rcond=None)
    return solution


def explicit_haar_basis(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns: the cells' dependence on each Haar coefficient (base: all ones; a node over
    [a, a + s): +1 on its left half, -1 on its right half), coarse to fine; and each
    coefficient's Privelet weight (size for the base, s for a node over s cells)."""
    columns, weights = [np.ones(size)], [size]
    span = size
    while span > 1:
        for start in range(0, size, span):
            column = np.zeros(size)
            column[start:start + span // 2] = 1
            column[start + span // 2:start + span] = -1
            columns.append(column)
            weights.append(span)
        span //= 2
    return np.array(columns).T, np.array(weights, dtype=float)


def all_ranges_matrix(n: int) -> np.ndarray:
    lo, hi = np.triu_indices(n)
    cells = np.arange(n)
    return ((cells >= lo[:, None]) & (cells <= hi[:, None])).astype(float)


def assert_second_moment(errors, variance, fourth_cumulant):
    """mean(e^2) of zero-mean errors (r, q) against the exact variance, within Z standard
    errors: Var(e^2) = kappa4 + 2 sigma^4 for each of the r independent draws."""
    r = errors.shape[0]
    moment = (errors**2).mean(axis=0)
    tolerance = Z * np.sqrt((fourth_cumulant + 2 * variance**2) / r)
    assert np.all(np.abs(moment - variance) <= tolerance), np.max(
        np.abs(moment - variance) / tolerance)


# ---- unbiasedness ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(UNBIASED))
def test_unbiased(name):
    """The mean over r = 4000 batched draws (rows as repetitions) is within 5 standard errors
    of x in every cell (n = 13 pads to 16 and 27)."""
    r = 4000
    estimates = UNBIASED[name](np.tile(HISTOGRAM, (r, 1)), 0.5, NoiseSource(seed=11))
    mean = estimates.mean(axis=0)
    standard_error = estimates.std(axis=0, ddof=1) / math.sqrt(r)
    assert np.all(np.abs(mean - HISTOGRAM) <= Z * standard_error)


def test_uniform_is_unbiased_for_the_total_and_flat():
    r, epsilon = 4000, 0.5
    estimates = uniform_estimate(np.tile(HISTOGRAM, (r, 1)), epsilon, NoiseSource(seed=12),
                                 stage=UNIT_MEASUREMENT)
    assert np.allclose(estimates, estimates[:, :1])
    totals = estimates.sum(axis=1)
    standard_error = math.sqrt(2 / epsilon**2 / r)
    assert abs(totals.mean() - HISTOGRAM.sum()) <= Z * standard_error


# ---- variances -------------------------------------------------------------------------------


def test_identity_cell_variance():
    """Per-cell variance 2/epsilon^2 over m = 100,000 Laplace draws; Var(e^2) = 24 b^4 - 4 b^4."""
    epsilon, b = 0.5, 2.0
    x = np.tile(HISTOGRAM, (8000, 1))
    errors = (identity_estimate(x, epsilon, NoiseSource(seed=13), stage=UNIT_MEASUREMENT) - x).reshape(-1, 1)
    assert_second_moment(errors, np.array([2 * b**2]), np.array([12 * b**4]))


@pytest.mark.parametrize("n", [8, 6])
def test_privelet_range_variance_matches_the_transform(n):
    """Every range's variance against sum_c 2 (lambda / W_c)^2 (q . B_c)^2 over the explicit
    Haar basis B (padded to 8 cells for n = 6), lambda = (1 + log2 8)/epsilon."""
    epsilon, r = 1.0, 20000
    basis, weights = explicit_haar_basis(8)
    scale = (1 + 3) / epsilon / weights
    queries = all_ranges_matrix(n)
    loadings = queries @ basis[:n]  # (queries, coefficients)
    variance = (loadings**2 * 2 * scale**2).sum(axis=1)
    fourth_cumulant = (loadings**4 * 12 * scale**4).sum(axis=1)
    estimates = privelet_estimate(np.zeros((r, n)), epsilon, NoiseSource(seed=14),
                                  stage=UNIT_MEASUREMENT)
    assert_second_moment(estimates @ queries.T, variance, fourth_cumulant)


@pytest.mark.parametrize(("n", "branching", "weights"), [
    (9, 2, lambda h: None), (9, 3, geometric_weights), (8, 2, hb_level_shares)])
def test_tree_range_variance_matches_the_gls_covariance(n, branching, weights):
    """Every range's variance against q (A' D A)^-1 q' with A the explicit tree matrix and
    D the precisions from epsilon_l = w_l epsilon, Laplace(1/epsilon_l) per node."""
    epsilon, r = 1.0, 20000
    matrix, levels = explicit_tree(n, branching)
    height = int(levels.max())
    w = weights(height)
    shares = np.full(height + 1, 1 / (height + 1)) if w is None else np.asarray(w) / np.sum(w)
    with np.errstate(divide="ignore"):
        scale = 1 / (shares[levels] * epsilon)  # inf where a level is not measured
    measured = np.isfinite(scale)
    a, b = matrix[measured], scale[measured]
    covariance = np.linalg.inv(a.T @ (a / (2 * b[:, None] ** 2)))
    gain = covariance @ (a.T / (2 * b**2))  # estimate = x + gain @ noise
    queries = all_ranges_matrix(n)
    loadings = queries @ gain
    variance = (loadings**2 * 2 * b**2).sum(axis=1)
    fourth_cumulant = (loadings**4 * 12 * b**4).sum(axis=1)
    estimates = tree_estimate(np.zeros((r, n)), epsilon, NoiseSource(seed=15),
                              branching=branching, level_weights=w, stage=UNIT_MEASUREMENT)
    assert_second_moment(estimates @ queries.T, variance, fourth_cumulant)


# ---- tree least squares is exact GLS ---------------------------------------------------------


@pytest.mark.parametrize("n", [8, 9])
@pytest.mark.parametrize("branching", [2, 3])
@pytest.mark.parametrize("weights", ["uniform", "geometric", "root unmeasured"])
def test_tree_least_squares_equals_explicit_gls(n, branching, weights):
    matrix, levels = explicit_tree(n, branching)
    height = int(levels.max())
    w = {"uniform": None, "geometric": geometric_weights(height),
         "root unmeasured": hb_level_shares(height)}[weights]
    epsilon = 0.7
    with np.errstate(divide="ignore"):
        level_variance = 2 / (level_shares(height, w) * epsilon) ** 2
    tree = b_ary_tree(n, branching)
    # any node values (k = 4 columns at once)
    noisy = np.random.default_rng(16).normal(0, 5, size=(matrix.shape[0], 4)) + 10
    expected = explicit_gls(matrix, levels, noisy, level_variance)
    assert np.allclose(tree_least_squares_leaves(tree, noisy, level_variance), expected.T)
    # the estimator on the same noise draw (same seed), 3 histograms at once
    x = np.random.default_rng(17).poisson(20, size=(3, n)).astype(float)
    noisy, variance = measure_tree(tree, x, epsilon * level_shares(height, w),
                                   NoiseSource(seed=18), stage=UNIT_MEASUREMENT)
    assert np.allclose(variance, level_variance)
    assert np.allclose(tree_estimate(x, epsilon, NoiseSource(seed=18), branching=branching,
                                     level_weights=w, stage=UNIT_MEASUREMENT),
                       explicit_gls(matrix, levels, noisy, level_variance).T)


def test_measured_nodes_are_the_tree_counts():
    """At a negligible noise, node l, j counts cells j b^(h-l) .. (j+1) b^(h-l) - 1 (cut at n),
    and an unmeasured level carries nothing from the data."""
    n, branching = 9, 2
    matrix, levels = explicit_tree(n, branching)
    x = HISTOGRAM[:n][None, :]
    shares = hb_level_shares(int(levels.max()))
    noisy, variance = measure_tree(b_ary_tree(n, branching), x, 1e12 * shares,
                                   NoiseSource(seed=19), stage=UNIT_MEASUREMENT)
    expected = matrix @ x[0]
    expected[levels == 0] = 0.0
    assert np.allclose(noisy[:, 0], expected, atol=1e-6)
    assert np.isinf(variance[0]) and np.isfinite(variance[1:]).all()


# ---- Privelet's transform and HB's branching -------------------------------------------------


def test_haar_transform_matches_the_explicit_basis_and_inverts():
    x = np.random.default_rng(20).normal(size=(3, 8))
    coefficients = haar_coefficients(x)
    flat = np.concatenate(coefficients, axis=1)  # coarse to fine, left to right
    basis, _ = explicit_haar_basis(8)
    assert np.allclose(flat @ basis.T, x)
    assert np.allclose(haar_cells(coefficients), x)


def test_hb_branching_minimises_qardaji_eq3_over_all_b():
    """The O(log n) candidate search equals brute force over b = 2..n, ties to the smaller b,
    with V(b) = (b - 1) h^3 - 2 (b + 1) h^2 / 3 computed here."""
    def bound(n, b):
        h = math.ceil(round(math.log(n, b), 9)) if n > 1 else 0
        return (b - 1) * h**3 - 2 * (b + 1) * h**2 / 3

    for n in [*range(2, 300), 1000, 4096, 5000]:
        brute = min(range(2, n + 1), key=lambda b, n=n: (bound(n, b), b))
        assert hb_branching(n) == brute, n
        assert hb_variance_bound(n, brute) == pytest.approx(bound(n, brute))
    assert hb_branching(4096) == 16  # Qardaji et al.: about 16 for large domains
    assert hb_branching(101) == 101  # small domain: flat is best
    assert hb_level_shares(4).tolist() == [0.0, 0.25, 0.25, 0.25, 0.25]  # root not measured
    assert hb_level_shares(0).tolist() == [1.0]


# ---- calibration against the spec (section 4.5) ----------------------------------------------


def expected_abs(variances: np.ndarray) -> float:
    """Average over queries of sqrt(2/pi) * sd: the Gaussian approximation of E|error|."""
    return float(np.mean(np.sqrt(2 / np.pi * variances)))


def test_calibration_average_absolute_error_n4096_eps01():
    """Analytic, not Monte Carlo: each query's exact error variance, then the Gaussian
    approximation of E|error| (spec section 4.5 reports Identity ~385, Privelet ~206, H2 ~221
    the same way). The errors of these methods do not depend on the data.

    * Identity: 2 L / epsilon^2 for a range of L cells.
    * Privelet: 2 (lambda/N)^2 L^2 for the base, plus 2 (lambda/s)^2 (|q in left half| -
      |q in right half|)^2 for each node over s cells, lambda = (1 + log2 N)/epsilon.
    * H2: q (A' D A)^-1 q' with D = 1/(2 ((h + 1)/epsilon)^2) on every node. (A' D A)^-1 q'
      is the GLS estimate from leaf measurements y = q' * 2 ((h + 1)/epsilon)^2 and zeros
      elsewhere (since A' D y = q'); GLS is checked against lstsq above.
    """
    n, epsilon = 4096, 0.1
    workload = random_ranges(n, 2000, seed=0)
    lo, hi = workload.lo, workload.hi + 1  # half-open
    length = (hi - lo).astype(float)

    identity = expected_abs(2 * length / epsilon**2)

    height = 12
    lam = (1 + height) / epsilon
    privelet_variance = 2 * (lam / n) ** 2 * length**2
    for level in range(height):
        span = n >> level
        start = np.arange(0, n, span)[None, :]
        left = np.clip(np.minimum(hi[:, None], start + span // 2)
                       - np.maximum(lo[:, None], start), 0, None)
        right = np.clip(np.minimum(hi[:, None], start + span)
                        - np.maximum(lo[:, None], start + span // 2), 0, None)
        privelet_variance += (2 * (lam / span) ** 2 * (left - right) ** 2).sum(axis=1)
    privelet = expected_abs(privelet_variance)

    tree = b_ary_tree(n, 2)
    level_variance = np.full(height + 1, 2 * ((height + 1) / epsilon) ** 2)
    queries = workload.to_matrix().toarray()
    h2_variance = np.empty(workload.m)
    for chunk in np.array_split(np.arange(workload.m), 4):
        y = np.zeros((tree.n_nodes, chunk.size))
        y[tree.level_slice(height)] = queries[chunk].T * level_variance[-1]
        covariance_q = tree_least_squares_leaves(tree, y, level_variance)
        h2_variance[chunk] = (covariance_q * queries[chunk]).sum(axis=1)
    h2 = expected_abs(h2_variance)

    print(f"Identity {identity:.1f}  Privelet {privelet:.1f}  H2 {h2:.1f}")
    assert 370 <= identity <= 405
    assert 190 <= privelet <= 215
    assert 205 <= h2 <= 240


# ---- shapes, degenerate sizes, bad input, registry -------------------------------------------


@pytest.mark.parametrize("key", list(BASELINES))
@pytest.mark.parametrize("n", [1, 2, 101])
def test_shapes(key, n):
    estimate = estimator(key)
    x = np.arange(n, dtype=float)
    single = estimate(x, 1.0, NoiseSource(seed=21))
    batch = estimate(np.tile(x, (5, 1)), 1.0, NoiseSource(seed=21))
    listed = estimate(x.tolist(), 1.0, NoiseSource(seed=21))
    assert single.shape == listed.shape == (n,) and batch.shape == (5, n)
    assert single.dtype == batch.dtype == np.float64
    assert np.isfinite(batch).all()


@pytest.mark.parametrize("key", [k for k in BASELINES if k != "uniform"])
@pytest.mark.parametrize("n", [1, 13, 101])
def test_exact_without_noise(key, n):
    x = np.random.default_rng(22).poisson(30, size=(2, n)).astype(float)
    assert np.allclose(estimator(key)(x, 1e12, NoiseSource(seed=23)), x, atol=1e-6)


@pytest.mark.parametrize("key", list(BASELINES))
@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon(key, epsilon):
    with pytest.raises(BudgetError):
        estimator(key)(HISTOGRAM, epsilon, NoiseSource(seed=24))


def test_bad_tree_parameters():
    with pytest.raises(MechanismError):
        tree_estimate(HISTOGRAM, 1.0, NoiseSource(seed=25), branching=1, stage=UNIT_MEASUREMENT)
    with pytest.raises(BudgetError):  # height 4 needs 5 weights
        tree_estimate(HISTOGRAM, 1.0, NoiseSource(seed=25), level_weights=[1, 1, 1],
                      stage=UNIT_MEASUREMENT)
    with pytest.raises(BudgetError):  # unmeasured leaves
        tree_estimate(HISTOGRAM, 1.0, NoiseSource(seed=25), level_weights=[1, 1, 1, 1, 0],
                      stage=UNIT_MEASUREMENT)


def test_registry():
    assert set(BASELINES) == {"identity", "uniform", "h2", "hb", "privelet"}
    for function, display, summary, statement in BASELINES.values():
        assert callable(function) and display and summary
        assert "add/remove" in statement and "sensitivity" in statement
        assert "epsilon" in statement

