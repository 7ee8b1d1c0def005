"""Tests for hierdp_core.consistency: segment projection and rounding against brute force,
segmented cumulative sums, tree least squares against the dense solution, and TopDown."""

from __future__ import annotations

import doctest
import itertools
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from conftest import tree_tables
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import hierdp_core.consistency.least_squares as ls_module
import hierdp_core.consistency.segments as seg_module
import hierdp_core.consistency.topdown as td_module
from hierdp_core.consistency.least_squares import tree_least_squares
from hierdp_core.consistency.segments import (
    project_segments,
    round_segments,
    segment_ids,
    segmented_cumsum,
)
from hierdp_core.consistency.topdown import topdown
from hierdp_core.errors import BudgetError
from hierdp_core.hierarchy import build_hierarchy


@pytest.mark.parametrize("module", [seg_module, ls_module, td_module])
def test_module_doctests_pass(module):
    result = doctest.testmod(module)
    assert result.attempted >= 1 and result.failed == 0


def _starts(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


def _both_paths(fn, *args):
    """``fn(*args)`` on small inputs' path (one lexsort, one padded block) and on the
    blocks' path of large ones (the small-input thresholds set to 0)."""
    small = fn(*args)
    with mock.patch.multiple(seg_module, SMALL_SORT=0, SMALL_CUMSUM_CELLS=0):
        blocks = fn(*args)
    return small, blocks


def test_segment_ids():
    assert segment_ids(np.array([0, 2, 3]), 6).tolist() == [0, 0, 1, 2, 2, 2]


# ---- project_segments ------------------------------------------------------------------
def _brute_projection(y, w, total):
    """argmin sum w (x - y)^2 s.t. x >= 0, sum x = total, by trying every support set."""
    n = y.size
    if total == 0:
        return np.zeros(n)
    best, best_f = None, np.inf
    for r in range(1, n + 1):
        for support in itertools.combinations(range(n), r):
            s = np.array(support)
            tau = (y[s].sum() - total) / (1 / w[s]).sum()
            x = np.zeros(n)
            x[s] = y[s] - tau / w[s]
            if x.min() < -1e-12:
                continue
            f = np.sum(w * (x - y) ** 2)
            if f < best_f:
                best, best_f = x, f
    return np.maximum(best, 0)


finite = dict(allow_nan=False, allow_infinity=False)
segment_st = st.tuples(
    st.lists(st.tuples(st.floats(-50, 50, **finite), st.floats(0.05, 20, **finite)),
             min_size=1, max_size=6),
    st.one_of(st.just(0.0), st.floats(0, 100, **finite), st.integers(0, 100).map(float)),
)


@settings(max_examples=250, deadline=None)
@given(st.lists(segment_st, min_size=1, max_size=4), st.booleans(), st.booleans())
def test_project_segments_matches_brute_force_and_kkt(segments, negative, weighted):
    y = np.array([v for seg, _ in segments for v, _ in seg])
    if negative:
        y = -np.abs(y) - 0.1  # all-negative inputs
    w = np.array([wi for seg, _ in segments for _, wi in seg]) if weighted else np.ones(y.size)
    totals = np.array([t for _, t in segments])
    lengths = [len(seg) for seg, _ in segments]
    starts = _starts(lengths)
    x = project_segments(y, starts, totals, w if weighted else None)
    assert x.shape == y.shape and np.all(x >= 0)
    scale = max(1.0, np.abs(y).max(), totals.max())
    for s, (a, b) in enumerate(zip(starts, list(starts[1:]) + [y.size], strict=True)):
        xs, ys, ws, t = x[a:b], y[a:b], w[a:b], totals[s]
        assert abs(xs.sum() - t) <= 1e-9 * scale
        np.testing.assert_allclose(xs, _brute_projection(ys, ws, t), rtol=0, atol=1e-6)
        if t == 0:  # an empty parent has empty children
            assert np.all(xs == 0)
        elif t > 1e-9 * scale:  # KKT: one tau with w(y - x) = tau on the support, w*y <= tau off
            pos = xs > 0
            tau = ws[pos] * (ys[pos] - xs[pos])
            assert np.ptp(tau) <= 1e-7 * scale * ws.max()
            assert np.all(ws[~pos] * ys[~pos] <= tau.mean() + 1e-7 * scale * ws.max())


def test_project_segments_large_and_exact_sums():
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 40, 5000)
    starts = _starts(lengths)
    m = int(lengths.sum())
    y = rng.normal(1e5, 3e5, m)
    w = rng.uniform(0.1, 10, m)
    totals = rng.integers(0, 10**7, lengths.size).astype(float)
    totals[::7] = 0
    x = project_segments(y, starts, totals, w)
    assert np.all(x >= 0)
    sums = np.add.reduceat(x, starts)
    assert np.all(np.abs(sums - totals) <= 1e-9 * np.maximum(1, totals))
    assert np.all(x[np.repeat(totals, lengths) == 0] == 0)
    # already feasible inputs are returned unchanged
    z = rng.uniform(0, 100, m)
    np.testing.assert_allclose(project_segments(z, starts, np.add.reduceat(z, starts), w), z,
                               rtol=1e-12, atol=1e-9)


