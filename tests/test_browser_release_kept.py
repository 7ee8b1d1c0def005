"""The release is kept while nothing changes, in a real headless Chromium (Debian's, driven
by Playwright): Start on Home makes the US counties release; a first visit to Mechanism &
budget (which draws the mechanism's parameters, filling in their defaults) leaves it the
current release, so Export offers it and Results shows it without running it again.
Screenshot: test-artifacts/screenshots/release_kept_export.png."""

from __future__ import annotations

import pytest
import test_browser as tb
from test_browser import browser, page, server  # noqa: F401  (fixtures)

from tests.browser_tools import start_with_sample

pytestmark = pytest.mark.browser
NO_RELEASE = "No release for the current settings yet"
READY = "Release: ready"  # the sidebar's status of the count release


def test_a_first_visit_to_mechanism_and_budget_keeps_the_release(server, page):  # noqa: F811
    start_with_sample(page, server)
    assert tb.maps_drawn(page, expect=[3141]) == [3141]
    sidebar = page.locator("[data-testid='stSidebar']")
    sidebar.get_by_text(READY).wait_for()

    tb.goto(page, "Mechanism & budget")  # nothing changed: the defaults are shown
    page.get_by_text("Noise per measured cell").first.wait_for()
    assert sidebar.get_by_text(READY).count() == 1

    tb.goto(page, "Export")
    assert page.get_by_text(NO_RELEASE).count() == 0
    assert sidebar.get_by_text(READY).count() == 1
    tb.shot(page, "release_kept_export")

    tb.goto(page, "Results")  # the same release, not a new run
    assert tb.maps_drawn(page, expect=[3141]) == [3141]
    assert page.get_by_text("units, computed in").count() == 0
    assert sidebar.get_by_text(READY).count() == 1
