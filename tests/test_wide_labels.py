"""What the columns of a wide table stand for (issue 27, item 2): declared category values,
never the header; bands never collapsed to one of their ends."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.data.wide_labels import (
    band_of,
    column_label,
    declared_labels,
    integer_labels,
    normalise,
)
from hierdp_core.errors import ReshapeError


@pytest.mark.parametrize("column, parts, label", [
    ("age_0_19", ["age_*"], "0_19"),
    ("age_0_19", ["age_0_19"], "age_0_19"),
    ("pop_m_total", ["pop_*_total"], "m"),
    ("hh7", ["x*", "hh?"], "7"),
    ("age_", ["age_*"], "age_"),  # nothing left to the wildcard: the name
    ("b1", ["[ab]1"], "b"),
])
def test_a_label_is_what_the_wildcards_matched(column, parts, label):
    assert column_label(column, parts) == label


@pytest.mark.parametrize("text, same", [("0_19", "0-19"), ("0 – 19", "0-19"),
                                        ("85_plus", "85+"), ("85 +", "85+"),
                                        ("AGE_85_PLUS", "age-85+")])
def test_separators_and_plus_read_the_same(text, same):
    assert normalise(text) == normalise(same)


@pytest.mark.parametrize("label, band", [("0_19", (0, 19)), ("50000_74999", (50000, 74999)),
                                         ("85_plus", (85, None)), ("85+", (85, None)),
                                         ("7", None), ("hh7", None), ("male", None)])
def test_bands_are_recognised(label, band):
    assert band_of(label) == band


def test_declared_values_name_the_columns_and_the_declaration_is_the_order():
    columns = ["age_0_19", "age_20_39", "age_40_plus"]
    assert declared_labels(columns, ["age_*"], ["40+", "20-39", "0-19"]) == ["0-19", "20-39",
                                                                             "40+"]
    assert declared_labels(columns, ["age_*"], [*columns, "age_60_plus"]) == columns
    assert declared_labels(["male", "female"], ["male", "female"],
                           ["female", "male", "other"]) == ["male", "female"]


def test_a_band_column_declared_as_single_values_is_refused_naming_the_band():
    with pytest.raises(ReshapeError) as info:
        declared_labels(["age_0_19", "age_20_39"], ["age_*"], ["19", "39"], "age")
    message = str(info.value)
    assert "'age_0_19'" in message and "band 0-19" in message and "never one of its ends" \
        in message and "\n" not in message


def test_a_column_matching_the_pattern_but_not_declared_is_an_error_naming_it():
    with pytest.raises(ReshapeError, match=r"'age_total' match --wide but name none"):
        declared_labels(["age_0_19", "age_total"], ["age_*"], ["0-19"], "age")


@pytest.mark.parametrize("columns, values, message", [
    (["age_0_19", "age_0-19"], ["0-19"], "both name the declared value '0-19'"),
    (["age_0_19"], ["0-19", "0_19"], "read the same"),
])
def test_ambiguities_are_refused(columns, values, message):
    with pytest.raises(ReshapeError, match=message):
        declared_labels(columns, ["age_*"], values)


def test_integer_labels_are_the_one_number_of_each_label():
    assert integer_labels(["hh1", "hh2", "hh7"], ["hh*"]).tolist() == [1, 2, 7]
    assert integer_labels(["age_0", "age_1", "age_85_plus"], ["age_*"],
                          top=85).tolist() == [0, 1, 85]
    assert integer_labels(["pop2020_age5"], ["pop2020_age*"]).tolist() == [5]


@pytest.mark.parametrize("columns, top, message", [
    (["age_0_19", "age_20_39"], None, "'age_0_19' is the band 0-19, not one value"),
    (["income_50000_74999"], None, "band 50000-74999"),
    (["age_0", "age_85_plus"], None, "band 85+"),
    (["age_0", "age_85_plus"], 100, r"only an open band at the declared top, 100\+"),
    (["hh", "hh2"], None, "no number"),
    (["a_1", "b_1"], None, "all give the value 1"),
])
def test_bands_and_unnumbered_columns_are_refused_for_integers(columns, top, message):
    with pytest.raises(ReshapeError, match=message):
        integer_labels(columns, ["*"], top=top)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(1, 60)), min_size=1, max_size=8),
       st.sampled_from(["_", "-", " "]), st.booleans())
def test_every_band_is_its_own_declared_value_or_refused_for_integers(bands, sep, open_top):
    """Property: band columns map one to one onto the declared band labels whatever the
    separator (never onto a number), and as integers every one of them is refused."""
    spans = sorted({(lo, lo + width) for lo, width in bands})
    columns = [f"age_{lo}_{hi}" for lo, hi in spans]
    declared = [f"{lo}{sep}{hi}" for lo, hi in spans]
    if open_top:
        top = spans[-1][1] + 1
        columns.append(f"age_{top}_plus")
        declared.append(f"{top}+")
    assert declared_labels(columns, ["age_*"], declared[::-1]) == declared
    with pytest.raises(ReshapeError, match="is the band"):
        integer_labels(columns, ["age_*"])
    with pytest.raises(ReshapeError):  # single numbers (either end) never name a band
        declared_labels(columns, ["age_*"], [str(lo) for lo, _ in spans]
                        + [str(hi) for _, hi in spans] + (["x"] if open_top else []))


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=12))
def test_malformed_names_never_crash(name):
    assert isinstance(normalise(name), str)
    band_of(name)
    try:
        declared_labels([name or "x"], ["*"], ["a"])
    except ReshapeError:
        pass
    try:
        value = integer_labels([name or "x"], ["*"])
    except ReshapeError:
        return
    assert isinstance(value, np.ndarray) and value.size == 1
