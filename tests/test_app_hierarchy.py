"""The Hierarchy page's treemap (AppTest): on the US counties (3,193 nodes) it shows the
states, and a unit chosen under "Zoom into" shows its counties; on Italy (three levels) a
box per level: a region, then one of its provinces."""

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
    assert box.value == 0 and box.options[0] == "the whole tree"  # then the states
    california = next(i for i, o in enumerate(box.options) if o.startswith("California"))
    box.select_index(california).run()
    assert_clean(at)
    zoomed = treemap(at)
    assert zoomed["parents"][0] == "" and len(zoomed["ids"]) == 1 + 58  # California's counties
    assert all(p == zoomed["ids"][0] for p in zoomed["parents"][1:])



def test_each_level_has_a_box_listing_the_chosen_units_children():
    at = page("pages/2_Hierarchy.py", "italy-municipalities").run()
    assert_clean(at)
    (regions,) = zoom_box(at)  # nothing chosen: one box, the 20 regions
    assert len(regions.options) == 1 + 20
    regions.select_index(_index(regions, "Piemonte")).run()
    assert_clean(at)
    regions, provinces = zoom_box(at)
    assert provinces.options[0] == "all of Piemonte (01)" and len(provinces.options) == 1 + 8
    region = treemap(at)  # Piemonte and its provinces (its 1,181 towns would not fit)
    assert region["parents"][0] == "" and len(region["ids"]) == 1 + 8
    provinces.select_index(_index(provinces, "Torino")).run()
    assert_clean(at)
    torino = treemap(at)
    assert len(torino["ids"]) == 1 + 312 and all(p == torino["ids"][0]
                                                 for p in torino["parents"][1:])


def _index(box, name: str) -> int:
    """The index of the option of ``box`` named ``name`` (followed by its code)."""
    return next(i for i, option in enumerate(box.options) if option.startswith(name + " ("))
