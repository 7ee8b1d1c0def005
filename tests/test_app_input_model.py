"""The Data page's input model (issue 16) in Streamlit AppTest: a wide census-style table
(units x age bands) is detected, melted with a preview and released, publishable over a
declared geography; empty count cells and units that skip a level get a friendly message
and a choice. AppTest cannot upload files: the upload is set in session state (loaded as
version 0, hence the widget keys ``*_0`` of `ui.inputs.upload_key`). The click that melts an
uploaded wide table in a browser is in test_browser_geo's tract table walk."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_app import assert_clean, on_upload, page, uploaded
from test_app_verdict import declared

from hierdp_core.errors import EncodingError
from hierdp_core.ui import inputs as inp
from hierdp_core.ui import release as rel
from hierdp_core.ui import session

BANDS = [f"age_{lo}_{lo + 4}" for lo in range(0, 100, 5)] + ["age_100"]
UNITS = pd.DataFrame({"state": ["06", "06", "06", "11", "11"],
                      "county": ["06001", "06003", "06005", "11001", "11003"]})


def census() -> pd.DataFrame:
    counts = np.random.default_rng(0).integers(0, 400, (len(UNITS), len(BANDS)))
    return pd.concat([UNITS, pd.DataFrame(counts, columns=BANDS)], axis=1)


def text(at) -> str:
    return " ".join(str(e.value) for kind in (at.caption, at.markdown, at.success, at.info,
                                              at.error, at.warning) for e in kind)


def test_a_wide_table_is_detected_melted_previewed_and_released():
    at = uploaded(page("pages/1_Data.py"), census(), ["state", "county"]).run()
    assert_clean(at)
    assert "looks wide: 21 columns age_0_4 … age_100" in text(at)
    assert at.checkbox(key="shape_wide_0").value is False  # a guess: melted on one click
    assert at.session_state[session.DATASET]["table"].shape == census().shape
    assert f"A guess, not applied: Melting these 21 columns gives " \
           f"{census()[BANDS].to_numpy().sum():,} in total" in text(at)
    at.checkbox(key="shape_wide_0").check().run()
    assert at.multiselect(key="shape_columns_0").value == BANDS
    long = at.session_state[session.DATASET]["table"]
    assert len(long) == 5 * 21 and list(long.columns) == ["state", "county", "category",
                                                          "count"]
    assert "The long table the release is made from: 105 rows" in text(at)
    assert at.session_state[session.ROLES]["count_column"] == "count"
    assert at.session_state[session.ROLES]["category_columns"] == ["category"]
    assert "21 categories" in text(at)
    assert "A tree of 8 units over 3 levels" in text(at)  # the levels kept through the melt
    at.switch_page("pages/4_Results.py").run()
    assert_clean(at)
    release = at.session_state[session.RELEASE]
    assert list(release.categories) == BANDS


def test_a_wide_table_over_a_declared_geography_is_publishable():
    geography = pd.concat([UNITS, pd.DataFrame({"state": ["11"], "county": ["11009"]})])
    at = declared(uploaded(page("pages/1_Data.py"), census(), ["state", "county"]),
                  geography).run()
    at.checkbox(key="shape_wide_0").check().run()
    assert at.text_input(key="structure_values_category").value == ""  # not the header
    assert "Values not declared for category" in text(at)
    assert "e.g. 0_4|5_9|" in text(at)
    declared_values = [b.removeprefix("age_").replace("_", "-") for b in BANDS] + ["105+"]
    at.text_input(key="structure_values_category").input("|".join(declared_values)).run()
    assert_clean(at)
    assert "Values not declared" not in text(at)
    assert "22 categories" in text(at)  # 105+: declared, no column, released as 0
    at.switch_page("pages/4_Results.py").run()
    at.switch_page("pages/6_Export.py").run()
    at.button(key="ex_secure").click().run()
    assert_clean(at)
    assert any("Publishable as it is" in s.value for s in at.success)
    secure = at.session_state[rel.PUBLISHABLE]["ex"][1]
    assert list(secure.categories) == declared_values


def test_a_wide_column_naming_no_declared_value_is_named():
    geography = pd.concat([UNITS, pd.DataFrame({"state": ["11"], "county": ["11009"]})])
    at = declared(uploaded(page("pages/1_Data.py"), census(), ["state", "county"]),
                  geography).run()
    at.checkbox(key="shape_wide_0").check().run()
    single_ages = "|".join(str(lo) for lo in range(0, 105, 5))
    at.text_input(key="structure_values_category").input(single_ages).run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "'age_0_4'" in errors and "band 0-4" in errors and "never one of its ends" in errors


def test_a_tract_table_keeps_its_code_columns_and_shows_what_melting_gives():
    """The shape guess of a tract table (codes town_no and tract, a population column,
    band columns) leaves the codes and the population out, melts nothing on its own, and
    says the total melting gives beside the population's."""
    rng = np.random.default_rng(1)
    bands = ["age_0_19", "age_20_39", "age_40_64", "age_65_plus"]
    counts = rng.integers(0, 500, (12, len(bands)))
    table = pd.DataFrame({"town_no": np.repeat([101, 102, 103], 4), "tract": [1, 2, 3, 4] * 3,
                          "population": counts.sum(axis=1), **dict(zip(bands, counts.T,
                                                                       strict=True))})
    at = uploaded(page("pages/1_Data.py"), table, ["town_no"]).run()
    assert_clean(at)
    assert at.checkbox(key="shape_wide_0").value is False
    total = f"{counts.sum():,}"
    assert f"Melting these 4 columns gives {total} in total; the column 'population' sums " \
           f"to {total} (the same)" in text(at)
    assert "Not offered to melt: tract (they look like codes)" in text(at)
    at.checkbox(key="shape_wide_0").check().run()
    assert at.multiselect(key="shape_columns_0").value == bands
    assert "tract" not in at.multiselect(key="shape_columns_0").options
    assert "town_no" not in at.multiselect(key="shape_columns_0").options
    long = at.session_state[session.DATASET]["table"]
    assert {"town_no", "tract"} <= set(long.columns) and long["count"].sum() == counts.sum()


