"""The Results page's ε slider in a real headless Chromium (Debian's, driven by Playwright),
on the US counties: one key press re-releases, the map of the 3,141 counties is drawn again
with the new release (its title names the new ε), and Mechanism & budget shows the same ε.
Screenshot: test-artifacts/screenshots/results_epsilon.png."""

from __future__ import annotations

import pytest
import test_browser as tb
from test_browser import browser, page, server  # noqa: F401  (fixtures)

from tests.browser_tools import select_option, settle

pytestmark = pytest.mark.browser
MAP_VALUES = """() => {
    const map = [...document.querySelectorAll('.js-plotly-plot')]
        .find(p => p.data && p.data[0].type === 'choropleth');
    return {title: map.querySelector('.gtitle').textContent,
            values: Array.from(map.calcdata[0], d => d.z)};
}"""


def epsilon_slider(pg):
    return pg.locator("[data-testid='stSlider']").filter(has_text="Total ε").get_by_role(
        "slider").first


def test_a_key_press_on_the_results_epsilon_slider_redraws_the_map(server, page):  # noqa: F811
    page.goto(server)
    settle(page)
    page.get_by_role("button", name="Start with this sample").first.click()
    settle(page)
    assert tb.maps_drawn(page) == [3141]
    before = page.evaluate(MAP_VALUES)
    assert before["title"] == "Released, ε = 1"
    assert epsilon_slider(page).get_attribute("aria-valuetext") == "1.0"

    epsilon_slider(page).focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"() => ({MAP_VALUES})().title === 'Released, ε = 0.5'",
                           timeout=60_000)
    settle(page)
    tb.no_exception(page)
    after = page.evaluate(MAP_VALUES)
    assert tb.maps_drawn(page) == [3141]
    assert after["values"] != before["values"]  # the map of a new release, not a new title
    assert page.get_by_text("Mechanism topdown, ε = 0.5").count() == 1
    sidebar = page.locator("[data-testid='stSidebar']")
    assert sidebar.get_by_text("topdown · ε = 0.5").count() == 1
    tb.shot(page, "results_epsilon")
    select_option(page, "Level", "state")  # the fragment again, without a new release
    assert tb.maps_drawn(page) == [51]
    assert sidebar.get_by_text("topdown · ε = 0.5").count() == 1  # the summary is kept
    assert sidebar.get_by_text("ready").count() == 1

    tb.goto(page, "Mechanism & budget")
    assert epsilon_slider(page).get_attribute("aria-valuetext") == "0.5"
