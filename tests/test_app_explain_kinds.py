"""The plain-language panel on the Group sizes, Flows and Range queries pages (AppTest): it
names the neighbour of the page's query kind, the odds bound of the page's budget, the a
priori error in that kind's unit, and follows the page's controls."""

from __future__ import annotations

import math

import pytest
from test_app import assert_clean, page

from hierdp_core.explain import ERROR_NAMES


def panel(at) -> str:
    """The text of the panel's expander."""
    box = next(e for e in at.expander if e.label.startswith("In plain words"))
    return " ".join(m.value for m in box.markdown)


def errors_table(at):
    return next(d.value for d in at.dataframe
                if ERROR_NAMES["mae"] in d.value.columns or ERROR_NAMES["rmse"] in d.value.columns)


@pytest.mark.parametrize(("path", "protects", "unit", "per"), [
    ("pages/7_Group_sizes.py", "protects one household member", "in households",
     "per region and size"),
    ("pages/8_Flows.py", "protects one trip", "in trips", "per O/D pair"),
    ("pages/9_Ranges.py", "protects one person", "in people", "RMSE per query of the workload"),
])
def test_each_query_page_explains_its_own_kind(path, protects, unit, per):
    at = page(path).run()
    assert_clean(at)
    text = panel(at)
    assert protects in text and unit in text and per in text
    assert f"e^ε ≈ {math.e:.3g} times" in text  # epsilon 1 by default on every page
    assert "✓ a declared structure" in text  # the bundled samples are declared
    assert "publishable" in text
    table = errors_table(at)
    assert not [c for c in table.columns if "_" in c]  # friendly names only


def test_the_flows_panel_follows_epsilon_and_delta():
    at = page("pages/8_Flows.py").run()
    before = errors_table(at)[ERROR_NAMES["mae"]].to_numpy()
    at.select_slider(key="fl_epsilon").set_value(0.1).run()
    assert_clean(at)
    text = panel(at)
    assert f"e^ε ≈ {math.exp(0.1):.3g} times" in text and "δ = 1e-08" in text
    after = errors_table(at)[ERROR_NAMES["mae"]].to_numpy()
    assert after[0] == before[0] == 0  # the number of trips: exact under bounded neighbours
    assert (after[1:] > 3 * before[1:]).all()


def test_the_group_size_panel_names_what_is_published_exactly():
    at = page("pages/7_Group_sizes.py").run()
    assert "number of groups of every region (public by the model)" in panel(at)
    at.selectbox(key="gs_mechanism").set_value("gs-topdown").run()
    assert_clean(at)
    text = panel(at)
    assert "number of groups G (public by the model)" in text and "per region and size," in text


def test_the_range_panel_follows_the_workload():
    at = page("pages/9_Ranges.py").run()
    assert "workload (prefix)" in panel(at)
    prefix = errors_table(at)[ERROR_NAMES["rmse"]].to_numpy()
    at.radio(key="rg_workload").set_value("bands").run()
    assert_clean(at)
    assert "workload (bands" in panel(at)
    bands = errors_table(at)[ERROR_NAMES["rmse"]].to_numpy()
    assert (bands < prefix).all()  # six disjoint bands: each asked once, less error


@pytest.mark.parametrize(("path", "clicks"), [
    ("pages/7_Group_sizes.py", ("gs_sw_run",)),
    ("pages/8_Flows.py", ()),
    ("pages/9_Ranges.py", ("rg_cmp_run",)),
])
def test_no_snake_case_header_is_left_on_the_query_pages(path, clicks):
    at = page(path).run()
    for key in clicks:  # the tables shown after a sweep or a comparison too
        at.button(key=key).click().run(timeout=300)
    assert_clean(at)
    headers = [c for d in at.dataframe for c in d.value.columns]
    assert len(at.dataframe) >= 3 and not [c for c in headers if "_" in str(c)], headers
    assert not [c for c in headers if str(c) in ("level", "mechanism", "share", "units")]
