"""The release report for stakeholders (hierdp_core.report.stakeholder): self-contained
(plotly.js inlined once, no http(s) resource loaded), public by default (no true count in
it), CONFIDENTIAL with the evaluation, with the configuration, verdict, ledger, maps,
a priori errors, trade-off and explanation; the Export page prepares it in one click."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest
from conftest import square_geojson
from ledger_marks import charged_in_ledger
from test_app import assert_clean, page

from hierdp_core.compare import Side, release_side
from hierdp_core.config import ReleaseConfig
from hierdp_core.report.evaluation import CONFIDENTIAL_BANNER
from hierdp_core.report.stakeholder import (
    EXPLORATION,
    EXPLORATION_BANNER,
    NOT_PUBLISHABLE,
    NOT_PUBLISHABLE_FILE_TAG,
    PUBLIC_BANNER,
    TRADEOFF_EPSILONS,
    a_priori_tradeoff,
    report_file_stem,
    report_html,
)
from hierdp_core.verdict import LEDGER_ENTRY

EVIL = "<script>alert(1)</script>"


NOT_PUBLISHABLE_BANNER = EXPLORATION_BANNER.replace(EXPLORATION, NOT_PUBLISHABLE)


@pytest.fixture(scope="module")
def release(small_county_data):
    return release_side(small_county_data, Side("topdown", 1.0, seed=2))


@pytest.fixture(scope="module")
def config():
    return ReleaseConfig(mechanism="topdown", epsilon=1.0, data={"file": EVIL},
                         levels=("state", "county"), count_column="count", seed=2).to_dict()


@pytest.fixture(scope="module")
def public_page(small_county_data, release, config):
    codes = [str(c) for c in small_county_data.hierarchy.codes[2]]
    return report_html(release, small_county_data, config, structure_declared=False,
                       geometries={2: (square_geojson(codes), "mercator")})


def test_public_report_sections(public_page):
    assert public_page.startswith("<!DOCTYPE html>")
    for heading in ("Summary", "Verdict", "Error by level", "Maps", "Figures",
                    "In plain words", "Appendix: configuration, budget ledger"):
        assert f"<h2>{heading}" in public_page, heading
    for heading in ("Configuration", "Budget ledger", "Expected error per released number "
                    "by level"):  # in the appendix, after everything else
        assert f"<h3>{heading}" in public_page.split("<h2>Appendix")[1], heading
    assert EXPLORATION_BANNER in public_page and CONFIDENTIAL_BANNER not in public_page
    assert PUBLIC_BANNER not in public_page  # a seeded release never gets the green banner
    assert "Not publishable as it is" in public_page and "seeded generator" in public_page
    assert "Error against the true data" not in public_page
    assert "Released counts by county" in public_page  # the map
    assert "Trade-off: error against" in public_page
    assert '"unmet">not met</b>: secure noise' in public_page  # a seeded release: the condition is not met
    assert "<i>neighbours</i>" in public_page and "**" not in public_page.split("<h2>Verdict")[0]
    assert "at most e^ε ≈ 2.72 times" in public_page  # e^1, from hierdp_core.explain


def test_self_contained_and_escaped(public_page):
    assert public_page.count("window.PlotlyConfig") == 1  # plotly.js inlined once
    assert public_page.count("Plotly.newPlot") >= 3  # ledger, trade-off, map
    assert not re.search(r"""<script[^>]+src=["']https?://""", public_page)
    assert not re.search(r"""<link[^>]+href=["']https?://""", public_page)
    assert public_page.count('"topojsonURL": "data:application/json,') >= 3  # offline maps
    assert EVIL not in public_page and "&lt;script&gt;alert(1)&lt;/script&gt;" in public_page


def test_public_report_holds_no_true_count(small_county_data, release, config):
    """Change the truth, keep the release: the public report does not change (bar its
    timestamp)."""
    from dataclasses import replace

    other = replace(small_county_data, leaf_counts=small_county_data.leaf_counts * 3 + 1)
    pages = [report_html(release, d, config, structure_declared=False)
             for d in (small_county_data, other)]
    stamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")
    assert stamp.sub("", pages[0]) == stamp.sub("", pages[1])


