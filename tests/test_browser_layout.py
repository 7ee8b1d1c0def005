"""The layout at 1280 x 800 (issue 31, item 5) and the light theme's colours, in a real
headless Chromium (Debian's, driven by Playwright), on the US counties, in one session that
tours every page; no page requests anything but the dashboard's own address (issue 18, item
6: the tab icon was fetched from Google's font server, which fails on an offline agency
network):

- Home: the three "Start with this sample" buttons above the fold, with the same refusal
  of requests outside, are checked in the US walk (test_browser_us_walk.py), which opens
  Home at 1280 x 800 and starts from there;
- Results: the map above the fold, every map option shown whole (the last one was cut to
  "Error (released - t..."), the drill-down reading "all of the United States"; the light
  theme's colours (test_browser_colours.py: the whole map in the first screen, no area
  lost, the error map after a recoloured view);
- Export: the release files offered at once (no "Prepare" click); the publishable draw's
  one verdict box (the exploration's orange box stood beside its green) is checked in the
  US walk (test_browser_us_walk.py), which draws it;
- Compare: maps wide enough to read (three in a row were about 100 px wide) and inside the
  window, A's and B's controls and maps side by side on the same rows, the table of errors
  by level at full width (its B - A column was cut); A (topdown) and B (raw-geometric) on
  one colour scale, the difference B - A centred at 0, the error by level; B changed to
  least squares and compared again;
- Trade-offs, Group sizes, Flows, Range queries: every mechanism chosen for the sweep shown
  whole in its box ("topdown" faded out); the Flows legend and the Range queries'
  true-values line read in the light theme; on Group sizes (test_browser.py's checks of
  the page) its map, a sweep, its plain-language panel and configuration box, and a seed
  typed there kept through the rest of the tour;
- Hierarchy: every treemap label reads on its tile; Data and Mechanism & budget (the tour).

The dark theme's colours are checked in test_browser_colours.py.

Screenshots (with HIERDP_SCREENSHOTS=1): test-artifacts/screenshots/layout_*.png."""

from __future__ import annotations

import pytest
from test_browser import (  # noqa: F401  (fixtures)
    browser,
    goto,
    maps_drawn,
    no_exception,
    press,
    server,
    shot,
    start_on,
    the_group_sizes_page_sweeps_and_explains,
    the_group_sizes_seed_is_kept,
)
from test_browser_colours import (
    DRAWN,
    every_treemap_label_reads_on_its_tile,
    refuse_requests_outside,
    the_flow_map_legend_reads,
    the_range_true_values_line_shows,
    the_results_colours,
)

from hierdp_core.ui.widgets import PAGES
from tests.browser_tools import new_context, settle, timed_click

pytestmark = pytest.mark.browser
WIDTH, FOLD = 1280, 800
CUT = """group => [...group.querySelectorAll('button')].filter(b => {
    const box = b.getBoundingClientRect(), room = group.parentElement.getBoundingClientRect();
    return box.right > room.right + 1 || b.scrollWidth > b.clientWidth + 1
        || [...b.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1);
}).map(b => b.innerText)"""


HIDDEN_CHIPS = """() => [...document.querySelectorAll(
        '[data-testid="stMultiSelectTagsContainer"]')].flatMap(room => {
    const right = room.getBoundingClientRect().right - 20;  // the box's last 20 px fade out
    return [...room.querySelectorAll('[data-tag]')].filter(
        tag => tag.getBoundingClientRect().right > right).map(tag => tag.innerText);
})"""


def choropleths(pg) -> list[dict]:
    """The bounding boxes of the page's maps, in page order."""
    return [p.bounding_box() for p in pg.locator(".js-plotly-plot").filter(
        has=pg.locator("path.choroplethlocation")).all()]


