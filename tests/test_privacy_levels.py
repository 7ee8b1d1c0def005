"""Per-level budgets derived from the privacy plan (`hierdp_core.privacy.levels`): the split's
shares of the plan's share of the budget, the noise at its exact scale, in the currency of
the plan's noise, and no overspending."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from hierdp_core.errors import BudgetError
from hierdp_core.privacy import levels as levels_module
from hierdp_core.privacy.budget import APPROX_DP, PURE_DP, ZCDP, PrivacyBudget
from hierdp_core.privacy.levels import derive_levels
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, PrivacyPlan, Stage

NAMES = ("total", "region", "town")


def _plan(noise="laplace", share=1.0, sensitivity=1.0, definition=PURE_DP, stages=1):
    if stages == 1:
        return PrivacyPlan("toy", definition,
                           (Stage("levels", ADD_REMOVE_PERSON, sensitivity, noise, share),))
    return PrivacyPlan("toy", definition, (
        Stage("partition", ADD_REMOVE_PERSON, None, noise, 0.3),
        Stage("measurement", ADD_REMOVE_PERSON, sensitivity, noise, 0.7)))


def test_doctests():
    assert doctest.testmod(levels_module).failed == 0


def test_levels_spend_their_share_with_the_exact_laplace_scale():
    levels = derive_levels(_plan(sensitivity=2.0), PrivacyBudget.pure(2.0),
                           np.array([0.0, 0.25, 0.75]), NAMES, "counts")
    assert levels[0].budget is None and levels[0].noise is None and levels[0].share == 0.0
    assert [lv.budget.value for lv in levels[1:]] == [0.5, 1.5]
    assert [lv.noise.scale for lv in levels[1:]] == [2.0 / 0.5, 2.0 / 1.5]  # b = Δ1 / ε_l
    assert [lv.noise.name for lv in levels[1:]] == ["laplace", "laplace"]


def test_a_plan_spending_half_gives_each_level_half_its_share():
    levels = derive_levels(_plan("discrete-gaussian", share=0.5, definition=ZCDP),
                           PrivacyBudget.zcdp(1.0), np.array([0.5, 0.5, 0.0]), NAMES, "flows")
    assert [lv.share for lv in levels] == [0.25, 0.25, 0.0]
    assert levels[0].budget.value == 0.25
    assert levels[0].noise.variance == pytest.approx(1 / (2 * 0.25), rel=1e-3)  # σ² = Δ2²/(2ρ)


def test_gaussian_noise_is_accounted_in_rho_and_pure_noise_in_epsilon():
    approx = PrivacyBudget.approx(1.0, 1e-6)
    rho = derive_levels(_plan("discrete-gaussian", definition=ZCDP), approx,
                        np.array([1.0, 0.0, 0.0]), NAMES, "counts")[0].budget
    pure = derive_levels(_plan(), approx, np.array([1.0, 0.0, 0.0]), NAMES, "counts")[0]
    kept = derive_levels(_plan(definition=APPROX_DP), approx, np.array([1.0, 0.0, 0.0]),
                         NAMES, "flows")[0]
    assert rho.definition == ZCDP and rho.value < 1.0
    assert pure.budget.definition == PURE_DP and pure.budget.value == 1.0
    assert kept.budget.definition == APPROX_DP and kept.budget.delta == 1e-6


def test_a_composite_plan_gives_levels_their_budget_and_leaves_the_noise_to_its_stages():
    levels = derive_levels(_plan(stages=2), PrivacyBudget.pure(1.0),
                           np.array([0.2, 0.3, 0.5]), NAMES, "ranges")
    assert [lv.budget.value for lv in levels] == [0.2, 0.3, 0.5]
    assert all(lv.noise is None for lv in levels)


def test_a_split_that_overspends_is_refused():
    with pytest.raises(BudgetError, match="overspending"):
        derive_levels(_plan(), PrivacyBudget.pure(1.0), np.array([0.6, 0.6, 0.6]), NAMES,
                      "counts")
