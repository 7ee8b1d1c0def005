"""The Export page's release files carry intervals, in a real headless Chromium (Debian's,
driven by Playwright), on the US counties with TopDown (the default): no release file is
offered until "Prepare the downloads with 90% intervals" is clicked; then the CSV has
``lower`` and ``upper`` around every value and the manifest says how they were made; at
95% the files are made again. Screenshot: test-artifacts/screenshots/export_intervals.png.
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
    server,
    shot,
)

from tests.browser_tools import settle

pytestmark = pytest.mark.browser
WAIT_MS = 120_000  # a loaded machine: the bootstrap and the rerun may take a while


def prepare(pg, level: str) -> None:
    pg.get_by_role("button", name=f"Prepare the downloads with {level} intervals").click()
    pg.get_by_role("button", name="Release table (CSV)").wait_for(timeout=WAIT_MS)
    settle(pg)
    no_exception(pg)


def download(pg, label: str, path: Path) -> Path:
    with pg.expect_download(timeout=WAIT_MS) as started:
        pg.get_by_role("button", name=label, exact=True).click()
    started.value.save_as(path)
    return path


def test_export_prepares_the_files_with_intervals(server, page, tmp_path):  # noqa: F811
    page.goto(server)
    settle(page)
    page.get_by_role("button", name="Start with this sample").first.click()
    settle(page)
    maps_drawn(page)
    goto(page, "Export")
    assert page.get_by_role("button", name="Release table (CSV)").count() == 0
    prepare(page, "90%")
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
    prepare(page, "95%")
    manifest = json.loads(download(page, "Manifest (JSON)", tmp_path / "m95.json").read_text())
    assert manifest["intervals"]["level"] == 0.95
    wider = check_release_csv(download(page, "Release table (CSV)", tmp_path / "r95.csv"))
    assert ((wider["upper"] - wider["lower"]) >= (table["upper"] - table["lower"])).all()
