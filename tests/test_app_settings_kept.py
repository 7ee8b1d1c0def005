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
