"""Reshaping an input table: wide to long, missing count cells, ragged hierarchies."""

from __future__ import annotations

import io
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.data.loaders import read_header
from hierdp_core.data.reshape import (
    apply_missing,
    check_levels,
    fill_ragged,
    melt_wide,
    wide_columns,
)
from hierdp_core.errors import MissingCellsError, RaggedLevelError, ReshapeError
from hierdp_core.hierarchy import build_hierarchy, missing_values

AGES = ["age_0_4", "age_5_17", "age_18_64", "age_65_"]


def census(n_units: int = 3, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"state": [f"S{i % 2}" for i in range(n_units)],
                          "county": [f"C{i}" for i in range(n_units)]})
    for column in AGES:
        table[column] = rng.integers(0, 50, n_units)
    return table


# ---- wide to long ----------------------------------------------------------------------
def test_wide_columns_names_patterns_and_mixes_in_table_order():
    columns = ["state", *AGES, "note"]
    assert wide_columns("age_*", columns) == AGES
    assert wide_columns("age_65_,age_0_4", columns) == ["age_0_4", "age_65_"]
    assert wide_columns("age_1*, age_0_4 ,age_6?_", columns) == ["age_0_4", "age_18_64",
                                                                 "age_65_"]


@pytest.mark.parametrize("spec", ["pop_*", "age_0_4,tract", ""])
def test_wide_columns_that_match_nothing_are_named(spec):
    with pytest.raises(ReshapeError, match="no column matches|--wide wants") as info:
        wide_columns(spec, ["state", *AGES])
    if spec:
        assert "the table has ['state', 'age_0_4'" in str(info.value)


def test_melt_is_unit_major_with_the_column_names_as_categories():
    table = census()
    long = melt_wide(table, "age_*", id_columns=["state", "county"])
    assert list(long.columns) == ["state", "county", "category", "count"]
    assert len(long) == 3 * len(AGES)
    assert long["category"].tolist()[:4] == AGES
    assert list(long["category"].cat.categories) == AGES
    assert long["count"].tolist() == table[AGES].to_numpy().reshape(-1).tolist()
    assert long["county"].tolist()[:5] == ["C0"] * 4 + ["C1"]


def test_melt_keeps_every_other_column_by_default_and_writes_the_given_labels():
    table = pd.DataFrame({"region": ["a", "b"], "hh1": [4, 0], "hh2": [1, 2], "hh7": [0, 3]})
    long = melt_wide(table, "hh*", name="size", value_name="households",
                     labels=np.array([1, 2, 7]))
    assert long["size"].tolist() == [1, 2, 7, 1, 2, 7]
    assert long["households"].sum() == 10
    declared = pd.Categorical(["one", "two", "seven"], categories=["zero", "one", "two",
                                                                   "seven"])
    long = melt_wide(table, "hh*", name="size", labels=declared)
    assert long["size"].tolist() == ["one", "two", "seven"] * 2
    assert list(long["size"].cat.categories) == ["zero", "one", "two", "seven"]


@pytest.mark.parametrize("kwargs, message", [
    ({"id_columns": ["state", "age_0_4"]}, "'age_0_4' is one of the wide columns"),
    ({"value_name": "state"}, "already has; name another with --count-column"),
    ({"name": "county"}, "already has; name another with --wide-name"),
    ({"name": "n", "value_name": "n"}, "both named 'n'"),
])
def test_melt_refuses_columns_with_two_roles(kwargs, message):
    with pytest.raises(ReshapeError, match=message):
        melt_wide(census(), "age_*", **kwargs)


def test_melting_a_large_table_is_quick():
    table = pd.DataFrame({"unit": np.arange(100_000).astype(str)})
    for i in range(20):
        table[f"band_{i}"] = np.arange(100_000)
    start = time.perf_counter()
    long = melt_wide(table, "band_*")
    assert time.perf_counter() - start < 3.0  # about 0.05 s
    assert len(long) == 2_000_000 and long["count"].sum() == table.iloc[:, 1:].sum().sum()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(1, 6), st.integers(0, 2**31))
