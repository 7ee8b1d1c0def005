"""Tests for hierdp_core.groupsizes.fioretto: the running example's cost tables (spec sec.
1.7), M_H^dp against brute force and an independent min-plus DP, the chain mechanism
against brute force of Model 3 (with the "<=" fix) and the literal recurrence, M_c^dp's
isotonic step, and the release properties (consistent, valid, faithful, exact at zero
noise) on larger random trees."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pandas as pd
import pytest
from conftest import tree_tables
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression

import hierdp_core.groupsizes.fioretto as fio
from hierdp_core.errors import InputError
from hierdp_core.groupsizes import fioretto_dp, fioretto_tables
from hierdp_core.groupsizes.data import cumulative
from hierdp_core.groupsizes.fioretto import isotonic_rows, mc_dp, mh_dp, model1_objective
from hierdp_core.groupsizes.fioretto_chain import (
    chain_cost_tables,
    chain_cumulative,
    chain_dp,
    chain_from_region_cumulative,
    chain_order,
)
from hierdp_core.groupsizes.fioretto_tables import leaf_cost_table, merge_cost_tables
from hierdp_core.groupsizes.group_counts import rescale_rows
from hierdp_core.hierarchy import Hierarchy, build_hierarchy


def test_module_doctests_pass():
    result = doctest.testmod(fio)
    assert result.attempted >= 1 and result.failed == 0


# ---- trees -------------------------------------------------------------------------------
def tree(fanouts: list[list[int]]) -> Hierarchy:
    """A hierarchy from the number of children of every node, level by level:
    ``[[2], [1, 3]]`` is root -> 2 nodes with 1 and 3 children."""
    paths = [()]
    for counts in fanouts:
        assert len(counts) == len(paths)
        paths = [p + (f"{p[-1] if p else ''}{k}",) for p, m in zip(paths, counts, strict=True)
                 for k in range(m)]
    depth = len(fanouts)
    table = pd.DataFrame({f"l{d}": [p[d] for p in paths] for d in range(depth)})
    h, _ = build_hierarchy(table, [f"l{d}" for d in range(depth)])
    return h


@st.composite
def small_trees(draw, max_leaves: int = 6):
    """Depth 1-2, 1-3 children per node (the project's `tree_tables`), few leaves."""
    t = draw(tree_tables(max_depth=2, max_children=3, max_repeat=1))
    h, _ = build_hierarchy(t.table, t.levels)
    assume(h.n_leaves <= max_leaves)
    return h


def random_tree(rng, depth: int, max_children: int) -> Hierarchy:
    fanouts, width = [], 1
    for _ in range(depth):
        counts = rng.integers(1, max_children + 1, width).tolist()
        fanouts.append(counts)
        width = sum(counts)
    return tree(fanouts)


def check_release(h: Hierarchy, x: np.ndarray, G: int) -> None:
    """Consistent, valid (non-negative integers) and faithful (every level sums to G)."""
    assert x.dtype == np.int64 and x.shape[0] == h.n_nodes
    assert x.min() >= 0
    assert h.consistency_violations(x) == 0
    for level in range(h.n_levels):
        assert x[h.level_slice(level)].sum() == G


def compositions(total: int, parts: int) -> np.ndarray:
    """Every vector of ``parts`` non-negative integers summing to ``total`` (stars and bars)."""
    if parts == 1:
        return np.array([[total]], dtype=np.int64)
    bars = np.array(list(itertools.combinations(range(total + parts - 1), parts - 1)),
                    dtype=np.int64).reshape(-1, parts - 1)
    edges = np.hstack([np.full((bars.shape[0], 1), -1), bars,
                       np.full((bars.shape[0], 1), total + parts - 1)])
    return np.diff(edges, axis=1) - 1


def all_releases(h: Hierarchy, n_sizes: int, G: int) -> np.ndarray:
    """Every consistent valid faithful hierarchy: (count, n_nodes, n_sizes)."""
    leaves = compositions(G, h.n_leaves * n_sizes).reshape(-1, h.n_leaves, n_sizes)
    return np.stack([h.aggregate(leaf) for leaf in leaves])


def brute_model1(h, noisy, G, weights=None) -> float:
    w = np.ones(h.n_levels) if weights is None else np.asarray(weights, dtype=float)
    x = all_releases(h, noisy.shape[1], G)
    node_w = w[h.level_of_nodes()]
    return float(((x - noisy) ** 2 * node_w[None, :, None]).sum(axis=(1, 2)).min())


def model3_cost(h, chain_values, chain_noisy) -> np.ndarray:
    chain = chain_order(h, chain_noisy.shape[1])
    c = chain_values.reshape(chain_values.shape[0], -1)[:, chain.cells]
    return ((c - chain_noisy.ravel()[chain.cells]) ** 2).sum(axis=1)


def brute_model3(h: Hierarchy, chain_noisy: np.ndarray, G: int) -> float:
    """Model 3 with the fix, enumerated on the chain itself: integer chains in [0, G] with
    c_last = G, '=' after a last child (level_i > level_{i+1}), '<=' otherwise (level_i
    == level_{i+1}, and the fix for level_i < level_{i+1}). Every link is '<=' or '=', so
    the candidates are the non-decreasing chains."""
    chain = chain_order(h, chain_noisy.shape[1])
    y = chain_noisy.ravel()[chain.cells]
    c = candidate_chains(y.size, G)
    lev = chain.level
    eq = lev[:-1] > lev[1:]
    ok = np.all(c[:, :-1][:, eq] == c[:, 1:][:, eq], axis=1)
    ok &= np.all(c[:, :-1][:, ~eq] <= c[:, 1:][:, ~eq], axis=1)
    return float(((c[ok] - y) ** 2).sum(axis=1).min())


def candidate_chains(m: int, G: int) -> np.ndarray:
    """Every non-decreasing integer chain of length m in [0, G] ending at G."""
    if m == 1:
        return np.array([[G]], dtype=np.int64)
    c = np.array(list(itertools.combinations_with_replacement(range(G + 1), m - 1)),
                 dtype=np.int64).reshape(-1, m - 1)
    return np.hstack([c, np.full((c.shape[0], 1), G)])


def naive_model1(h: Hierarchy, noisy: np.ndarray, G: int, weights=None) -> float:
    """Optimum of Model 1 by full tables on 0..G and pairwise min-plus convolution (the
    paper's generic DP, independent of the sorted-slope merge)."""
    w = np.ones(h.n_levels) if weights is None else np.asarray(weights, dtype=float)
    v = np.arange(G + 1, dtype=float)
    levels = h.level_of_nodes()

    def minplus(a, b):
        out = np.full(a.shape, np.inf)
        for i in range(G + 1):
            out[..., i:] = np.minimum(out[..., i:], a[..., i:i + 1] + b[..., :G + 1 - i])
        return out

    tables: dict[int, np.ndarray] = {}
    for node in range(h.n_nodes - 1, -1, -1):  # children have larger indices
        own = w[levels[node]] * (v[None, :] - noisy[node][:, None]) ** 2
        kids = h.children(node)
        if kids.size:
            phi = tables.pop(int(kids[0]))
            for c in kids[1:]:
                phi = minplus(phi, tables.pop(int(c)))
            own = own + phi
        tables[node] = own
    top = tables[0][0]
    for s in range(1, noisy.shape[1]):
        top = minplus(top, tables[0][s])
    return float(top[G])


# ---- running example (spec sec. 1.7) -----------------------------------------------------
@pytest.fixture
def example():
    """US -> {GA, NY}, sizes 0..5 (paper size s in column s), G = 6; truth of Tables 2-4
    and noisy values whose size-1 column is the paper's (US 2, GA 3, NY 0)."""
    h = tree([[2]])
    assert h.labels().tolist()[1:] == ["0", "1"]  # GA = node 1, NY = node 2
    truth = np.array([[0, 3, 1, 2, 0, 0], [0, 2, 0, 1, 0, 0], [0, 1, 1, 1, 0, 0]])
    noisy = np.array([[0, 2, 2, 2, 0, 0], [0, 3, 0, 1, -1, 0], [1, 0, 1, 1, 0, 0]])
    return h, truth, noisy, 6


def test_running_example_plain_cost_tables():
    ga, ny = leaf_cost_table(3, 0, 4), leaf_cost_table(0, 0, 4)
    assert ga.tolist() == [9, 4, 1, 0, 1]
    assert ny.tolist() == [0, 1, 4, 9, 16]
    lo, us = merge_cost_tables([(0, ga), (0, ny)], 2)
    assert lo == 0 and us[:5].tolist() == [13, 5, 1, 1, 5]
    # Example 5: GA's domain extended to 5; phi(3) = 0, tau(3) = 1, tau(4) = 5, tau(5) = 11
    lo, us = merge_cost_tables([(0, leaf_cost_table(3, 0, 5)), (0, ny)], 2)
    assert us[3:6].tolist() == [1, 5, 11]
    assert us[3] - (3 - 2) ** 2 == 0


def test_running_example_production_tables_match():
    """The closed-form leaf path used at scale gives the same table as TableMerge."""
    leaves = fioretto_tables._Leaves(np.array([3.0, 0.0]), 1.0, np.array([0]), np.zeros(2, np.int64),
                         np.array([0, 1]))
    tab = fioretto_tables._leaf_parent_tables(leaves, np.array([2.0]), 1.0, np.array([0]), np.array([4]))
    assert tab.lo.tolist() == [0]
    assert tab.slopes.tolist() == np.diff([13, 5, 1, 1, 5]).tolist()
    # the same table one level up, through the explicit merge, with a parent term 0
    up = fioretto_tables._explicit_parent_tables(tab, np.array([0]), np.array([0.0]), 0.0,
                                     np.array([0]), np.array([4]))
    assert up.slopes.tolist() == np.diff([13, 5, 1, 1, 5]).tolist()


def test_running_example_chain_tables(example):
    h, truth, _, G = example
    chain = chain_order(h, 6)
    # chain: (0,GA),(0,NY),(0,US),(1,GA),(1,NY),(1,US),...; '=' exactly from NY to US
    assert chain.cells[:6].tolist() == [6, 12, 0, 7, 13, 1]
    assert chain.equal_next[:6].tolist() == [False, True, False, False, True, False]
    tables = chain_cost_tables([3, 3, 2], chain.equal_next[3:6], 0, 4)
    assert tables.tolist() == [[9, 4, 1, 0, 1], [18, 8, 2, 0, 1], [22, 9, 2, 1, 5]]
    level2 = chain_cumulative(h, truth)[1:].T.ravel()  # (s, GA), (s, NY) order
    assert level2[2:].tolist() == [2, 3, 3, 4, 5, 6, 6, 6, 6, 6]
    assert chain_cumulative(h, truth)[0].tolist() == cumulative(truth)[0].tolist()


def test_running_example_outputs(example):
    h, truth, noisy, G = example
    x = mh_dp(h, noisy, G)
    check_release(h, x, G)
    assert model1_objective(h, x, noisy) == brute_model1(h, noisy, G)
    c = chain_cumulative(h, truth) + noisy - truth
    check_release(h, chain_dp(h, c, G), G)
    check_release(h, mc_dp(h, cumulative(truth) + noisy - truth, G), G)
    for out in (mh_dp(h, truth, G), mc_dp(h, cumulative(truth), G),
                chain_dp(h, chain_cumulative(h, truth), G)):
        assert out.tolist() == truth.tolist()


# ---- M_H^dp exactness --------------------------------------------------------------------
noisy_values = st.one_of(st.integers(-3, 6).map(float),
                         st.floats(-3, 6, allow_nan=False, allow_infinity=False))


@st.composite
def instances(draw, max_cells: int = 8):
    h = draw(small_trees())
    n_sizes = draw(st.integers(1, 3))
    assume(h.n_leaves * n_sizes <= max_cells)
    G = draw(st.integers(0, 5))
    noisy = np.array(draw(st.lists(noisy_values, min_size=h.n_nodes * n_sizes,
                                   max_size=h.n_nodes * n_sizes))).reshape(h.n_nodes, n_sizes)
    return h, noisy, G


@settings(max_examples=150, deadline=None)
@given(instances(), st.sampled_from([None, 1, 2]),
       st.one_of(st.none(), st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0]),
                                     min_size=3, max_size=3)))
