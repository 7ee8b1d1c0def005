"""The Results page's ε slider in a real headless Chromium (Debian's, driven by Playwright),
on the US counties: one key press re-releases, the map of the 3,141 counties is drawn again
with the new release (its title names the new ε), and Mechanism & budget shows the same ε.
Screenshot: test-artifacts/screenshots/results_epsilon.png."""

from __future__ import annotations

import pytest
import test_browser as tb
from test_browser import browser, page, server  # noqa: F401  (fixtures)

from hierdp_core.ui import plotly_bundle
from tests.browser_tools import select_option, settle, wait_until

pytestmark = pytest.mark.browser
MAP_STATE = """() => {
    const map = [...document.querySelectorAll('.js-plotly-plot')]
        .find(p => p.data && p.data[0].type === 'choropleth');
    return {title: map.querySelector('.gtitle').textContent,
            fills: Array.from(map.querySelectorAll('path.choroplethlocation'),
                              path => getComputedStyle(path).fill),
            values: Array.from(map.calcdata[0], d => d.z)};
}"""


# counts plotly.js's full drawings: Plotly.react (a figure drawn) and Plotly.Plots.resize
# (drawn again at its element's new width)
COUNT_DRAWINGS = """(() => {
  window.__hdDrawings = {react: 0, resize: 0};
  let loaded;
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => loaded, set(P) {
    loaded = P;
    for (const [owner, name] of [[P, 'react'], [P.Plots, 'resize']]) {
      const drawing = owner[name];
      owner[name] = function (...args) {
        window.__hdDrawings[name]++;
        return drawing.apply(this, args);
      };
    }
  }});
})();"""


def channels(fill: str) -> list[int]:
    return [int(c) for c in fill[fill.index("(") + 1:-1].split(",")[:3]]


def epsilon_slider(pg):
    return pg.locator("[data-testid='stSlider']").filter(has_text="Total ε").get_by_role(
        "slider").first


def test_a_key_press_on_the_results_epsilon_slider_redraws_the_map(server, page):  # noqa: F811
    page.add_init_script(COUNT_DRAWINGS)
    tb.start_on(page, server, "Results")  # the US counties, the default sample
    assert tb.maps_drawn(page, expect=[3141]) == [3141]
    # every figure drawn once: not again when its element first reports its size (the map
    # of 3,141 counties took as long again to redraw, at the same width)
    drawings = page.evaluate("() => window.__hdDrawings")
    assert drawings["react"] >= 1 and drawings["resize"] == 0, drawings
    before = page.evaluate(MAP_STATE)
    assert before["title"] == "Released, TopDown, ε = 1"
    if plotly_bundle.bundle_path().is_file():  # built at set-up (npm): the map needs no more
        loaded = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)"
                               ".filter(n => n.includes('/static/js/plotly'))")
        assert [url.rsplit("/", 1)[1] for url in loaded] == [plotly_bundle.bundle_name()]
    assert epsilon_slider(page).get_attribute("aria-valuetext") == "1.0"

    epsilon_slider(page).focus()
    page.keyboard.press("ArrowLeft")
    wait_until(page, f"() => ({MAP_STATE})().title === 'Released, TopDown, ε = 0.5'",
               timeout=60_000)
    settle(page)
    tb.no_exception(page)
    recoloured = page.evaluate(MAP_STATE)
    assert tb.maps_drawn(page, expect=[3141]) == [3141]
    assert recoloured["fills"] != before["fills"]  # the map of a new release, not a new title

    # the pointer on the map brings plotly's own state up to the new release: its hover
    # values are the new release's and the colours it draws are the recoloured ones
    page.locator(".js-plotly-plot").filter(has=page.locator("path.choroplethlocation")) \
        .first.hover()
    wait_until(page, f"v => ({MAP_STATE})().values.join() !== v",
               arg=",".join(map(str, before["values"])), timeout=60_000)
    page.mouse.move(1, 1)
    settle(page)
    drawn = page.evaluate(MAP_STATE)
    assert drawn["title"] == "Released, TopDown, ε = 0.5"
    worst = max(abs(a - b) for ours, plotlys in zip(recoloured["fills"], drawn["fills"],
                                                    strict=True)
                for a, b in zip(channels(ours), channels(plotlys), strict=True))
    assert worst <= 1  # the same colours, up to rounding of a channel
    assert page.get_by_text("TopDown, ε = 0.5, split").count() == 1  # under the map
    # the sidebar points to the slider: the fragment never writes outside itself (a write
    # to the sidebar from it blanked the app under load), so it shows no stale ε = 1
    sidebar = page.locator("[data-testid='stSidebar']")
    pointer = "TopDown · ε or ρ: the slider above the map"
    assert sidebar.get_by_text(pointer).count() == 1
    assert sidebar.get_by_text("ε = 1").count() == 0
    tb.shot(page, "results_epsilon")
    select_option(page, "Level", "state")  # the fragment again, without a new release
    assert tb.maps_drawn(page, expect=[51]) == [51]
    assert sidebar.get_by_text(pointer).count() == 1  # the summary is kept
    width = page.evaluate("() => document.querySelector('.js-plotly-plot')._fullLayout.width")
    page.set_viewport_size({"width": 1100, "height": 2600})  # a narrower window: fitted
    wait_until(page, "w => document.querySelector('.js-plotly-plot')._fullLayout.width"
               " < w", arg=width, timeout=60_000)
    assert page.evaluate("() => window.__hdDrawings")["resize"] >= 1
    assert sidebar.get_by_text("ready").count() == 1

    tb.goto(page, "Mechanism & budget")
    assert epsilon_slider(page).get_attribute("aria-valuetext") == "0.5"
