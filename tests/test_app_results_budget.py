"""The Total ε (or ρ) slider beside the Results map (AppTest): one setting with Mechanism &
budget's slider; moving it re-releases with the new budget, which the ledger and the
accountant then hold to. A first visit to Mechanism & budget, which fills in the
mechanism's default parameters, keeps the release."""

from __future__ import annotations

import math

import pytest

from hierdp_core.errors import BudgetError
from hierdp_core.privacy.budget import Accountant
from hierdp_core.ui import session
from hierdp_core.ui.release import release_token
from tests.test_app import assert_clean, page

RESULTS, MECHANISM = "pages/4_Results.py", "pages/3_Mechanism_and_budget.py"


def results_at(epsilon: float):
    """The Results page on the US counties, its ε slider then moved to ``epsilon``."""
    at = page(RESULTS, "us-counties").run()
    assert_clean(at)
    assert at.select_slider(key="res_epsilon").value == 1.0  # the setting's default
    at.select_slider(key="res_epsilon").set_value(epsilon).run()
    assert_clean(at)
    return at


def test_moving_the_results_slider_re_releases_with_the_new_epsilon():
    at = page(RESULTS, "us-counties").run()
    before = at.session_state[session.RELEASE]
    assert before.privacy["epsilon"] == pytest.approx(1.0)
    at.select_slider(key="res_epsilon").set_value(0.1).run()
    assert_clean(at)
    after = at.session_state[session.RELEASE]
    assert after is not before
    assert after.privacy["epsilon"] == pytest.approx(0.1)  # all of it spent, no more
    assert math.fsum(after.ledger["budget"]) == pytest.approx(0.1)
    assert at.session_state[session.SETTINGS]["epsilon"] == 0.1
    assert "ε = 0.1" in " ".join(c.value for c in at.caption)
    h = after.hierarchy
    assert h.consistency_violations(after.values) == 0 and after.is_integer
    assert at.session_state[session.METRICS_KEY] == ("metrics", release_token(after))


def test_mechanism_page_shows_the_epsilon_set_on_results_and_its_ledger_spends_it():
    at = results_at(0.2)
    at.switch_page(MECHANISM).run()
    assert_clean(at)
    assert at.select_slider(key="epsilon").value == 0.2
    ledger = at.dataframe[0].value
    # the budget column, shown to three significant figures (0.0667 each)
    assert math.fsum(ledger.iloc[:, 2]) == pytest.approx(0.2, rel=1e-3)
    at.select_slider(key="epsilon").set_value(5.0).run()
    at.switch_page(RESULTS).run()
    assert_clean(at)
    assert at.select_slider(key="res_epsilon").value == 5.0
    assert at.session_state[session.RELEASE].privacy["epsilon"] == pytest.approx(5.0)


def test_the_accountant_of_the_new_budget_refuses_to_overspend_it():
    at = results_at(0.05)
    budget = session.budget_of(at.session_state[session.SETTINGS])
    accountant = Accountant(budget)
    accountant.spend(0.05)
    with pytest.raises(BudgetError, match="overspending"):
        accountant.spend(0.01)


def test_under_zcdp_the_results_slider_sets_rho():
    at = page(RESULTS, "us-counties")
    at.session_state[session.SETTINGS] = {
        "mechanism": "least-squares", "params": {}, "definition": "zcdp", "epsilon": 1.0,
        "rho": 0.5, "delta": 1e-6, "weights": [1.0, 1.0, 1.0]}
    at.run()
    assert_clean(at)
    at.select_slider(key="res_rho").set_value(0.05).run()
    assert_clean(at)
    release = at.session_state[session.RELEASE]
    assert release.privacy["definition"] == "zcdp"
    assert release.privacy["rho"] == pytest.approx(0.05)
    assert at.session_state[session.SETTINGS]["epsilon"] == 1.0  # untouched


def test_an_epsilon_off_the_grid_is_kept_on_both_pages():
    at = page(RESULTS, "us-counties")
    at.session_state[session.SETTINGS] = {
        "mechanism": "topdown", "params": {}, "definition": "pure-dp", "epsilon": 0.3,
        "rho": 0.5, "delta": 1e-6, "weights": [1.0, 1.0, 1.0]}  # e.g. a loaded configuration
    at.run()
    assert_clean(at)
    assert at.select_slider(key="res_epsilon").value == 0.3
    assert at.session_state[session.RELEASE].privacy["epsilon"] == pytest.approx(0.3)
    at.switch_page(MECHANISM).run()
    assert at.select_slider(key="epsilon").value == 0.3
    assert at.session_state[session.SETTINGS]["epsilon"] == 0.3


def test_a_first_visit_to_mechanism_and_budget_keeps_the_release():
    """The page fills the mechanism's parameters in with their defaults: the release made
    with those defaults stays the current one, on Export and back on Results."""
    at = page(RESULTS, "us-counties").run()
    release = at.session_state[session.RELEASE]
    assert at.session_state[session.SETTINGS]["params"] == {}
    at.switch_page(MECHANISM).run()
    assert_clean(at)
    assert at.session_state[session.SETTINGS]["params"]  # the defaults, filled in
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    assert not [i for i in at.info if "No release for the current settings" in i.value]
    at.switch_page(RESULTS).run()
    assert at.session_state[session.RELEASE] is release  # kept, not made again