# ---- round_segments --------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(st.floats(0, 1, **finite), min_size=1, max_size=4),
                          st.integers(0, 6)), min_size=1, max_size=4))
def test_round_segments_is_the_closest_integer_vector(segments):
    parts, totals = [], []
    for shares, total in segments:
        shares = np.asarray(shares)
        if shares.sum() <= 0:
            shares = np.ones_like(shares)
        parts.append(shares / shares.sum() * total)
        totals.append(total)
    x, totals = np.concatenate(parts), np.array(totals)
    starts = _starts([p.size for p in parts])
    r = round_segments(x, starts, totals)
    assert r.dtype.kind == "i" and np.all(r >= 0)
    assert np.array_equal(np.add.reduceat(r, starts), totals)
    assert np.all(np.abs(x - r) < 1)
    for p, a, t in zip(parts, starts, totals, strict=True):
        rs = r[a:a + p.size]
        cands = np.array([c for c in itertools.product(range(t + 1), repeat=p.size)
                          if sum(c) == t])
        assert np.abs(rs - p).sum() <= np.abs(cands - p).sum(axis=1).min() + 1e-9
        assert ((rs - p) ** 2).sum() <= ((cands - p) ** 2).sum(axis=1).min() + 1e-9


def test_round_segments_edge_cases():
    starts = np.array([0, 3])
    # integers stay; values a hair below an integer are not pushed down
    x = np.array([2.0, 0.0, 1.0, 3 - 1e-12, 1e-12])
    assert round_segments(x, starts, np.array([3, 3])).tolist() == [2, 0, 1, 3, 0]
    # exact halves: one up one down, sums kept
    r = round_segments(np.array([0.5, 0.5, 1.0, 1.5, 1.5]), starts, np.array([2, 3]))
    assert sorted(r[:3].tolist()) == [0, 1, 1] and sorted(r[3:].tolist()) == [1, 2]


# ---- segmented_cumsum ------------------------------------------------------------------
def _reference_cumsum(values, starts):
    return np.concatenate([np.cumsum(s) for s in np.split(values, starts[1:])])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.floats(-1e3, 1e3, **finite), min_size=1, max_size=8),
                min_size=1, max_size=10))
def test_segmented_cumsum_matches_per_segment_cumsum(segments):
    values = np.concatenate([np.asarray(s) for s in segments])
    starts = _starts([len(s) for s in segments])
    small, blocks = _both_paths(segmented_cumsum, values, starts)
    np.testing.assert_allclose(small, _reference_cumsum(values, starts), rtol=0, atol=1e-9)
    assert np.array_equal(small, blocks)  # bit for bit, whatever the padding