def test_choosing_the_columns_and_going_back_to_long():
    at = uploaded(page("pages/1_Data.py"), census(), ["state", "county"]).run()
    at.checkbox(key="shape_wide_0").check().run()
    at.multiselect(key="shape_columns_0").set_value(BANDS[:3]).run()
    at.text_input(key="shape_name_0").input("age").run()
    assert_clean(at)
    assert at.session_state[inp.SHAPE] == {"wide": BANDS[:3], "name": "age",
                                           "totals": []}
    assert len(at.session_state[session.DATASET]["table"]) == 15
    assert at.session_state[session.ROLES]["category_columns"] == ["age"]
    at.checkbox(key="shape_wide_0").uncheck().run()
    assert at.session_state[session.DATASET]["table"].shape == census().shape
    assert at.session_state[session.ROLES]["category_columns"] == []


def test_empty_count_cells_get_a_friendly_message_and_a_choice():
    table = UNITS.assign(n=[3.0, np.nan, 4.0, 5.0, np.nan])
    at = uploaded(page("pages/1_Data.py"), table, ["state", "county"], "n").run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "2 empty count cell(s) in column(s) 'n' (2), e.g. in rows [2, 5]" in errors
    assert "Empty count cells" in errors and "--missing" not in errors
    at.radio(key="roles_missing_0").set_value("zero").run()
    assert_clean(at)
    assert "Prepared: 2 empty count cell(s) counted as 0." in text(at)
    at.radio(key="roles_missing_0").set_value("drop").run()
    assert_clean(at)
    assert "2 empty count cell(s) left out" in text(at)


def test_units_that_skip_a_level_are_offered_the_ragged_rule():
    table = pd.DataFrame({"state": ["06", "07", "11"], "county": ["06001", "", ""],
                          "n": [3, 4, 5]})
    at = uploaded(page("pages/1_Data.py"), table, ["state", "county"], "n").run()
    errors = " ".join(e.value for e in at.error)
    assert "'county' has 2 missing value(s)" in errors and "Units may skip a level" in errors
    at.checkbox(key="roles_ragged_0").check().run()
    assert_clean(at)
    assert "2 empty level code(s) filled" in text(at)
    at.switch_page("pages/4_Results.py").run()
    assert_clean(at)
    labels = at.session_state[session.RELEASE].hierarchy.labels().tolist()
    assert "07 (no county)" in labels and "11 (no county)" in labels
    at.session_state["res_units"] = True  # the unit table names them as the export does
    at.run()
    names = at.dataframe[1].value["Name"].tolist()
    assert "07 (no county)" in names and "11 (no county)" in names


