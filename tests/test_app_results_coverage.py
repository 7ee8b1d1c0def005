"""The Results page's interval coverage per level in evaluation mode (issue 30 item 4,
AppTest): least squares' intervals are made as the page is drawn and their coverage
against the truth is shown per level; TopDown's bootstrap waits for a click. The table's
numbers are those of `coverage_table` on the release with the page's intervals (the ones
its downloads carry)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from hierdp_core.intervals.coverage import coverage_table
from hierdp_core.ui import session
from hierdp_core.ui.downloads import INTERVALS, release_token
from tests.test_app import assert_clean, page

RESULTS = "pages/4_Results.py"
SAMPLE = "us-counties"


def results(mechanism: str):
    at = page(RESULTS, SAMPLE)
    at.session_state[session.SETTINGS] = {
        "mechanism": mechanism, "params": {}, "definition": "pure-dp", "epsilon": 1.0,
        "rho": 0.5, "delta": 1e-6, "weights": [1.0, 1.0, 1.0]}
    at.run()
    assert_clean(at)
    return at


def coverage_frame(at):
    frames = [d.value for d in at.dataframe if "Coverage" in d.value.columns]
    return frames[0] if frames else None


def truth_of(at):
    """Every node's true values of the page's data (its cached CountData)."""
    return at.session_state[session.DATA_CACHE][1].node_counts()


def test_least_squares_coverage_is_shown_per_level_without_a_click():
    at = results("least-squares")
    assert "res_iv_make" not in [b.key for b in at.button]
    frame = coverage_frame(at)
    release = at.session_state[session.RELEASE]
    h = release.hierarchy
    assert list(frame["Level"]) == list(h.level_names)
    intervals = at.session_state[INTERVALS][(release_token(release), 0.9)][0]  # the page's
    expected = coverage_table(replace(release, intervals=intervals), truth_of(at))
    np.testing.assert_allclose(frame["Coverage"], expected["coverage"])
    assert (frame["Nominal"] == 0.9).all() and frame["Calibrated"].all()
    assert "Estimated error" not in frame  # closed form: the a priori forecast holds
    assert frame["Coverage"].iloc[-1] > 0.8  # 3,142 counties: near 0.9
    at.radio(key="res_iv_level").set_value(0.95).run()
    assert_clean(at)
    frame = coverage_frame(at)
    assert (frame["Nominal"] == 0.95).all()
    assert frame["Coverage"].iloc[-1] >= expected["coverage"].iloc[-1]  # wider intervals


def test_topdown_coverage_waits_for_its_bootstrap():
    at = results("topdown")
    assert coverage_frame(at) is None
    at.button(key="res_iv_make").click().run()
    assert_clean(at)
    frame = coverage_frame(at)
    assert frame is not None and list(frame["Level"]) == \
        list(at.session_state[session.RELEASE].hierarchy.level_names)
    assert ((frame["Coverage"] >= 0) & (frame["Coverage"] <= 1)).all()
    assert frame["Coverage"].iloc[-1] > 0.8
    # the bootstrap's estimate of the error beside the error measured (US counties: near)
    ratio = frame["Estimated error"] / frame["Measured error"]
    assert ratio.iloc[1:].between(0.7, 1.4).all(), frame
