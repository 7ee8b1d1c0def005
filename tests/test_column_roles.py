"""Column-role candidates of an uploaded table (`hierdp_core.column_roles`): a size or a
count is only ever a column of whole numbers >= 0 that is not a level or a code; levels
are the nested code columns, coarse to fine; names are one-to-one text columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.pandas import column, data_frames

from hierdp_core import column_roles as roles


def test_moroccan_style_table():
    table = pd.DataFrame({
        "region_code": np.repeat([1, 2], 4), "region_name": np.repeat(["Oriental", "Souss"], 4),
        "commune_code": np.arange(101, 109), "commune": [f"c{i}" for i in range(8)],
        "population": [900, 450, 300, 120, 80, 77, 60, 30], "share": np.linspace(0, 1, 8)})
    levels = roles.guess_levels(table)
    assert levels == ["region_code", "commune_code"]
    assert roles.guess_name_columns(table, levels) == {"region_code": "region_name"}
    assert roles.count_candidates(table, levels) == ["population"]
    assert roles.size_candidates(table, levels) == ["population"]
    assert roles.attribute_candidates(table, levels) == ["population"]
    assert roles.group_candidates(table, levels)[0] == "region_name"


def test_microdata_levels_skip_the_household_id_and_the_age():
    table = pd.DataFrame({"state": list("AAAABB"), "county": list("xxyyzz"),
                          "household": ["h1", "h1", "h2", "h3", "h4", "h4"],
                          "age": [30, 5, 41, 77, 18, 19]})
    assert roles.guess_levels(table) == ["state", "county"]
    assert roles.group_candidates(table, ["state", "county"])[0] == "household"
    assert roles.attribute_candidates(table, ["state", "county"]) == ["age"]


def test_no_valid_column_gives_no_candidate():
    table = pd.DataFrame({"zone": ["a", "b"], "size": ["1 person", "2 persons"],
                          "weight": [0.5, 1.5], "zone_id": [1, 2], "neg": [-1, 2]})
    assert roles.size_candidates(table, ["zone"]) == []
    assert roles.count_candidates(table, ["zone"]) == []


@settings(max_examples=40, deadline=None, database=None)
@given(data_frames([column("region_code", dtype=int), column("size", dtype=float),
                    column("n", elements=st.text(max_size=3)), column("people", dtype=int),
                    column("flag", dtype=bool)]))
def test_candidates_are_always_whole_numbers_and_never_codes(table):
    for found in (roles.size_candidates(table, ["n"]), roles.count_candidates(table, ["n"])):
        assert "region_code" not in found and "n" not in found and "flag" not in found
        for c in found:
            v = table[c].dropna().to_numpy(float)
            assert v.size and (v >= 0).all() and (v == np.floor(v)).all()
    levels = roles.guess_levels(table)
    assert not set(levels) & set(roles.count_candidates(table)) and "size" not in levels


def test_origin_and_destination_columns_by_name():
    table = pd.DataFrame(columns=["o_state", "o_county", "d_state", "d_county", "n"])
    assert roles.od_candidates(table) == (["o_state", "o_county"], ["d_state", "d_county"])
    table = pd.DataFrame(columns=["home_tract", "work_tract", "workers", "date"])
    assert roles.od_candidates(table) == (["home_tract"], ["work_tract"])
    assert roles.od_candidates(pd.DataFrame(columns=["state", "county"])) == ([], [])


def test_a_column_with_an_infinity_is_not_a_count():
    table = pd.DataFrame({"size": [-np.inf, 0.0], "people": [3, 4]})
    assert "size" not in roles.count_candidates(table) + roles.size_candidates(table)
    assert not roles.integer_valued(pd.Series([np.inf, 1.0]))


def test_a_table_fits_the_query_pages_its_columns_name():
    trips = pd.DataFrame({"o_state": ["06", "36"], "o_county": ["06037", "36061"],
                          "d_state": ["36", "06"], "d_county": ["36061", "06037"]})
    counts = pd.DataFrame({"state": ["A", "B"], "county": ["a", "b"], "n": [3, 4],
                           "county_code": [1, 2]})
    sizes = pd.DataFrame({"county": ["a", "a"], "size": [1, 2], "households": [5, 3]})
    bands = pd.DataFrame({"county": ["a", "b"], "age_group": ["0-17", "18+"], "n": [4, 4]})
    people = pd.DataFrame({"county": ["a", "a"], "household": [1, 2], "person": [1, 1]})
    for table, levels, fitted in [(trips, ["o_state", "o_county"], ["flows"]),
                                  (counts, ["state", "county"], []),
                                  (sizes, ["county"], ["group-sizes"]),  # size: no attribute
                                  (bands, ["county"], []),  # age bands: no household
                                  (people, ["county"], ["group-sizes"])]:  # ids: no ages
        assert [q for q in ("flows", "group-sizes", "ranges")
                if roles.fits(table, q, levels)] == fitted, fitted


def test_a_low_cardinality_column_never_replaces_the_geography():
    """A new user's state, county, sex, age_group table was guessed as levels 'sex' (the
    greedy chain started at the fewest distinct values); sex and age_group are categories."""
    rng = np.random.default_rng(0)
    county = rng.integers(0, 40, 2_000)
    table = pd.DataFrame({"state": (county // 8).astype(str), "county": county.astype(str),
                          "sex": rng.choice(["F", "M"], 2_000),
                          "age_group": rng.choice(["0-17", "18-64", "65+"], 2_000),
                          "count": rng.integers(0, 50, 2_000)})
    levels = roles.guess_levels(table)
    assert levels == ["state", "county"]
    assert roles.guess_categories(table, levels, "count") == ["sex", "age_group"]
    assert roles.guess_categories(table, levels, "count", most=2) == ["sex"]


def test_a_level_that_does_not_nest_is_named_as_left_out():
    """A county under two states: the guess keeps one level and says which column it left
    out and why (it dropped it without a word)."""
    table = pd.DataFrame({"state": ["01", "01", "02", "02"],
                          "county": ["01001", "01003", "01001", "02005"], "n": [1, 2, 3, 4]})
    levels = roles.guess_levels(table)
    assert len(levels) == 1
    assert roles.left_out_levels(table, levels, ["n"]) == \
        [c for c in ("state", "county") if c not in levels]
    nested = table.assign(county=["01001", "01003", "02001", "02005"])
    assert roles.left_out_levels(nested, roles.guess_levels(nested), ["n"]) == []
