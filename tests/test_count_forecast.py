"""hierdp_core.count_forecast and privacy.gls_moments (issue 30 item 3): the a priori
error of a counts release per level. The passes' moments equal those of the estimator's
coefficients (the least-squares estimate applied to unit measurements, a dense matrix on
small trees); the forecast of least squares is within 10% of the mean |error| measured
over independent releases (a point for continuous or wide integer noise, a range holding
it for integer noise that is mostly 0); TopDown's is an upper bound."""

from __future__ import annotations

import numpy as np
import pytest

from hierdp_core.consistency.least_squares import tree_least_squares
from hierdp_core.count_forecast import count_forecast, folded_normal_mean, is_point
from hierdp_core.hierarchy import build_from_codes
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.gls_moments import GlsPasses, power_sums
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import CountData


def ragged_tree():
    """root > 3 regions (one with a single district) > 6 districts > 11 leaves."""
    district = np.array([0, 0, 1, 1, 1, 2, 3, 3, 4, 5, 5])
    region = np.array([0, 0, 0, 1, 2, 2])[district]
    h, _ = build_from_codes([region, district, np.arange(11)], ["region", "district", "leaf"])
    return h


@pytest.mark.parametrize("variances, root_invariant", [
    ([1.0, 2.0, 0.5, 3.0], False), ([np.inf, 2.0, 0.5, 3.0], False),
    ([1.0, 2.0, 0.5, 3.0], True), ([1.0, np.inf, 0.5, 3.0], True)])
def test_power_sums_are_those_of_the_estimators_coefficients(variances, root_invariant):
    h = ragged_tree()
    v = np.array(variances)
    coef = tree_least_squares(h, np.eye(h.n_nodes), v,
                              np.zeros(h.n_nodes) if root_invariant else None)
    node_v = v[h.level_of_nodes()]
    measured = np.isfinite(node_v)
    weights = np.array([0.3, 0.7, 0.2, 0.9])
    passes = GlsPasses.of(h, v, root_invariant)
    np.testing.assert_allclose(np.concatenate(passes.variances),
                               coef**2 @ np.where(measured, node_v, 0), atol=1e-12)
    for power in (1, 4):
        np.testing.assert_allclose(
            np.concatenate(power_sums(passes, weights, power)),
            np.abs(coef)**power @ np.where(measured, weights[h.level_of_nodes()], 0),
            atol=1e-12)


def test_folded_normal_mean():
    assert folded_normal_mean(np.array([0.0]), np.array([1.0]))[0] == \
        pytest.approx(np.sqrt(2 / np.pi))
    assert folded_normal_mean(np.array([-3.0, 2.0]), np.array([0.0, 1e-9])).tolist() == \
        pytest.approx([3.0, 2.0])


def repeated(h, runs: int, seed: int = 3) -> CountData:
    """``runs`` copies of one table of leaves of 0-40 people as category columns (the
    count mechanisms treat them as independent releases)."""
    leaves = np.random.default_rng(seed).integers(0, 40, h.n_leaves)
    return CountData(h, np.tile(leaves[:, None], runs),
                     categories=tuple(map(str, range(runs))), category_columns=("run",))


def measured_mae(mechanism: str, data: CountData, budget) -> tuple[np.ndarray, np.ndarray]:
    """Mean |error| per level over the releases and its standard error."""
    release = get_mechanism(mechanism).release(data, budget, source=NoiseSource(seed=11))
    error = np.abs(release.values - data.node_counts())
    h = data.hierarchy
    per = [error[h.level_slice(lv)].mean(axis=0) for lv in range(h.n_levels)]
    return (np.array([p.mean() for p in per]),
            np.array([p.std(ddof=1) / np.sqrt(p.size) for p in per]))


def forecast(mechanism: str, h, budget):
    m = get_mechanism(mechanism)
    return count_forecast(h, m.level_plans(h, budget, None, m.params())[1],
                          "least-squares", at_most=mechanism == "topdown")


@pytest.mark.parametrize("eps", [0.5, 3.0])
def test_least_squares_point_forecast_within_10_percent(eps):
    """Geometric noise of epsilon 0.125 and 0.75 per level: 1,500 releases, the root's
    mean |error| known to about 2.5% (its standard error); 10% + 3 standard errors."""
    h = ragged_tree()
    budget = PrivacyBudget.pure(eps)
    fc = forecast("least-squares", h, budget)
    assert (fc["mae_low"] == fc["mae"]).all() and (fc["mae"] == fc["mae_high"]).all()
    mae, se = measured_mae("least-squares", repeated(h, 1500), budget)
    assert np.all(np.abs(fc["mae"] - mae) <= 0.10 * mae + 3 * se), (fc["mae"], mae, se)


def test_mostly_zero_noise_is_a_range_that_holds():
    """Epsilon 12 (3 per level): the geometric noise is 0 in 90% of cells, the error is
    far from Gaussian (the old Laplace model said 3-7 times the error); the range holds
    it."""
    h = ragged_tree()
    budget = PrivacyBudget.pure(12.0)
    fc = forecast("least-squares", h, budget)
    assert not is_point([p.noise for p in get_mechanism("least-squares").level_plans(
        h, budget, None, {"noise": "auto", "root_invariant": False})[1]])
    mae, se = measured_mae("least-squares", repeated(h, 4000), budget)
    assert np.all(fc["mae_low"] * 0.9 - 3 * se <= mae), (fc["mae_low"], mae, se)
    assert np.all(mae <= fc["mae_high"] * 1.1 + 3 * se), (fc["mae_high"], mae, se)


def test_topdown_forecast_is_an_upper_bound():
    """TopDown keeps counts at or above 0: on leaves of a few people, half of them
    empty, it is off by far less than least squares at small epsilon; never above."""
    h = ragged_tree()
    budget = PrivacyBudget.pure(0.3)
    fc = forecast("topdown", h, budget)
    assert (fc["mae_low"] == 0).all()
    data = repeated(h, 800)
    data = CountData(h, np.where(np.arange(h.n_leaves)[:, None] % 2 == 0, 0,
                                 data.leaf_counts // 10), categories=data.categories,
                     category_columns=data.category_columns)
    mae, se = measured_mae("topdown", data, budget)
    assert np.all(mae <= fc["mae"] * 1.1 + 3 * se), (fc["mae"], mae)
    assert mae[-1] < 0.7 * fc["mae"].iloc[-1]  # far below at the sparse leaves
