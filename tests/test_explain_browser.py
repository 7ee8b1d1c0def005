"""The Mechanism & budget page in a real headless Chromium: a budget-split preset chosen in
its select box applies at once and is still chosen after a visit to the Results page (it
was silently shown as Uniform again, issue 18), and the plain-language panel is shown.
Screenshot: test-artifacts/screenshots/mechanism_explain.png."""

from __future__ import annotations

import pytest
from test_browser import browser, goto, no_exception, page, server, shot, start_on  # noqa: F401
from test_browser_split import weight_slider

from tests.browser_tools import select_option

pytestmark = pytest.mark.browser
LEVELS = ("total", "state", "county")


def preset_shown(pg) -> str:
    box = pg.locator("[data-testid='stSelectbox']").filter(has_text="Preset")
    return box.locator("input").input_value()


def test_a_preset_stays_chosen_and_the_panel_explains(server, page):  # noqa: F811
    start_on(page, server, "Mechanism & budget")  # the US counties, topdown, epsilon 1
    assert preset_shown(page) == "Uniform"
    select_option(page, "Preset", "More to finer levels")  # no second click needed
    no_exception(page)
    assert [weight_slider(page, level) for level in LEVELS] == ["0.33", "0.67", "1"]
    page.get_by_text("shares total 17%, state 33%, county 50%").wait_for()

    goto(page, "Results")
    page.get_by_text("split total 17%, state 33%, county 50%").wait_for()
    goto(page, "Mechanism & budget")
    assert preset_shown(page) == "More to finer levels"
    assert [weight_slider(page, level) for level in LEVELS] == ["0.33", "0.67", "1"]

    panel = page.locator(".st-key-explain_panel")
    panel.get_by_text("The guarantee protects one person").wait_for()
    panel.get_by_text("at most e^ε ≈ 2.72 times as likely").wait_for()
    panel.get_by_text("Released with secure noise, this configuration is publishable.").wait_for()
    panel.scroll_into_view_if_needed()
    shot(page, "mechanism_explain")