def test_a_light_walk_of_every_page_at_1280_by_800(server, browser):  # noqa: F811
    context = new_context(browser, viewport={"width": WIDTH, "height": FOLD})
    pg = context.new_page()
    pg.set_default_timeout(120_000)
    outside = refuse_requests_outside(pg, server)
    try:
        start_on(pg, server, "Results")  # the US counties, the default sample
        assert maps_drawn(pg, expect=[3141]) == [3141]
        no_exception(pg)
        shot(pg, "layout_results", full_page=False)
        (the_map,) = choropleths(pg)
        assert the_map["y"] + 150 <= FOLD, the_map  # at least 150 px of the map in sight
        group = pg.locator("[data-testid='stButtonGroup']").first
        group.get_by_role("radio").nth(3).wait_for()  # painted after the map on a busy machine
        assert group.get_by_role("radio").count() == 4
        assert group.evaluate(CUT) == []  # every map option whole
        assert pg.get_by_label("Drill down: show the units inside").input_value() \
            == "all of the United States"
        background = the_results_colours(pg, "light")

        goto(pg, "Export")
        assert pg.get_by_role("button", name="Release table (CSV)").count() == 1  # at once
        assert pg.get_by_role("button", name="Prepare the downloads").count() == 0
        shot(pg, "layout_export", full_page=False)

        goto(pg, "Compare")
        assert maps_drawn(pg, 3, expect=[3141] * 3) == [3141] * 3
        for box in choropleths(pg):
            assert box["width"] >= 300 and box["x"] + box["width"] <= WIDTH, box
        a_and_b_line_up(pg)
        two_configurations_side_by_side(pg)
        table = pg.locator("[data-testid='stDataFrame']").last.bounding_box()
        assert table["width"] >= 0.9 * choropleths(pg)[2]["width"], table  # the page's width
        no_exception(pg)
        shot(pg, "layout_compare", full_page=False)

        for label in ("Trade-offs", "Group sizes", "Flows", "Range queries"):
            every_default_mechanism_of_the_sweep_is_shown_whole(pg, label)
            if label == "Trade-offs":
                shot(pg, "layout_tradeoffs", full_page=False)
            elif label == "Group sizes":
                the_group_sizes_page_sweeps_and_explains(pg)
            elif label == "Flows":
                the_flow_map_legend_reads(pg, "light", background)
            elif label == "Range queries":
                the_range_true_values_line_shows(pg, "light", background)
        goto(pg, "Hierarchy")
        every_treemap_label_reads_on_its_tile(pg, "light", background)
        for label in ("Data", "Mechanism & budget"):  # the rest of the offline tour
            goto(pg, label)
        the_group_sizes_seed_is_kept(pg)  # after visits to five other pages
        assert {label for _, label, _ in PAGES} == {  # Home: in the US walk, as said above
            "Home", "Results", "Export", "Compare", "Trade-offs", "Group sizes", "Flows",
            "Range queries", "Hierarchy", "Data", "Mechanism & budget"}, "a page not toured"
    finally:
        context.close()
    assert outside == [], f"requests outside the dashboard: {sorted(set(outside))}"


def a_and_b_line_up(pg) -> None:
    """On Compare: A's and B's controls on the same rows (A's long description pushed its
    slider, split and seed 130 px below B's) and A's and B's maps side by side, at least
    300 px wide (beside their colour bars they were about 150 px)."""
    for label in ("Mechanism", "Total ε", "Split over levels"):
        a, b = (w.bounding_box() for w in pg.get_by_text(label, exact=True).all())
        assert abs(a["y"] - b["y"]) <= 2 and a["x"] < b["x"], (label, a, b)
    a_map, b_map, difference = pg.evaluate(DRAWN)
    for box in (a_map, b_map, difference):
        assert box["width"] >= 300 and box["x"] + box["width"] <= WIDTH, box
    assert abs(a_map["y"] - b_map["y"]) <= 2 and a_map["x"] + a_map["width"] < b_map["x"]


def every_default_mechanism_of_the_sweep_is_shown_whole(pg, label: str) -> None:
    """On the page ``label``: the sweep's mechanisms, shown by their plain (longer) names,
    each whole in its box at 1280 px (a chip past the box's right end fades out)."""
    goto(pg, label)
    chips = pg.locator("[data-testid='stMultiSelect']").filter(has_text="Mechanisms")
    chips.first.locator("[data-tag]").first.wait_for()
    assert pg.evaluate(HIDDEN_CHIPS) == [], label


def colour_ranges(pg) -> list[list[float]]:
    """(zmin, zmax) of every choropleth on the page."""
    return pg.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .filter(p => p.data && p.data[0].type === 'choropleth')
        .map(p => [p.data[0].zmin, p.data[0].zmax])""")


def two_configurations_side_by_side(pg) -> None:
    """On Compare (its three maps drawn): A (topdown) and B (raw-geometric) on one colour
    scale, the difference B - A centred at 0, the error by level; B changed to least
    squares is released again on Compare's click (the click to painted page printed)."""
    a, b, diff = colour_ranges(pg)
    assert a == b  # one colour scale for A and B
    assert diff[0] == -diff[1]  # the difference is centred at 0
    pg.locator("[data-testid='stDataFrame']").first.wait_for()
    assert pg.get_by_text("B − A").count() >= 1
    assert pg.locator(".js-plotly-plot .barlayer").count() == 1  # error by level
    box = pg.locator("[data-testid='stSelectbox']").filter(has_text="Mechanism").nth(1)
    box.click()
    pg.get_by_role("option", name="Least squares", exact=True).click()
    settle(pg)
    assert pg.get_by_text("press Compare to release them again").count() == 1
    seconds = timed_click(pg, pg.get_by_role("button", name="Compare", exact=True))
    no_exception(pg)
    assert maps_drawn(pg, 3, expect=[3141] * 3) == [3141, 3141, 3141]
    assert pg.get_by_text("B: Least squares, ε = 1").count() >= 1
    assert pg.get_by_text("press Compare to release them again").count() == 0
    print(f"\nCompare click to painted page (two US county releases): {seconds:.2f} s")
    shot(pg, "compare_changed")
