"""The budget-split optimiser on the Mechanism & budget page (AppTest): a goal, the expected
errors of the current and the optimised split, "Use this split" setting the page's split
(held exactly, used by the Results page's release), and an info for mechanisms it does not
model."""

from __future__ import annotations

import re

import numpy as np
from capability_helpers import declare
from test_app import assert_clean, page

from hierdp_core.ui import session
from hierdp_core.ui import split as split_ui
from hierdp_core.ui import widget_keys as wk

PATH = "pages/3_Mechanism_and_budget.py"
SAMPLE = "us-counties"


def opened():
    """The page with "Optimise the split" open, run."""
    at = page(PATH, SAMPLE)
    at.session_state[wk.SPLIT_GOAL_OPEN] = True
    return at.run()


def goal_values(at) -> dict[str, float]:
    """The goal of each split, as shown: in plain figures (1,234, 0.0567; no exponent)."""
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d+)?", m.value) for m in at.metric), \
        [m.value for m in at.metric]
    return {m.label: float(m.value.replace(",", "")) for m in at.metric}


def confirm_populations(at):
    box = next(c for c in at.checkbox if c.key.startswith("split_goal_public"))
    return box.check().run()


def test_the_closed_section_computes_nothing():
    at = page(PATH, SAMPLE).run()
    assert_clean(at)
    assert not at.metric and not [r for r in at.radio if r.key == "split_goal"]


def test_a_goal_shows_both_splits_and_use_this_split_sets_the_release_split():
    at = opened()
    assert_clean(at)
    goals = goal_values(at)  # every level equally (MSE): current uniform vs optimised
    assert set(goals) == {"Current split", "Optimised split"}
    assert goals["Optimised split"] <= goals["Current split"]
    columns = list(at.dataframe[0].value.columns)
    assert columns[0] == "level" and {"mean |error| (current)", "mean |error| (optimised)",
                                      "RMSE (current)", "RMSE (optimised)"} <= set(columns)
    assert list(at.dataframe[0].value["level"]) == ["total", "state", "county"]

    at.radio(key="split_goal").set_value("relative").run()
    assert_clean(at)
    assert at.info and not at.metric  # placeholders are not used until confirmed public
    pops = {n.label: n.value for n in at.number_input if n.key.startswith("split_goal_pop")}
    assert pops == {"Population: total": 3e8, "Population: state": 6e6,
                    "Population: county": 1e5}
    confirm_populations(at)
    assert_clean(at)
    goals = goal_values(at)
    assert goals["Optimised split"] < 0.5 * goals["Current split"]
    before = list(at.session_state[session.SETTINGS]["weights"])
    at.button(key="split_goal_apply").click().run()
    assert_clean(at)
    weights = at.session_state[session.SETTINGS]["weights"]
    assert weights != before and weights[-1] == 1.0
    assert [s.value for s in at.slider] == [split_ui.slider_value(w) for w in weights]
    assert "In use:" in at.success[0].value
    assert not [b for b in at.button if b.key == "split_goal_apply"]  # nothing to apply
    assert len({*goal_values(at).values()}) == 1  # the current split is now the optimum

    at.switch_page("pages/4_Results.py").run()
    assert_clean(at)
    assert "split total 0%, state 0%, county 100%" in " ".join(c.value for c in at.caption)
    release = at.session_state[session.RELEASE]
    np.testing.assert_allclose(release.ledger["share"], np.asarray(weights) / sum(weights))


def test_a_tiny_optimised_share_is_held_exactly_until_a_slider_moves():
    at = opened()
    at.selectbox(key="mech_name").set_value("raw-laplace").run()
    at.radio(key="split_goal").set_value("relative").run()
    confirm_populations(at)
    at.button(key="split_goal_apply").click().run()
    assert_clean(at)
    weights = at.session_state[session.SETTINGS]["weights"]
    assert 0 < weights[0] < 0.005  # the slider shows 0.00, the release keeps the share
    assert [s.value for s in at.slider][0] == 0.0
    assert "total 0.033%" in " ".join(c.value for c in at.caption)
    at.slider(key="weight_1").set_value(0.5).run()
    assert_clean(at)
    assert at.session_state[session.SETTINGS]["weights"] == [0.0, 0.5, 1.0]  # as the sliders show
    assert split_ui.HELD not in at.session_state


def test_weighted_levels_goal():
    at = opened()
    at.radio(key="split_goal").set_value("weighted").run()
    at.selectbox(key="split_goal_metric").set_value("mae").run()
    weight = next(n for n in at.number_input if n.label == "Weight: county")
    weight.set_value(10.0).run()
    assert_clean(at)
    table = at.dataframe[0].value.set_index("level")
    assert table.loc["county", "share (optimised)"] > table.loc["county", "share (current)"]
    assert table.loc["county", "mean |error| (optimised)"] \
        < table.loc["county", "mean |error| (current)"]


def test_a_mechanism_the_optimiser_does_not_model_gets_an_info(monkeypatch):
    declare(monkeypatch, "topdown", split_optimiser=False)
    at = opened()
    assert_clean(at)
    assert any("not one of them" in i.value for i in at.info)
    assert not at.metric


def test_population_placeholders_are_round_figures_from_the_tree(small_county_data):
    h = small_county_data.hierarchy  # 6 states, 60 counties; no public total: 1,000,000
    assert split_ui.default_populations(h, None) == [1e6, 2e5, 2e4]


def test_percent_keeps_small_shares():
    assert [split_ui.percent(x) for x in (0, 0.0003, 0.0196, 0.5)] == \
        ["0%", "0.03%", "2%", "50%"]


def test_a_preset_sets_the_sliders_and_its_exact_shares():
    at = page(PATH, SAMPLE).run()
    at.selectbox(key="split_preset").set_value("finer").run()  # applies at once
    assert_clean(at)
    weights = np.asarray(at.session_state[session.SETTINGS]["weights"])
    np.testing.assert_allclose(weights / weights.sum(), [1 / 6, 2 / 6, 3 / 6])
    assert [s.value for s in at.slider if s.key.startswith("weight_")] == [0.33, 0.67, 1.0]


def test_shares_are_described_so_that_they_add_up():
    from types import SimpleNamespace

    h = SimpleNamespace(level_names=["total", "state", "county"])
    assert split_ui.describe_shares(h, [1 / 3] * 3) == "total 33.3%, state 33.3%, county 33.3%"
    assert split_ui.describe_shares(h, [0.25, 0.25, 0.5]) == "total 25%, state 25%, county 50%"
