"""Tests for hierdp_core.groupsizes.kuo (Kuo et al. 2018): the spec's appendix vectors,
isotonic regression against scipy / an LP / brute force, matching against brute force and a
literal per-group Algorithm 2, properties on random trees, and statistical sanity with
fixed seeds (tolerances derived in the test docstrings)."""

from __future__ import annotations

import doctest
import itertools
import math
import sys
from fractions import Fraction

import numpy as np
import pytest
from conftest import tree_tables
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import LinearConstraint, isotonic_regression, linprog, minimize

from hierdp_core.errors import InputError, MechanismError
from hierdp_core.groupsizes import (
    isotonic,
    kuo,
    kuo_estimators,
    kuo_matching,
    kuo_runs,
    kuo_variance,
)
from hierdp_core.groupsizes.data import cumulative, decumulate, emd
from hierdp_core.hierarchy import build_from_codes, build_hierarchy
from hierdp_core.privacy.plan import PERSON_IN_GROUP, Stage
from hierdp_core.privacy.samplers import Geometric, NoiseSource

# The per-level L1 sensitivities (the mechanisms' privacy plans state them): Hc and Hg 1
# (Lemma 4; Hay et al.), Naive 2 (Lemma 3).
HC_SENSITIVITY = HG_SENSITIVITY = 1.0
NAIVE_SENSITIVITY = 2.0


def level_stage(sensitivity: float, noise: str = "geometric") -> Stage:
    """The measuring stage a group-size mechanism's privacy plan hands the estimators."""
    return Stage("levels", PERSON_IN_GROUP, sensitivity, noise, 1.0)


def with_stage(function, sensitivity: float):
    """``function`` given the plan stage of ``sensitivity`` and ``noise`` (geometric unless
    said), as the mechanisms call it."""
    def call(*args, noise: str = "geometric", **kwargs):
        return function(*args, stage=level_stage(sensitivity, noise), **kwargs)
    return call


hc_level = with_stage(kuo_estimators.hc_level, HC_SENSITIVITY)
hg_level = with_stage(kuo_estimators.hg_level, HG_SENSITIVITY)
naive_level = with_stage(kuo_estimators.naive_level, NAIVE_SENSITIVITY)
kuo_release = with_stage(kuo.kuo_release, HC_SENSITIVITY)

HUGE_EPS = 1e9  # noise scale 1e-9: the geometric draws are exactly 0, Laplace ones ~1e-9


def test_module_doctests_pass():
    assert doctest.testmod(kuo).failed == 0


# ---- helpers ---------------------------------------------------------------------------
def match_cost(parent_values, matched) -> float:
    """Total |parent - child| of a matching given as, per child, the parent value matched
    to each of its (sorted) groups."""
    return float(sum(np.abs(np.asarray(m) - np.sort(c)).sum()
                     for m, c in zip(matched, parent_values, strict=True)))


def literal_match(parent, children):
    """Algorithm 2 as written in the spec's pseudocode, one group at a time, with exact
    fractions (reference for tests only)."""
    top = sorted(parent)
    kids = [sorted(c) for c in children]
    ptr = [0] * len(kids)
    matched = [[] for _ in kids]
    i = 0
    while i < len(top):
        a = top[i]
        n_a = sum(1 for v in top[i:] if v == a)
        b = min(k[p] for k, p in zip(kids, ptr, strict=True) if p < len(k))
        num = [sum(1 for v in k[p:] if v == b) for k, p in zip(kids, ptr, strict=True)]
        n_b = sum(num)
        if n_b <= n_a:
            take = num
        else:
            quota = [Fraction(n_a * x, n_b) for x in num]
            take = [math.floor(q) for q in quota]
            order = sorted(range(len(num)), key=lambda c: (-(quota[c] - take[c]), c))
            for c in order[:n_a - sum(take)]:
                take[c] += 1
        for c, t in enumerate(take):
            matched[c].extend([a] * t)
            ptr[c] += t
        i += sum(take)
    return [np.asarray(m, dtype=float) for m in matched]


def lp_l1_isotonic(y, upper=None) -> float:
    """Optimal value of min sum |x - y| s.t. x non-decreasing (and 0 <= x <= upper)."""
    n = len(y)
    c = np.r_[np.zeros(n), np.ones(n)]
    eye = np.eye(n)
    rows = [np.c_[eye, -eye], np.c_[-eye, -eye]]
    rhs = [np.asarray(y, float), -np.asarray(y, float)]
    if n > 1:
        d = np.zeros((n - 1, 2 * n))
        d[np.arange(n - 1), np.arange(n - 1)] = 1
        d[np.arange(n - 1), np.arange(1, n)] = -1
        rows.append(d)
        rhs.append(np.zeros(n - 1))
    xb = (None, None) if upper is None else (0, upper)
    res = linprog(c, A_ub=np.vstack(rows), b_ub=np.concatenate(rhs),
                  bounds=[xb] * n + [(0, None)] * n, method="highs")
    assert res.success
    return res.fun


def random_segments(rng, integer: bool):
    lens = rng.integers(1, 10, rng.integers(1, 6))
    m = int(lens.sum())
    y = rng.integers(-6, 7, m) if integer else np.round(rng.normal(0, 3, m), 1)
    return y, np.r_[0, np.cumsum(lens)[:-1]], lens