def test_melting_preserves_every_unit_total_and_the_grand_total(n_units, n_bands, seed):
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"unit": rng.integers(0, 5, n_units).astype(str)})
    bands = [f"b{i}" for i in range(n_bands)]
    for band in bands:
        table[band] = rng.integers(0, 1000, n_units)
    long = melt_wide(table, bands)
    assert long["count"].sum() == table[bands].to_numpy().sum()
    by_unit = long.groupby("unit")["count"].sum()
    assert by_unit.to_dict() == table.set_index("unit")[bands].sum(axis=1).groupby(
        level=0).sum().to_dict()


# ---- missing cells ---------------------------------------------------------------------
def with_holes() -> pd.DataFrame:
    table = census(4)
    table["age_0_4"] = table["age_0_4"].astype(float)
    table.loc[[1, 3], "age_0_4"] = np.nan
    table["age_65_"] = table["age_65_"].astype(object)
    table.loc[3, "age_65_"] = " "
    return table


def test_missing_cells_are_an_error_naming_columns_cells_and_rows():
    with pytest.raises(MissingCellsError) as info:
        apply_missing(with_holes(), AGES, "error")
    text = str(info.value)
    assert "3 empty count cell(s)" in text and "'age_0_4' (2)" in text
    assert "'age_65_' (1)" in text and "rows [2, 4]" in text
    assert "--missing zero" in text and "--missing drop" in text
    assert info.value.detail.startswith("3 empty count cell(s)") and "--" not in info.value.detail


def test_missing_cells_counted_as_zero_or_rows_dropped():
    table = with_holes()
    zero, filled = apply_missing(table, AGES, "zero")
    assert filled == 3 and not any(missing_values(zero[c]).any() for c in AGES)
    assert zero.loc[1, "age_0_4"] == 0 and zero.loc[0, "age_0_4"] == table.loc[0, "age_0_4"]
    dropped, n = apply_missing(table, AGES, "drop")
    assert n == 2 and dropped["county"].tolist() == ["C0", "C2"]
    same, none = apply_missing(census(), AGES, "error")
    assert none == 0 and same.equals(census())


def test_dropping_every_row_and_unknown_policies_are_refused():
    table = pd.DataFrame({"unit": ["a"], "n": [np.nan]})
    with pytest.raises(MissingCellsError, match="nothing is left"):
        apply_missing(table, ["n"], "drop")
    with pytest.raises(ReshapeError, match="--missing wants"):
        apply_missing(table, ["n"], "guess")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 100)), min_size=1, max_size=30),
       st.sampled_from(["zero", "drop"]))
def test_missing_policies_keep_every_present_count(cells, policy):
    table = pd.DataFrame({"unit": [str(i) for i in range(len(cells))],
                          "n": pd.array(cells, dtype="Float64")})
    present = sum(c for c in cells if c is not None)
    if policy == "drop" and all(c is None for c in cells):
        return
    out, n = apply_missing(table, ["n"], policy)
    assert out["n"].sum() == present
    assert n == sum(c is None for c in cells)
    assert len(out) == (len(cells) if policy == "zero" else len(cells) - n)


# ---- ragged hierarchies ----------------------------------------------------------------
def test_units_that_skip_a_level_pass_through_it():
    table = pd.DataFrame({"region": ["ML-1", "ML-1", "ML-BKO", "ML-BKO"],
                          "cercle": ["Kayes", "Bafoulabe", "", None],
                          "commune": ["k1", "b1", "Commune I", "Commune II"]})
    filled, counts = fill_ragged(table, ["region", "cercle", "commune"])
    assert filled["cercle"].tolist() == ["Kayes", "Bafoulabe", "ML-BKO", "ML-BKO"]
    assert counts == {"cercle": 2}
    assert filled["commune"].tolist() == table["commune"].tolist()
    h, _ = build_hierarchy(filled, ["region", "cercle", "commune"])
    assert sorted(h.codes[2].tolist()) == ["Bafoulabe", "Kayes", "ML-BKO"]