def test_segmented_cumsum_precision_many_segments_large_values():
    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 30, 40_000)
    starts = _starts(lengths)
    m = int(lengths.sum())
    # huge segments alternate with segments of small fractional values: a single running
    # total would carry ~1e12 and lose the small ones
    big = np.repeat(np.arange(lengths.size) % 2 == 0, lengths)
    values = np.where(big, rng.uniform(0, 1e7, m), rng.uniform(0, 1, m))
    got = segmented_cumsum(values, starts)
    ref = _reference_cumsum(values, starts)
    seg_scale = np.repeat(np.add.reduceat(np.abs(values), starts), lengths)
    assert np.all(np.abs(got - ref) <= 1e-12 * np.maximum(seg_scale, 1.0))
    # integer-valued inputs are exact
    ints = np.where(big, rng.integers(0, 10**7, m), rng.integers(0, 3, m)).astype(float)
    assert np.array_equal(segmented_cumsum(ints, starts), _reference_cumsum(ints, starts))
    # one segment
    assert np.array_equal(segmented_cumsum(ints, np.array([0])), np.cumsum(ints))


# ---- tree_least_squares ----------------------------------------------------------------
def _dense_gls(h, y, var, root_value):
    """Weighted least squares over the free leaf variables (x = A @ leaves), via lstsq; with
    a fixed root the constraint sum(leaves) = root is added through the KKT system."""
    a = h.aggregate(np.eye(h.n_leaves))
    sd = np.sqrt(var[h.level_of_nodes()])
    meas = np.isfinite(sd)
    am = a[meas] / sd[meas, None]
    out = np.empty_like(y)
    n = h.n_leaves
    for j in range(y.shape[1]):
        ym = y[meas, j] / sd[meas]
        if root_value is None:
            leaves = np.linalg.lstsq(am, ym, rcond=None)[0]
        else:
            kkt = np.block([[am.T @ am, np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]])
            rhs = np.concatenate([am.T @ ym, [root_value[j]]])
            leaves = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:n]
        out[:, j] = a @ leaves
    return out


@settings(max_examples=100, deadline=None)
@given(tree_tables(max_depth=3, max_children=3), st.integers(0, 2**32 - 1),
       st.sampled_from(["all", "skip-internal", "skip-root", "fixed-root"]))
def test_tree_least_squares_matches_dense_solution(tt, seed, case):
    h, _ = build_hierarchy(tt.table, tt.levels)
    rng = np.random.default_rng(seed)
    k = 2
    y = rng.normal(20, 10, (h.n_nodes, k))
    var = rng.uniform(0.2, 5, h.n_levels)
    root_value = None
    if case == "skip-internal":
        assume(h.depth >= 2)
        var[rng.integers(1, h.depth)] = np.inf
    elif case == "skip-root":
        var[0] = np.inf
    elif case == "fixed-root":
        root_value = rng.normal(20, 10, k)
    for level in range(h.n_levels):
        if np.isinf(var[level]):
            y[h.level_slice(level)] = np.nan  # unmeasured levels hold no values
    x = tree_least_squares(h, y, var, root_value)
    assert x.shape == y.shape
    assert h.consistency_violations(x, tol=1e-9 * max(1.0, np.abs(x).max())) == 0
    if root_value is not None:
        np.testing.assert_allclose(x[0], root_value, rtol=1e-12)
    np.testing.assert_allclose(x, _dense_gls(h, y, var, root_value), rtol=0, atol=1e-7)


