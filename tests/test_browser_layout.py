"""The layout at 1280 x 800 (issue 31, item 5), in a real headless Chromium (Debian's,
driven by Playwright), on the US counties, in one session:

- Home: the three "Start with this sample" buttons above the fold;
- Results: the map above the fold, every map option shown whole (the last one was cut to
  "Error (released - t..."), the drill-down reading "all of the United States";
- Export: the release files offered at once (no "Prepare" click) and, once the publishable
  release is drawn, one verdict box (the exploration's orange box stood beside its green);
- Compare: maps wide enough to read (three in a row were about 100 px wide) and inside the
  window, the table of errors by level at full width (its B - A column was cut);
- Trade-offs: every chosen mechanism and ε shown whole in its box ("topdown" faded out).

Screenshots: test-artifacts/screenshots/layout_*.png."""

from __future__ import annotations

import pytest
from test_browser import (  # noqa: F401  (fixtures)
    SHOTS,
    browser,
    goto,
    maps_drawn,
    no_exception,
    press,
    server,
)

from tests.browser_tools import new_context, settle

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


def test_the_first_screen_of_each_page_at_1280_by_800(server, browser):  # noqa: F811
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = new_context(browser, viewport={"width": WIDTH, "height": FOLD})
    pg = context.new_page()
    pg.set_default_timeout(120_000)
    try:
        pg.goto(server)
        settle(pg)
        starts = pg.get_by_role("button", name="Start with this sample")
        starts.nth(2).wait_for()  # a busy machine can paint them after the run is done
        assert starts.count() == 3
        for k in range(3):
            box = starts.nth(k).bounding_box()
            assert box["y"] + box["height"] <= FOLD, (k, box)
        pg.screenshot(path=f"{SHOTS}/layout_home.png")

        starts.first.click()
        settle(pg)
        assert maps_drawn(pg, expect=[3141]) == [3141]
        no_exception(pg)
        pg.screenshot(path=f"{SHOTS}/layout_results.png")
        (the_map,) = choropleths(pg)
        assert the_map["y"] + 150 <= FOLD, the_map  # at least 150 px of the map in sight
        group = pg.locator("[data-testid='stButtonGroup']").first
        group.get_by_role("radio").nth(3).wait_for()  # painted after the map on a busy machine
        assert group.get_by_role("radio").count() == 4
        assert group.evaluate(CUT) == []  # every map option whole
        assert pg.get_by_label("Drill down: show the units inside").input_value() \
            == "all of the United States"

        goto(pg, "Export")
        assert pg.get_by_role("button", name="Release table (CSV)").count() == 1  # at once
        assert pg.get_by_role("button", name="Prepare the downloads").count() == 0
        press(pg, "Draw the publishable release (secure noise)")
        pg.get_by_text("Publishable as it is").first.wait_for()
        settle(pg)
        alerts = pg.locator("[data-testid='stAlert']")
        assert alerts.filter(has_text="Not publishable as it is").count() == 0
        assert alerts.filter(has_text="Publishable as it is").count() == 1
        pg.screenshot(path=f"{SHOTS}/layout_export.png")

        goto(pg, "Compare")
        assert maps_drawn(pg, 3, expect=[3141] * 3) == [3141] * 3
        for box in choropleths(pg):
            assert box["width"] >= 300 and box["x"] + box["width"] <= WIDTH, box
        table = pg.locator("[data-testid='stDataFrame']").last.bounding_box()
        assert table["width"] >= 0.9 * choropleths(pg)[2]["width"], table  # the page's width
        no_exception(pg)
        pg.screenshot(path=f"{SHOTS}/layout_compare.png")

        goto(pg, "Trade-offs")
        assert pg.evaluate(HIDDEN_CHIPS) == []
        pg.screenshot(path=f"{SHOTS}/layout_tradeoffs.png")
    finally:
        context.close()
