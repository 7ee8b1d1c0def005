"""The budget-split optimiser: closed forms against brute force, the tree least-squares
variance against dense GLS and a Monte-Carlo run of the real mechanism, never worse than
uniform or the geometric preset, and properties of the shares."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import tree_tables
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.stats import chi2

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.hierarchy import build_from_codes
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget, split_shares
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.privacy.split_optimiser import (
    FAMILIES,
    Goal,
    NoiseModel,
    closed_form_shares,
    expected_errors,
    geometric_shares,
    gls_variances,
    level_errors,
    optimise_split,
)
from hierdp_core.queries.counts import CountData, count_data_from_table

PURE = PrivacyBudget.pure(1.0)
RHO = PrivacyBudget.zcdp(0.5)
#: the exponent p of the budget in a level's error c * b^(-p), written out independently
EXPONENTS = {(False, "mse"): 2.0, (False, "mae"): 1.0, (True, "mse"): 1.0, (True, "mae"): 0.5}


@pytest.fixture(scope="module")
def tree():
    """root > 3 states (1, 2 and 4 counties) > 7 counties > 12 tracts: irregular."""
    tracts = np.array(["a1", "a2", "b1", "c1", "c2", "c3", "d1", "e1", "e2", "f1", "g1", "g2"])
    counties = np.array([t[0] for t in tracts])
    states = np.array(["S" if c == "a" else "T" if c in "bc" else "U" for c in counties])
    return build_from_codes([states, counties, tracts], ["state", "county", "tract"])[0]


# ---- closed forms -----------------------------------------------------------------------
def _simplex_minimum(f, n):
    """Brute force: SLSQP over the simplex from several starts."""
    rng = np.random.default_rng(0)
    best = None
    for start in rng.dirichlet(np.ones(n), 5):
        res = minimize(f, start, method="SLSQP", bounds=[(1e-9, 1)] * n,
                       constraints=[{"type": "eq", "fun": lambda s: s.sum() - 1}],
                       options={"ftol": 1e-14, "maxiter": 500})
        if best is None or res.fun < best.fun:
            best = res
    return best


@pytest.mark.parametrize(("zcdp", "metric"), list(EXPONENTS))
def test_weighted_closed_form_is_the_minimum(zcdp, metric):
    rng = np.random.default_rng(1)
    p = EXPONENTS[(zcdp, metric)]
    for _ in range(5):
        n = int(rng.integers(2, 6))
        w = rng.uniform(0.01, 10, n)

        def objective(s, w=w):
            return float(np.sum(w * (3.0 * s) ** -p))

        shares = closed_form_shares(w, zcdp, metric)
        brute = _simplex_minimum(objective, n)
        assert objective(shares) <= brute.fun * (1 + 1e-9)
        np.testing.assert_allclose(shares, brute.x, atol=2e-3)


@pytest.mark.parametrize("zcdp", [False, True])
def test_worst_relative_closed_form_is_the_minimum(zcdp):
    rng = np.random.default_rng(2)
    p = EXPONENTS[(zcdp, "mae")]
    for _ in range(5):
        n = int(rng.integers(2, 6))
        pop = 10 ** rng.uniform(1, 6, n)

        def worst(s, pop=pop):
            return float(np.max(s ** -p / pop))

        shares = closed_form_shares(1 / pop, zcdp, "mae", "worst-relative")
        rel = shares ** -p / pop
        np.testing.assert_allclose(rel, rel[0], rtol=1e-9)  # all levels equal
        for s in np.random.default_rng(3).dirichlet(np.ones(n), 200):
            assert worst(shares) <= worst(s) * (1 + 1e-12)


def test_raw_closed_form_through_the_real_errors(tree):
    """The closed form minimises the objective computed from the noise model itself."""
    rng = np.random.default_rng(4)
    for budget in (PURE, RHO):
        model = NoiseModel.of(budget)
        for goal in (Goal.weighted([1, 5, 2, 9]), Goal.weighted([1, 5, 2, 9], metric="mae"),
                     Goal.worst_relative([1e6, 5e4, 3e3, 800])):
            choice = optimise_split(tree, "raw", budget, goal)
            assert choice.method == "closed form"
            for s in rng.dirichlet(np.ones(4), 100):
                errors = level_errors(tree, "raw", model, s, goal.metric)
                assert choice.objective <= goal.objective(errors) * (1 + 1e-9)


def test_raw_errors_are_the_noise_distributions_own(tree):
    shares = np.array([0.1, 0.2, 0.3, 0.4])
    pure = expected_errors(tree, "raw", NoiseModel.of(PURE, "laplace"), shares)
    np.testing.assert_allclose(pure["mae"], 1 / shares)  # Laplace: E|e| = b = 1/eps
    np.testing.assert_allclose(pure["mse"], 2 / shares**2)
    gauss = expected_errors(tree, "raw", NoiseModel.of(RHO, "gaussian"), shares)
    np.testing.assert_allclose(gauss["mse"], 1 / (2 * 0.5 * shares))
    np.testing.assert_allclose(gauss["mae"], np.sqrt(2 / np.pi * gauss["mse"]))


# ---- the least-squares variance ---------------------------------------------------------
def _dense_gls_variances(h, level_variance, root_invariant):
    """Diagonal of A (A' W A)^-1 A' over measured nodes; an invariant root as a constraint."""
    a = h.aggregate(np.eye(h.n_leaves))
    node_var = np.repeat(level_variance, np.diff(h.level_offsets))
    measured = np.isfinite(node_var)
    measured[0] &= not root_invariant
    m = a[measured].T @ (a[measured] / node_var[measured, None])
    cov = np.linalg.inv(m)
    if root_invariant:  # minus the part along the constraint sum(x) = root
        u = cov @ a[0]
        cov = cov - np.outer(u, u) / (a[0] @ u)
    return np.einsum("ij,jk,ik->i", a, cov, a)


@pytest.mark.parametrize("root_invariant", [False, True])
@pytest.mark.parametrize("level_variance", [[1.0, 2.0, 0.5, 3.0], [4.0, np.inf, 1.0, 2.0],
                                            [np.inf, 0.3, np.inf, 7.0]])
def test_gls_variances_match_dense_gls(tree, level_variance, root_invariant):
    ours = np.concatenate(gls_variances(tree, np.array(level_variance), root_invariant))
    dense = _dense_gls_variances(tree, np.array(level_variance), root_invariant)
    np.testing.assert_allclose(ours, dense, rtol=1e-9, atol=1e-12)


def test_gls_needs_the_leaves_measured(tree):
    with pytest.raises(BudgetError, match="finest level"):
        gls_variances(tree, np.array([1.0, 1.0, 1.0, np.inf]))


def _trials(tree, k: int, mechanism: str, budget, shares, seed: int, **params):
    """Errors (n_nodes, k) of k independent releases at once (one per category column)."""
    leaf = np.random.default_rng(seed).integers(0, 1000, (tree.n_leaves, k))
    data = CountData(tree, leaf, categories=tuple(map(str, range(k))),
                     category_columns=("trial",))
    release = get_mechanism(mechanism).release(data, budget, split=shares,
                                               source=NoiseSource(seed=seed), **params)
    return release.values - data.node_counts()


def test_gls_variance_matches_the_real_mechanism(tree):
    """Gaussian noise: sum of k squared errors / P ~ chi-square(k) per node; every node's
    sample variance inside its two-sided 1e-6 interval (Bonferroni over the nodes)."""
    k = 4000
    shares = np.array([0.1, 0.4, 0.2, 0.3])
    errors = _trials(tree, k, "least-squares", RHO, shares, seed=5, noise="gaussian")
    v = NoiseModel.of(RHO, "gaussian").variances(shares)
    predicted = np.concatenate(gls_variances(tree, v))
    alpha = 1e-6 / tree.n_nodes
    lo, hi = chi2.ppf(alpha / 2, k) / k, chi2.ppf(1 - alpha / 2, k) / k
    ratio = (errors**2).mean(axis=1) / predicted
    assert np.all((lo < ratio) & (ratio < hi)), ratio


def test_expected_abs_error_matches_the_real_mechanism(tree):
    """E|e| under Laplace noise: exact for raw; for least squares the rest of each node's
    error is taken as Gaussian: an overestimate by up to 3% on this tree."""
    k = 4000
    shares = np.array([0.1, 0.4, 0.2, 0.3])
    model = NoiseModel.of(PURE, "laplace")
    for mechanism, family, params, slack in (("raw-laplace", "raw", {}, 0.0),
                                             ("least-squares", "least-squares",
                                              {"noise": "laplace"}, 0.04)):
        errors = np.abs(_trials(tree, k, mechanism, PURE, shares, seed=6, **params))
        levels = tree.level_of_nodes()
        measured = np.array([errors[levels == lv].mean() for lv in range(tree.n_levels)])
        sd = np.array([errors[levels == lv].std() / np.sqrt(errors[levels == lv].size)
                       for lv in range(tree.n_levels)])
        predicted = level_errors(tree, family, model, shares, "mae")
        assert np.all(np.abs(measured - predicted) <= 5 * sd + slack * predicted)


# ---- the optimiser ----------------------------------------------------------------------
GOALS = (Goal.weighted(), Goal.weighted([0, 0, 1, 3], metric="mae"),
         Goal.weighted([1, 3, 12, 12]), Goal.worst_relative([None, 5e4, 3e3, 800]))


@pytest.mark.parametrize("family", ["least-squares", "topdown"])
@pytest.mark.parametrize("budget", [PURE, RHO], ids=["pure", "zcdp"])
@pytest.mark.parametrize("goal", GOALS, ids=["w1", "leaf-mae", "w-sizes", "worst"])
def test_never_worse_than_uniform_geometric_or_random_splits(tree, family, budget, goal):
    choice = optimise_split(tree, family, budget, goal)
    model = NoiseModel.of(budget)

    def objective(shares):
        return goal.objective(level_errors(tree, family, model, shares, goal.metric))

    assert choice.objective == pytest.approx(objective(choice.shares), rel=1e-12)
    assert choice.objective <= choice.uniform_objective
    assert choice.uniform_objective == pytest.approx(objective(np.full(4, 0.25)), rel=1e-12)
    assert choice.objective <= objective(geometric_shares(tree))
    for s in np.random.default_rng(7).dirichlet(np.ones(4), 100):
        assert choice.objective <= objective(s) * (1 + 1e-3)


def test_root_invariant_gives_the_root_nothing(tree):
    choice = optimise_split(tree, "least-squares", RHO, Goal.weighted(), root_invariant=True)
    assert choice.shares[0] == 0 and choice.errors["mse"].iloc[0] == 0
    assert choice.objective <= choice.uniform_objective


def test_split_argument_is_a_valid_split(tree):
    choice = optimise_split(tree, "raw", PURE, Goal.weighted([1, 2, 3, 4]))
    weights = [float(x) for x in choice.split_argument.split(",")]
    np.testing.assert_allclose(split_shares(4, weights=weights), choice.shares, rtol=1e-5)
    assert list(choice.errors.columns) == ["level", "level_name", "share", "mse", "rmse", "mae"]
    assert list(choice.uniform_errors["share"]) == [0.25] * 4


def test_refusals(tree):
    with pytest.raises(BudgetError, match="every level"):
        optimise_split(tree, "raw", PURE, Goal.weighted([0, 1, 1, 1]))
    with pytest.raises(InputError, match="invariant root"):
        optimise_split(tree, "raw", PURE, Goal.weighted(), root_invariant=True)
    with pytest.raises(InputError, match="family"):
        optimise_split(tree, "h2", PURE, Goal.weighted())
    with pytest.raises(InputError, match="one value per level"):
        optimise_split(tree, "least-squares", PURE, Goal.weighted([1, 1]))
    with pytest.raises(InputError, match="non-negative"):
        Goal.weighted([1, -1])
    with pytest.raises(InputError, match="population bins"):
        Goal.worst_relative([None, 0.0])
    with pytest.raises(InputError, match="metric"):
        Goal.weighted(metric="max")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree_tables(max_depth=3, max_children=3), st.sampled_from(FAMILIES),
       st.sampled_from([PURE, RHO]), st.sampled_from(("mse", "mae")),
       st.lists(st.floats(0.1, 100), min_size=4, max_size=4), st.floats(1e-3, 1e3))
def test_shares_form_a_split_and_ignore_the_scale_of_the_weights(tt, family, budget, metric,
                                                                 raw_weights, scale):
    """Scaling w changes neither the shares (raw) nor the objective they reach (the others:
    a chain of single children makes several splits equally good)."""
    h = count_data_from_table(tt.table, tt.levels, count_column="n").hierarchy
    goal = Goal.weighted(raw_weights[:h.n_levels], metric)
    choice = optimise_split(h, family, budget, goal)
    scaled = optimise_split(h, family, budget,
                            Goal.weighted(np.array(goal.weights) * scale, metric)).shares
    shares = choice.shares
    assert shares.sum() == pytest.approx(1.0) and np.all(shares >= 0) and shares[-1] > 0
    if family == "raw":
        assert np.all(shares > 0)
        np.testing.assert_allclose(scaled, shares, rtol=1e-9)
    errors = level_errors(h, family, NoiseModel.of(budget), scaled, metric)
    assert goal.objective(errors) == pytest.approx(choice.objective, rel=1e-5)


def test_a_far_line_search_step_leaves_the_leaves_a_share():
    """A chain with heavy weights on the top levels (found by hypothesis): BFGS steps so far
    that the leaves' softmax share underflowed to 0 and least squares raised BudgetError."""
    table = pd.DataFrame({"level1": ["0"] * 3, "level2": ["0.00", "0.0", "0.00"],
                          "level3": ["0.00.00", "0.0.0", "0.00.0"], "n": [9, 1, 2]})
    h = count_data_from_table(table, ["level1", "level2", "level3"],
                              count_column="n").hierarchy
    choice = optimise_split(h, "least-squares", PURE, Goal.weighted([74.0, 100.0, 1.1, 2.0]))
    assert choice.shares.sum() == pytest.approx(1.0) and choice.shares[-1] > 0
    assert choice.objective <= choice.uniform_objective
