"""The Range queries page in a real headless Chromium, in one session and a second one for
loading back: its plain-language panel (as on the Group sizes and Flows pages, checked in
their walks in test_browser.py) names the page's neighbour, the odds bound and the a priori
error in the page's unit; DAWA's buckets drawn behind the histogram; a configuration saved
there (another mechanism and seed) loads back in a new session and shows the same release.
Checked elsewhere: the page's Compare and sweep, and the bundled sample's release adding up
age by age (AppTest: test_app.py's test_ranges_page_releases_compares_and_sweeps); a Range
queries release CSV downloaded and adding up (on an upload, test_browser.py); a sweep drawn
in the browser (the Group sizes and Flows walks, test_browser.py). Screenshots (with HIERDP_SCREENSHOTS=1):
test-artifacts/screenshots/explain_ranges.png (the panel), explain_ranges_page.png (the
whole page), 11_ranges.png and ranges_config.png."""

from __future__ import annotations

import json

import pytest
from test_browser import (  # noqa: F401  (fixtures)
    browser,
    explain_panel,
    no_exception,
    page,
    server,
    shot,
    start_on,
)

from tests.browser_tools import (
    new_context,
    select_option,
    settle,
    timed_rerun,
    wait_until,
)

pytestmark = pytest.mark.browser


def unit_error(pg) -> str:
    """The Range page's "This unit: mean error per query" (depends on the released values)."""
    return pg.locator("[data-testid='stMetric']").filter(
        has_text="This unit: mean error per query").locator(
        "[data-testid='stMetricValue']").inner_text()


def save_download(pg, button):
    """The download of ``button``, clicked once more if none came in 30 s (a rerun just
    before the click can replace the file its link points to)."""
    for attempt in (1, 2):
        try:
            with pg.expect_download(timeout=30_000) as download:
                button.click()
            return download.value
        except Exception as exc:  # Playwright's TimeoutError (not imported here)
            if type(exc).__name__ != "TimeoutError" or attempt == 2:
                raise
            settle(pg)


def test_the_ranges_page_and_its_configuration_in_a_new_session(server, browser, tmp_path):  # noqa: F811
    """The Range queries page explains itself in plain words, draws DAWA's buckets; save
    there (another mechanism and seed); open a new browser session, load the file there: the
    page shows the same release."""
    first = new_context(browser, viewport={"width": 1440, "height": 4100},
                        accept_downloads=True)  # the whole page in the shot
    pg = first.new_page()
    pg.set_default_timeout(90_000)
    start_on(pg, server, "Range queries")
    pg.wait_for_selector(".js-plotly-plot .barlayer")
    explain_panel(pg, "ranges", "The guarantee protects one person",
                  "RMSE per query of the workload")
    dawa_buckets(pg)
    select_option(pg, "Mechanism", "Greedy H")
    seed = pg.get_by_label("Seed (exploration)")
    seed.fill("7")
    # the rerun of the new seed awaited (settle alone could read the seed-0 release under load)
    timed_rerun(pg, lambda: seed.press("Enter"), again_after_ms=5_000)
    no_exception(pg)
    released = unit_error(pg)
    pg.get_by_text("Configuration: save it, or load a saved one").click()
    download = save_download(pg, pg.get_by_role("button", name="Save the configuration (JSON)"))
    path = tmp_path / download.suggested_filename
    download.save_as(path)
    first.close()
    saved = json.loads(path.read_text())
    assert saved["query"] == "ranges" and saved["mechanism"] == "greedy-h"
    assert saved["seed"] == 7 and saved["data"] == {"sample": "italy-municipalities"}

    second = new_context(browser, viewport={"width": 1440, "height": 2600})
    pg = second.new_page()
    pg.set_default_timeout(90_000)
    start_on(pg, server, "Range queries")
    assert unit_error(pg) != released  # dawa, seed 0 by default
    pg.get_by_text("Configuration: save it, or load a saved one").click()
    pg.locator(".st-key-rg_cfg_upload input[type='file']").set_input_files(str(path))
    pg.get_by_text(f"Loaded {path.name}").wait_for()
    settle(pg)
    no_exception(pg)
    assert unit_error(pg) == released
    assert pg.get_by_label("Seed (exploration)").input_value() == "7"
    shot(pg.locator("[data-testid='stExpander']").filter(has_text="Configuration: save it"),
         "ranges_config")
    second.close()


def dawa_buckets(pg) -> None:
    """By default DAWA skips its partition on the provinces at epsilon 1 (their release says
    it does not pay); "always" runs it, and its buckets are drawn behind the histogram."""
    pg.get_by_text("More options").first.click()
    pg.locator("label").filter(has_text="always").first.click()
    bands = ".js-plotly-plot .layer-below .shapelayer path"
    wait_until(pg, f"() => document.querySelectorAll('{bands}').length >= 2")
    settle(pg)
    assert pg.get_by_text("buckets").count() >= 1
    assert pg.get_by_text("evaluation only, not a DP release").count() >= 1
    pg.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")
    shot(pg, "11_ranges")
