"""The Export page's release files carry intervals, in a real headless Chromium (Debian's,
driven by Playwright), on the US counties with TopDown (the default): the release files
are offered without a click (their bootstrap made as the page opens); the CSV has
``lower`` and ``upper`` around every value and the manifest says how they were made; at
95% the files are made again. Screenshot: test-artifacts/screenshots/export_intervals.png.
The budget across releases: after a first publishable draw the button is not offered again
until a total is declared, and a second draw waits for its confirmation ("this spends
another ε 1, a total of 2 of 3"). Screenshot: export_budget.png.
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


def open_export(pg, url: str) -> None:
    """The Export page of the first sample, its release made on the Results page."""
    pg.goto(url)
    settle(pg)
    press_start(pg, "us-counties")
    maps_drawn(pg)
    goto(pg, "Export")


def test_export_prepares_the_files_with_intervals(server, page, tmp_path):  # noqa: F811
    open_export(page, server)
    files_offered(page)
    shot(page, "export_intervals")
    table = check_release_csv(download(page, "Release table (CSV)", tmp_path / "release.csv"))
    assert list(table.columns)[-3:] == ["value", "lower", "upper"]
    assert (table["upper"] > table["lower"]).mean() > 0.5  # intervals, not points
    manifest = json.loads(download(page, "Manifest (JSON)", tmp_path / "m90.json").read_text())
    assert manifest["intervals"]["level"] == 0.9
    assert manifest["intervals"]["inputs"] == "released values and public parameters only"

    page.locator("[data-testid='stRadio']").filter(has_text="Intervals in the files") \
        .get_by_text("95%", exact=True).click()
    settle(page)
    files_offered(page)
    manifest = json.loads(download(page, "Manifest (JSON)", tmp_path / "m95.json").read_text())
    assert manifest["intervals"]["level"] == 0.95
    wider = check_release_csv(download(page, "Release table (CSV)", tmp_path / "r95.csv"))
    assert ((wider["upper"] - wider["lower"]) >= (table["upper"] - table["lower"])).all()


def test_a_second_publishable_draw_waits_for_a_total_and_a_confirmation(server, page):  # noqa: F811
    open_export(page, server)
    page.get_by_text("no publishable release of this dataset yet").wait_for(timeout=WAIT_MS)
    press(page, DRAW)
    page.get_by_text("Publishable as it is").first.wait_for(timeout=WAIT_MS)
    page.get_by_text("Another publishable draw would spend ε 1").wait_for(timeout=WAIT_MS)
    assert page.get_by_role("button", name=DRAW).is_disabled()

    page.get_by_text("Declare this dataset's total budget across releases").click()
    field = page.get_by_label("Total ε of every publishable release of this dataset")
    field.fill("3")
    field.press("Enter")
    settle(page)
    press(page, "Declare the total")
    confirm = page.get_by_text("Draw again: this spends another ε 1, a total of 2 of 3 on "
                               "this dataset")
    confirm.wait_for(timeout=WAIT_MS)
    assert page.get_by_role("button", name=DRAW).is_disabled()
    confirm.click()
    settle(page)
    assert page.get_by_role("button", name=DRAW).is_enabled()
    shot(page, "export_budget")
    press(page, DRAW)
    page.get_by_text("have spent ε 2 of 3, 1 left").wait_for(timeout=WAIT_MS)
    assert page.get_by_role("button", name=DRAW).is_disabled()  # a third one asks again
    no_exception(page)