def random_tree_hist(h, seed: int, max_size: int):
    """Random leaf histograms (some leaves without groups), summed up the tree."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 12, h.n_leaves)
    g[rng.random(h.n_leaves) < 0.2] = 0
    leaves = rng.multinomial(g, rng.dirichlet(np.full(max_size + 1, 0.5)))
    hist = h.aggregate(leaves)
    return hist, hist.sum(axis=1)


def two_level_tree(n_children: int):
    codes = np.arange(n_children)
    h, leaf = build_from_codes([codes], ["child"])
    return h, leaf


# ---- appendix test vectors -------------------------------------------------------------
def test_appendix_match_example():
    parent, kids = [1, 1, 1, 2, 2, 5], [[1, 1, 2], [1, 3, 6]]
    matched = kuo_matching.match_groups(parent, kids)
    # three parent 1s <-> C1's two 1s and C2's 1; a 2 <-> C1's 2, a 2 <-> C2's 3, 5 <-> 6
    assert [m.tolist() for m in matched] == [[1, 1, 2], [1, 2, 5]]
    assert match_cost(kids, matched) == 2


def test_appendix_proportional_split():
    parent, kids = [1, 1, 1, 2, 2, 2], [[1, 1, 1, 1], [1, 1]]
    matched = kuo_matching.match_groups(parent, kids)
    # |A| = 3 < |B| = 6: C1 gets 3*4/6 = 2, C2 3*2/6 = 1; the 2s take the leftovers
    assert [m.tolist() for m in matched] == [[1, 1, 2, 2], [1, 2]]
    assert match_cost(kids, matched) == 3
    first = kuo_matching.match_groups(parent, kids, tie_split="first_child")
    assert [m.tolist() for m in first] == [[1, 1, 1, 2], [2, 2]]  # biased, same cost
    assert match_cost(kids, first) == 3


def test_paper_prose_split_examples():
    kids = [[1] * 200, [1] * 100, [1] * 100]
    matched = kuo_matching.match_groups([1] * 300 + [2] * 100, kids)
    assert [int((m == 1).sum()) for m in matched] == [150, 75, 75]
    assert [int((m == 2).sum()) for m in matched] == [50, 25, 25]
    # only 200 child 1s: all matched to parent 1s, the other 100 parent 1s go to the 2s
    kids = [[1] * 100 + [2] * 150, [1] * 100 + [2] * 50]
    matched = kuo_matching.match_groups([1] * 300 + [2] * 100, kids)
    c1, c2 = (np.asarray(k) for k in kids)
    assert np.all(matched[0][c1 == 1] == 1) and np.all(matched[1][c2 == 1] == 1)
    assert int((matched[0][c1 == 2] == 1).sum()) == 75  # 100 * 150 / 200
    assert int((matched[1][c2 == 2] == 1).sum()) == 25


def test_appendix_merge():
    value, var = kuo_matching.merge_estimates(10, 1, 14, 3)
    assert value == pytest.approx(11.0) and var == pytest.approx(0.75)
    value, var = kuo_matching.merge_estimates(10, 1, 14, 3, "simple")
    assert value == 12 and var == pytest.approx(1.0)
    parent = kuo_runs.Runs(np.array([0]), np.array([10.0]), np.array([1.0]), np.array([5]), 1)
    child = kuo_runs.Runs(np.array([0]), np.array([14.0]), np.array([3.0]), np.array([5]), 1)
    pairs = kuo_matching.match_level(parent, child, np.array([0]))
    merged = kuo_matching.merge_level(parent, child, pairs)
    assert merged.value.tolist() == [11.0] and merged.var.tolist() == [0.75]
    assert merged.count.tolist() == [5]
    # rounding after the merge is half up: (10 + 15) / 2 = 12.5 -> 13
    child = kuo_runs.Runs(np.array([0]), np.array([15.0]), np.array([1.0]), np.array([5]), 1)
    merged = kuo_matching.merge_level(parent, child, kuo_matching.match_level(parent, child, np.array([0])))
    assert merged.value.tolist() == [13.0]


def test_appendix_emd():
    truth = np.array([[0, 100, 0, 0, 0, 0]])
    assert emd(truth, np.array([[0, 0, 100, 0, 0, 0]])).tolist() == [100]
    assert emd(truth, np.array([[0, 0, 0, 0, 0, 100]])).tolist() == [400]
    assert np.abs(truth - np.array([[0, 0, 100, 0, 0, 0]])).sum() == 200
    assert np.abs(truth - np.array([[0, 0, 0, 0, 0, 100]])).sum() == 200
    # pitfall 15: emd = L1 distance of the sorted size lists
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.multinomial(30, np.full(8, 1 / 8))
        b = rng.multinomial(30, np.full(8, 1 / 8))
        sizes = np.arange(8)
        assert emd(a[None], b[None])[0] == np.abs(np.repeat(sizes, a) - np.repeat(sizes, b)).sum()


def test_appendix_variances():
    # Hg: eps_l = 0.5, a PAV block of 8 groups: 2 / (8 * 0.25) = 1.0
    blocks = kuo_runs.Runs(np.array([0]), np.array([4.0]), np.array([np.nan]), np.array([8]), 1)
    info = kuo_estimators.Phase1Info("hg", 0.5, level_stage(1.0), 2, blocks)
    est = np.zeros((1, 6), np.int64)
    est[0, 4] = 8
    assert kuo_variance.estimate_variances(est, info, hg_count="blocks").var.tolist() == [1.0]
    assert kuo_variance.estimate_variances(est, info).var.tolist() == [1.0]  # "equal": 8 at size 4
    # Hc: eps_l = 0.5, a group of size 3 with H_hat[3] = 40: 4 / (0.25 * 40) = 0.4
    est = np.array([[2, 0, 0, 40, 5]])
    info = kuo_estimators.Phase1Info("hc", 0.5, level_stage(1.0), 2)
    runs = kuo_variance.estimate_variances(est, info)
    assert dict(zip(runs.value.tolist(), runs.var.tolist(), strict=True))[3.0] == \
        pytest.approx(0.4)
    runs = kuo_variance.estimate_variances(est, info, hc_divisor="count_squared")
    assert runs.var[runs.value == 3].tolist() == [pytest.approx(4 / (0.25 * 1600))]
    assert np.array_equal(runs.to_hist(4), est)
    # pitfall 14: the exact geometric variance is smaller (0.36 vs 0.5 at eps = 2)
    info = kuo_estimators.Phase1Info("hc", 2.0, level_stage(1.0), 2)
    assert info.noise_variance() == pytest.approx(0.5)
    assert info.noise_variance("exact") == pytest.approx(0.362, abs=1e-3)
    laplace = kuo_estimators.Phase1Info("hc", 2.0, level_stage(1.0, "laplace"), 2)
    assert laplace.noise_variance("exact") == 0.5


# ---- isotonic regression ---------------------------------------------------------------
@pytest.mark.parametrize("integer", [True, False])
def test_l2_isotonic_matches_scipy_per_segment(integer):
    rng = np.random.default_rng(11)
    for _ in range(150):
        y, starts, lens = random_segments(rng, integer)
        blocks, means = isotonic.pava_blocks(y, starts)
        assert set(starts.tolist()) <= set(blocks.tolist())  # no block straddles segments
        x = np.repeat(means, np.diff(np.append(blocks, y.size)))
        for s, n in zip(starts, lens, strict=True):
            assert np.allclose(x[s:s + n], isotonic_regression(y[s:s + n].astype(float)).x)


@pytest.mark.parametrize("kind", ["integer", "sparse-integer", "float"])
def test_l1_isotonic_matches_lp(kind):
    """Integer data with few values (candidates = the integer range), integer data with a
    wide range (candidates = distinct values, one sort) and floats."""
    rng = np.random.default_rng(12)
    for _ in range(60):
        y, starts, lens = random_segments(rng, kind != "float")
        if kind == "sparse-integer":
            y = y * 1000 + rng.integers(0, 3, y.size)
        x = isotonic.isotonic_l1_segments(y, starts)
        for s, n in zip(starts, lens, strict=True):
            xs, ys = x[s:s + n], y[s:s + n]
            assert np.all(np.diff(xs) >= 0)
            assert set(xs.tolist()) <= set(ys.astype(float).tolist())  # values from the data
            assert np.abs(xs - ys).sum() == pytest.approx(lp_l1_isotonic(ys), abs=1e-7)


def test_l1_isotonic_brute_force_tiny():
    """All integer vectors of length <= 5 over 0..3: optimum over every monotone vector."""
    for n in range(1, 6):
        monotone = [np.array(v) for v in itertools.combinations_with_replacement(range(4), n)]
        for y in itertools.product(range(4), repeat=n):
            y = np.array(y)
            best = min(np.abs(v - y).sum() for v in monotone)
            assert np.abs(isotonic.isotonic_l1_segments(y, np.array([0])) - y).sum() == best


def box_fit(y: np.ndarray, upper, p: int) -> np.ndarray:
    """`isotonic.isotonic_box_rows`' blocks as the full fit (n, k)."""
    starts, fit = isotonic.isotonic_box_rows(y, np.asarray(upper), p)
    return np.repeat(fit, np.diff(np.append(starts, y.size))).reshape(y.shape)


