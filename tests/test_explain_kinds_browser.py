"""The plain-language panel of the Group sizes, Flows and Range queries pages in a real
headless Chromium: opened, it names the page's neighbour, the odds bound and the a priori
error per level in the page's unit, and the configuration box offers save and load.
Screenshots: test-artifacts/screenshots/explain_{group_sizes,flows,ranges}.png (the panel)
and explain_{...}_page.png (the whole page)."""

from __future__ import annotations

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