def test_evaluation_makes_it_confidential(small_county_data, release, config):
    from hierdp_core.experiments import sweep

    runs = sweep(small_county_data, ["topdown"], [0.5, 1.0], 2)
    text = report_html(release, small_county_data, config, structure_declared=False,
                       evaluation=True, sweep=runs)
    assert CONFIDENTIAL_BANNER in text and PUBLIC_BANNER not in text
    assert f"{CONFIDENTIAL_BANNER} {EXPLORATION}." in text  # of an exploration release
    assert "<title>CONFIDENTIAL: " in text
    assert "Error against the true data (CONFIDENTIAL)" in text
    assert "True vs released" in text and "Trade-off over repeated releases" in text


# ---- exploration or publishable (issue 27, item 6) -------------------------------------------
@pytest.fixture(scope="module")
def secure_drawn(small_county_data):
    from hierdp_core.mechanisms.base import get_mechanism
    from hierdp_core.privacy.budget import PrivacyBudget
    from hierdp_core.privacy.samplers import NoiseSource

    drawn = get_mechanism("topdown").release(small_county_data, PrivacyBudget.pure(1.0),
                                             source=NoiseSource(secure=True))
    return drawn


@pytest.fixture
def secure_release(secure_drawn):
    """The secure release, its budget reserved in this test's ledger and marked with the
    entry, as a charging path marks it."""
    return charged_in_ledger(secure_drawn)


@pytest.mark.parametrize("declared", [False, True])
def test_exploration_report_says_so_in_banner_title_and_file_name(
        small_county_data, release, config, declared):
    """A seeded release is exploration even over a declared structure: red banner (top and
    bottom), title and file name say it, never the green banner or its promise."""
    page = report_html(release, small_county_data, config, structure_declared=declared)
    assert page.count(EXPLORATION_BANNER) == 2 and PUBLIC_BANNER not in page
    assert 'class="banner public' not in page
    assert f"<title>{EXPLORATION}: hierdp release report</title>" in page
    assert "may be shown to anyone" not in page and "do not publish it" in page
    stem = report_file_stem(release, structure_declared=declared, evaluation=False)
    assert stem == "EXPLORATION-NOT-FOR-PUBLICATION_hierdp_release_report"
    assert report_file_stem(release, structure_declared=declared, evaluation=True) == (
        "CONFIDENTIAL_EXPLORATION-NOT-FOR-PUBLICATION_hierdp_release_report")


def test_publishable_report_is_green_and_holds_no_seed(small_county_data, secure_release):
    """A secure release over a declared structure: the green banner, "Publishable as it
    is", no exploration mark, and no seed, even when the configuration given still holds
    the exploration's (seed 48213)."""
    config = ReleaseConfig(mechanism="topdown", epsilon=1.0, data={"sample": "x"},
                           levels=("state", "county"), count_column="count",
                           seed=48213).to_dict()
    page = report_html(secure_release, small_county_data, config, structure_declared=True)
    assert page.count(PUBLIC_BANNER) == 2 and 'class="banner public' in page
    assert EXPLORATION not in page and "Not publishable" not in page
    assert '<p class="ok"><b>Publishable as it is</b>' in page
    assert "may be shown to anyone" in page
    assert "48213" not in page and "<td>seed</td>" not in page
    assert not re.search(r"&quot;seed&quot;: \d", page)
    assert report_file_stem(secure_release, structure_declared=True,
                            evaluation=False) == "hierdp_release_report"
    # secure noise drawn outside the budget ledger is not publishable (its entry removed)
    uncharged = dataclasses.replace(secure_release, randomness={
        k: v for k, v in secure_release.randomness.items() if k != LEDGER_ENTRY})
    page = report_html(uncharged, small_county_data, config, structure_declared=True)
    assert NOT_PUBLISHABLE_BANNER in page and PUBLIC_BANNER not in page
    assert "not charged to a budget ledger" in page
    assert report_file_stem(uncharged, structure_declared=True, evaluation=False) \
        .startswith(NOT_PUBLISHABLE_FILE_TAG)
    # secure noise over a structure read from the data is still not publishable: marked
    # so, never as exploration (a new user's secure draw read "an exploration release")
    undeclared = report_html(secure_release, small_county_data, config,
                             structure_declared=False)
    assert NOT_PUBLISHABLE_BANNER in undeclared and PUBLIC_BANNER not in undeclared
    assert EXPLORATION not in undeclared and "an exploration release" not in undeclared
    assert f"<title>{NOT_PUBLISHABLE}: hierdp release report</title>" in undeclared


