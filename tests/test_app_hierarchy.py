"""The Hierarchy page's treemap (AppTest): on the US counties (3,193 nodes) it shows the
states, and a unit chosen under "Zoom into" shows its counties."""

from __future__ import annotations

from test_app import assert_clean, page

from hierdp_core.ui import widget_keys as wk


def treemap(at) -> dict:
    """The treemap figure the page sent (its plotly JSON)."""
    import json

    (chart,) = [c for c in at.get("plotly_chart")]
    return json.loads(chart.proto.spec)["data"][0]


def zoom_box(at):
    return [s for s in at.selectbox if s.key.startswith(wk.TREEMAP_ROOT)]


def test_a_large_tree_is_shown_down_to_a_zoomed_unit():
    at = page("pages/2_Hierarchy.py", "us-counties").run()
    assert_clean(at)
    (box,) = zoom_box(at)
    whole = treemap(at)
    assert len(whole["ids"]) == 52 and whole["parents"][0] == ""  # the root and its states
    assert box.value == 0 and "whole tree" in box.options[0]  # options: node 0, 1, ...
    california = next(i for i, o in enumerate(box.options) if o.startswith("California"))
    box.set_value(california).run()
    assert_clean(at)
    zoomed = treemap(at)
    assert zoomed["parents"][0] == "" and len(zoomed["ids"]) == 1 + 58  # California's counties
    assert all(p == zoomed["ids"][0] for p in zoomed["parents"][1:])

