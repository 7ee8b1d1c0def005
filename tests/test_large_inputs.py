"""Large inputs (issue 16, point 4): reading only the needed columns through pyarrow gives the
same data as the full read, codes as Categoricals (leading zeros kept); the builders take
them; the release table written by pyarrow is byte-identical to pandas' CSV. Small files
only: the 10.8M-row measurement is benchmarks/bench_large_input.py."""

from __future__ import annotations

import doctest
import gzip
import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.cli.table import input_columns
from hierdp_core.data import arrow_io
from hierdp_core.data.arrow_io import release_csv_bytes, table_from_frame
from hierdp_core.data.loaders import read_table
from hierdp_core.errors import InputError
from hierdp_core.export import release_table_bytes, write_release
from hierdp_core.hierarchy import build_hierarchy
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.structure import geography_from_table

CSV = ("state,county,tract,sex,n,note,weight\n"
       "06,06037,06037000100,F,12,\"a, quoted\",1.5\n"
       "06,06037,06037000100,M,3,,2\n"
       "06,06059, 06059000200 ,F,7,x,NA\n"
       "36,36061,36061000300,M,0,\"two\nlines\",4\n")


def same_values(a: pd.Series, b: pd.Series) -> bool:
    """Equal values, missing equal to missing, whatever the dtype (Categorical or not)."""
    left, right = a.astype(object).tolist(), b.astype(object).tolist()
    return all((x == y) or (pd.isna(x) and pd.isna(y)) for x, y in zip(left, right, strict=True))


def assert_same_table(full: pd.DataFrame, selected: pd.DataFrame, columns) -> None:
    assert list(selected.columns) == [c for c in full.columns if c in columns]
    for column in selected.columns:
        assert same_values(full[column], selected[column]), column
        if pd.api.types.is_numeric_dtype(full[column]):  # numbers stay numbers
            assert selected[column].dtype == full[column].dtype, column


def test_module_doctest_passes():
    assert doctest.testmod(arrow_io).failed == 0


# ---- reading ---------------------------------------------------------------------------
@pytest.mark.parametrize("columns", [["state", "county", "tract", "n"],
                                     ["tract", "sex", "note", "weight"], ["n"]])
def test_selected_columns_equal_the_full_read(tmp_path, columns):
    path = tmp_path / "t.csv"
    path.write_text(CSV)
    full, selected = read_table(path), read_table(path, columns=columns)
    assert_same_table(full, selected, columns)


