"""The Range queries page in a real headless Chromium: its plain-language panel (as on the
Group sizes and Flows pages, checked in their walks in test_browser.py) names the page's
neighbour, the odds bound and the a priori error in the page's unit; a configuration saved
there loads back in a new session. Screenshots: test-artifacts/screenshots/explain_ranges.png
(the panel), explain_ranges_page.png (the whole page) and ranges_config.png."""

from __future__ import annotations

import json

import pytest
from test_browser import (  # noqa: F401  (fixtures)
    SHOTS,
    browser,
    explain_panel,
    no_exception,
    page,
    server,
    start_on,
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
    from tests.browser_tools import settle

    for attempt in (1, 2):
        try:
            with pg.expect_download(timeout=30_000) as download:
                button.click()
            return download.value
        except Exception as exc:  # Playwright's TimeoutError (not imported here)
            if type(exc).__name__ != "TimeoutError" or attempt == 2:
                raise
            settle(pg)


def test_a_saved_range_configuration_loads_back_in_a_new_session(server, browser, tmp_path):  # noqa: F811
    """The Range queries page explains itself in plain words; save there (another mechanism
    and seed), open a new browser session, load the file there: the page shows the same
    release."""
    from tests.browser_tools import new_context, select_option, settle, timed_rerun

    first = new_context(browser, viewport={"width": 1440, "height": 2600})
    pg = first.new_page()
    pg.set_default_timeout(90_000)
    start_on(pg, server, "Range queries")
    explain_panel(pg, "ranges", "The guarantee protects one person",
                  "RMSE per query of the workload")
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
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.locator("[data-testid='stExpander']").filter(
        has_text="Configuration: save it").screenshot(path=str(SHOTS / "ranges_config.png"))
    second.close()
