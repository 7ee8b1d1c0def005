"""The plain-language panel of the Group sizes, Flows and Range queries pages in a real
headless Chromium: opened, it names the page's neighbour, the odds bound and the a priori
error per level in the page's unit, and the configuration box offers save and load.
Screenshots: test-artifacts/screenshots/explain_{group_sizes,flows,ranges}.png (the panel)
and explain_{...}_page.png (the whole page)."""

from __future__ import annotations

import json

import pytest
from test_browser import SHOTS, browser, goto, no_exception, page, server, shot  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("label", "name", "protects", "per"), [
    ("Group sizes", "group_sizes", "The guarantee protects one household member",
     "per region and size"),
    ("Flows", "flows", "The guarantee protects one trip", "per O/D pair, in trips"),
    ("Range queries", "ranges", "The guarantee protects one person",
     "RMSE per query of the workload"),
])
def test_the_query_pages_explain_in_plain_words(server, page, label, name, protects, per):  # noqa: F811
    page.goto(server)
    goto(page, label)
    panel = page.locator(".st-key-explain_panel")
    panel.get_by_text("In plain words").click()
    panel.get_by_text(protects).wait_for()
    panel.get_by_text("at most e^ε ≈ 2.72 times as likely").wait_for()
    panel.get_by_text(per, exact=False).first.wait_for()
    panel.locator("[data-testid='stDataFrame']").wait_for()
    no_exception(page)
    page.get_by_text("Configuration: save it, or load a saved one").click()
    page.get_by_role("button", name="Save the configuration (JSON)").wait_for()
    panel.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    panel.screenshot(path=str(SHOTS / f"explain_{name}.png"))
    shot(page, f"explain_{name}_page")


def unit_error(pg) -> str:
    """The Range page's "This unit: mean error per query" (depends on the released values)."""
    return pg.locator("[data-testid='stMetric']").filter(
        has_text="This unit: mean error per query").locator(
        "[data-testid='stMetricValue']").inner_text()


def test_a_saved_range_configuration_loads_back_in_a_new_session(server, browser, tmp_path):  # noqa: F811
    """Save on the Range queries page (another mechanism and seed), open a new browser
    session, load the file there: the page shows the same release."""
    from tests.browser_tools import select_option, settle

    first = browser.new_context(viewport={"width": 1440, "height": 2600})
    pg = first.new_page()
    pg.set_default_timeout(90_000)
    pg.goto(server)
    goto(pg, "Range queries")
    select_option(pg, "Mechanism", "greedy-h")
    seed = pg.get_by_label("Seed (exploration)")
    seed.fill("7")
    seed.press("Enter")
    settle(pg)
    no_exception(pg)
    released = unit_error(pg)
    pg.get_by_text("Configuration: save it, or load a saved one").click()
    with pg.expect_download() as download:
        pg.get_by_role("button", name="Save the configuration (JSON)").click()
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    first.close()
    saved = json.loads(path.read_text())
    assert saved["query"] == "ranges" and saved["mechanism"] == "greedy-h"
    assert saved["seed"] == 7 and saved["data"] == {"sample": "italy-municipalities"}

    second = browser.new_context(viewport={"width": 1440, "height": 2600})
    pg = second.new_page()
    pg.set_default_timeout(90_000)
    pg.goto(server)
    goto(pg, "Range queries")
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