def test_tree_least_squares_exact_inputs_and_errors():
    h, _ = build_hierarchy(pd.DataFrame({"s": ["A", "A", "B"], "c": ["a", "b", "c"]}),
                           ["s", "c"])
    truth = h.aggregate(np.array([[3.0, 1.0], [4.0, 0.0], [5.0, 2.0]]))
    np.testing.assert_allclose(tree_least_squares(h, truth, np.array([1.0, 2.0, 3.0])), truth,
                               atol=1e-12)
    with pytest.raises(BudgetError, match="finest level"):
        tree_least_squares(h, truth, np.array([1.0, 1.0, np.inf]))
    # exact levels (variance 0: integer noise at a huge epsilon) are allowed
    np.testing.assert_allclose(tree_least_squares(h, truth, np.array([0.0, 1.0, 0.0])), truth,
                               atol=1e-9)
    y = truth + np.array([[0.0, 0], [1, 0], [0, 0], [0.5, 0], [-0.5, 0], [2, 0]])
    x = tree_least_squares(h, y, np.array([0.0, 1.0, 1.0]))
    assert np.all(np.isfinite(x)) and h.consistency_violations(x, tol=1e-9) == 0
    np.testing.assert_allclose(x[0], y[0], atol=1e-9)
    np.testing.assert_allclose(x, tree_least_squares(h, y, np.array([1e-12, 1.0, 1.0])),
                               atol=1e-9)
    # only the leaves measured: the release is the leaves, aggregated
    y = truth + np.array([[1.0, 0], [0, 0], [0, 0], [0.5, 0], [-0.5, 0], [2, 0]])
    y[:3] = np.nan
    x = tree_least_squares(h, y, np.array([np.inf, np.inf, 1.0]))
    np.testing.assert_allclose(x, h.aggregate(y[3:]), atol=1e-12)


# ---- topdown ---------------------------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(tree_tables(max_depth=3, max_children=4), st.integers(0, 2**32 - 1),
       st.integers(1, 3), st.booleans())
def test_topdown_is_consistent_nonnegative_integer(tt, seed, k, weighted):
    h, _ = build_hierarchy(tt.table, tt.levels)
    rng = np.random.default_rng(seed)
    est = rng.normal(5, 20, (h.n_nodes, k)) * rng.choice([0.01, 1, 10], (h.n_nodes, 1))
    root_values = rng.integers(0, 200, k)
    root_values[rng.random(k) < 0.2] = 0
    weights = rng.uniform(0.1, 10, h.n_nodes) if weighted else None
    out = topdown(h, est, root_values, weights)
    assert out.shape == (h.n_nodes, k) and out.dtype == np.int64
    assert np.all(out >= 0)
    assert np.array_equal(out[0], root_values)
    assert h.consistency_violations(out) == 0
    # a zero parent has zero children, all the way down
    assert np.all(out[:, root_values == 0] == 0)


@settings(max_examples=60, deadline=None)
@given(tree_tables(max_depth=3, max_children=4, max_count=1000), st.integers(1, 3),
       st.booleans())
def test_topdown_returns_exact_truth(tt, k, one_d):
    h, leaf = build_hierarchy(tt.table, tt.levels)
    rng = np.random.default_rng(len(tt.table))
    leaves = rng.integers(0, 1000, (h.n_leaves, k))
    leaves[rng.random((h.n_leaves, k)) < 0.3] = 0  # empty cells too
    truth = h.aggregate(leaves)
    est = truth[:, 0].astype(float) if one_d else truth.astype(float)
    out = topdown(h, est, truth[0, :1] if one_d else truth[0])
    assert np.array_equal(out, truth[:, :1] if one_d else truth)


def test_topdown_small_example():
    h, _ = build_hierarchy(pd.DataFrame({"s": ["A", "A", "B"], "c": ["a", "b", "c"]}),
                           ["s", "c"])
    # root 10; A, B from (7.2, 2.1); A's children from (5.5, -1.0)
    est = np.array([[9.6], [7.2], [2.1], [5.5], [-1.0], [2.4]])
    out = topdown(h, est, np.array([10])).ravel()
    assert out.tolist() == [10, 8, 2, 7, 1, 2]
    # weights: a heavy weight on A keeps it closer to its estimate than B
    w = np.array([1.0, 100.0, 1.0, 1.0, 1.0, 1.0])
    assert topdown(h, est, np.array([10]), w).ravel()[1:3].tolist() == [7, 3]


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(-3, 3)), min_size=1, max_size=60))
@settings(max_examples=200, deadline=None)
def test_segmented_argsort_matches_lexsort(pairs):
    from hierdp_core.consistency.segments import segmented_argsort_desc

    seg = np.sort(np.array([p[0] for p in pairs]))
    values = np.array([p[1] for p in pairs], dtype=float)
    for order in _both_paths(segmented_argsort_desc, values, seg):
        assert np.array_equal(order, np.lexsort((-values, seg)))