def test_a_unit_may_skip_several_levels_and_numeric_codes_stay_codes():
    table = pd.DataFrame({"state": [6, 6, 11], "county": [6037.0, np.nan, np.nan],
                          "tract": ["t1", "t2", ""]})
    filled, counts = fill_ragged(table, ["state", "county", "tract"])
    assert filled["county"].tolist() == ["6037", "6", "11"]
    assert filled["tract"].tolist() == ["t1", "t2", "11"]
    assert counts == {"county": 2, "tract": 1}
    assert filled["state"].tolist() == [6, 6, 11]  # untouched


def test_a_table_without_holes_is_returned_as_is():
    table = census()
    filled, counts = fill_ragged(table, ["state", "county"])
    assert filled is table and counts == {}


def test_an_empty_first_level_or_a_clash_with_a_real_unit_is_refused():
    with pytest.raises(RaggedLevelError, match="'state' has 1 missing") as info:
        fill_ragged(pd.DataFrame({"state": ["A", ""], "county": ["a", "b"]}),
                    ["state", "county"])
    assert "--ragged" not in str(info.value)
    clash = pd.DataFrame({"state": ["06", "06", "07"], "county": ["06", "", ""]})
    with pytest.raises(RaggedLevelError) as info:
        fill_ragged(clash, ["state", "county"])
    assert "row 2 has no county" in str(info.value) and "row 1 has a real county '06'" in \
        str(info.value)


def test_levels_with_holes_without_the_rule_suggest_it():
    with pytest.raises(RaggedLevelError, match=r"rows \[2\]; if these units skip .*--ragged"):
        check_levels(pd.DataFrame({"state": ["A", "B"], "county": ["a", None]}),
                     ["state", "county"])


def test_categorical_codes_from_pyarrow_are_filled_too():
    table = pd.DataFrame({"state": pd.Categorical(["06", "07", "11"]),
                          "county": pd.Categorical(["06001", None, None])})
    filled, _ = fill_ragged(table, ["state", "county"])
    assert filled["county"].tolist() == ["06001", "07", "11"]


@st.composite
def ragged_tables(draw):
    n_levels = draw(st.integers(2, 4))
    n_rows = draw(st.integers(1, 25))
    codes = st.one_of(st.just(""), st.none(), st.sampled_from(["a", "b", "c"]))
    table = {"l0": draw(st.lists(st.sampled_from(["X", "Y"]), min_size=n_rows,
                                 max_size=n_rows))}
    for level in range(1, n_levels):
        table[f"l{level}"] = [f"{v}{level}" if v else v
                              for v in draw(st.lists(codes, min_size=n_rows, max_size=n_rows))]
    return pd.DataFrame(table), [f"l{i}" for i in range(n_levels)]


@settings(max_examples=60, deadline=None)
@given(ragged_tables())
def test_fill_ragged_leaves_no_empty_code_and_keeps_the_others(drawn):
    table, levels = drawn
    try:
        filled, counts = fill_ragged(table, levels)
    except RaggedLevelError as refused:  # only a subtotal: a row ending under real units
        assert "a subtotal of" in str(refused)
        assert _has_subtotal(table, levels)
        return
    assert not _has_subtotal(table, levels)
    for i, level in enumerate(levels):
        was_missing = missing_values(table[level])
        assert not missing_values(filled[level]).any()
        assert counts.get(level, 0) == int(was_missing.sum())
        kept = np.asarray(filled[level], dtype=object)[~was_missing]
        assert kept.tolist() == table[level][~was_missing].tolist()
        if i and was_missing.any():  # a filled code is the code of the level above
            above = np.asarray(filled[levels[i - 1]], dtype=object)
            assert (np.asarray(filled[level], dtype=object)[was_missing]
                    == above[was_missing]).all()


