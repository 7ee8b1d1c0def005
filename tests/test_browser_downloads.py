"""The release and the Export page's files in a real headless Chromium (Debian's, driven by
Playwright), on the US counties with TopDown (the default), in one walk (one sample load):

* the release is kept while nothing changes: Start on Home makes it; a first visit to
  Mechanism & budget (which draws the mechanism's parameters, filling in their defaults)
  leaves it the current release, so Export offers it and Results shows it without running
  it again. Screenshot: test-artifacts/screenshots/release_kept_export.png.
* the release files carry intervals: they are offered without a click (their bootstrap
  made as the page opens); the CSV has ``lower`` and ``upper`` around every value and the
  manifest says how they were made; at 95% the files are made again. Screenshot:
  export_intervals.png.
* the budget across releases: after a first publishable draw the button is not offered
  again until a total is declared, and a second draw waits for its confirmation ("this
  spends another ε 1, a total of 2 of 3"). Screenshot: export_budget.png.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_browser import (  # noqa: F401  (fixtures)
    browser,
    check_release_csv,
    goto,
    maps_drawn,
    no_exception,
    page,
    press,
    server,
    shot,
)

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


def a_first_visit_to_mechanism_and_budget_keeps_the_release(pg, url: str) -> None:
    """The first sample started on Home: its release is made once on Results and kept
    through a first visit to Mechanism & budget (the defaults shown), Export and Results
    again (no new run)."""
    pg.goto(url)
    settle(pg)
    press_start(pg, "us-counties")
    assert maps_drawn(pg, expect=[3141]) == [3141]
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


def test_export_files_with_intervals_then_a_second_publishable_draw(server, page,  # noqa: F811
                                                                     tmp_path):
    """One walk (one sample load and release) for three checks: the release kept through
    a first visit to Mechanism & budget; on Export the files with intervals at 90% and
    95%; then the budget across publishable draws."""
    a_first_visit_to_mechanism_and_budget_keeps_the_release(page, server)
    goto(page, "Export")
    export_prepares_the_files_with_intervals(page, tmp_path)
    a_second_publishable_draw_waits_for_a_total_and_a_confirmation(page)


def export_prepares_the_files_with_intervals(pg, tmp_path: Path) -> None:
    files_offered(pg)
    shot(pg, "export_intervals")
    table = check_release_csv(download(pg, "Release table (CSV)", tmp_path / "release.csv"))
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


def a_second_publishable_draw_waits_for_a_total_and_a_confirmation(pg) -> None:
    pg.get_by_text("no publishable release of this dataset yet").wait_for(timeout=WAIT_MS)
    press(pg, DRAW)
    pg.get_by_text("Publishable as it is").first.wait_for(timeout=WAIT_MS)
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
