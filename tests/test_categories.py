"""The category cells of a release (`hierdp_core.categories`): every label of the product of
the category columns' values names one cell, and splits back into its values."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import run_cli
from hypothesis import given
from hypothesis import strategies as st

from hierdp_core.categories import CATEGORY_JOIN, category_index, category_labels
from hierdp_core.errors import StructureError

VALUE = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), min_size=1,
                max_size=8).map(str.strip).filter(bool)


@given(st.lists(st.lists(VALUE, min_size=1, max_size=4, unique=True), min_size=1, max_size=3))
def test_every_label_names_one_cell_and_splits_back(value_lists):
    several = len(value_lists) > 1
    if several and any(CATEGORY_JOIN in v for values in value_lists for v in values):
        with pytest.raises(StructureError, match="rename the value"):
            category_labels(value_lists)
        return
    labels = category_labels(value_lists)
    assert len(set(labels)) == len(labels)  # one label a cell
    if several:
        first = labels[0].split(CATEGORY_JOIN)
        assert first == [values[0] for values in value_lists]


def test_a_value_holding_the_join_is_refused_with_two_columns_and_kept_with_one():
    bilingual = {"sex": ["Hommes / Mannen", "Femmes / Vrouwen"], "age": ["0-64", "65+"]}
    table = pd.DataFrame({"sex": ["Hommes / Mannen"], "age": ["65+"]})
    with pytest.raises(StructureError, match="column 'sex' has the value 'Hommes / Mannen'"):
        category_index(table, ["sex", "age"], bilingual)
    index, labels = category_index(table, ["sex"], bilingual)  # one column: nothing joined
    assert labels == ("Hommes / Mannen", "Femmes / Vrouwen") and index.tolist() == [0]


@pytest.mark.parametrize("declared", [True, False])
def test_the_command_line_refuses_joined_values_in_one_line(capsys, tmp_path, declared):
    """Two declared values whose labels collide ('A / B' then 'C', 'A' then 'B / C') were
    released as two rows of one label, which `hierdp evaluate` could not read back."""
    data = tmp_path / "t.csv"
    pd.DataFrame({"region": ["R1", "R1"], "x": ["A", "A / B"], "y": ["B / C", "C"],
                  "n": [10, 500]}).to_csv(data, index=False)
    geography = tmp_path / "g.csv"
    pd.DataFrame({"region": ["R1", "R2"]}).to_csv(geography, index=False)
    structure = (["--geography", geography, "--category-values", "x=A|A / B",
                  "--category-values", "y=B / C|C"] if declared
                 else ["--categories", "x,y", "--structure-from-data"])
    code, _, err = run_cli(capsys, "release", data, "--levels", "region", "--count-column",
                           "n", *structure, "--mechanism", "topdown", "--epsilon", 1,
                           "--seed", 1, "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "' / '" in err and "rename the value" in err
    assert not (tmp_path / "out").exists()


def test_a_value_in_another_unicode_normalisation_is_refused_with_a_hint():
    """Data written NFD ('mężczyźni' with combining accents) and declared NFC were refused
    with two identical-looking strings; the message says why, and nothing is normalised
    silently (either way round)."""
    import unicodedata

    nfc, nfd = (unicodedata.normalize(form, "mężczyźni") for form in ("NFC", "NFD"))
    for data, declared, hint in (
            (nfd, nfc, f"({nfd!r} is written with combining accents, the declared value with "
                       "precomposed letters: save both the same way (NFC))"),
            (nfc, nfd, f"({nfc!r} is written with precomposed letters, the declared value "
                       "with combining accents: save both the same way (NFC))")):
        table = pd.DataFrame({"plec": [data, "kobiety"]})
        with pytest.raises(StructureError) as info:
            category_index(table, ["plec"], {"plec": [declared, "kobiety"]})
        assert str(info.value).endswith(hint), info.value
    with pytest.raises(StructureError) as info:  # no twin: no hint
        category_index(pd.DataFrame({"plec": ["inni"]}), ["plec"], {"plec": [nfc]})
    assert "NFC" not in str(info.value)