def _has_subtotal(table: pd.DataFrame, levels: list[str]) -> bool:
    """A row empty at a level and every finer one, under a unit (its codes above, empty
    ones passed through) with a real unit at that level: the oracle of `fill_ragged`'s
    refusal, row by row."""
    rows = [[None if missing_values(table[c])[r] else table[c].iloc[r] for c in levels]
            for r in range(len(table))]
    paths = []
    for row in rows:
        path, last = [], None
        for code in row:
            last = code if code is not None else last
            path.append(last)
        paths.append(path)
    return any(all(c is None for c in row[i:]) and any(
        other[i] is not None and paths[k][:i] == paths[r][:i] for k, other in enumerate(rows))
        for r, row in enumerate(rows) for i in range(1, len(levels)))


def test_a_subtotal_row_is_refused_naming_it():
    """A province's subtotal row (municipio empty) under its real municipios was passed
    through as a unit of its own, '11 (no municipio)', doubling the province."""
    table = pd.DataFrame({"provincia": ["11", "11", "11", "29"],
                          "municipio": ["001", "002", None, "001"]})
    with pytest.raises(RaggedLevelError, match=r"row 3 has no municipio \(nor any finer level\) "
                       r"while its provincia '11' has real municipio units \(row 1\): a "
                       r"subtotal of provincia '11', which would be counted twice"):
        fill_ragged(table, ["provincia", "municipio"])
    skipping = pd.DataFrame({"s": ["A", "A", "A"], "c": ["a1", None, None], "t": ["x", "y", "z"]})
    assert fill_ragged(skipping, ["s", "c", "t"])[1] == {"c": 2}  # finer units: no subtotal


# ---- the header alone ------------------------------------------------------------------
def test_read_header_reads_the_column_names_only(tmp_path):
    assert read_header(io.BytesIO(b"state;age_0;age_1\nA;1;2\n"), name="t.csv") == \
        ["state", "age_0", "age_1"]
    path = tmp_path / "t.parquet"
    census().to_parquet(path)
    assert read_header(path) == ["state", "county", *AGES]
    assert read_header(io.BytesIO(b"x"), name="t.xlsx") is None


def test_a_unit_passing_through_takes_the_name_of_the_unit_above():
    table = pd.DataFrame({"state": ["06", "11"], "state_name": ["California", "DC"],
                          "county": ["06001", ""], "county_name": ["Alameda", None],
                          "city": ["Oakland", "Washington"]})
    filled, _ = fill_ragged(table, ["state", "county", "city"],
                            names={"county": "county_name", "state": "state_name",
                                   "city": "absent"})
    assert filled["county_name"].tolist() == ["Alameda", "DC"]
    filled, _ = fill_ragged(table, ["state", "county", "city"],
                            names={"county": "county_name"})
    assert filled["county_name"].tolist() == ["Alameda", "11"]


def test_a_declared_geography_may_be_ragged():
    from hierdp_core.structure import geography_from_table

    table = pd.DataFrame({"region": ["ML-1", "ML-1", "ML-BKO"],
                          "cercle": ["Kayes", "Kita", ""],
                          "commune": ["k1", "k2", "Commune I"]})
    with pytest.raises(RaggedLevelError, match="geography g.csv: level column 'cercle'.*"
                                               "--ragged"):
        geography_from_table(table, ["region", "cercle", "commune"], source="g.csv")
    geo = geography_from_table(table, ["region", "cercle", "commune"], ragged=True)
    rows = pd.DataFrame({"region": ["ML-BKO"], "cercle": [None], "commune": ["Commune I"]})
    filled, _ = fill_ragged(rows, ["region", "cercle", "commune"])
    assert geo.hierarchy.codes[3][geo.leaf_of_rows(filled, ["region", "cercle", "commune"])
                                  ].tolist() == ["Commune I"]