def test_box_constrained_isotonic_is_exact():
    """Hc's [0, G] constraint: L1 against the LP with bounds, L2 against a generic solver."""
    rng = np.random.default_rng(13)
    for _ in range(25):
        n, upper = int(rng.integers(1, 9)), int(rng.integers(0, 8))
        y = rng.integers(-4, 12, n)
        x1 = box_fit(y[None, :], [upper], 1)[0]
        assert np.all((x1 >= 0) & (x1 <= upper)) and np.all(np.diff(x1) >= 0)
        assert np.abs(x1 - y).sum() == pytest.approx(lp_l1_isotonic(y, upper), abs=1e-7)
    for _ in range(6):
        n, upper = int(rng.integers(2, 7)), 5.0
        y = rng.normal(2, 4, n)
        x2 = box_fit(y[None, :], [upper], 2)[0]
        cons = LinearConstraint(np.eye(n, k=1)[:-1] - np.eye(n)[:-1], 0, np.inf)
        ref = minimize(lambda x, y=y: ((x - y) ** 2).sum(), np.full(n, upper / 2),
                       jac=lambda x, y=y: 2 * (x - y), bounds=[(0, upper)] * n,
                       constraints=[cons], method="SLSQP", options={"ftol": 1e-12})
        assert ((x2 - y) ** 2).sum() <= ref.fun + 1e-6
        assert np.allclose(x2, ref.x, atol=1e-4)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7), st.integers(1, 9), st.integers(0, 2**32 - 1), st.sampled_from([1, 2]),
       st.sampled_from([2, 6, 40]))
