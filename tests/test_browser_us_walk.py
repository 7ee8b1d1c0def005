"""The demo path on the US counties in a real headless Chromium (Debian's, driven by
Playwright), in one walk (one sample load, one session) that checks what three walks
checked each from their own start:

* Home and a release end to end: the previews, Start with this sample, Data, Hierarchy,
  Mechanism & budget, Run release and the map's four views, Trade-offs, the release CSV
  (it adds up, every county), and the publishable draw's manifest;
* the release is kept while nothing changes: Start on Home makes it; a first visit to
  Mechanism & budget (which draws the mechanism's parameters, filling in their defaults)
  leaves it the current release, so Export offers it and Results shows it without running
  it again;
* the release files carry intervals: they are offered without a click (their bootstrap
  made as the page opens); the CSV has ``lower`` and ``upper`` around every value and the
  manifest says how they were made; at 95% the files are made again;
* the report prepared on Export opens from disk with every network request blocked (its
  figures and maps draw, no request leaves it); after "Draw the publishable release" the
  report is the publishable release's (its file name plain, its banner green, the state
  map showing the secure release's values, not the exploration's);
* the budget across releases: after a first publishable draw the button is not offered
  again until a total is declared, and a second draw waits for its confirmation ("this
  spends another ε 1, a total of 2 of 3").

Screenshots: test-artifacts/screenshots/ (0_home ... 6b_export_publishable,
release_kept_export, export_intervals, export_report, report_offline, report_publishable,
export_budget)."""

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
    one_trial_per_sweep,
    page,
    press,
    select_option,
    server,
    shot,
)
from test_browser_report import assert_opens_offline, download_report, state_map_values

from hierdp_core.report.stakeholder import PUBLIC_BANNER
from tests.browser_tools import press_start, settle

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
    with pg.expect_download(timeout=WAIT_MS) as started:
        pg.get_by_role("button", name=label, exact=True).click()
    started.value.save_as(path)
    return path


def home_then_start_the_us_counties(pg, url: str) -> None:
    """Home shows the samples' previews (the server's SVG: 51 states, 20 regions) and loads
    plotly.js and the county boundaries in the background; Start makes and maps the
    release of every US county."""
    pg.goto(url)
    settle(pg)
    starts = pg.get_by_role("button", name="Start with this sample")
    starts.nth(1).wait_for()  # a first visit can paint them after the run is done
    assert starts.count() >= 2
    shot(pg, "0_home")
    previews = pg.locator("svg.hierdp-svg-map path")  # painted after the run may end
    pg.wait_for_function("() => document.querySelectorAll('svg.hierdp-svg-map path').length "
                         ">= 71", timeout=30_000)
    assert previews.count() == 71
    pg.wait_for_function("() => window.Plotly && window.__hierdpBoundaries?.size === 1")
    press_start(pg, "us-counties")
    assert maps_drawn(pg, expect=[3141]) == [3141]  # every US county with a boundary
    no_exception(pg)


def a_first_visit_to_mechanism_and_budget_keeps_the_release(pg) -> None:
    """The release made on Results is kept through a first visit to Mechanism & budget
    (the defaults shown), Export and Results again (no new run)."""
    sidebar = pg.locator("[data-testid='stSidebar']")
    sidebar.get_by_text(READY).wait_for()

    goto(pg, "Mechanism & budget")  # nothing changed: the defaults are shown
    pg.get_by_text("Noise per measured cell").first.wait_for()
    assert sidebar.get_by_text(READY).count() == 1, "Mechanism & budget: release not kept"

    goto(pg, "Export")
    assert pg.get_by_text(NO_RELEASE).count() == 0, "Export: the release was not kept"
    assert sidebar.get_by_text(READY).count() == 1, "Export: the release was not kept"
    shot(pg, "release_kept_export")

    goto(pg, "Results")  # the same release, not a new run
    assert maps_drawn(pg, expect=[3141]) == [3141]
    assert pg.get_by_text("units, computed in").count() == 0, "Results: a new run"
    assert sidebar.get_by_text(READY).count() == 1, "Results: the release was not kept"