def test_a_subtotal_row_the_ragged_rule_would_count_twice_is_refused():
    """A province's subtotal row (municipio empty) beside its municipios: following the
    page's advice (units may skip a level) doubled the province in silence; it is refused,
    naming the row, on the page as on the command line."""
    table = pd.DataFrame({"provincia": ["11", "11", "11", "29"],
                          "municipio": ["001", "002", None, "001"], "n": [300, 200, 500, 9]})
    at = uploaded(page("pages/1_Data.py"), table, ["provincia", "municipio"], "n").run()
    at.checkbox(key="roles_ragged_0").check().run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "row 3 has no municipio" in errors and "a subtotal of provincia '11'" in errors


def test_the_query_pages_apply_the_data_pages_choices():
    people = pd.DataFrame({"state": ["A"] * 5 + ["B"] * 3,
                           "county": ["A1", "A1", "A2", "A2", "A2", "", "", ""],
                           "household": ["h1", "h1", "h2", "h3", "h3", "h4", "h4", "h5"]})
    at = on_upload(uploaded(page("pages/7_Group_sizes.py"), people, ["state", "county"]), "gs")
    at.button(key="gs_up_suggest").click().run()  # the household id column
    errors = " ".join(e.value for e in at.error)
    assert "Units may skip a level" in errors and "--ragged" not in errors
    at.session_state[session.ROLES] = {**at.session_state[session.ROLES], "ragged": True}
    at.run()
    assert_clean(at)
    _, data = at.session_state["hd_src_cache"]["gs"]
    assert "B (no county)" in data.hierarchy.labels().tolist()


def test_a_totals_row_read_as_a_unit_is_warned_about():
    """A national totals row ('Total' codes) becomes a unit of its own when the units are
    read from the table, doubling the root: the Data page says so."""
    table = pd.DataFrame({"state": ["06", "06", "11", "Total"],
                          "county": ["06001", "06003", "11001", "Total"], "n": [3, 4, 5, 12]})
    at = uploaded(page("pages/1_Data.py"), table, ["state", "county"], "n").run()
    assert_clean(at)
    warnings = " ".join(w.value for w in at.warning)
    assert "Units that look like totals or subtotals: state 'Total'" in warnings
    at = uploaded(page("pages/1_Data.py"), table.iloc[:3], ["state", "county"], "n").run()
    assert not any("totals" in w.value for w in at.warning)


def test_a_file_saved_by_excel_in_cp1252_is_read_and_said_so():
    """The encoding 'auto' refused a French file as Excel saves it (cp1252); it is read in
    cp1252 with a note, and a file that is UTF-8 is read without one."""
    import io

    def upload(text: str, encoding: str):
        stream = io.BytesIO(text.encode(encoding))
        stream.name = "communes.csv"
        return stream

    text = "reg;dep;libellé;effectif\n84;01;Ambérieu-en-Bugey;300\n93;13;Aix;900\n"
    table, note = inp.read_upload(upload(text, "cp1252"), inp.ENCODINGS[0])
    assert table["libellé"].tolist() == ["Ambérieu-en-Bugey", "Aix"]
    assert note.startswith("communes.csv is not UTF-8: read as cp1252")
    table, note = inp.read_upload(upload(text, "utf-8"), inp.ENCODINGS[0])
    assert note is None and table["libellé"].tolist()[0] == "Ambérieu-en-Bugey"
    table, note = inp.read_upload(upload(text, "latin-1"), "latin-1")  # as chosen
    assert note is None and table["libellé"].tolist()[0] == "Ambérieu-en-Bugey"
    binary = io.BytesIO(b"reg,n\n84,3\n\x81,2\n")  # 0x81: no character in either
    binary.name = "odd.csv"
    with pytest.raises(EncodingError) as info:
        inp.read_upload(binary, inp.ENCODINGS[0])
    assert str(info.value).startswith("odd.csv is neither UTF-8 nor cp1252 text (byte "
                                      "b'\\x81' at byte offset 11 of the file (line 3)): "
                                      "choose its encoding under Text encoding")
