"""The browser tests' own tools in a real headless Chromium: `timed_rerun` sees a rerun that
starts and ends between two callbacks of its observer (a warm dashboard answers in
milliseconds; seen as a 120 s timeout in the clean-clone suite, never alone)."""

from __future__ import annotations

import pytest
from test_browser import browser, page  # noqa: F401  (fixtures)

from tests.browser_tools import timed_rerun

pytestmark = pytest.mark.browser
APP = '<div data-testid="stApp" data-test-script-state="notRunning"></div>'
# a rerun whose two state changes reach the page in one task: one batch of mutation records
FAST_RERUN = """() => { const app = document.querySelector('[data-testid="stApp"]');
    app.dataset.testScriptState = 'running'; app.dataset.testScriptState = 'notRunning'; }"""


def test_a_rerun_within_one_task_is_seen(page):  # noqa: F811
    page.set_content(APP)
    seconds = timed_rerun(page, lambda: page.evaluate(FAST_RERUN), timeout_ms=5_000)
    assert seconds < 5
    assert page.evaluate("() => window.__hdStates") == ["notRunning", "running", "notRunning"]