def test_codes_are_categoricals_with_leading_zeros(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(CSV)
    t = read_table(path, columns=["state", "county", "n", "weight"])
    assert isinstance(t["county"].dtype, pd.CategoricalDtype)
    assert t["state"].tolist() == ["06", "06", "06", "36"]
    assert t["n"].dtype == np.int64 and t["n"].tolist() == [12, 3, 7, 0]
    assert t["weight"].isna().tolist() == [False, False, True, False]  # 'NA' among numbers


@pytest.mark.parametrize("name, encode", [
    ("t.csv", lambda s: s.encode("utf-8-sig")),
    ("t.tsv", lambda s: s.replace(",", "\t").encode()),
    ("t.csv", lambda s: s.replace(",", ";").encode()),
    ("t.csv.gz", lambda s: gzip.compress(s.encode())),
    ("t.csv", lambda s: s.encode("utf-16")),
])
def test_encodings_delimiters_and_gzip(tmp_path, name, encode):
    text = "state,county,n\n06,06037,12\n06,06059,3\n36,36061,7\n"
    path = tmp_path / name
    path.write_bytes(encode(text))
    full, selected = read_table(path), read_table(path, columns=["county", "n"])
    assert_same_table(full, selected, ["county", "n"])
    assert selected["county"].tolist() == ["06037", "06059", "36061"]
    assert isinstance(selected["county"].dtype, pd.CategoricalDtype)  # read by pyarrow


def test_uploaded_bytes(tmp_path):
    buffer = io.BytesIO(CSV.encode())
    t = read_table(buffer, name="up.csv", columns=["county", "n"])
    assert t["county"].tolist()[0] == "06037" and t["n"].sum() == 22


@pytest.mark.parametrize("text", [
    "state,county,n\n06,06037,12\n06,06059\n",            # a short row: padded
    "state,county,n\n06,06037,12\n06,06059,3\n,,\n,,\n",  # trailing empty rows: dropped
    "state, ,n\n06,,12\n06,,3\n",                          # an unnamed empty column
])
def test_unusual_files_give_the_full_reads_table(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    full, selected = read_table(path), read_table(path, columns=["state", "n"])
    assert_same_table(full, selected, ["state", "n"])


@pytest.mark.parametrize("text, part", [
    ("a,b,n\n1,2,3\n1,2,3,4\n", "line 3 has 4 fields"),
    ("a,a,n\n1,2,3\n", "duplicate column names"),
    ("a,b,n\n", "no data rows"),
])
def test_bad_files_give_the_same_message(tmp_path, text, part):
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(InputError) as full:
        read_table(path)
    with pytest.raises(InputError) as selected:
        read_table(path, columns=["a", "n"])
    assert part in str(full.value) and str(selected.value) == str(full.value)


def test_bad_utf8_gives_the_same_message(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,n\nx,1\n\xe9t\xe9,2\n")
    with pytest.raises(InputError) as full:
        read_table(path)
    with pytest.raises(InputError) as selected:
        read_table(path, columns=["a"])
    assert str(selected.value) == str(full.value)


def test_a_missing_column_returns_every_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(CSV)
    t = read_table(path, columns=["state", "tracts"])
    assert list(t.columns) == list(read_table(path).columns)  # the caller's check lists them
    with pytest.raises(InputError, match="did you mean 'tract'"):
        count_data_from_table(t, ["state", "tracts"])


@pytest.mark.parametrize("fmt", ["parquet", "feather"])
def test_columnar_formats_read_by_columns(tmp_path, fmt):
    frame = pd.DataFrame({"state": ["06", "06", "36"], "county": ["06037", "06059", "36061"],
                          "n": [12, 3, 7], "other": [1.5, 2.5, 3.5]})
    path = tmp_path / f"t.{fmt}"
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, path) if fmt == "parquet" else feather.write_feather(table, path)
    full, selected = read_table(path), read_table(path, columns=["county", "n"])
    assert_same_table(full, selected, ["county", "n"])
    if fmt == "parquet":
        assert isinstance(selected["county"].dtype, pd.CategoricalDtype)


_CELLS = st.sampled_from(["", "0", "00", "01", "1", "1.0", "2.5", "-3", "NA", "null", "x",
                          " 7 ", "a,b", 'q"r', "é", "06037", "1e3"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_CELLS, _CELLS, _CELLS), min_size=1, max_size=8))
def test_property_same_values_as_the_full_read(tmp_path_factory, rows):
    frame = pd.DataFrame(rows, columns=["a", "b", "c"])
    text = frame.to_csv(index=False)
    if text.rstrip("\n").endswith(",,"):
        return  # trailing all-empty rows are dropped by the full read: tested above
    path = tmp_path_factory.mktemp("p") / "t.csv"
    path.write_text(text)
    full, selected = read_table(path), read_table(path, columns=["a", "c"])
    assert_same_table(full, selected, ["a", "c"])


# ---- building the data from Categoricals -------------------------------------------------
def test_count_data_from_categoricals_equals_strings(tmp_path):
    rng = np.random.default_rng(0)
    tracts = [f"{s:02d}{c:03d}{t:06d}" for s in (1, 6) for c in (1, 37) for t in (100, 200)]
    rows = rng.integers(0, len(tracts), 300)
    frame = pd.DataFrame({"state": [tracts[i][:2] for i in rows],
                          "county": [tracts[i][:5] for i in rows],
                          "tract": [tracts[i] for i in rows],
                          "sex": rng.choice(["F", "M"], 300), "n": rng.integers(0, 9, 300)})
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    levels = ["state", "county", "tract"]
    objects = read_table(path)
    categorical = read_table(path, columns=levels + ["sex", "n"])
    geo = geography_from_table(pd.DataFrame({"state": [t[:2] for t in tracts],
                                             "county": [t[:5] for t in tracts],
                                             "tract": tracts}), levels)
    for shape in ({"geography": geo, "category_values": {"sex": ("F", "M")}}, {}):
        a = count_data_from_table(objects, levels, count_column="n", category_columns=["sex"],
                                  **shape)
        b = count_data_from_table(categorical, levels, count_column="n",
                                  category_columns=["sex"], **shape)
        assert np.array_equal(a.leaf_counts, b.leaf_counts)
        assert a.hierarchy.node_ids().tolist() == b.hierarchy.node_ids().tolist()
        assert a.categories == b.categories


def test_build_hierarchy_from_categoricals():
    codes = pd.Series([" b", "a", "b", "c", "a"])
    frame = pd.DataFrame({"top": ["X", "X", "X", "Y", "X"], "code": codes})
    cats = frame.astype("category")
    h1, leaf1 = build_hierarchy(frame, ["top", "code"])
    h2, leaf2 = build_hierarchy(cats, ["top", "code"])
    assert h1.node_ids().tolist() == h2.node_ids().tolist() == [
        "root", "X", "Y", "X/a", "X/b", "Y/c"]
    assert leaf1.tolist() == leaf2.tolist()
    blank = cats.copy()
    blank["code"] = pd.Categorical([" ", "a", "b", "c", "a"])
    with pytest.raises(Exception, match="missing value"):
        build_hierarchy(blank, ["top", "code"])


# ---- writing ---------------------------------------------------------------------------
def _release(**kwargs):
    frame = pd.DataFrame({"state": ["06", "06", "36"], "county": ["06037", "06059", "36061"],
                          "sex": ["F", "M", "F"], "n": [12, 3, 7]})
    data = count_data_from_table(frame, ["state", "county"], count_column="n", **kwargs)
    return get_mechanism("topdown").release(data, PrivacyBudget.pure(1.0),
                                            source=NoiseSource(seed=3))


@pytest.mark.parametrize("kwargs", [{}, {"category_columns": ["sex"]}])
def test_written_csv_equals_pandas(tmp_path, kwargs):
    release = _release(**kwargs)
    expected = release.to_frame().to_csv(index=False).encode()
    assert release_table_bytes(release, "csv") == expected
    paths = write_release(release, tmp_path / "out", formats=("csv", "parquet"),
                          structure_declared=False)
    assert paths["csv"].read_bytes() == expected
    pd.testing.assert_frame_equal(pd.read_parquet(paths["parquet"]), release.to_frame())


def test_csv_of_floats_and_quoted_text_equals_pandas():
    values = np.array([1.0, 0.1, 1e-05, 123456789012.5, 1e20, np.nan, -0.0, 2.5e-300, 1 / 3])
    frame = pd.DataFrame({"label": [f"u{i}" for i in range(9)], "value": values})
    assert release_csv_bytes(table_from_frame(frame)) == frame.to_csv(index=False).encode()
    frame["label"] = ["a,b", 'q"r', "two\nlines", "", None, " s", "é", "x", "y"]
    assert release_csv_bytes(table_from_frame(frame)) == frame.to_csv(index=False).encode()


@pytest.mark.parametrize("char", [",", '"', "\r", "\n"])
def test_each_structural_byte_makes_the_csv_pandas(char):
    """A comma, a quote or a line break in one text (of a table in chunks, as a dictionary)
    gives pandas' quoted CSV; a slice of the texts without it is written by pyarrow."""
    import pyarrow as pa

    frame = pd.DataFrame({"label": ["a", f"b{char}c", "d"], "value": [1, 2, 3]})
    table = table_from_frame(frame)
    chunked = pa.concat_tables([table.slice(0, 1), table.slice(1)])
    coded = table.set_column(0, "label", table.column(0).dictionary_encode())
    for written in (table, chunked, coded):
        assert release_csv_bytes(written) == frame.to_csv(index=False).encode()
        assert arrow_io._csv_ready(written) is None
    after = table.slice(2)
    assert arrow_io._csv_ready(after) is not None
    assert release_csv_bytes(after) == frame.iloc[2:].to_csv(index=False).encode()



def test_csv_of_whole_floats_equals_pandas():
    """Whole numbers (written as pyarrow's integer text and '.0'), fractions from 1e-4 to
    1e9 (pyarrow's shortest text) and the others (numpy's repr) mixed: the bytes of pandas."""
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.integers(-10**7, 10**7, 2000).astype(float),
                             rng.normal(0, 1, 5000) * 10.0 ** rng.integers(-7, 18, 5000),
                             [1e15, 9999999999999998.0, -9999999999999998.0, 1e16, -1e16,
                              -0.0, 0.0, np.nan, np.inf, -np.inf, 0.5, 3e20, 1e-4, 1e9,
                              999999999.5, 1 / 3, 1e-4 - 1e-20]])
    rng.shuffle(values)
    frame = pd.DataFrame({"label": [f"u{i}" for i in range(values.size)], "value": values})
    assert release_csv_bytes(table_from_frame(frame)) == frame.to_csv(index=False).encode()
    frame = frame[(np.abs(values) < 1e16) & (values == np.round(values)) & (values != 0)]
    assert release_csv_bytes(table_from_frame(frame)) == frame.to_csv(index=False).encode()

# ---- the CLI reads the columns it needs --------------------------------------------------
def test_input_columns_of_the_cli():
    from hierdp_core.config import ReleaseConfig

    cfg = ReleaseConfig(mechanism="topdown", levels=("state", "county"),
                        category_columns=("sex",), names={"county": "cname"},
                        category_values={"age": ("0-17", "18+")}, count_column="n")
    assert input_columns(cfg) == ["state", "county", "sex", "cname", "age", "n"]
    flows = ReleaseConfig(mechanism="tda-l2", query="flows", origin_levels=("o_s", "o_c"),
                          destination_levels=("d_s", "d_c"), count_column="trips")
    assert input_columns(flows) == ["o_s", "o_c", "d_s", "d_c", "trips"]