def test_box_rows_equal_the_per_row_fit(n, k, seed, p, spread):
    """Every row of `isotonic_box_rows` is the row's own fit in [0, upper] (L2: scipy's
    `isotonic_regression` of the row, clipped; L1: `isotonic_l1_segments` of the clipped
    row), to the last bit, blocks where the fit changes: small integer rows full of ties,
    rows with an upper end of 0 (regions without groups), wide rows far from 0."""
    rng = np.random.default_rng(seed)
    y = rng.integers(-spread, spread, (n, k)) + rng.integers(0, 3 * spread, (n, 1))
    upper = rng.integers(0, 3 * spread, n) * (rng.random(n) > 0.2)
    starts, fit = isotonic.isotonic_box_rows(y, upper, p)
    assert np.isin(np.arange(n) * k, starts).all()  # every row begins a block
    full = box_fit(y, upper, p)
    for v in range(n):
        if p == 2:
            ref = np.clip(isotonic_regression(y[v].astype(float)).x, 0, upper[v])
            assert np.allclose(full[v], ref, rtol=0, atol=1e-9)
            assert np.array_equal(full[v], np.clip(np.repeat(*_exact_means(y[v])), 0, upper[v]))
        else:
            row = np.clip(y[v], 0, upper[v])
            assert np.array_equal(full[v], isotonic.isotonic_l1_segments(row, np.array([0])))
    if p == 1:  # L1 blocks are where the fit changes
        same_row = np.diff(starts // k) == 0
        assert np.all(fit[1:][same_row] > fit[:-1][same_row])


def test_pava_without_scipys_kernel_falls_back_to_the_function(monkeypatch):
    """A scipy that moved its private PAVA kernel: `scipy.optimize.isotonic_regression`
    gives the same blocks (the kernel is its own), for one segment and many."""
    rng = np.random.default_rng(14)
    y = rng.integers(-20, 20, (30, 12))
    upper = rng.integers(0, 15, 30)
    with_kernel = [isotonic.pava_blocks(y.ravel(), np.arange(30) * 12),
                   isotonic.pava_blocks(y[0], np.array([0])), box_fit(y, upper, 2)]
    monkeypatch.setitem(sys.modules, "scipy.optimize._pava_pybind", None)  # import fails
    without = [isotonic.pava_blocks(y.ravel(), np.arange(30) * 12),
               isotonic.pava_blocks(y[0], np.array([0])), box_fit(y, upper, 2)]
    for a, b in zip(with_kernel[:2], without[:2], strict=True):
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert np.array_equal(with_kernel[2], without[2])


def test_pava_with_a_changed_kernel_signature_falls_back_to_the_function(monkeypatch):
    """A scipy whose private kernel takes other arguments: the public function's blocks."""
    import types

    def changed(*args):
        raise TypeError("pava(): incompatible function arguments")

    y = np.random.default_rng(15).integers(-20, 20, (30, 12))
    expected = isotonic.pava_blocks(y.ravel(), np.arange(30) * 12)
    monkeypatch.setitem(sys.modules, "scipy.optimize._pava_pybind",
                        types.SimpleNamespace(pava=changed))
    got = isotonic.pava_blocks(y.ravel(), np.arange(30) * 12)
    assert np.array_equal(expected[0], got[0]) and np.array_equal(expected[1], got[1])


def _exact_means(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(block means, block lengths) of one integer row's L2 fit, from scipy's blocks, the
    means as exact sums over lengths (what the estimators use)."""
    blocks = isotonic_regression(y.astype(float)).blocks
    return np.add.reduceat(y, blocks[:-1]) / np.diff(blocks), np.diff(blocks)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_decumulated_blocks_equal_the_decumulated_rows(n, k, seed):
    """The histogram built from blocks of cumulative rows equals `decumulate` of the rows
    made full (their last column the public G_v), whatever blocks repeat a value."""
    rng = np.random.default_rng(seed)
    cum = np.sort(rng.integers(0, 6, (n, k)), axis=1)
    groups = cum[:, -1] + rng.integers(0, 3, n)
    change = np.ones((n, k), dtype=bool)
    change[:, 1:] = rng.random((n, k - 1)) < 0.5  # blocks may repeat a value
    change[:, 1:] |= cum[:, 1:] != cum[:, :-1]
    starts = np.flatnonzero(change)
    est = np.zeros((n, k + 1), dtype=np.int64)
    est[:, -1] = groups
    kuo_estimators._decumulate_blocks(est, starts, cum.ravel()[starts].astype(float))
    assert np.array_equal(est, decumulate(np.column_stack([cum, groups])))


# ---- Phase 1 estimators against straightforward per-node references ---------------------
def test_hc_level_matches_per_row_reference():
    rng = np.random.default_rng(21)
    hist = rng.multinomial(rng.integers(0, 60, 40), np.full(9, 1 / 9))
    groups = hist.sum(axis=1)
    est, info = hc_level(hist, groups, 0.7, NoiseSource(seed=5))
    noise = Geometric.for_epsilon(0.7).sample((40, 8), NoiseSource(seed=5))
    noisy = cumulative(hist)[:, :8] + noise
    for v in range(40):
        fit = np.clip(isotonic_regression(noisy[v].astype(float)).x, 0, groups[v])
        cum = np.r_[np.floor(fit + 0.5 + 1e-9), groups[v]]
        assert np.array_equal(est[v], np.diff(cum, prepend=0))
    assert info.method == "hc" and info.epsilon == 0.7
    assert est.min() >= 0 and np.array_equal(est.sum(axis=1), groups)


def test_hg_level_matches_per_node_reference():
    rng = np.random.default_rng(22)
    hist = rng.multinomial(rng.integers(0, 50, 30), np.full(7, 1 / 7))
    groups = hist.sum(axis=1)
    est, info = hg_level(hist, groups, 0.5, NoiseSource(seed=6))
    noise = Geometric.for_epsilon(0.5).sample(int(groups.sum()), NoiseSource(seed=6))
    offsets = np.r_[0, np.cumsum(groups)]
    for v in range(30):
        y = np.repeat(np.arange(7), hist[v]) + noise[offsets[v]:offsets[v + 1]]
        if y.size == 0:
            assert not est[v].any()
            continue
        fit = np.clip(isotonic_regression(y.astype(float)).x, 0, 6)
        ref = np.bincount(np.floor(fit + 0.5 + 1e-9).astype(int), minlength=7)
        assert np.array_equal(est[v], ref)
    # the blocks are the same groups, run-length encoded
    assert np.array_equal(info.blocks.to_hist(6), est)
    assert np.array_equal(info.blocks.groups(), groups)


@pytest.mark.parametrize("estimator", [kuo_estimators.hc_level, kuo_estimators.hg_level,
                                       kuo_estimators.naive_level])
def test_phase1_draws_the_noise_of_the_plan_stage(estimator):
    """The estimators take their noise from the plan's stage (`Stage.noise_for`): a stage
    stating twice the sensitivity draws at twice the scale, mapped at that sensitivity."""
    hist = np.array([[1, 2, 0, 1], [0, 0, 3, 0]])
    logged = []
    for sensitivity in (1.0, 2.0):
        source = NoiseSource(secure=True)
        estimator(hist, hist.sum(axis=1), 0.5, source, stage=level_stage(sensitivity))
        logged.append({(m["scale"], m["sensitivity"]) for m in source.measurements})
    assert logged == [{(2.0, 1.0)}, {(4.0, 2.0)}]


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("noise", ["geometric", "laplace"])
def test_phase1_without_noise_returns_the_truth(p, noise):
    rng = np.random.default_rng(23)
    hist = rng.multinomial(rng.integers(0, 30, 12), np.full(6, 1 / 6))
    groups = hist.sum(axis=1)
    src = NoiseSource(seed=1)
    assert np.array_equal(hc_level(hist, groups, HUGE_EPS, src, p=p, noise=noise)[0], hist)
    assert np.array_equal(hg_level(hist, groups, HUGE_EPS, src, p=p, noise=noise,
                                       chunk=7)[0], hist)
    assert np.array_equal(naive_level(hist, groups, HUGE_EPS, src, noise=noise), hist)


@pytest.mark.parametrize("p", [1, 2])
def test_phase1_outputs_are_valid_histograms(p):
    rng = np.random.default_rng(24)
    hist = rng.multinomial(rng.integers(0, 40, 25), rng.dirichlet(np.ones(11)))
    groups = hist.sum(axis=1)
    for eps in (0.05, 1.0):
        for est in (hc_level(hist, groups, eps, NoiseSource(seed=2), p=p)[0],
                    hg_level(hist, groups, eps, NoiseSource(seed=2), p=p, chunk=50)[0],
                    naive_level(hist, groups, eps, NoiseSource(seed=2))):
            assert est.dtype == np.int64 and est.shape == hist.shape
            assert est.min() >= 0 and np.array_equal(est.sum(axis=1), groups)


def test_hg_chunking_keeps_whole_nodes():
    hist = np.array([[0, 40, 0], [0, 0, 0], [3, 0, 90], [1, 1, 1]])
    groups = hist.sum(axis=1)
    est, info = hg_level(hist, groups, 2.0, NoiseSource(seed=3), chunk=5)
    assert np.array_equal(est.sum(axis=1), groups)
    assert np.array_equal(info.blocks.groups(), groups)
    weights = np.array([3, 0, 4, 9, 1, 2, 2, 2])
    ranges = kuo_estimators._chunks(weights, 5)
    assert [a for a, _ in ranges] == [0] + [b for _, b in ranges[:-1]] and ranges[-1][1] == 8
    assert all(weights[a:b - 1].sum() < 5 for a, b in ranges)


def test_largest_remainder_rows_is_exact():
    rng = np.random.default_rng(25)
    x = rng.dirichlet(np.ones(7), 50) * rng.integers(0, 30, 50)[:, None]
    totals = np.rint(x.sum(axis=1)).astype(int)
    x *= np.where(x.sum(axis=1) > 0, totals / np.maximum(x.sum(axis=1), 1e-300), 0)[:, None]
    out = kuo_estimators.largest_remainder_rows(x, totals)
    assert np.array_equal(out.sum(axis=1), totals) and out.min() >= 0
    assert np.all(np.abs(out - x) < 1)


def test_input_validation():
    hist = np.array([[1, 2], [0, 3]])
    with pytest.raises(InputError, match="sum to the public"):
        hc_level(hist, [3, 4], 1.0, NoiseSource(seed=0))
    with pytest.raises(InputError, match="non-negative"):
        hg_level(np.array([[-1, 2]]), [1], 1.0, NoiseSource(seed=0))
    with pytest.raises(MechanismError, match="p must be"):
        hc_level(hist, [3, 3], 1.0, NoiseSource(seed=0), p=3)
    with pytest.raises(MechanismError, match="noise"):
        hc_level(hist, [3, 3], 1.0, NoiseSource(seed=0), noise="gaussian")


# ---- matching ---------------------------------------------------------------------------
def random_family(rng, max_groups: int, max_value: int = 4):
    n_kids = int(rng.integers(1, 4))
    kids = [rng.integers(0, max_value + 1, rng.integers(0, max_groups + 1)).tolist()
            for _ in range(n_kids)]
    total = sum(len(k) for k in kids)
    parent = rng.integers(0, max_value + 1, total).tolist()
    return parent, kids


@pytest.mark.parametrize("tie_split", kuo_matching.TIE_SPLITS)
def test_matching_is_optimal_against_brute_force(tie_split):
    rng = np.random.default_rng(31)
    for _ in range(80):
        parent, kids = random_family(rng, 3)
        if not parent:
            continue
        bottom = np.array(sum(kids, []), dtype=float)
        best = min(np.abs(np.array(perm, float) - bottom).sum()
                   for perm in set(itertools.permutations(parent)))
        matched = kuo_matching.match_groups(parent, kids, tie_split=tie_split)
        assert match_cost(kids, matched) == best
        # a perfect matching: every parent group used once
        assert sorted(np.concatenate(matched).tolist()) == sorted(map(float, parent))


def test_matching_equals_the_literal_algorithm():
    rng = np.random.default_rng(32)
    for _ in range(150):
        parent, kids = random_family(rng, 25, max_value=6)
        if not parent:
            continue
        ours = kuo_matching.match_groups(parent, kids)
        ref = literal_match(parent, kids)
        assert all(np.array_equal(a, b) for a, b in zip(ours, ref, strict=True))


def test_match_level_on_runs_with_equal_values():
    """Parent runs sharing a value (different variances) and two parents at once: a perfect,
    monotone matching, run counts respected on both sides."""
    parent = kuo_runs.Runs(np.array([0, 0, 0, 1, 1]), np.array([1.0, 1.0, 3.0, 0.0, 2.0]),
                      np.array([0.5, 2.0, 1.0, 1.0, 1.0]), np.array([4, 6, 5, 3, 3]), 2)
    children = kuo_runs.Runs(np.array([0, 0, 1, 1, 2, 3]), np.array([1.0, 2.0, 1.0, 4.0, 0.0, 2.0]),
                        np.ones(6), np.array([5, 3, 4, 3, 2, 4]), 4)
    pairs = kuo_matching.match_level(parent, children, np.array([0, 0, 1, 1]))
    assert np.array_equal(np.bincount(pairs.parent_run, pairs.count, 5), parent.count)
    assert np.array_equal(np.bincount(pairs.child_run, pairs.count, 6), children.count)
    cost = (np.abs(parent.value[pairs.parent_run] - children.value[pairs.child_run])
            * pairs.count).sum()
    best = sum(np.abs(np.sort(parent.expand(v)[0]) - np.sort(np.concatenate(
        [children.expand(c)[0] for c in kids]))).sum() for v, kids in ((0, [0, 1]), (1, [2, 3])))
    assert cost == best
    # the tied child 1s (5 + 4) meet parent run 0 (4 groups) then run 1: 4 * 5/9 -> 2, 2
    first = pairs.parent_run == 0
    assert sorted(zip(children.node[pairs.child_run[first]].tolist(),
                      pairs.count[first].tolist(), strict=True)) == [(0, 2), (1, 2)]


def test_match_level_rejects_unequal_totals():
    parent = kuo_runs.Runs(np.array([0]), np.array([1.0]), np.array([1.0]), np.array([3]), 1)
    child = kuo_runs.Runs(np.array([0]), np.array([1.0]), np.array([1.0]), np.array([2]), 1)
    with pytest.raises(InputError, match="as many groups"):
        kuo_matching.match_level(parent, child, np.array([0]))


# ---- Algorithm 1 on random trees --------------------------------------------------------
OPTIONS = st.fixed_dictionaries({
    "p": st.sampled_from([1, 2]), "hg_p": st.sampled_from([1, 2]),
    "merge": st.sampled_from(kuo_matching.MERGES), "noise": st.sampled_from(kuo_estimators.NOISES),
    "hg_count": st.sampled_from(kuo_variance.HG_COUNTS), "hc_divisor": st.sampled_from(kuo_variance.HC_DIVISORS),
    "noise_variance": st.sampled_from(kuo_estimators.NOISE_VARIANCES),
    "tie_split": st.sampled_from(kuo_matching.TIE_SPLITS),
})


@settings(max_examples=60, deadline=None)
@given(tree_tables(max_depth=3, max_children=3), st.integers(0, 2**32 - 1),
       st.integers(1, 6), st.lists(st.sampled_from(kuo_estimators.METHODS), min_size=4, max_size=4),
       st.sampled_from([0.05, 0.5, 3.0]), OPTIONS)
def test_release_satisfies_the_constraints(tt, seed, max_size, methods, eps, options):
    h, _ = build_hierarchy(tt.table, tt.levels)
    hist, groups = random_tree_hist(h, seed, max_size)
    out, phase1 = kuo_release(h, hist, groups, [eps] * h.n_levels, methods[:h.n_levels],
                                  NoiseSource(seed=seed), **options)
    for est in (out, phase1):
        assert est.dtype == np.int64 and est.shape == hist.shape
        assert est.min() >= 0 and np.array_equal(est.sum(axis=1), groups)
    assert h.consistency_violations(out) == 0


@settings(max_examples=40, deadline=None)
@given(tree_tables(max_depth=3, max_children=3), st.integers(0, 2**32 - 1),
       st.integers(1, 6), st.lists(st.sampled_from(kuo_estimators.METHODS), min_size=4, max_size=4),
       OPTIONS)
def test_release_without_noise_returns_the_truth(tt, seed, max_size, methods, options):
    h, _ = build_hierarchy(tt.table, tt.levels)
    hist, groups = random_tree_hist(h, seed, max_size)
    out, phase1 = kuo_release(h, hist, groups, [HUGE_EPS] * h.n_levels,
                                  methods[:h.n_levels], NoiseSource(seed=seed), **options)
    assert np.array_equal(phase1, hist)
    assert np.array_equal(out, hist)


def literal_hierarchical(h, runs_per_level, max_size, merge):
    """Algorithm 1 phases 2-3 one group at a time (reference for tests only): each parent's
    groups sorted by (value, variance); A = the parent's next groups sharing (value,
    variance); B = the children's next groups of the smallest value (each child's in stored
    order); proportional split with exact fractions; merge, round half up, re-sort."""
    def groups_of(runs, node):
        sel = np.flatnonzero(runs.node == node)
        return [(float(runs.value[r]), float(runs.var[r])) for r in sel
                for _ in range(int(runs.count[r]))]

    current = {v: sorted(groups_of(runs_per_level[0], v)) for v in range(h.level_size(0))}
    for level in range(1, h.n_levels):
        child_runs = runs_per_level[level]
        parent_of = h.segment_of_level(level)
        new = {}
        for v, top in current.items():
            kids = [int(c) for c in np.flatnonzero(parent_of == v)]
            rest = {c: groups_of(child_runs, c) for c in kids}
            out = {c: [] for c in kids}
            i = 0
            while i < len(top):
                n_a = sum(1 for g in top[i:] if g == top[i])
                b = min(rest[c][0][0] for c in kids if rest[c])
                num = [sum(1 for g in rest[c] if g[0] == b) for c in kids]
                n_b = sum(num)
                if n_b <= n_a:
                    take = num
                else:
                    quota = [Fraction(n_a * x, n_b) for x in num]
                    take = [math.floor(q) for q in quota]
                    order = sorted(range(len(kids)), key=lambda j: (-(quota[j] - take[j]), j))
                    for j in order[:n_a - sum(take)]:
                        take[j] += 1
                a, var_a = top[i]
                for j, c in enumerate(kids):
                    for _ in range(take[j]):
                        b_val, var_b = rest[c].pop(0)
                        value, var = kuo_matching.merge_estimates(a, var_a, b_val, var_b, merge)
                        out[c].append((math.floor(float(value) + 0.5), float(var)))
                i += sum(take)
            for c in kids:
                new[c] = sorted(out[c])
        current = new
    leaves = np.zeros((h.n_leaves, max_size + 1), np.int64)
    for c, grp in current.items():
        for value, _ in grp:
            leaves[c, int(value)] += 1
    return h.aggregate(leaves)


@settings(max_examples=40, deadline=None)
@given(tree_tables(max_depth=3, max_children=3), st.integers(0, 2**32 - 1),
       st.integers(1, 5), st.lists(st.sampled_from(kuo_estimators.METHODS), min_size=4, max_size=4),
       st.sampled_from(kuo_matching.MERGES), st.sampled_from(kuo_variance.HG_COUNTS))
def test_hierarchical_equals_a_per_group_reference(tt, seed, max_size, methods, merge,
                                                   hg_count):
    """The run-length, level-at-once implementation against `literal_hierarchical`, on
    noisy Phase-1 estimates (so parents carry equal values with different variances)."""
    h, _ = build_hierarchy(tt.table, tt.levels)
    hist, groups = random_tree_hist(h, seed, max_size)
    src = NoiseSource(seed=seed)
    estimates, runs = [], []
    for level in range(h.n_levels):
        sl = h.level_slice(level)
        fn = hc_level if methods[level] == "hc" else hg_level
        est, info = fn(hist[sl], groups[sl], 0.3, src)
        estimates.append(est)
        runs.append(kuo_variance.estimate_variances(est, info, hg_count=hg_count))
    ours = kuo.kuo_hierarchical(h, estimates, runs, groups, merge=merge)
    assert np.array_equal(ours, literal_hierarchical(h, runs, max_size, merge))


def test_release_accepts_leaf_histograms_and_checks_inputs():
    h, _ = two_level_tree(3)
    leaves = np.array([[0, 2, 1], [1, 0, 4], [0, 0, 0]])
    hist = h.aggregate(leaves)
    a, _ = kuo_release(h, leaves, hist.sum(1), [1.0, 1.0], ["hc", "hg"], NoiseSource(seed=4))
    b, _ = kuo_release(h, hist, hist.sum(1), [1.0, 1.0], ["hc", "hg"], NoiseSource(seed=4))
    assert np.array_equal(a, b)
    with pytest.raises(MechanismError, match="one epsilon"):
        kuo_release(h, hist, hist.sum(1), [1.0], ["hc", "hg"], NoiseSource(seed=4))
    with pytest.raises(MechanismError, match="method"):
        kuo_release(h, hist, hist.sum(1), [1.0, 1.0], ["hc", "naive"], NoiseSource(seed=4))
    est = [hist[h.level_slice(lv)] for lv in range(2)]
    runs = [kuo_runs.Runs.from_hist(e, np.ones(e.shape)) for e in est]
    bad = hist.sum(1).copy()
    bad[0] += 1
    with pytest.raises(InputError, match="G_v"):
        kuo.kuo_hierarchical(h, est, runs, bad)
    assert np.array_equal(kuo.kuo_hierarchical(h, est, runs, hist.sum(1)), hist)


# ---- statistical sanity (fixed seeds) ---------------------------------------------------
def _abs_moments(eps: float) -> tuple[float, float]:
    """E|X| and Var|X| of the double geometric with scale 1/eps."""
    a = math.exp(-eps)
    mean_abs = 2 * a / (1 - a * a)
    return mean_abs, 2 * a / (1 - a) ** 2 - mean_abs**2


def _dense():
    return np.full((1, 201), 50)  # 50 groups at every size 0..200


def _sparse():
    """Household-like: 3,200 groups of sizes 1-6, then 100 lone groups 39 sizes apart."""
    hist = np.zeros((1, 4001), np.int64)
    hist[0, 1:7] = [1000, 1000, 500, 400, 200, 100]
    hist[0, np.arange(60, 4001, 39)[:100]] = 1
    return hist


def _mean_emd(estimator, hist, runs=10, **kw) -> float:
    g = hist.sum(axis=1)
    out = []
    for seed in range(runs):
        est = estimator(hist, g, 1.0, NoiseSource(seed=seed), **kw)
        out.append(emd(hist, est[0] if isinstance(est, tuple) else est)[0])
    return float(np.mean(out))


def test_hc_error_on_dense_data_is_exactly_the_noise():
    """Dense: consecutive cumulative cells differ by 50, so the isotonic step never acts
    (a violation needs a noise gap > 50: probability ~1e-11 per cell) and Hc's emd is
    exactly sum_i |X_i| over the 200 noised cells. Its mean over R = 10 runs lies within
    4 standard errors of 200 E|X| (E|X|, Var|X| of the double geometric, exact)."""
    hist, g = _dense(), _dense().sum(axis=1)
    errors = []
    for seed in range(10):
        est, _ = hc_level(hist, g, 1.0, NoiseSource(seed=seed))
        noise = Geometric.for_epsilon(1.0).sample((1, 200), NoiseSource(seed=seed))
        assert emd(hist, est)[0] == np.abs(noise).sum()
        errors.append(emd(hist, est)[0])
    mean_abs, var_abs = _abs_moments(1.0)
    assert abs(np.mean(errors) - 200 * mean_abs) < 4 * math.sqrt(200 * var_abs / 10)


def test_hc_beats_hg_on_dense_data():
    """Spec 4.3 item 2. Hc: 200 E|X| = 170 (previous test). Hg: runs of 50 equal sizes rise
    by 1, less than the noise s.d. (1.36) per group, so PAV blocks straddle sizes and a
    sizeable fraction of the 10,050 groups round to a neighbouring size: order 0.1 G = 1000.
    Asserted with a 2x margin on Hc's exact expectation."""
    mean_abs, _ = _abs_moments(1.0)
    hc, hg = _mean_emd(hc_level, _dense()), _mean_emd(hg_level, _dense())
    assert hc < 2 * 200 * mean_abs < hg


