"""The Mechanism & budget page in a real headless Chromium, on the US counties, in one
session: a budget-split preset chosen in its select box applies at once and is still chosen
after a visit to the Results page (it was silently shown as Uniform again, issue 18), and the
plain-language panel is shown; then the budget-split optimiser: a goal, the current and
optimised split's expected errors, "Use this split" (click to painted page timed) setting
the sliders. Screenshots: test-artifacts/screenshots/mechanism_explain.png,
split_optimiser.png (before) and split_optimiser_applied.png."""

from __future__ import annotations

import time

import pytest
from test_browser import (  # noqa: F401  (fixtures)
    PlaywrightTimeoutError,
    browser,
    goto,
    no_exception,
    page,
    server,
    shot,
    start_on,
)

from tests.browser_tools import select_option, settle

pytestmark = pytest.mark.browser


LEVELS = ("total", "state", "county")


def preset_shown(pg) -> str:
    box = pg.locator("[data-testid='stSelectbox']").filter(has_text="Preset")
    return box.locator("input").input_value()


def a_preset_stays_chosen_and_the_panel_explains(pg) -> None:
    assert preset_shown(pg) == "Uniform"
    select_option(pg, "Preset", "More to finer levels")  # no second click needed
    no_exception(pg)
    assert [weight_slider(pg, level) for level in LEVELS] == ["0.33", "0.67", "1"]
    pg.get_by_text("shares total 17%, state 33%, county 50%").wait_for()

    goto(pg, "Results")
    pg.get_by_text("split total 17%, state 33%, county 50%").wait_for()
    goto(pg, "Mechanism & budget")
    assert preset_shown(pg) == "More to finer levels"
    assert [weight_slider(pg, level) for level in LEVELS] == ["0.33", "0.67", "1"]

    panel = pg.locator(".st-key-explain_panel")
    panel.get_by_text("The guarantee protects one person").wait_for()
    panel.get_by_text("at most e^ε ≈ 2.72 times as likely").wait_for()
    panel.get_by_text("Released with secure noise, this configuration is publishable.").wait_for()
    panel.scroll_into_view_if_needed()
    shot(pg, "mechanism_explain")


def test_a_preset_stays_chosen_the_panel_explains_and_the_split_is_optimised(
        server, page):  # noqa: F811
    page.set_viewport_size({"width": 1440, "height": 2200})
    start_on(page, server, "Mechanism & budget")  # the US counties, topdown, epsilon 1
    a_preset_stays_chosen_and_the_panel_explains(page)
    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")
    page.get_by_text("Optimise the split").click()  # computed only once opened
    settle(page)
    # each step waits for what it shows, not for a script run: a run answered from warm
    # caches can start and end within one frame, and the page then never shows it running
    # (a 120 s wait for the goal's run in every clean-clone suite of 29 Nov, never alone)
    goal = page.get_by_text("Worst relative error")
    public = page.get_by_text("These populations are public figures")
    goal.click()
    try:
        public.wait_for(timeout=10_000)
    except PlaywrightTimeoutError:  # a click lost under load: given again
        goal.click()
        public.wait_for(timeout=120_000)
    started = time.perf_counter()
    public.click()
    page.get_by_text("Optimised split (numerical)").wait_for(timeout=120_000)
    page.wait_for_selector(".js-plotly-plot .barlayer")
    settle(page)
    goal_s = time.perf_counter() - started
    no_exception(page)
    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")
    shot(page, "split_optimiser")
    started = time.perf_counter()
    page.get_by_role("button", name="Use this split").click()
    page.get_by_text("In use: total 0%, state 0%, county 100%").wait_for(timeout=120_000)
    settle(page)
    use_s = time.perf_counter() - started
    no_exception(page)
    page.get_by_text("In use: total 0%, state 0%, county 100%").wait_for()
    page.get_by_text("shares total 0%, state 0%, county 100%").wait_for()
    assert [weight_slider(page, level) for level in LEVELS] == ["0", "0", "1"]
    print(f"\nclick to painted page: the goal confirmed (optimised) {goal_s:.3f} s, "
          f"'Use this split' {use_s:.3f} s")
    shot(page, "split_optimiser_applied")


def weight_slider(pg, level: str) -> str:
    """The value the weight slider of ``level`` shows."""
    box = pg.locator("[data-testid='stSlider']").filter(has_text=f"{level} (")
    return box.locator("input[type='range']").input_value()