def test_a_priori_tradeoff_falls_with_epsilon(small_county_data):
    table = a_priori_tradeoff(small_county_data, "raw-laplace", {}, None)
    assert len(table) == len(TRADEOFF_EPSILONS) * 3
    for _, part in table.groupby("level_name"):
        errors = part.sort_values("epsilon")["expected_abs_error"].to_numpy()
        # Laplace with scale levels / epsilon: the expected |error| is inversely proportional
        np.testing.assert_allclose(errors * np.sort(TRADEOFF_EPSILONS),
                                   errors[0] * TRADEOFF_EPSILONS[0])


# ---- the Export page (AppTest) --------------------------------------------------------------
def test_export_page_prepares_the_report_and_saves_the_configuration():
    at = page("pages/4_Results.py", "synthetic-us-like").run()
    assert_clean(at)
    at.switch_page("pages/6_Export.py").run()
    assert_clean(at)
    assert any(b.proto.label == "Save the configuration (JSON)"
               for b in at.get("download_button"))
    at.button(key="prep_stakeholder").click().run()
    assert_clean(at)
    token, html = at.session_state["hd_stakeholder_report"]
    assert token[1] is False and EXPLORATION_BANNER in html and PUBLIC_BANNER not in html
    saved = json.loads(html.split("<pre>")[1].split("</pre>")[0].replace("&quot;", '"'))
    assert saved["data"] == {"sample": "synthetic-us-like"} and saved["seed"] == 0
    assert saved["mechanism"] == "topdown" and saved["epsilon"] == 1.0
    summary = html.split("<h2>Summary</h2>")[1].split("<h2>")[0]  # the one-minute summary
    assert summary.count("<dt>") == 5 and "Synthetic US-like counties: 50 states" in summary


def test_export_page_reports_the_publishable_release_once_drawn(monkeypatch):
    """Before the publishable draw the report is the exploration release's (marked, and so
    is its file name); after it, the report is the secure release's: green, publishable,
    its values, no seed, a plain file name."""
    from test_app_verdict import file_names

    from hierdp_core.ui import release as rel

    names = file_names(monkeypatch)
    at = page("pages/4_Results.py", "us-counties").run()
    at.switch_page("pages/6_Export.py").run()
    at.button(key="prep_stakeholder").click().run()
    assert_clean(at)
    assert EXPLORATION_BANNER in at.session_state["hd_stakeholder_report"][1]
    assert names["dl_stakeholder"] == ("EXPLORATION-NOT-FOR-PUBLICATION_"
                                       "hierdp_release_report.html")
    at.button(key="ex_secure").click().run()
    at.button(key="prep_stakeholder").click().run()
    assert_clean(at)
    (token, evaluated), html = at.session_state["hd_stakeholder_report"]
    secure = at.session_state[rel.PUBLISHABLE]["ex"][1]
    assert token == rel.release_token(secure) and evaluated is False
    assert PUBLIC_BANNER in html and EXPLORATION not in html
    assert "Publishable as it is" in html and "Not publishable" not in html
    saved = json.loads(html.split("<pre>")[1].split("</pre>")[0].replace("&quot;", '"'))
    assert saved["seed"] is None and "<td>seed</td>" not in html
    assert names["dl_stakeholder"] == "hierdp_release_report.html"