def the_pages_of_a_release(pg) -> None:
    """Data, Hierarchy, Mechanism & budget (another mechanism and back), Run release on
    Results and its map's views and levels, a sweep on Trade-offs."""
    goto(pg, "Data")
    shot(pg, "1_data")
    goto(pg, "Hierarchy")
    pg.wait_for_selector(".js-plotly-plot .treemaplayer")
    shot(pg, "2_hierarchy")
    goto(pg, "Mechanism & budget")
    select_option(pg, "Mechanism", "Least squares")
    select_option(pg, "Mechanism", "TopDown")
    assert pg.get_by_text("Noise per measured cell").count() >= 1
    shot(pg, "3_mechanism")

    goto(pg, "Results")
    pg.get_by_role("button", name="Run release").click()
    settle(pg)
    assert min(maps_drawn(pg)) >= 3000
    no_exception(pg)
    shot(pg, "4_results")
    assert "people:" in map_hover(pg)  # the released counts first
    pg.locator("[data-testid='stButtonGroup'] button").filter(  # one map, four views
        has_text="Error (released − true)").click()
    settle(pg)
    pg.get_by_text("error", exact=True).first.wait_for()  # the diverging map's colour bar
    assert maps_drawn(pg, expect=[3141]) == [3141] and "error:" in map_hover(pg)
    shot(pg, "4a_results_error_map")
    select_option(pg, "Level", "state")
    assert maps_drawn(pg, expect=[51]) == [51]
    shot(pg, "4b_results_state")

    goto(pg, "Trade-offs")
    one_trial_per_sweep(pg, "Trials each", 5)  # the sweep's scale is not checked here
    press(pg, "Run the sweep")
    pg.wait_for_selector(".js-plotly-plot .scatterlayer")
    press(pg, "Compare")
    shot(pg, "5_tradeoffs")


def export_prepares_the_files_with_intervals(pg, tmp_path: Path) -> None:
    """On Export: the release table (every county, by category) with intervals at 90%, its
    manifest; at 95% the files again, every interval at least as wide."""
    files_offered(pg)
    shot(pg, "export_intervals")
    table = check_release_csv(download(pg, "Release table (CSV)", tmp_path / "release.csv"))
    assert table["level"].max() == 2 and (table["level"] == 2).sum() == 3141 * 4
    assert list(table.columns)[-3:] == ["value", "lower", "upper"]
    assert (table["upper"] > table["lower"]).mean() > 0.5  # intervals, not points
    manifest = json.loads(download(pg, "Manifest (JSON)", tmp_path / "m90.json").read_text())
    assert manifest["intervals"]["level"] == 0.9
    assert manifest["intervals"]["inputs"] == "released values and public parameters only"

    pg.locator("[data-testid='stRadio']").filter(has_text="Intervals in the files") \
        .get_by_text("95%", exact=True).click()
    settle(pg)
    files_offered(pg)
    manifest = json.loads(download(pg, "Manifest (JSON)", tmp_path / "m95.json").read_text())
    assert manifest["intervals"]["level"] == 0.95
    wider = check_release_csv(download(pg, "Release table (CSV)", tmp_path / "r95.csv"))
    assert ((wider["upper"] - wider["lower"]) >= (table["upper"] - table["lower"])).all()


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


def a_second_publishable_draw_waits_for_a_total_and_a_confirmation(pg) -> None:
    pg.get_by_text("Another publishable draw would spend ε 1").wait_for(timeout=WAIT_MS)
    assert pg.get_by_role("button", name=DRAW).is_disabled()

    pg.get_by_text("Declare this dataset's total budget across releases").click()
    field = pg.get_by_label("Total ε of every publishable release of this dataset")
    field.fill("3")
    field.press("Enter")
    settle(pg)
    press(pg, "Declare the total")
    confirm = pg.get_by_text("Draw again: this spends another ε 1, a total of 2 of 3 on "
                             "this dataset")
    confirm.wait_for(timeout=WAIT_MS)
    assert pg.get_by_role("button", name=DRAW).is_disabled()
    confirm.click()
    settle(pg)
    assert pg.get_by_role("button", name=DRAW).is_enabled()
    shot(pg, "export_budget")
    press(pg, DRAW)
    pg.get_by_text("have spent ε 2 of 3, 1 left").wait_for(timeout=WAIT_MS)
    assert pg.get_by_role("button", name=DRAW).is_disabled()  # a third one asks again
    no_exception(pg)


def test_the_us_counties_from_home_to_a_second_publishable_draw(server, page, browser,  # noqa: F811
                                                                tmp_path):
    home_then_start_the_us_counties(page, server)
    a_first_visit_to_mechanism_and_budget_keeps_the_release(page)
    the_pages_of_a_release(page)
    goto(page, "Export")
    export_prepares_the_files_with_intervals(page, tmp_path)
    seeded = the_exploration_report_opens_offline(page, browser, tmp_path / "exploration")
    the_publishable_draw_and_its_files(page, browser, tmp_path, seeded)
    a_second_publishable_draw_waits_for_a_total_and_a_confirmation(page)