def test_hg_beats_hc_on_sparse_gappy_data():
    """Spec 4.3 item 2. Hg: the 100 lone groups are 39 sizes apart, so PAV leaves them
    alone (a violation needs |X| > 19: probability ~1e-8) and each costs E|X| = 0.85:
    85, plus a few units at each of the 5 boundaries between the small sizes. Hc: each of
    the 100 unit steps of the cumulative histogram sits in a flat stretch and is located
    only to within ~sigma^2 = 1.8 cells (the step is smaller than the noise): >= 180, the
    flat cells rounding exactly in between. Asserted: Hg < 150 < Hc (p = 2 and p = 1)."""
    hg = _mean_emd(hg_level, _sparse())
    assert hg < 150 < _mean_emd(hc_level, _sparse())
    assert hg < 150 < _mean_emd(hc_level, _sparse(), p=1)


def test_naive_is_orders_of_magnitude_worse():
    """Spec 4.3 item 1. Naive noises the ~3,900 empty cells of the sparse histogram with
    scale 2: about half are positive (mean ~1), and the projection onto sum = G keeps those
    above the threshold tau, so tens of phantom groups land at sizes spread over 60..4000,
    each costing ~N/2 = 2000 in emd: order 1e4-1e5 against Hg's ~100 (previous test).
    Asserted: Naive > 100 x Hg and > 10 x Hc on the same data and seeds."""
    naive = _mean_emd(naive_level, _sparse())
    assert naive > 100 * _mean_emd(hg_level, _sparse())
    assert naive > 10 * _mean_emd(hc_level, _sparse())


def test_weighted_merge_beats_simple_average_at_the_top():
    """Spec 4.3 item 3, Hc at both levels of root -> 8 children (dense: 3,000 groups per
    child over sizes 0..200). The root's Hc variance per group, 4 / (eps^2 H_root[s]), is
    8x smaller than a child's, so the weighted merge keeps the root's groups close to its
    own estimate (emd ~ 200 E|X| = 170, the root's Phase-1 error), while the simple average
    moves each one halfway to a child's noisier value, adding the children's independent
    errors (about twice as much). Asserted with a 1.5x margin over 10 runs."""
    h, _ = two_level_tree(8)
    leaves = np.random.default_rng(0).multinomial(np.full(8, 3000), np.full(201, 1 / 201))
    hist = h.aggregate(leaves)
    top = {}
    for merge in kuo_matching.MERGES:
        top[merge] = np.mean([emd(hist, kuo_release(
            h, hist, hist.sum(1), [1.0, 1.0], ("hc", "hc"), NoiseSource(seed=s),
            merge=merge)[0])[0] for s in range(10)])
    assert 1.5 * top["weighted"] < top["simple"]