def test_mh_dp_attains_brute_force_minimum(inst, delta, weights):
    h, noisy, G = inst
    weights = None if weights is None else weights[:h.n_levels]
    x = mh_dp(h, noisy, G, level_weights=weights, delta=delta)
    check_release(h, x, G)
    assert model1_objective(h, x, noisy, weights) == pytest.approx(
        brute_model1(h, noisy, G, weights), abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_mh_dp_matches_min_plus_dp_on_larger_trees(seed):
    """Deeper trees and larger G than brute force reaches; integer and float noise, level
    weights, and a tiny initial window (so the certification must widen)."""
    rng = np.random.default_rng(seed)
    h = random_tree(rng, depth=int(rng.integers(1, 4)), max_children=3)
    n_sizes, G = int(rng.integers(1, 5)), int(rng.integers(5, 30))
    truth = h.aggregate(rng.multinomial(G, np.ones(h.n_leaves * n_sizes) / (h.n_leaves
                                                                              * n_sizes))
                        .reshape(h.n_leaves, n_sizes))
    noisy = truth + rng.integers(-6, 7, truth.shape)
    if seed % 2:
        noisy = noisy + rng.random(truth.shape)
    weights = rng.uniform(0.3, 3.0, h.n_levels) if seed % 3 == 0 else None
    best = naive_model1(h, noisy, G, weights)
    for delta in (1, None, 50):
        x = mh_dp(h, noisy, G, level_weights=weights, delta=delta)
        check_release(h, x, G)
        assert model1_objective(h, x, noisy, weights) == pytest.approx(best, abs=1e-8)
    for trial in range(3):
        x, stats = solve_from_bad_windows(h, noisy, G, weights, seed=seed * 10 + trial)
        check_release(h, x, G)
        assert model1_objective(h, x, noisy, weights) == pytest.approx(best, abs=1e-8)


def solve_from_bad_windows(h, noisy, G, weights=None, seed=0, expect_widening=True):
    """M_H^dp started from adversarial windows: width 0 to 2 at random places in [0, G]
    (mostly excluding the optimum, often empty against the children's reachable range),
    so only the certification loop can reach the optimum."""
    rng = np.random.default_rng(seed)
    w = np.ones(h.n_levels) if weights is None else np.asarray(weights, dtype=float)
    solver = fioretto_dp._MHSolver(h, np.asarray(noisy, dtype=float), G, w, np.ones(h.n_levels))
    for lo, hi in zip(solver.own_lo, solver.own_hi, strict=True):
        lo[...] = rng.integers(0, G + 1, lo.shape)
        hi[...] = np.minimum(G, lo + rng.integers(0, 3, lo.shape))
    x = solver.solve()
    if expect_widening:
        assert solver.stats["passes"] > 1 and solver.stats["widened_cells"] > 0
    return x, solver.stats


def test_mh_dp_certifies_far_optimum():
    """Noisy values far from any consistent hierarchy (the root says 0 and 300, the leaves 40
    each, G = 120): found from the estimate, and from windows far from the optimum."""
    h = tree([[3], [2, 2, 2]])
    n_sizes, G = 2, 120
    noisy = np.zeros((h.n_nodes, n_sizes))
    noisy[h.level_slice(2)] = 40.0
    noisy[0, 1] = 300.0
    best = naive_model1(h, noisy, G)
    stats = {}
    x = mh_dp(h, noisy, G, delta=1, stats=stats)
    check_release(h, x, G)
    assert model1_objective(h, x, noisy) == best
    x, stats = solve_from_bad_windows(h, noisy, G)
    assert stats["passes"] > 3
    assert model1_objective(h, x, noisy) == best


@pytest.mark.parametrize("shift", [-2.5, 2.5])
def test_leaf_step_bracket_survives_inexact_water_levels(monkeypatch, shift):
    """Water levels off by a few units (as floating point could make them, by less) are
    repaired: the leaf steps still bracket every window and the result stays optimal."""
    water = fioretto_tables._water
    for module in (fioretto_tables, fioretto_dp):  # the leaf steps and the window centres
        monkeypatch.setattr(module, "_water", lambda *a, **k: water(*a, **k) + shift)
    rng = np.random.default_rng(4)
    for _ in range(8):
        h = random_tree(rng, depth=2, max_children=3)
        noisy = rng.integers(-3, 8, (h.n_nodes, 2)).astype(float)
        G = int(rng.integers(1, 12))
        x = mh_dp(h, noisy, G, delta=2)
        check_release(h, x, G)
        assert model1_objective(h, x, noisy) == naive_model1(h, noisy, G)


def test_mh_dp_root_only_hierarchy():
    """A hierarchy with the root as its only level: the top node alone (leaves closed-form)."""
    h = Hierarchy(level_names=("total",), level_offsets=np.array([0, 1]),
                  parent=np.array([-1]), child_ptr=np.array([1, 1]),
                  codes=(np.array(["total"], dtype=object),))
    noisy = np.array([[2.6, -1.0, 3.5, 0.2]])
    for G in (0, 1, 4, 9):
        x = mh_dp(h, noisy, G)
        assert x.min() >= 0 and x.sum() == G
        assert model1_objective(h, x, noisy) == pytest.approx(brute_model1(h, noisy, G))


@pytest.mark.parametrize("seed", range(3))
def test_mh_dp_windows_do_not_change_the_optimum_at_scale(seed):
    """A few hundred leaves, many sizes, realistic geometric noise: very different initial
    windows give the same objective, and a wide-noise run needs no widening-free luck."""
    rng = np.random.default_rng(seed)
    h = random_tree(rng, depth=2, max_children=12)
    n_sizes = 40
    p = 0.5 ** np.arange(n_sizes)
    leaf = rng.poisson(200 * p[None, :] * rng.uniform(0.2, 3, (h.n_leaves, 1)))
    truth = h.aggregate(leaf)
    alpha = np.exp(-1 / 6)
    noisy = truth + rng.geometric(1 - alpha, truth.shape) - rng.geometric(1 - alpha,
                                                                          truth.shape)
    G = int(truth[0].sum())
    results = [mh_dp(h, noisy, G, delta=d) for d in (1, 5, None, 400)]
    objectives = [model1_objective(h, x, noisy) for x in results]
    assert max(objectives) == min(objectives)
    for x in results:
        check_release(h, x, G)


def test_mh_dp_zero_noise_returns_truth_on_random_trees():
    rng = np.random.default_rng(7)
    for _ in range(5):
        h = random_tree(rng, depth=int(rng.integers(1, 4)), max_children=5)
        truth = h.aggregate(rng.poisson(3.0, (h.n_leaves, 12)) * (rng.random((h.n_leaves, 12))
                                                                   < 0.6))
        G = int(truth[0].sum())
        assert mh_dp(h, truth, G).tolist() == truth.tolist()
        assert mh_dp(h, truth, G, delta=1).tolist() == truth.tolist()


def test_mh_dp_random_properties():
    """Larger random trees and noise of every sign: consistent, valid, faithful."""
    rng = np.random.default_rng(3)
    for _ in range(6):
        h = random_tree(rng, depth=int(rng.integers(1, 4)), max_children=6)
        n_sizes = int(rng.integers(1, 30))
        G = int(rng.integers(0, 500))
        noisy = rng.normal(G / (h.n_leaves * n_sizes), 8.0, (h.n_nodes, n_sizes))
        check_release(h, mh_dp(h, noisy, G), G)
        check_release(h, mh_dp(h, np.rint(noisy), G, level_weights=rng.uniform(
            0.1, 10, h.n_levels)), G)


# ---- chain (M_c^ch) ----------------------------------------------------------------------
@settings(max_examples=120, deadline=None)
@given(instances(max_cells=6), st.booleans())
def test_chain_dp_attains_brute_force_minimum_of_model3(inst, integral):
    h, noisy, G = inst
    assume(h.n_nodes * noisy.shape[1] <= 10)
    chain_noisy = noisy * 2
    if integral:
        chain_noisy = np.rint(chain_noisy)
    x = chain_dp(h, chain_noisy, G)
    check_release(h, x, G)
    got = model3_cost(h, chain_cumulative(h, x)[None], chain_noisy)[0]
    assert got == pytest.approx(brute_model3(h, chain_noisy, G), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(small_trees(max_leaves=4), st.integers(1, 2), st.integers(0, 3))
def test_model3_chains_are_exactly_the_releases(h, n_sizes, G):
    """With the '<=' fix, chain_cumulative is a bijection from the consistent valid faithful
    hierarchies onto the feasible chains of Model 3 (so decumulation is always valid)."""
    assume(h.n_nodes * n_sizes <= 9)
    releases = all_releases(h, n_sizes, G)
    chains = {tuple(chain_cumulative(h, x).ravel()) for x in releases}
    assert len(chains) == len(releases)
    chain = chain_order(h, n_sizes)
    c = candidate_chains(chain.cells.size, G)
    eq = chain.equal_next[:-1]
    c = c[np.all(c[:, :-1][:, eq] == c[:, 1:][:, eq], axis=1)]
    values = np.empty_like(c)
    values[:, chain.cells] = c
    assert {tuple(v) for v in values} == chains


def chain_dp_literal(h, chain_noisy, G) -> np.ndarray:
    """The paper's chain DP (tables with prefix-min, top-down c_i = min(v0_i, c_{i+1}) or
    equality) on the domain 0..G; returns the chain values in chain order."""
    chain = chain_order(h, chain_noisy.shape[1])
    tables = chain_cost_tables(chain_noisy.ravel()[chain.cells], chain.equal_next, 0, G)
    c = np.empty(chain.cells.size, dtype=np.int64)
    c[-1] = G
    for i in range(c.size - 2, -1, -1):
        c[i] = c[i + 1] if chain.equal_next[i] else min(int(np.argmin(tables[i])), c[i + 1])
    return c


@pytest.mark.parametrize("seed", range(8))
def test_chain_dp_matches_literal_recurrence(seed):
    rng = np.random.default_rng(seed)
    h = random_tree(rng, depth=int(rng.integers(1, 3)), max_children=3)
    n_sizes, G = int(rng.integers(1, 6)), int(rng.integers(0, 25))
    truth = h.aggregate(rng.multinomial(G, np.ones(h.n_leaves * n_sizes) / (h.n_leaves
                                                                              * n_sizes))
                        .reshape(h.n_leaves, n_sizes))
    chain_noisy = chain_cumulative(h, truth) + rng.integers(-4, 5, truth.shape)
    if seed % 2:
        chain_noisy = chain_noisy + rng.random(truth.shape) * 0.9
    x = chain_dp(h, chain_noisy, G)
    check_release(h, x, G)
    ref = chain_dp_literal(h, chain_noisy, G)
    chain = chain_order(h, n_sizes)
    got = chain_cumulative(h, x).ravel()[chain.cells]
    y = chain_noisy.ravel()[chain.cells]
    assert ((got - y) ** 2).sum() == pytest.approx(((ref - y) ** 2).sum(), abs=1e-9)


def test_chain_order_is_size_major_post_order():
    h = tree([[2], [2, 1]])  # root -> A{a0, a1}, B{b0}
    labels = h.labels()
    chain = chain_order(h, 2)
    nodes = chain.cells // 2
    assert [labels[v] for v in nodes[:6]] == ["00", "01", "0", "10", "1", "total"]
    assert (chain.cells[6:] - chain.cells[:6]).tolist() == [1] * 6
    assert chain.level[:6].tolist() == [2, 2, 1, 2, 1, 0]
    assert chain.equal_next.tolist() == [False, True, False, True, True, False] * 2


def test_chain_from_region_cumulative_is_exact_on_true_counts():
    rng = np.random.default_rng(11)
    for _ in range(4):
        h = random_tree(rng, depth=int(rng.integers(1, 4)), max_children=4)
        truth = h.aggregate(rng.poisson(2.0, (h.n_leaves, 7)))
        derived = chain_from_region_cumulative(h, cumulative(truth))
        assert np.array_equal(derived, chain_cumulative(h, truth))
        G = int(truth[0].sum())
        assert chain_dp(h, derived, G).tolist() == truth.tolist()


def test_chain_dp_random_properties():
    rng = np.random.default_rng(5)
    for _ in range(6):
        h = random_tree(rng, depth=int(rng.integers(1, 4)), max_children=6)
        n_sizes = int(rng.integers(1, 25))
        truth = h.aggregate(rng.poisson(4.0, (h.n_leaves, n_sizes)))
        G = int(truth[0].sum())
        noisy_cum = cumulative(truth) + rng.laplace(0, 3, truth.shape)
        check_release(h, chain_dp(h, chain_from_region_cumulative(h, noisy_cum), G), G)
        literal = chain_cumulative(h, truth) + rng.integers(-9, 10, truth.shape)
        check_release(h, chain_dp(h, literal, G), G)


# ---- M_c^dp -------------------------------------------------------------------------------
def test_isotonic_rows_matches_row_by_row_scipy():
    rng = np.random.default_rng(2)
    for values in (rng.integers(-50, 50, (30, 17)).astype(float),
                   rng.normal(0, 1e3, (12, 40)), np.cumsum(rng.poisson(3, (5, 9)), axis=1)
                   + rng.integers(-2, 3, (5, 9)) * 1e6):
        fitted = isotonic_rows(values)
        for row, got in zip(values, fitted, strict=True):
            assert np.allclose(got, isotonic_regression(row).x, rtol=0, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(instances(max_cells=8))
def test_mc_dp_is_mh_dp_of_the_rounded_isotonic_fit_anchored_at_the_root(inst):
    """Integer data, so pooled means like 2.5 are exact and round the same way. Below the
    root the program's histograms rank the groups and give the group counts; the root is
    its own fit."""
    h, noisy, G = inst
    noisy_cum = np.cumsum(np.rint(noisy), axis=1)
    x = mc_dp(h, noisy_cum, G)
    check_release(h, x, G)
    monotone = np.rint(np.clip([isotonic_regression(r).x for r in noisy_cum], 0, G))
    assert np.all(np.diff(monotone, axis=1) >= 0)
    program = mh_dp(h, np.diff(monotone, axis=1, prepend=0), G)
    assert x.sum(axis=1).tolist() == program.sum(axis=1).tolist()
    assert x[0].tolist() == rescale_rows(np.diff(monotone[:1], prepend=0), [G])[0].tolist()


def test_mc_dp_random_properties_and_zero_noise():
    rng = np.random.default_rng(9)
    for _ in range(5):
        h = random_tree(rng, depth=int(rng.integers(1, 4)), max_children=6)
        n_sizes = int(rng.integers(2, 30))
        truth = h.aggregate(rng.poisson(5.0, (h.n_leaves, n_sizes)))
        G = int(truth[0].sum())
        assert mc_dp(h, cumulative(truth), G).tolist() == truth.tolist()
        alpha = np.exp(-1 / 3)
        noise = rng.geometric(1 - alpha, truth.shape) - rng.geometric(1 - alpha, truth.shape)
        check_release(h, mc_dp(h, cumulative(truth) + noise, G), G)


# ---- input checks -------------------------------------------------------------------------
def test_invalid_inputs_are_rejected(example):
    h, truth, noisy, G = example
    with pytest.raises(InputError, match="shape"):
        mh_dp(h, noisy[:2], G)
    with pytest.raises(InputError, match="non-finite"):
        mc_dp(h, np.where(truth > 1, np.nan, truth), G)
    for bad in (-1, 2.5, np.inf):
        with pytest.raises(InputError, match="total_groups"):
            chain_dp(h, truth, bad)
    with pytest.raises(InputError, match="level_weights"):
        mh_dp(h, noisy, G, level_weights=[1.0, 0.0])
    with pytest.raises(InputError, match="level_weights"):
        mh_dp(h, noisy, G, level_weights=[1.0])
    with pytest.raises(InputError, match="delta"):
        mh_dp(h, noisy, G, delta=-3)
    with pytest.raises(InputError, match="n_sizes"):
        chain_order(h, 0)
    assert mh_dp(h, noisy, 0).tolist() == np.zeros_like(truth).tolist()
