"""The browser tests' own tools in a real headless Chromium: the page counts the script runs
its server reports (`browser_tools.RUN_COUNTER`), so `timed_rerun` sees a run however fast
it is (a warm dashboard answers within one frame, and the page's running state never shows
it: seen as 120-300 s timeouts in the clean-clone suite, never alone)."""

from __future__ import annotations

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from test_browser import browser, page, server, start_on  # noqa: F401  (fixtures)

from tests.browser_tools import timed_rerun

pytestmark = pytest.mark.browser


def _frame(**fields) -> list[int]:
    """A ForwardMsg with ``fields`` set, as the bytes a websocket frame carries."""
    msg = ForwardMsg()
    msg.hash = "h"
    for name, value in fields.items():
        if name == "script_finished":
            msg.script_finished = value
        else:
            getattr(msg, name).SetInParent()
    if "delta" in fields:  # a nested message whose bytes hold a script_finished tag (0x30)
        msg.delta.new_element.markdown.body = "\x30\x00\x30\x01"
    return list(msg.SerializeToString())


COUNT = """frames => { for (const f of frames) window.__hdCountFrame(new Uint8Array(f).buffer);
                       return [window.__hdStarts, window.__hdRuns]; }"""


def test_the_page_counts_the_runs_its_server_starts_and_finishes(page):  # noqa: F811
    page.goto("about:blank")  # the counter is installed on every document of the context
    finished = ForwardMsg.ScriptFinishedStatus
    frames = [_frame(new_session=True),
              _frame(delta=True),
              _frame(script_finished=finished.Value("FINISHED_EARLY_FOR_RERUN")),
              _frame(new_session=True),
              _frame(script_finished=finished.Value("FINISHED_SUCCESSFULLY")),
              _frame(script_finished=finished.Value("FINISHED_FRAGMENT_RUN_SUCCESSFULLY"))]
    assert page.evaluate(COUNT, frames) == [2, 2]


def test_a_rerun_answered_at_once_is_timed(page, server):  # noqa: F811
    """A rerun on a warm page (Data, nothing to compute) is seen, counted once."""
    start_on(page, server, "Data")
    before = page.evaluate("() => window.__hdRuns")
    seconds = timed_rerun(page, lambda: page.keyboard.press("r"), timeout_ms=20_000)
    assert seconds < 20
    assert page.evaluate("() => window.__hdRuns") == before + 1
