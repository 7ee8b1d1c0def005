"""Saved configurations in a real headless Chromium (Debian's, driven by Playwright), on the
US counties: a configuration saved on the Export page (seed 5), loaded in a new session: the
Results page's release is the same; ``hierdp release --config`` on the sample file gives the
same values too. Screenshots (with HIERDP_SCREENSHOTS=1): config_loaded.png.

The helpers for the release report (`download_report`, `assert_opens_offline`,
`state_map_values`) serve the report's checks in the US walk (test_browser_us_walk.py): the
exploration report opens offline; after the publishable draw the report is the publishable
release's. Screenshots: report_offline.png, report_publishable.png."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from test_browser import (  # noqa: F401  (fixtures)
    browser,
    download_release_csv,
    goto,
    maps_drawn,
    no_exception,
    page,
    press,
    server,
    shot,
    start_on,
)

from hierdp_core.data.samples import SAMPLES
from tests.browser_tools import new_context, settle, wait_until

pytestmark = pytest.mark.browser
FIGURES = ".js-plotly-plot"


def start_us(pg, server_url: str) -> None:  # noqa: F811
    """A new session on Results: the US counties (the default sample, as "Start with this
    sample" on Home loads it) released and mapped."""
    start_on(pg, server_url, "Results")
    pg.get_by_text(f"Data: {SAMPLES['us-counties'].title}").first.wait_for()
    maps_drawn(pg)


def assert_opens_offline(browser, path: Path) -> tuple[pd.Series, str]:  # noqa: F811
    """The exploration report at ``path``, opened from disk in a context with every network
    request blocked: its figures (maps included) draw, and no request leaves it. What its
    state map shows and its banner (`read_state_map`)."""
    context = new_context(browser, viewport={"width": 1280, "height": 900}, offline=True)
    requests = []

    def block(route):
        if not route.request.url.startswith(("file:", "data:")):
            requests.append(route.request.url)
            return route.abort()
        return route.continue_()

    context.route("**/*", block)
    offline = context.new_page()
    offline.goto(path.as_uri(), timeout=120_000)  # 7 MB of inlined figures and maps
    wait_until(offline,
        "() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4",
        timeout=120_000)
    wait_until(offline,  # the state and county maps drew their areas
        f"""() => [...document.querySelectorAll('{FIGURES}')].filter(
                p => p.querySelector('path.choroplethlocation')).length >= 2""",
        timeout=120_000)
    counties = offline.evaluate(f"""() => Math.max(...[...document.querySelectorAll(
        '{FIGURES}')].map(p => p.querySelectorAll('path.choroplethlocation').length))""")
    assert counties >= 3000, f"offline report: its county map drew {counties} areas"
    assert offline.locator(f"{FIGURES} .barlayer").count() >= 1, "offline report: no ledger"
    assert offline.locator(f"{FIGURES} .scatterlayer .trace").count() >= 3, \
        "offline report: no trade-off figure"
    assert offline.get_by_text("Not publishable as it is", exact=True).count() == 1, \
        "offline report: the exploration's verdict is not shown once"
    assert requests == [], f"offline report: requests left it: {requests}"
    shot(offline, "report_offline")
    shown = read_state_map(offline)
    context.close()
    return shown


def download_report(pg, folder: Path) -> Path:
    """Prepare the report on the Export page and save it in ``folder``."""
    press(pg, "Prepare the report")
    with pg.expect_download() as download:
        pg.get_by_role("button", name="Download the report (HTML)").click()
    path = folder / download.value.suggested_filename
    download.value.save_as(path)
    return path


def state_map_values(browser, path: Path) -> tuple[pd.Series, str]:  # noqa: F811
    """The report at ``path``, opened: what its state map shows and its banner
    (`read_state_map`)."""
    context = new_context(browser, viewport={"width": 1280, "height": 900})
    report = context.new_page()
    report.goto(path.as_uri())
    shown = read_state_map(report)
    context.close()
    return shown


def read_state_map(report) -> tuple[pd.Series, str]:
    """The values the report opened in ``report`` shows on its state map (by state name,
    from the hover data plotly.js drew) and the text of its top banner."""
    wait_until(report,
        f"""() => [...document.querySelectorAll('{FIGURES}')].some(
                p => (p.layout.title.text || '').startsWith('Released: state')
                     && p.querySelector('path.choroplethlocation'))""", timeout=120_000)
    shown = report.evaluate(f"""() => {{
        const p = [...document.querySelectorAll('{FIGURES}')].find(
            p => (p.layout.title.text || '').startsWith('Released: state'));
        const t = p._fullData[0];
        return [Array.from(t.text), Array.from(t.customdata)]; }}""")
    banner = report.locator(".banner.top").text_content()
    if "EXPLORATION" not in banner:
        shot(report, "report_publishable", full_page=False)
    return pd.Series(shown[1], index=shown[0]).sort_index(), banner


def values(table: pd.DataFrame) -> pd.Series:
    return table.set_index(["node_id", "category"])["value"].sort_index()


def test_saved_configuration_reproduces_the_release(server, page, browser,  # noqa: F811
                                                    tmp_path):
    start_us(page, server)
    page.get_by_label("Seed", exact=True).fill("5")
    page.get_by_label("Seed", exact=True).press("Enter")
    settle(page)
    press(page, "Run release")
    first = download_release_csv(page, tmp_path)
    page.get_by_text("Configuration: save it, or load a saved one").click()
    with page.expect_download() as download:
        page.get_by_role("button", name="Save the configuration (JSON)").click()
    saved = tmp_path / "hierdp_config.json"
    download.value.save_as(saved)
    config = json.loads(saved.read_text())
    assert config["seed"] == 5 and config["data"] == {"sample": "us-counties"}

    context = new_context(browser, viewport={"width": 1440, "height": 2600},
                                  accept_downloads=True)
    other = context.new_page()
    other.set_default_timeout(90_000)
    start_on(other, server, "Export")  # no release yet: the configuration section is open
    other.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(
        str(saved))
    other.get_by_text("Loaded hierdp_config.json").wait_for()
    settle(other)
    no_exception(other)
    shot(other, "config_loaded")
    goto(other, "Results")
    maps_drawn(other)
    assert other.get_by_label("Seed", exact=True).input_value() == "5"
    assert other.get_by_text("set via the Session State API").count() == 0
    shot(other, "config_loaded_results")
    (tmp_path / "again").mkdir()
    again = download_release_csv(other, tmp_path / "again")
    context.close()
    pd.testing.assert_series_equal(values(first), values(again))

    from hierdp_core.cli.main import main

    assert main(["sample", "us-counties", "--out", str(tmp_path / "s.csv")]) == 0
    assert main(["release", str(tmp_path / "s.csv"), "--config", str(saved), "--interval",
                 "none", "--out", str(tmp_path / "cli")]) == 0  # the values: no bootstrap
    cli = pd.read_csv(tmp_path / "cli" / "release.csv", dtype={"node_id": str},
                      keep_default_na=False)
    pd.testing.assert_series_equal(values(first), values(cli), check_dtype=False)
