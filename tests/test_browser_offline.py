"""No request leaves the machine (issue 18, item 6): a tour of every dashboard page in a
real headless Chromium, in the dark colour scheme, records every request the page makes;
none may go anywhere but the dashboard's own address (the tab icon was fetched from
Google's font server, which fails on an offline agency network). Screenshots of the Results
page's maps in the dark theme, standard and colour-blind safe colours:
test-artifacts/screenshots/results_dark.png, results_dark_colour_blind.png."""

from __future__ import annotations

import re

import pytest
from test_browser import (  # noqa: F401  (fixtures)
    browser,
    goto,
    maps_drawn,
    no_exception,
    server,
    shot,
)

from hierdp_core.ui.widgets import PAGES
from tests.browser_tools import new_context, open_directly, select_option

pytestmark = pytest.mark.browser


def test_a_tour_of_every_page_requests_nothing_outside(server, browser):  # noqa: F811
    context = new_context(browser, viewport={"width": 1440, "height": 2200},
                                  color_scheme="dark")
    outside: list[str] = []
    local = re.escape(server)

    def refuse(route):
        outside.append(route.request.url)
        route.abort()

    context.route(re.compile(rf"^(?!{local}|data:|blob:)"), refuse)
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        open_directly(page, server, "Home")  # its address: Home runs once, not twice
        no_exception(page)
        for _, label, _ in PAGES[1:]:
            goto(page, label)
            if label == "Results":
                assert maps_drawn(page, expect=[3141]) == [3141]  # the US counties
                theme = page.evaluate("() => getComputedStyle(document.querySelector("
                                      "'[data-testid=stApp]')).backgroundColor")
                assert theme != "rgb(255, 255, 255)"  # the dark theme is on
                page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')"
                              "?.scrollTo(0, 0)")
                shot(page, "results_dark")
                select_option(page, "Colours", "Colour-blind safe: cividis")
                maps_drawn(page)
                shot(page, "results_dark_colour_blind")
        no_exception(page)
    finally:
        context.close()
    assert outside == [], f"requests outside the dashboard: {sorted(set(outside))}"
