"""The release report for stakeholders (hierdp_core.report_stakeholder): self-contained
(plotly.js inlined once, no http(s) resource loaded), public by default (no true count in
it), CONFIDENTIAL with the evaluation, with the configuration, verdict, ledger, maps,
a priori errors, trade-off and explanation; the Export page prepares it in one click."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from conftest import square_geojson
from test_app import assert_clean, page

from hierdp_core.compare import Side, release_side
from hierdp_core.config import ReleaseConfig
from hierdp_core.report import CONFIDENTIAL_BANNER
from hierdp_core.report_stakeholder import (
    PUBLIC_BANNER,
    TRADEOFF_EPSILONS,
    a_priori_tradeoff,
    report_html,
)

EVIL = "<script>alert(1)</script>"


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
    for heading in ("In plain words", "Verdict", "Configuration", "Budget ledger",
                    "Expected error per cell by level", "Figures"):
        assert f"<h2>{heading}" in public_page, heading
    assert PUBLIC_BANNER in public_page and CONFIDENTIAL_BANNER not in public_page
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
    assert "Error against the true data (CONFIDENTIAL)" in text
    assert "True vs released" in text and "Trade-off over repeated releases" in text


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
    assert token[1] is False and PUBLIC_BANNER in html
    saved = json.loads(html.split("<pre>")[1].split("</pre>")[0].replace("&quot;", '"'))
    assert saved["data"] == {"sample": "synthetic-us-like"} and saved["seed"] == 0
    assert saved["mechanism"] == "topdown" and saved["epsilon"] == 1.0
