"""The Compare page in a real headless Chromium (Debian's, driven by Playwright), on the US
counties: A (topdown) and B (raw-geometric) released with the same seed, three maps of the
3,141 counties (A and B on one colour scale, the difference B - A), the error by level;
B changed to least squares at another epsilon and compared again. Screenshots:
test-artifacts/screenshots/compare.png and compare_changed.png."""

from __future__ import annotations

import pytest
from test_browser import (  # noqa: F401  (fixtures)
    browser,
    maps_drawn,
    no_exception,
    page,
    press,
    server,
    shot,
    start_on,
)

from tests.browser_tools import settle, timed_click

pytestmark = pytest.mark.browser


def colour_ranges(pg) -> list[list[float]]:
    """(zmin, zmax) of every choropleth on the page."""
    return pg.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .filter(p => p.data && p.data[0].type === 'choropleth')
        .map(p => [p.data[0].zmin, p.data[0].zmax])""")


def test_two_configurations_side_by_side(server, page):  # noqa: F811
    start_on(page, server, "Compare")
    assert maps_drawn(page, 3, expect=[3141] * 3) == [3141, 3141, 3141]
    a, b, diff = colour_ranges(page)
    assert a == b  # one colour scale for A and B
    assert diff[0] == -diff[1]  # the difference is centred at 0
    table = page.locator("[data-testid='stDataFrame']")
    table.wait_for()
    assert page.get_by_text("B − A").count() >= 1
    assert page.locator(".js-plotly-plot .barlayer").count() == 1  # error by level
    no_exception(page)
    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")
    shot(page, "compare")

    box = page.locator("[data-testid='stSelectbox']").filter(has_text="Mechanism").nth(1)
    box.click()
    page.get_by_role("option", name="Least squares", exact=True).click()
    settle(page)
    assert page.get_by_text("press Compare to release them again").count() == 1
    seconds = timed_click(page, page.get_by_role("button", name="Compare", exact=True))
    no_exception(page)
    assert maps_drawn(page, 3, expect=[3141] * 3) == [3141, 3141, 3141]
    assert page.get_by_text("B: Least squares, ε = 1").count() >= 1
    assert page.get_by_text("press Compare to release them again").count() == 0
    print(f"\nCompare click to painted page (two US county releases): {seconds:.2f} s")
    shot(page, "compare_changed")
