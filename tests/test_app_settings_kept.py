"""The query pages' settings survive a visit to another page (`ui.session.PAGE_SETTINGS`):
Streamlit drops a widget's value once a run without that widget completes, so an analyst
who set ε on Group sizes, looked at Results and came back found it reset."""

from __future__ import annotations

from test_app import assert_clean, page

#: (page, widget kind, key, a value other than the default)
SET = [
    ("pages/7_Group_sizes.py", "select_slider", "gs_epsilon", 2.0),
    ("pages/7_Group_sizes.py", "number_input", "gs_seed", 3),
    ("pages/8_Flows.py", "select_slider", "fl_epsilon", 5.0),
    ("pages/9_Ranges.py", "select_slider", "rg_epsilon", 0.5),
    ("pages/5_Trade-offs.py", "slider", "sw_trials", 4),
    ("pages/4_Results.py", "selectbox", "res_metric", "rmse"),
]


def _no_state_warning(at) -> None:
    said = [w.value for w in at.warning if "Session State" in str(w.value)]
    assert not said, said


def test_settings_of_every_query_page_survive_visits_to_other_pages():
    at = page("pages/2_Hierarchy.py", "synthetic-us-like").run()
    for path, kind, key, value in SET:  # each set, then other pages run
        at.switch_page(path).run()
        getattr(at, kind)(key=key).set_value(value).run()
        at.switch_page("pages/2_Hierarchy.py").run()
    for path, kind, key, value in SET:
        at.switch_page(path).run()
        assert_clean(at)
        _no_state_warning(at)
        assert getattr(at, kind)(key=key).value == value, (path, key)


def test_a_query_page_starts_on_an_upload_it_fits_and_keeps_the_choice():
    """Once a table is uploaded and its levels chosen on the Data page, a query page it fits
    (`query_columns.fits`) starts on it, not on the bundled sample (whose release would be
    thrown away); a user who chooses the sample finds it chosen after a visit elsewhere."""
    import pandas as pd
    from test_app import uploaded

    from hierdp_core.ui import session

    people = pd.DataFrame({"state": ["A"] * 4 + ["B"] * 3, "county": ["a1"] * 4 + ["b1"] * 3,
                           "household": ["h1", "h1", "h2", "h3", "h4", "h4", "h4"],
                           "age": [30, 31, 4, 80, 50, 52, 12]})
    at = uploaded(page("pages/7_Group_sizes.py"), people, ["state", "county"]).run()
    assert_clean(at)
    assert at.radio(key="gs_source").value == "upload"
    assert at.button(key="gs_up_suggest")  # the roles' guess waits for the click
    assert session.GS_RELEASE not in at.session_state  # no release of the sample
    at.radio(key="gs_source").set_value("sample").run()
    at.switch_page("pages/2_Hierarchy.py").run()
    at.switch_page("pages/7_Group_sizes.py").run()
    assert_clean(at)
    _no_state_warning(at)
    assert at.radio(key="gs_source").value == "sample"


def test_a_visit_to_the_data_page_keeps_the_count_release():
    """The Data page writes the roles out with their defaults (missing, ragged, ...): the
    sample's release was dropped as if the roles had changed, and the sidebar said 'not run
    for these settings' on every page until Results ran it again."""
    from hierdp_core.ui import session

    at = page("pages/4_Results.py", "us-counties").run()
    release = at.session_state[session.RELEASE]
    for other in ("pages/1_Data.py", "pages/2_Hierarchy.py", "pages/3_Mechanism_and_budget.py"):
        at.switch_page(other).run()
        assert_clean(at)
        assert "**Release:** ready" in [m.value for m in at.sidebar.markdown]
    at.switch_page("pages/4_Results.py").run()
    assert at.session_state[session.RELEASE] is release  # not made again
