"""The release report a director reads in one minute (issue 31, item 2): the five summary
lines (hierdp_core.report.summary) say what was published, where, how private against a
sourced agency yardstick, the typical error in people and relative to a typical released
number, and the verdict, from the release and public parameters only; the report holds the
error table with intervals, every map or the reason it has none, plain column names, and
the ledger and configuration in an appendix."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from conftest import square_geojson
from ledger_marks import charged_in_ledger

from hierdp_core.compare import Side, release_side
from hierdp_core.data.samples import synthetic_us_like
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.report import figures as report_figures
from hierdp_core.report.stakeholder import report_html
from hierdp_core.report.summary import (
    ESTIMATED_COLUMN,
    YARDSTICKS,
    error_by_level,
    plural,
    release_explanation,
    summary_lines,
)


@pytest.fixture(scope="module")
def by_sex():
    """6 synthetic states, 60 counties, counts by sex."""
    table = synthetic_us_like(seed=1, n_states=6, n_counties=60)
    return count_data_from_table(table, ["state", "county"], count_column="count",
                                 category_columns=["sex"])


@pytest.fixture(scope="module")
def seeded(by_sex):
    return release_side(by_sex, Side("topdown", 1.0, seed=4))


def lines_of(release, data, declared=False, source="Somewhere"):
    return dict(summary_lines(release, data, structure_declared=declared, source=source))


def test_five_lines_what_where(by_sex, seeded):
    lines = summary_lines(seeded, by_sex, structure_declared=False, source="Synthetic land")
    assert [title for title, _ in lines] == ["What was published", "Where", "Privacy",
                                             "Typical error", "Verdict"]
    text = dict(lines)
    assert text["What was published"].startswith("Counts of people by sex (2 groups)")
    assert "the TopDown mechanism" in text["What was published"]  # its plain name
    assert "whole numbers, never negative, each unit the sum of its parts" in \
        text["What was published"]
    assert text["Where"] == "Synthetic land: 6 states and 60 counties and their total."


def test_privacy_line_gives_epsilon_odds_and_the_census_yardstick(by_sex, seeded):
    text = lines_of(seeded, by_sex)["Privacy"]
    assert "differential privacy, ε = 1:" in text
    assert f"at most {math.e:.3g}" in text  # e^1
    stick = YARDSTICKS[0]
    assert (stick.epsilon, stick.delta) == (17.14, 1e-10)  # the Bureau's 2021 setting
    assert stick.source.startswith("https://www.census.gov/")
    assert "the US Census Bureau used ε = 17.14 (δ = 1e-10)" in text
    assert "smaller ε means stronger protection" in text


def test_privacy_line_writes_a_large_factor_in_plain_figures(by_sex):
    big = release_side(by_sex, Side("topdown", 20.0, seed=4))
    text = lines_of(big, by_sex)["Privacy"]
    assert "ε = 20: any one person changes the odds of any result by a factor of at most " \
           "485,000,000." in text


def test_privacy_line_of_a_zcdp_release_states_rho_and_its_epsilon(by_sex):
    zcdp = get_mechanism("topdown").release(
        by_sex, PrivacyBudget.zcdp(0.5, 1e-8), source=NoiseSource(seed=1))
    text = lines_of(zcdp, by_sex)["Privacy"]
    eps = release_explanation(zcdp, by_sex).epsilon
    assert f"zero-concentrated differential privacy, ρ = 0.5, which implies ε = {eps:.3g} " \
           "(δ = 1e-08)" in text


def test_typical_error_is_the_a_priori_rmse_over_the_median_released_number(by_sex,
                                                                            seeded):
    text = lines_of(seeded, by_sex)["Typical error"]
    h = seeded.hierarchy
    leaf = seeded.values[h.level_slice(h.depth)]
    errors = release_explanation(seeded, by_sex).errors.set_index("level_name")
    rmse = float(errors.loc["county", "rmse"])
    typical = float(np.median(leaf))
    share = 100 * rmse / typical
    assert f"about ±{rmse:,.1f} people (RMSE" in text
    assert f"{share:.2g}% of a typical released number there ({typical:,.0f} people)" in text
    assert f"a typical county has {np.median(leaf.sum(axis=1)):,.0f} people" in text


def test_verdict_line(by_sex, seeded):
    assert lines_of(seeded, by_sex, declared=True)["Verdict"].startswith(
        "Not publishable as it is: the noise comes from a seeded generator")
    drawn = get_mechanism("topdown").release(by_sex, PrivacyBudget.pure(1.0),
                                             source=NoiseSource(secure=True))
    assert "not charged to a budget ledger" in lines_of(drawn, by_sex, declared=True)["Verdict"]
    secure = charged_in_ledger(drawn)  # as the paths that charge the budget ledger mark it
    assert lines_of(secure, by_sex, declared=True)["Verdict"].startswith("Publishable:")
    assert "structure" in lines_of(secure, by_sex, declared=False)["Verdict"]


def test_the_summary_reads_no_true_count(by_sex, seeded):
    """The same release over data of the same shape but other counts: the same summary."""
    other = dataclasses.replace(by_sex, leaf_counts=by_sex.leaf_counts * 7 + 3)
    assert lines_of(seeded, by_sex) == lines_of(seeded, other)


def test_error_table_has_relative_error_and_intervals(by_sex, seeded):
    from hierdp_core.intervals import with_intervals

    plain = error_by_level(seeded, release_explanation(seeded, by_sex))
    assert list(plain["Level"]) == ["total", "state", "county"]
    assert not any("interval" in c for c in plain.columns)
    np.testing.assert_allclose(plain["Relative error"],
                               plain["Typical error (RMSE)"] / plain["Typical released number"])
    shown = error_by_level(with_intervals(seeded), release_explanation(seeded, by_sex))
    half = shown["Typical 90% interval (±)"].to_numpy()
    assert (half > 0).all() and (half < 10 * shown["Typical error (RMSE)"]).all()
    # TopDown's bootstrap estimates its mean error; the a priori RMSE bounds it (a mean
    # |error| is at most the RMSE, and TopDown's below least squares')
    estimated = shown[ESTIMATED_COLUMN].to_numpy()
    assert (estimated > 0).all() and (estimated <= shown["Typical error (RMSE)"]).all()
    assert ESTIMATED_COLUMN not in error_by_level(
        with_intervals(release_side(by_sex, Side("least-squares", 1.0, seed=4))),
        release_explanation(seeded, by_sex)).columns  # closed form: the forecast holds


def test_plural():
    assert [plural(1, "county"), plural(3141, "county"), plural(2, "day"),
            plural(7901, "municipality"), plural(20, "region")] == [
        "1 county", "3,141 counties", "2 days", "7,901 municipalities", "20 regions"]
    # a table's own word gets no English ending ("342 gemeentes", "all coms")
    assert [plural(342, "gemeente"), plural(1, "com"), plural(26, "kanton")] == [
        "342 gemeente units", "1 com", "26 kanton units"]


@pytest.fixture(scope="module")
def page(by_sex, seeded):
    codes = [str(c) for c in by_sex.hierarchy.codes[2]]
    return report_html(seeded, by_sex, {"data": {"sample": "synthetic-us-like"}},
                       structure_declared=False,
                       geometries={2: (square_geojson(codes), "mercator")})


def test_report_starts_with_the_summary_and_ends_with_the_appendix(page):
    headings = re.findall(r"<h2>([^<]+)</h2>", page)
    assert headings[0] == "Summary" and headings[-1].startswith("Appendix")
    summary = page.split("<h2>Summary</h2>")[1].split("<h2>")[0]
    assert summary.count("<dt>") == 5 and "Synthetic US-like counties: " in summary
    appendix = page.split("<h2>Appendix")[1]
    assert "<h3>Configuration</h3>" in appendix and "<h3>Budget ledger" in appendix


def test_report_labels_are_plain_words(page):
    tables = " ".join(re.findall(r"<th>([^<]*)</th>", page))
    assert "\u0395" not in page  # capital epsilon: "ε = 0.1".capitalize() was "Ε = 0.1"
    for jargon in ("Rmse", "Depth"):
        assert jargon not in tables, jargon
    assert "Typical error (RMSE)" in tables and "Relative error" in tables
    assert "ε = 0.1" in tables and "Level" in tables
    assert "Typical 90% interval (±)" in tables  # the report computed the intervals
    assert "Small released numbers with their intervals" in page


def test_every_level_has_a_map_or_the_reason(by_sex, seeded, page, monkeypatch):
    assert "Released counts by county" in page
    assert "total: one number" in page
    assert "state: no boundaries for this level" in page
    codes = [str(c) for c in by_sex.hierarchy.codes[2]]
    monkeypatch.setattr(report_figures, "MAX_MAP_UNITS", 50)
    maps, notes = report_figures.release_maps(
        seeded, {2: (square_geojson(codes), "mercator")})
    assert maps == {}
    assert notes[-1].startswith("county: 60 units, more than the 50 a map in this report "
                                "holds")


def test_typical_error_when_most_released_numbers_are_zero(by_sex, seeded):
    sparse = dataclasses.replace(seeded, values=np.where(
        np.arange(seeded.values.shape[0])[:, None] < 7, seeded.values, 0))
    text = lines_of(sparse, by_sex)["Typical error"]
    assert "while most released numbers there are 0" in text and "n/a" not in text
