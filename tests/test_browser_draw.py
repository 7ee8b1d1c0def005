"""The publishable draw of a query page in a real headless Chromium (Flows: a draw of a
second or two). Pressed, it runs the page's Export section alone (a fragment: AppTest runs
the whole page, so only a browser takes this path): the figures above it are never marked
stale (a run of the whole page marks every element until it is drawn again), and the
section shows what the page's run showed: the running total of the dataset's budget, the
button refused beyond it, the drawn release's verdict (the exploration's box in the section
replaced by a note) and the secure files."""

from __future__ import annotations

from test_browser import browser, no_exception, page, server, start_on  # noqa: F401

from tests.browser_tools import settle, wait_until

WAIT_MS = 120_000  # a loaded machine: the secure release and its bootstrap
DRAW = "Draw the publishable release (secure noise)"

FIGURES_DRAWN = """n => document.querySelectorAll(
    '[data-testid="stElementContainer"] .js-plotly-plot').length >= n"""
#: records whether any element above the Export section is marked stale from now on
WATCH_ABOVE = """() => {
    const above = [...document.querySelectorAll('[data-testid="stElementContainer"]')]
        .filter(e => e.querySelector('.js-plotly-plot'));
    window.hdStale = 0;
    const seen = new MutationObserver(changes => changes.forEach(c => {
        if (c.target.getAttribute('data-stale') === 'true') window.hdStale += 1;
    }));
    above.forEach(e => seen.observe(e, {attributes: true, attributeFilter: ['data-stale']}));
    return above.length;
}"""


def test_a_query_page_draws_in_its_export_section_alone(server, page):  # noqa: F811
    start_on(page, server, "Flows")
    page.get_by_text("no publishable release of this dataset yet").wait_for(timeout=WAIT_MS)
    settle(page)
    # the figures are drawn after the script's run (plotly in the browser): the flow map
    # and the O/D matrices at least
    wait_until(page, FIGURES_DRAWN, 2, timeout=WAIT_MS)
    assert page.evaluate(WATCH_ABOVE) >= 2
    page.get_by_role("button", name=DRAW).click()
    page.get_by_role("button", name="Secure: Manifest (JSON)").wait_for(timeout=WAIT_MS)
    settle(page)
    no_exception(page)
    assert page.evaluate("() => window.hdStale") == 0  # the page above did not run again
    assert page.get_by_text("1 publishable release(s) have spent ε 1 of 1").count() == 1
    assert page.get_by_role("button", name=DRAW).is_disabled()  # its implicit total spent
    alerts = page.locator("[data-testid='stAlert']")  # the drawn release's verdict, once
    assert alerts.filter(has_text="secure noise charged to the dataset's budget").count() == 1
    assert page.get_by_text("These first files hold the exploration release").count() == 1
    assert page.get_by_text("Drawn with secure noise in").count() == 1