@given(st.lists(st.integers(1, 40), min_size=1, max_size=30),
       st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=8),
       st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_segmented_argsort_matches_lexsort_on_any_floats(lengths, pool, draw):
    """Segments of many lengths (several padded blocks), values with ties, signed zeros,
    infinities and NaN (drawn from a small pool so that ties are common)."""
    from hierdp_core.consistency.segments import segmented_argsort_desc

    seg = np.repeat(np.arange(len(lengths)) * 2, lengths)  # ids need not be consecutive
    rng = np.random.default_rng(draw)
    values = rng.choice(np.array(pool, dtype=float), size=seg.size)
    ints = rng.integers(-3, 4, size=seg.size)
    for x in (values, ints):
        for order in _both_paths(segmented_argsort_desc, x, seg):
            assert np.array_equal(order, np.lexsort((-x, seg)))


@given(st.lists(st.integers(1, 12), min_size=1, max_size=20), st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_project_segments_without_weights_is_bitwise_unit_weights(lengths, draw):
    """The unweighted branch does the same arithmetic as weights of one, bit for bit."""
    rng = np.random.default_rng(draw)
    starts = _starts(lengths)
    y = rng.choice([rng.normal(0, 5), 0.0, 1.5, -2.0, 3.0], size=sum(lengths))
    y = y + np.where(rng.random(y.size) < 0.5, rng.normal(0, 5, y.size), 0.0)
    totals = rng.integers(0, 20, len(lengths)).astype(float)
    assert np.array_equal(project_segments(y, starts, totals),
                          project_segments(y, starts, totals, np.ones(y.size)))


@given(st.lists(st.integers(1, 12), min_size=1, max_size=20), st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_project_segments_skips_zero_totals_bit_for_bit(lengths, draw):
    """Segments of total 0 are all zeros, and the others get, bit for bit, what they get
    projected alone (with or without weights; the skipped ones change nothing)."""
    rng = np.random.default_rng(draw)
    starts = _starts(lengths)
    y = rng.normal(0, 5, sum(lengths))
    w = rng.uniform(0.5, 2.0, y.size)
    totals = np.where(rng.random(len(lengths)) < 0.5, 0, rng.integers(0, 20, len(lengths)))
    dead = np.repeat(totals == 0, lengths)
    live_lengths = np.array(lengths)[totals > 0]
    for weights in (None, w):
        x = project_segments(y, starts, totals.astype(float), weights)
        assert np.all(x[dead] == 0)
        if live_lengths.size:
            alone = project_segments(y[~dead], _starts(live_lengths), totals[totals > 0],
                                     None if weights is None else weights[~dead])
            assert np.array_equal(x[~dead], alone)


def _reference_round(x, starts, totals):
    """Per segment: floors, plus one on the largest fractional parts (ties by position)."""
    out = []
    for part, total in zip(np.split(x, starts[1:]), totals, strict=True):
        floors = np.floor(part + 1e-9)
        short = int(np.clip(np.rint(total - floors.sum()), 0, part.size))
        up = np.zeros(part.size, dtype=bool)
        up[np.lexsort((np.arange(part.size), -(part - floors)))[:short]] = True
        out.append(floors.astype(np.int64) + up)
    return np.concatenate(out)


@given(st.lists(st.integers(1, 10), min_size=1, max_size=20), st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None)
def test_round_segments_matches_the_per_segment_rule(lengths, draw):
    """Ties (equal fractional parts) are common here; segments already at their total are
    left as floored."""
    rng = np.random.default_rng(draw)
    starts = _starts(lengths)
    x = rng.choice([0.0, 0.25, 0.5, 1.5, 2.75, 3.0], size=sum(lengths))
    totals = np.rint(np.add.reduceat(x, starts)) + rng.integers(-1, 2, len(lengths))
    totals = np.maximum(totals, 0)
    assert np.array_equal(round_segments(x, starts, totals),
                          _reference_round(x, starts, totals))
