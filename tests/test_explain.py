"""hierdp_core.explain: the plain-language explanation reads the neighbouring relation from
the mechanism's privacy plan, e^epsilon (zCDP through the core's conversion), the a priori
errors (`count_forecast`; the split optimiser's model for Laplace noise), and the
verdict's conditions."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from capability_helpers import declare

from hierdp_core.explain import NEIGHBOURS, explain
from hierdp_core.mechanisms.base import get_mechanism, optimiser_family
from hierdp_core.number_text import error_digits
from hierdp_core.privacy.budget import PrivacyBudget, rho_to_epsilon
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, PrivacyPlan, Stage
from hierdp_core.privacy.split_optimiser import NoiseModel, expected_errors


def test_pure_epsilon_is_a_bound_on_the_odds(small_county_data):
    e = explain(small_county_data, "topdown", PrivacyBudget.pure(0.5))
    assert e.epsilon == 0.5 and e.delta is None
    assert e.likelihood_ratio == pytest.approx(math.exp(0.5))
    assert "e^ε ≈ 1.65 times as likely with one person's data" in e.guarantee_text
    assert "except with a probability" not in e.guarantee_text


def test_zcdp_goes_through_the_core_conversion(small_county_data):
    budget = PrivacyBudget.zcdp(0.1, 1e-8)
    e = explain(small_county_data, "least-squares", budget)
    eps = rho_to_epsilon(0.1, 1e-8)
    assert e.epsilon == eps and e.likelihood_ratio == pytest.approx(math.exp(eps))
    assert f"implies ε = {eps:.3g} at δ = 1e-08" in e.guarantee_text
    assert "except with a probability of at most δ = 1e-08" in e.guarantee_text
    no_delta = explain(small_county_data, "least-squares", PrivacyBudget.zcdp(0.1))
    assert math.isnan(no_delta.epsilon) and "give a δ" in no_delta.guarantee_text


def test_the_neighbour_comes_from_the_declared_plan(small_county_data, monkeypatch):
    e = explain(small_county_data, "raw-laplace", PrivacyBudget.pure(1.0))
    assert e.neighbour == NEIGHBOURS[ADD_REMOVE_PERSON][0] == "one person"
    assert e.unit == "people" and "in people" in e.error_text
    mechanism = get_mechanism("raw-laplace")  # a plan declaring another relation is followed
    household = PrivacyPlan("raw-laplace", "pure-dp",
                            (Stage("release", "add-remove-group", 1.0, "laplace", 1.0),))
    monkeypatch.setattr(type(mechanism), "privacy_plan", lambda self, **p: household)
    e = explain(small_county_data, "raw-laplace", PrivacyBudget.pure(1.0))
    assert e.neighbour == "one household" and "in households" in e.error_text


@pytest.mark.parametrize("mechanism", ["raw-laplace", "least-squares", "topdown"])
def test_continuous_noise_errors_are_the_split_optimisers(small_county_data, mechanism):
    """With Laplace noise (the split optimiser's model) the forecast is the optimiser's."""
    h = small_county_data.hierarchy
    budget, split = PrivacyBudget.pure(1.0), [1.0, 2.0, 4.0]
    params = {} if mechanism == "raw-laplace" else {"noise": "laplace"}
    e = explain(small_county_data, mechanism, budget, split, **params)
    model = NoiseModel.of(budget, "laplace")
    expected = expected_errors(h, optimiser_family(mechanism), model,
                               np.array(split) / sum(split))
    np.testing.assert_allclose(e.errors["mae"], expected["mae"])
    np.testing.assert_allclose(e.errors["rmse"], expected["rmse"])
    assert list(e.errors["units"]) == [1, 6, 60]
    shown = set(e.error_table())  # a point: the range's ends are not shown
    assert ({"mae_low", "mae_high"} <= shown) == (mechanism == "topdown")
    if mechanism == "topdown":  # an upper bound
        assert (e.errors["mae_low"] == 0).all()
        assert f"county up to {expected['mae'].iloc[2]:,.1f}" in e.error_text
    else:
        assert f"county {expected['mae'].iloc[2]:,.1f}" in e.error_text
    assert "a range where" not in e.error_text  # every level a point or an upper bound


def test_integer_noise_of_a_large_budget_is_a_range(small_county_data):
    """Geometric noise of epsilon 20 per level is mostly 0: its error is far below the
    Laplace model's (the old forecast), and shown as a range holding the point."""
    budget = PrivacyBudget.pure(60.0)
    e = explain(small_county_data, "least-squares", budget)
    laplace = expected_errors(small_county_data.hierarchy, "least-squares",
                              NoiseModel.of(budget, "laplace"), np.full(3, 1 / 3))
    assert (e.errors["mae"] < laplace["mae"] / 5).all()
    assert (e.errors["mae_low"] < e.errors["mae"]).all()
    assert (e.errors["mae"] <= e.errors["mae_high"]).all()
    low, high = e.errors.loc[2, ["mae_low", "mae_high"]]
    assert f"county {low:,.{error_digits(low)}f} to {high:,.{error_digits(high)}f}" \
        in e.error_text
    assert "a range where the noise is mostly 0" in e.error_text


def test_a_mechanism_the_model_lacks_gets_its_ledger_noise(small_county_data, monkeypatch):
    declare(monkeypatch, "raw-laplace", split_optimiser=False)
    e = explain(small_county_data, "raw-laplace", PrivacyBudget.pure(2.0))
    ledger = get_mechanism("raw-laplace").ledger(small_county_data, PrivacyBudget.pure(2.0))
    np.testing.assert_allclose(e.errors["mae"], ledger["expected_abs_error"])
    assert e.errors["rmse"].isna().all() and "raw measurement noise" in e.error_text


def test_an_unmeasured_raw_level_falls_back_to_the_ledger(small_county_data):
    e = explain(small_county_data, "raw-laplace", PrivacyBudget.pure(1.0), [0.0, 1.0, 1.0])
    assert math.isnan(e.errors["mae"].iloc[0]) and "total: not measured" in e.error_text


def test_root_invariant_is_said_unprotected_and_not_measured(small_county_data):
    e = explain(small_county_data, "topdown", PrivacyBudget.pure(1.0), root_invariant=True)
    assert "NOT protected" in e.neighbour_text
    assert e.errors["mae"].iloc[0] == 0.0  # published exactly


def test_the_verdict_conditions(small_county_data):
    e = explain(small_county_data, "topdown", PrivacyBudget.pure(1.0))
    met = [m for _, m in e.conditions]
    assert met == [None, True, False]  # noise decided at release; structure read from data
    assert e.verdict_text.startswith("Even with secure noise")
    declared = replace(small_county_data, declared_structure=True)
    e = explain(declared, "topdown", PrivacyBudget.pure(1.0))
    assert [m for _, m in e.conditions] == [None, True, True]
    assert e.verdict_text == "Released with secure noise, this configuration is publishable."
    text = e.markdown()
    assert "**When it is publishable.**" in text and "- ✓" not in text
    for condition, mark in zip(e.conditions, "○✓✓", strict=True):  # each on a line of its own
        assert f"  \n{mark} {condition[0]}" in text  # (Markdown's hard break: two spaces)


def test_a_large_epsilon_bounds_the_odds_in_plain_figures(small_county_data):
    e = explain(small_county_data, "topdown", PrivacyBudget.pure(20.0))
    assert "e^ε ≈ 485,000,000 times as likely" in e.guarantee_text  # e^20, 3 figures
