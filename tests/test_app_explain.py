"""The Mechanism & budget page (AppTest): the plain-language panel follows the settings,
tables show friendly metric names with their definitions, and a chosen budget-split
preset applies at once and stays chosen (issue 18: it was silently undone)."""

from __future__ import annotations

import math

import numpy as np
from test_app import assert_clean, figure_specs, page

from hierdp_core import palette
from hierdp_core.explain import ERROR_NAMES
from hierdp_core.metric_names import definition, name
from hierdp_core.number_text import significant
from hierdp_core.ui import session
from hierdp_core.ui import split as split_ui
from hierdp_core.ui import widget_keys as wk

PATH = "pages/3_Mechanism_and_budget.py"
SAMPLE = "us-counties"


def panel_text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def weights_shown(at) -> list[float]:
    return [s.value for s in at.slider if s.key.startswith("weight_")]


def test_the_panel_states_the_neighbour_the_odds_and_the_errors():
    at = page(PATH, SAMPLE).run()
    assert_clean(at)
    text = panel_text(at)
    assert "protects one person" in text
    assert f"e^ε ≈ {math.e:.3g} times" in text  # epsilon 1 by default
    assert "✓ a private mechanism: TopDown" in text
    assert "Released with secure noise, this configuration is publishable." in text
    expected = ERROR_NAMES["mae"]
    errors = next(d.value for d in at.dataframe if expected in d.value.columns)
    assert list(errors[name("level_name")]) == ["total", "state", "county"]

    at.select_slider(key="epsilon").set_value(0.1).run()
    assert_clean(at)
    assert f"e^ε ≈ {math.exp(0.1):.3g} times" in panel_text(at)
    smaller = next(d.value for d in at.dataframe if expected in d.value.columns)
    assert (smaller[expected].to_numpy() > 5 * errors[expected].to_numpy()).all()


def test_the_panel_converts_rho_with_the_core():
    at = page(PATH, SAMPLE).run()
    at.radio(key="definition").set_value("zcdp").run()
    assert_clean(at)
    assert "ρ = 0.5 (zero-concentrated DP) implies ε = " in panel_text(at)


def test_the_ledger_table_has_friendly_names_and_definitions_on_hover():
    at = page(PATH, SAMPLE).run()
    ledger = at.dataframe[0]
    assert name("expected_abs_error") in ledger.value.columns
    assert not [c for c in ledger.value.columns if "_" in c]  # no snake_case header left
    assert definition("expected_abs_error") in ledger.proto.columns


def test_the_ledger_and_error_tables_show_three_significant_figures():
    at = page(PATH, SAMPLE).run()
    at.selectbox(key=wk.MECH_NAME).set_value("raw-laplace").run()
    at.select_slider(key="epsilon").set_value(0.01).run()
    assert_clean(at)
    ledger = at.dataframe[0].value
    assert ledger[name("ci95_abs_error")].tolist() == [899.0] * 3  # was 898.7197
    assert ledger[name("budget")].tolist() == [0.00333] * 3
    errors = next(d.value for d in at.dataframe if ERROR_NAMES["rmse"] in d.value.columns)
    assert errors[ERROR_NAMES["rmse"]].tolist() == [424.0] * 3  # was 424.26
    for table in (ledger, errors):
        for column in table.select_dtypes("float"):
            values = table[column].to_numpy()
            np.testing.assert_array_equal(values, significant(values), err_msg=column)


def test_a_chosen_preset_applies_at_once_and_stays_chosen():
    at = page(PATH, SAMPLE).run()
    assert at.selectbox(key=wk.SPLIT_PRESET).value == "uniform"
    at.selectbox(key=wk.SPLIT_PRESET).set_value("finer").run()  # no second click
    assert_clean(at)
    assert weights_shown(at) == [0.33, 0.67, 1.0]
    weights = np.asarray(at.session_state[session.SETTINGS]["weights"])
    np.testing.assert_allclose(weights / weights.sum(), [1 / 6, 2 / 6, 3 / 6])

    at.switch_page("pages/4_Results.py").run()
    assert_clean(at)
    assert "split total 17%, state 33%, county 50%" in " ".join(c.value for c in at.caption)
    at.switch_page(PATH).run()  # back: still the preset, not "uniform" over its weights
    assert at.selectbox(key=wk.SPLIT_PRESET).value == "finer"
    assert weights_shown(at) == [0.33, 0.67, 1.0]

    at.slider(key="weight_0").set_value(0.5).run()  # a slider moved: the split is custom
    assert_clean(at)
    assert at.selectbox(key=wk.SPLIT_PRESET).value == split_ui.CUSTOM
    assert at.session_state[session.SETTINGS]["weights"] == [0.5, 0.67, 1.0]
    at.selectbox(key=wk.SPLIT_PRESET).set_value("leaves-only").run()
    assert weights_shown(at) == [0.0, 0.0, 1.0]


def test_a_preset_whose_shares_no_longer_fit_shows_custom():
    s = {"weights": [1.0, 2.0, 3.0], "preset": "uniform"}  # e.g. levels changed since
    assert split_ui.preset_of(s) == "finer"
    assert split_ui.preset_of({"weights": [0.2, 0.9, 0.1]}) == split_ui.CUSTOM
    assert split_ui.preset_of({"weights": [1.0, 1.0]}) == "uniform"


def test_the_colour_choice_in_the_sidebar_reaches_the_maps_on_every_page():
    from plotly.colors import get_colorscale

    at = page(PATH, SAMPLE).run()
    at.sidebar.selectbox(key="palette_pick").set_value("colour-blind").run()
    assert_clean(at)
    at.switch_page("pages/4_Results.py").run()
    assert_clean(at)
    assert at.sidebar.selectbox(key="palette_pick").value == "colour-blind"
    safe = palette.get("colour-blind")
    sequential, diverging, viridis = (get_colorscale(n)[0][1] for n in (
        safe.sequential, safe.diverging, "Viridis"))

    def the_map() -> str:
        (spec,) = [s for s in figure_specs(at) if '"choropleth"' in s]
        assert viridis not in spec
        return spec

    assert sequential in the_map()  # the released counts, shown first
    for shown, scale in (("True", sequential), ("Noisy (measured)", sequential),
                         ("Error (released − true)", diverging)):
        at.button_group(key="res_map").set_value(shown).run()
        assert_clean(at)
        assert scale in the_map(), shown


def test_trade_offs_name_presets_and_metrics_in_words():
    at = page("pages/5_Trade-offs.py", "synthetic-us-like").run()
    assert at.selectbox(key="cmp_b").format_func("finer") == "More to finer levels"
    assert at.selectbox(key="sw_metric").format_func("mae") == name("mae")
    at.slider(key="sw_trials").set_value(1)
    at.button(key="cmp_run").click().run()
    assert_clean(at)
    assert any(c.value.startswith(f"{name('mae')} — {definition('mae')}") for c in at.caption)
