"""A workshop of three at once (issue 31, item 3): three people open the dashboard in
browser sessions of their own (contexts of one Chromium) at the same time, each with another sample and seed, and walk the demo
path; every step answers, each saved configuration and downloaded release is its own (equal
to the library's release of that configuration), and the server's memory stays bounded."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.browser_workshop import STEPS, check_isolation, run_workshop, server_memory_mb
from tests.test_browser import server  # noqa: F401  (fixture)

pytestmark = pytest.mark.browser
STEP_LIMIT_S = 120  # each step, with three sessions and the test's own browsers on 2 cores
MEMORY_LIMIT_MB = 3_000


def test_three_sessions_at_once_keep_their_own_data_and_release(server, tmp_path):  # noqa: F811
    before = server_memory_mb(urlparse(server).port)
    people = run_workshop(server, 3, tmp_path, reduced_motion=True)  # as every test page
    assert check_isolation(people, tmp_path) == []
    assert {who.sample for who in people} == {"us-counties", "italy-municipalities",
                                              "synthetic-us-like"}
    for who in people:
        assert set(who.steps) == set(STEPS)
        assert max(who.steps.values()) < STEP_LIMIT_S, who.steps
    after = server_memory_mb(urlparse(server).port)
    assert after["peak_rss_mb"] < MEMORY_LIMIT_MB, (before, after)
