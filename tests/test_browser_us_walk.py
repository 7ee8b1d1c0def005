"""The demo path on the US counties in a real headless Chromium (Debian's, driven by
Playwright), in one walk (one sample load, one session):

* Home at 1280 x 800 (the layout walk's checks of Home, test_browser_layout.py): the three
  "Start with this sample" buttons above the fold; the previews, plotly.js and the county
  boundaries loaded in the background; Start with this sample: the release of every county
  mapped (its hover label the counts);
* the release is kept while nothing changes: Start on Home makes it; a first visit to
  Mechanism & budget (which draws the mechanism's parameters, filling in their defaults)
  leaves it the current release, so Results shows it without running it again and Export
  offers it;
* the release files carry intervals: they are offered without a click (their bootstrap
  made as the page opens); the CSV adds up, every county, with ``lower`` and ``upper``
  around every value, and the manifest says how they were made;
* the report prepared on Export opens from disk with every network request blocked (its
  figures and maps draw, no request leaves it); after "Draw the publishable release" one
  verdict box is shown (the exploration's orange box stood beside its green), the secure
  manifest and table download, and the report is the publishable release's (its file
  name plain, its banner green, the state map showing the secure release's values, not
  the exploration's);
* no page of the walk requests anything but the dashboard's own address (as in the layout
  walk).

What the walk once checked on the way and is checked elsewhere now: the Data page and the
Hierarchy treemap (the layout walk, test_browser_layout.py, and the dark theme's walk,
test_browser_colours.py); "Run release" on Results (the workshop, test_browser_workshop.py);
the error map's colours and hover label (test_browser_colours.py, both themes); the state
level's map (test_browser_results.py); the Trade-offs sweep and its split comparison
(AppTest: test_app.py, test_app_explain.py; a sweep drawn in the browser on the Group sizes,
Flows and Range queries pages); the files again at 95%, every interval at least as wide
(AppTest: test_app_downloads.py); a second publishable draw waiting for a declared total
and its confirmation (AppTest: test_app_ledger.py).

Screenshots (with HIERDP_SCREENSHOTS=1): test-artifacts/screenshots/ (layout_home, 0_home, release_kept_export, export_intervals,
6_export, export_report, report_offline, 6b_export_publishable, report_publishable)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_browser import (  # noqa: F401  (fixtures)
    browser,
    check_release_csv,
    goto,
    map_hover,
    maps_drawn,
    no_exception,
    page,
    press,
    server,
    shot,
)
from test_browser_colours import refuse_requests_outside
from test_browser_report import assert_opens_offline, download_report, state_map_values

from hierdp_core.report.stakeholder import PUBLIC_BANNER
from tests.browser_tools import press_start, settle, wait_until

pytestmark = pytest.mark.browser
WAIT_MS = 120_000  # a loaded machine: the bootstrap and the rerun may take a while
DRAW = "Draw the publishable release (secure noise)"
NO_RELEASE = "No release for the current settings yet"
READY = "Release: ready"  # the sidebar's status of the count release


def files_offered(pg) -> None:
    """Wait until the release files are offered (no "Prepare" click on Export)."""
    pg.get_by_role("button", name="Release table (CSV)").wait_for(timeout=WAIT_MS)
    settle(pg)
    no_exception(pg)
    assert pg.get_by_role("button", name="Prepare the downloads").count() == 0


def download(pg, label: str, path: Path) -> Path:
    """Click the download button ``label``, save its file at ``path``, and wait for the
    rerun the click starts to end (while it runs, the page may show a button twice: the
    stale one and the new one, which a next click could not tell apart)."""
    with pg.expect_download(timeout=WAIT_MS) as started:
        pg.get_by_role("button", name=label, exact=True).click()
    started.value.save_as(path)
    settle(pg)
    return path


def home_then_start_the_us_counties(pg, url: str) -> None:
    """Home at 1280 x 800 (the layout walk's window, test_browser_layout.py) shows the three
    "Start with this sample" buttons above the fold and the samples' previews (the server's
    SVG: 51 states, 20 regions), and loads plotly.js and the county boundaries in the
    background; Start makes and maps the release of every US county."""
    pg.set_viewport_size({"width": 1280, "height": 800})
    pg.goto(url)
    settle(pg)
    starts = pg.get_by_role("button", name="Start with this sample")
    starts.nth(2).wait_for()  # a busy machine can paint them after the run is done
    assert starts.count() == 3
    for k in range(3):
        box = starts.nth(k).bounding_box()
        assert box["y"] + box["height"] <= 800, (k, box)
    shot(pg, "layout_home", full_page=False)
    shot(pg, "0_home")
    previews = pg.locator("svg.hierdp-svg-map path")  # painted after the run may end
    wait_until(pg, "() => document.querySelectorAll('svg.hierdp-svg-map path').length "
               ">= 71", timeout=30_000)
    assert previews.count() == 71
    wait_until(pg, "() => window.Plotly && window.__hierdpBoundaries?.size === 1")
    pg.set_viewport_size({"width": 1440, "height": 2600})  # the whole of every page
    press_start(pg, "us-counties")
    assert maps_drawn(pg, expect=[3141]) == [3141]  # every US county with a boundary
    no_exception(pg)
    assert "people:" in map_hover(pg)  # the released counts first


def a_first_visit_to_mechanism_and_budget_keeps_the_release(pg) -> None:
    """The release made on Results is kept through a first visit to Mechanism & budget
    (the defaults shown), Results again (no new run) and Export."""
    sidebar = pg.locator("[data-testid='stSidebar']")
    sidebar.get_by_text(READY).wait_for()

    goto(pg, "Mechanism & budget")  # nothing changed: the defaults are shown
    pg.get_by_text("Noise per measured cell").first.wait_for()
    assert sidebar.get_by_text(READY).count() == 1, "Mechanism & budget: release not kept"

    goto(pg, "Results")  # the same release, not a new run
    assert maps_drawn(pg, expect=[3141]) == [3141]
    assert pg.get_by_text("units, computed in").count() == 0, "Results: a new run"
    assert sidebar.get_by_text(READY).count() == 1, "Results: the release was not kept"

    goto(pg, "Export")
    assert pg.get_by_text(NO_RELEASE).count() == 0, "Export: the release was not kept"
    assert sidebar.get_by_text(READY).count() == 1, "Export: the release was not kept"
    shot(pg, "release_kept_export")


def export_prepares_the_files_with_intervals(pg, tmp_path: Path) -> None:
    """On Export: the release table (every county, by category) with intervals at 90%, its
    manifest."""
    files_offered(pg)
    shot(pg, "export_intervals")
    table = check_release_csv(download(pg, "Release table (CSV)", tmp_path / "release.csv"))
    assert table["level"].max() == 2 and (table["level"] == 2).sum() == 3141 * 4
    assert list(table.columns)[-3:] == ["value", "lower", "upper"]
    assert (table["upper"] > table["lower"]).mean() > 0.5  # intervals, not points
    manifest = json.loads(download(pg, "Manifest (JSON)", tmp_path / "m90.json").read_text())
    assert manifest["intervals"]["level"] == 0.9
    assert manifest["intervals"]["inputs"] == "released values and public parameters only"


def the_exploration_report_opens_offline(pg, browser, folder: Path) -> pd.Series:  # noqa: F811
    """The evaluation report is prepared; the release report, downloaded, is marked an
    exploration and opens offline; the values its state map shows."""
    pg.get_by_role("button", name="Prepare the evaluation report").click()
    settle(pg)
    no_exception(pg)
    shot(pg, "6_export")
    assert pg.get_by_text("Not publishable as it is").count() >= 1  # seeded exploration
    folder.mkdir()
    before = download_report(pg, folder)
    shot(pg, "export_report")
    assert before.name == "EXPLORATION-NOT-FOR-PUBLICATION_hierdp_release_report.html"
    seeded, banner = assert_opens_offline(browser, before)  # one opening, offline
    assert banner.startswith("EXPLORATION - NOT FOR PUBLICATION")
    return seeded


def the_publishable_draw_and_its_files(pg, browser, tmp_path: Path,  # noqa: F811
                                       seeded: pd.Series) -> None:
    """The publishable draw: its manifest (secure, no seed, a plain file name), its release
    table, and its report (plain name, the public banner, the secure values on the state
    map, not the exploration's ``seeded`` ones)."""
    pg.get_by_text("no publishable release of this dataset yet").wait_for(timeout=WAIT_MS)
    press(pg, DRAW)
    pg.get_by_text("Publishable as it is").first.wait_for(timeout=WAIT_MS)
    settle(pg)
    alerts = pg.locator("[data-testid='stAlert']")  # one verdict box: the drawn release's
    assert alerts.filter(has_text="Not publishable as it is").count() == 0
    assert alerts.filter(has_text="Publishable as it is").count() == 1
    shot(pg, "6b_export_publishable")
    with pg.expect_download() as started:
        pg.get_by_role("button", name="Secure: Manifest (JSON)").click()
    manifest = json.loads(Path(started.value.path()).read_text())
    assert manifest["publishable"] is True and manifest["structure"] == "declared"
    assert manifest["randomness"]["mode"] == "secure" and "seed" not in manifest["randomness"]
    assert "NOT-PUBLISHABLE" not in started.value.suggested_filename

    secure_csv = pg.get_by_role("button", name="Secure: Release table (CSV)")
    secure_csv.wait_for(timeout=WAIT_MS)
    settle(pg)  # a click during a redraw can hit the previous file's URL
    with pg.expect_download() as started:
        secure_csv.click()
    table = pd.read_csv(started.value.path(), dtype={"node_id": str}, keep_default_na=False)
    released = table[table["level"] == 1].groupby("label")["value"].sum().sort_index()
    after = download_report(pg, tmp_path)
    assert after.name == "hierdp_release_report.html"
    shown, banner = state_map_values(browser, after)
    assert banner == PUBLIC_BANNER
    text = after.read_text()
    assert "Publishable as it is" in text and "Not publishable" not in text
    assert len(shown) == len(released) == 51
    pd.testing.assert_series_equal(shown, released, check_names=False, check_dtype=False)
    assert (shown != seeded).sum() >= 40  # not the exploration values


def test_the_us_counties_from_home_to_the_publishable_release(server, page, browser,  # noqa: F811
                                                              tmp_path):
    outside = refuse_requests_outside(page, server)
    home_then_start_the_us_counties(page, server)
    a_first_visit_to_mechanism_and_budget_keeps_the_release(page)
    export_prepares_the_files_with_intervals(page, tmp_path)
    seeded = the_exploration_report_opens_offline(page, browser, tmp_path / "exploration")
    the_publishable_draw_and_its_files(page, browser, tmp_path, seeded)
    assert outside == [], f"requests outside the dashboard: {sorted(set(outside))}"
