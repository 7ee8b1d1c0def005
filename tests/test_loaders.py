"""Tests for hierdp_core.data.loaders: real files in tmp_path, one assertion per problem."""

from __future__ import annotations

import doctest
import gzip
import io
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hierdp_core.data import loaders, sources, validate
from hierdp_core.data.loaders import read_table, validate_columns, validate_counts
from hierdp_core.errors import HierdpError, InputError

CSV = "state,county,n\n06,06037,12\n06,06059,3\n36,36061,7\n"


def write(path, text: str, encoding: str = "utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def raises(match_parts, fn, *args, **kwargs) -> str:
    """Call fn, expect InputError, check every part occurs in the message; return it."""
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    for part in match_parts:
        assert part in message, f"{part!r} not in {message!r}"
    return message


# ---- doctest -------------------------------------------------------------------------
@pytest.mark.parametrize("module", [loaders, sources, validate], ids=lambda m: m.__name__)
def test_module_doctest_passes(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 2
    assert result.failed == 0


# ---- happy paths: formats and delimiters ----------------------------------------------
def test_csv_keeps_leading_zero_codes_and_converts_counts(tmp_path):
    t = read_table(write(tmp_path / "counts.csv", CSV))
    assert list(t.columns) == ["state", "county", "n"]
    assert t["state"].tolist() == ["06", "06", "36"]
    assert t["county"].tolist() == ["06037", "06059", "36061"]
    assert t["n"].dtype == np.int64
    assert t["n"].tolist() == [12, 3, 7]


def test_column_with_one_leading_zero_value_stays_string(tmp_path):
    t = read_table(write(tmp_path / "c.csv", "code,zero,frac\n1,0,0.5\n2,10,1\n007,3,2\n"))
    assert t["code"].tolist() == ["1", "2", "007"]
    # a lone "0" and "0.5" are numbers, not codes
    assert t["zero"].tolist() == [0, 10, 3]
    assert t["frac"].tolist() == [0.5, 1.0, 2.0]


def test_dtype_str_columns_forces_strings(tmp_path):
    t = read_table(write(tmp_path / "c.csv", "fips,n\n6037,1\n36061,2\n"),
                   dtype_str_columns=["fips"])
    assert t["fips"].tolist() == ["6037", "36061"]
    assert t["n"].tolist() == [1, 2]


def test_dtype_str_columns_unknown_column(tmp_path):
    raises(["c.csv", "'tract'", "not found", "['fips', 'n']"], read_table,
           write(tmp_path / "c.csv", "fips,n\n1,2\n"), dtype_str_columns=["tract"])


def test_na_tokens_are_missing_in_numeric_columns_but_codes_elsewhere(tmp_path):
    t = read_table(write(tmp_path / "c.csv", "country,n\nNA,1\nUS,NA\nFR,\n"))
    assert t["country"].tolist() == ["NA", "US", "FR"]
    assert t["n"].iloc[0] == 1
    assert t["n"].iloc[1:].isna().all()


_CELLS = st.sampled_from(["1", "2", " 3 ", "40", "2.5", "-7", "1e3", "0", "01", "0.5", "NA",
                           "null", "-", "", "x", "Torino", None, "3.000", "1.234.567",
                           "0.125", "12.500"])


def _typed_row_by_row(cells: list) -> pd.Series | None:
    """The typing rule cell by cell, written out: None if the column stays text."""
    present = [c.strip() for c in cells if c is not None]
    if not present or any(len(c) > 1 and c[0] == "0" and c[1].isdigit() for c in present):
        return None
    dotted = [c for c in present if "." in c]  # all like 3.000: 3 or 3,000? stays text
    if dotted and all(re.fullmatch(r"[1-9]\d{0,2}(\.000)+", c) for c in dotted):
        return None
    numbers = []
    for c in (c.strip() if c is not None else None for c in cells):
        if c is None or c in loaders.NA_TOKENS or c == "":
            numbers.append(None)
            continue
        try:
            numbers.append(float(c))
        except ValueError:
            return None
    if all(n is None for n in numbers):
        return None
    return pd.Series([np.nan if n is None else n for n in numbers], dtype=float)


@settings(max_examples=300, deadline=None)
@given(st.lists(_CELLS, min_size=1, max_size=30))
def test_column_typing_matches_the_rule_cell_by_cell(cells):
    """Numbers, NA tokens, leading-zero codes, text and missing cells in any mix."""
    series = pd.Series(cells, dtype=object)
    typed = loaders._maybe_numeric(series)
    expected = _typed_row_by_row(cells)
    if expected is None:
        assert typed is series
    else:
        assert pd.api.types.is_numeric_dtype(typed) and len(typed) == len(cells)
        assert np.allclose(typed.astype(float), expected, equal_nan=True)
        integral = all(c is None or c.strip() in loaders.NA_TOKENS or c.strip() == ""
                       or c.strip().lstrip("-").isdigit() for c in cells)
        if integral and expected.notna().all():
            assert pd.api.types.is_integer_dtype(typed)


def test_a_dot_between_groups_of_three_digits_is_not_read_as_a_decimal_point(tmp_path):
    """"3.000" is 3000 with '.' as a thousands separator (much of Europe), 3 as a decimal
    point: such a column is not read as numbers, and as counts it is refused with both
    readings, never taken as 3 in silence. Other decimals stay numbers."""
    t = read_table(write(tmp_path / "c.csv", "region;n;w\nA;3.000;0.125\nB;12;1.5\n"
                                             "C;1.234.567;2\n"))
    assert t["n"].tolist() == ["3.000", "12", "1.234.567"]
    assert t["w"].tolist() == [0.125, 1.5, 2.0]
    with pytest.raises(InputError, match=r"count column 'n' has 2 value\(s\) with '\.' "
                       r"between groups of three digits: row 1: '3.000', row 3: '1.234.567'; "
                       r"3.000 is 3000 with '\.' as a thousands separator, 3 with '\.' as a "
                       "decimal point"):
        validate_counts(t, "n")
    mixed = read_table(write(tmp_path / "m.csv", "n\n3.000\n2.75\n"))  # decimals: numbers
    assert mixed["n"].tolist() == [3.0, 2.75]
    means = read_table(write(tmp_path / "h.csv", "mean_hh_size\n4.125\n8.750\n23.000\n"))
    assert means["mean_hh_size"].tolist() == [4.125, 8.75, 23.0]  # three decimals: numbers


def test_other_thousands_separators_and_open_ended_values_are_named():
    """'1,200', "3'000'000" (Swiss) and '1 200' (French, with a narrow no-break space too)
    were refused as "non-numeric": the message names the separator's rows and the number
    meant; a top-coded '6+' says it stands for several values; a size column is called
    one."""
    t = pd.DataFrame({"n": ["1,200", "3'000'000", "1\u202f200", "7"]})
    with pytest.raises(InputError, match=r"count column 'n' has 3 value\(s\) with a separator "
                       r"between groups of three digits: row 1: '1,200', row 2: \"3'000'000\", "
                       r"row 3: '1\\u202f200'; write them as plain integers, without a "
                       r"thousands separator \(1,200 as 1200\)"):
        validate_counts(t, "n")
    with pytest.raises(InputError, match=r"non-numeric values: row 2: '1,2345'$"):
        validate_counts(pd.DataFrame({"n": ["5", "1,2345"]}), "n")  # not groups of three
    with pytest.raises(InputError, match=r"size column 'size' has non-numeric values: row 2: "
                       r"'6\+' \(6\+ stands for every value from 6 up, not one number\)"):
        validate_counts(pd.DataFrame({"size": ["5", "6+"]}), "size", role="size")


def test_semicolon_delimiter(tmp_path):
    t = read_table(write(tmp_path / "eu.csv", "state;county;n\n06;06037;12\n06;06059;3\n"))
    assert list(t.columns) == ["state", "county", "n"]
    assert t["county"].tolist() == ["06037", "06059"]


def test_semicolon_with_decimal_commas_is_not_split_on_commas(tmp_path):
    t = read_table(write(tmp_path / "eu.csv", "region;rate\nA;1,5\nB;2,5\n"))
    assert list(t.columns) == ["region", "rate"]
    assert t["rate"].tolist() == ["1,5", "2,5"]


def test_tab_delimiter_in_txt_and_tsv(tmp_path):
    text = "state\tcounty\tn\n06\t06037\t12\n"
    for name in ("tabs.txt", "tabs.tsv"):
        t = read_table(write(tmp_path / name, text))
        assert list(t.columns) == ["state", "county", "n"], name
        assert t["county"].tolist() == ["06037"], name


def test_quoted_commas_do_not_split(tmp_path):
    t = read_table(write(tmp_path / "q.csv", 'name,n\n"Los Angeles, CA",5\n"Kings, NY",2\n'))
    assert t["name"].tolist() == ["Los Angeles, CA", "Kings, NY"]
    assert t["n"].tolist() == [5, 2]


def test_gzip_csv(tmp_path):
    path = tmp_path / "counts.csv.gz"
    path.write_bytes(gzip.compress(CSV.replace(",", ";").encode()))
    t = read_table(path)
    assert t["county"].tolist() == ["06037", "06059", "36061"]
    assert t["n"].tolist() == [12, 3, 7]


def test_parquet_round_trip(tmp_path):
    df = pd.DataFrame({"county": ["06037", "06059"], "n": np.array([12, 3], dtype=np.int64)})
    df.to_parquet(tmp_path / "c.parquet")
    t = read_table(tmp_path / "c.parquet")
    assert t["county"].tolist() == ["06037", "06059"]
    assert t["n"].dtype == np.int64 and t["n"].tolist() == [12, 3]


def test_parquet_dtype_str_columns(tmp_path):
    pd.DataFrame({"fips": [6037, 36061], "n": [1, 2]}).to_parquet(tmp_path / "c.parquet")
    t = read_table(tmp_path / "c.parquet", dtype_str_columns=["fips"])
    assert t["fips"].tolist() == ["6037", "36061"]


def test_feather_round_trip(tmp_path):
    pd.DataFrame({"county": ["06037"], "n": [4]}).to_feather(tmp_path / "c.feather")
    t = read_table(tmp_path / "c.feather")
    assert t["county"].tolist() == ["06037"] and t["n"].tolist() == [4]


def test_xlsx_round_trip(tmp_path):
    df = pd.DataFrame({"state": ["06", "36"], "county": ["06037", "36061"], "n": [12, 7],
                       "rate": [0.5, 2.0]})
    df.to_excel(tmp_path / "c.xlsx", index=False)
    t = read_table(tmp_path / "c.xlsx")
    assert t["state"].tolist() == ["06", "36"]
    assert t["county"].tolist() == ["06037", "36061"]
    assert t["n"].dtype == np.int64 and t["n"].tolist() == [12, 7]
    assert t["rate"].tolist() == [0.5, 2.0]


def test_xls_that_is_really_xlsx_loads(tmp_path):
    pd.DataFrame({"county": ["06037"], "n": [4]}).to_excel(tmp_path / "c.xlsx", index=False)
    (tmp_path / "c.xls").write_bytes((tmp_path / "c.xlsx").read_bytes())
    assert read_table(tmp_path / "c.xls")["county"].tolist() == ["06037"]


def test_bom_is_stripped_from_first_column_name(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + CSV.encode())
    t = read_table(path)
    assert list(t.columns) == ["state", "county", "n"]
    assert t["state"].tolist() == ["06", "06", "36"]


def test_utf16_with_bom_is_recognised(tmp_path):
    path = tmp_path / "excel_unicode.txt"
    path.write_bytes("région\tn\nÎle\t5\n".encode("utf-16"))
    t = read_table(path)
    assert list(t.columns) == ["région", "n"]
    assert t["région"].tolist() == ["Île"]


def test_a_bom_is_honoured_whatever_the_encoding_given(tmp_path):
    """A UTF-8 file with a BOM read with ``encoding="cp1252"``: its first column was named
    'ï»¿fylke' and its letters were mojibake; the BOM says the file's encoding."""
    path = tmp_path / "g.csv"
    path.write_bytes(b"\xef\xbb\xbf" + "fylke,navn\n18,Bodø\n".encode())
    for columns in (None, ["fylke", "navn"]):  # the pandas and the pyarrow readers
        t = read_table(path, encoding="cp1252", columns=columns)
        assert list(t.columns) == ["fylke", "navn"] and t["navn"].tolist() == ["Bodø"]


def test_own_encoding_of_a_public_file(tmp_path):
    """A file with an encoding of its own (a geography beside a cp1252 input): UTF-8 bytes
    are read as UTF-8 and say so, ASCII and other text keep the input's encoding."""
    utf8 = write(tmp_path / "u.csv", "navn\nBodø\n")
    assert sources.own_encoding(utf8, "cp1252") == ("utf-8", "its bytes are UTF-8")
    assert sources.own_encoding(utf8, None) == (None, "")
    assert sources.own_encoding(utf8, "utf-8") == ("utf-8", "")
    assert sources.own_encoding(write(tmp_path / "a.csv", "navn\nOslo\n"), "cp1252") == (
        "utf-8", "")
    cp = write(tmp_path / "c.csv", "navn\nBodø\n", "cp1252")
    assert sources.own_encoding(cp, "cp1252") == ("cp1252", "")


def test_latin1_with_explicit_encoding_keeps_accents(tmp_path):
    path = write(tmp_path / "fr.csv", "commune,n\nBéziers,3\nSaint-Étienne,4\n", "latin-1")
    t = read_table(path, encoding="latin-1")
    assert t["commune"].tolist() == ["Béziers", "Saint-Étienne"]
    assert t["n"].tolist() == [3, 4]


def test_header_names_are_stripped_and_trailing_empty_rows_dropped(tmp_path):
    t = read_table(write(tmp_path / "c.csv", " state , n ,\n06,1,\n36,2,\n,,\n,,\n"))
    assert list(t.columns) == ["state", "n"]
    assert len(t) == 2


def test_empty_header_with_data_gets_unnamed_name(tmp_path):
    t = read_table(write(tmp_path / "c.csv", ",n\n0,1\n1,2\n"))
    assert list(t.columns) == ["Unnamed: 0", "n"]


# ---- buffers (uploads) ----------------------------------------------------------------
def test_bytesio_with_name(tmp_path):
    t = read_table(io.BytesIO(CSV.encode()), name="upload.csv")
    assert t["county"].tolist() == ["06037", "06059", "36061"]


class FakeUpload:
    """Like Streamlit's UploadedFile: .name, .read(), .getvalue()."""

    def __init__(self, name: str, data: bytes):
        self.name = name
        self._data = data

    def read(self):
        return self._data

    def getvalue(self):
        return self._data


def test_uploaded_file_like_object_uses_its_name(tmp_path):
    pd.DataFrame({"county": ["06037"], "n": [4]}).to_parquet(tmp_path / "c.parquet")
    t = read_table(FakeUpload("mine.parquet", (tmp_path / "c.parquet").read_bytes()))
    assert t["county"].tolist() == ["06037"]


def test_buffer_errors_name_the_upload():
    raises(["upload.csv", "not valid UTF-8"], read_table,
           io.BytesIO("a,b\nç,1\n".encode("latin-1")), name="upload.csv")


def test_buffer_without_name_is_unsupported_format():
    raises(["unsupported file format", ".csv"], read_table, io.BytesIO(CSV.encode()))


def test_non_file_source_is_rejected():
    raises(["cannot read a table from a int"], read_table, 42)


# ---- error cases: every message names the file and the problem ------------------------
def test_errors_are_typed():
    assert issubclass(InputError, HierdpError)


def test_missing_file(tmp_path):
    raises(["nope.csv", "file not found"], read_table, tmp_path / "nope.csv")


def test_directory(tmp_path):
    (tmp_path / "dir.csv").mkdir()
    raises(["dir.csv", "is a directory"], read_table, tmp_path / "dir.csv")


def test_unknown_extension(tmp_path):
    raises(["data.json", "unsupported file format", ".csv", ".parquet", ".xlsx"],
           read_table, write(tmp_path / "data.json", "{}"))


def test_empty_file(tmp_path):
    raises(["empty.csv", "empty (0 bytes)", "no data rows"], read_table,
           write(tmp_path / "empty.csv", ""))


def test_blank_lines_only(tmp_path):
    raises(["blank.csv", "empty", "no data rows"], read_table,
           write(tmp_path / "blank.csv", "\n\n\n"))


def test_empty_buffer():
    raises(["up.csv", "empty (0 bytes)"], read_table, io.BytesIO(b""), name="up.csv")


def test_header_only(tmp_path):
    raises(["head.csv", "no data rows"], read_table, write(tmp_path / "head.csv", "a,b,c\n"))


def test_header_only_xlsx(tmp_path):
    pd.DataFrame({"a": [], "b": []}).to_excel(tmp_path / "head.xlsx", index=False)
    raises(["head.xlsx", "no data rows"], read_table, tmp_path / "head.xlsx")


def test_file_larger_than_limit(tmp_path):
    path = write(tmp_path / "big.csv", CSV)
    size = path.stat().st_size
    raises(["big.csv", f"{size:,} bytes", "10 bytes", "limit"], read_table, path, max_bytes=10)


def test_buffer_larger_than_limit():
    raises(["big.csv", f"{len(CSV):,} bytes", "limit of 20 bytes"], read_table,
           io.BytesIO(CSV.encode()), name="big.csv", max_bytes=20)


def test_read_only_stream_larger_than_limit():
    class Stream:
        name = "stream.csv"

        def __init__(self):
            self.inner = io.BytesIO(CSV.encode())

        def read(self, n=-1):
            return self.inner.read(n)

    raises(["stream.csv", "larger than 20 bytes", "limit"], read_table, Stream(), max_bytes=20)
    assert len(read_table(Stream())) == 3


def test_latin1_without_encoding_gives_offset_line_and_hint(tmp_path):
    path = write(tmp_path / "fr.csv", "commune,n\nParis,1\nBéziers,3\n", "latin-1")
    offset = path.read_bytes().index(b"\xe9")
    raises(["fr.csv", "not valid UTF-8", "line 3", f"byte offset {offset}", "encoding='latin-1'",
            "cp1252"], read_table, path)


def test_decode_error_found_beyond_first_chunk(tmp_path):
    """Offsets and lines stay exact across scan chunks, even with a character split by one."""
    chunk = sources.SCAN_CHUNK
    head = "code,n\n" + "".join(f"{i:07d},{i}\n" for i in range(150_000))
    head = head.encode()[: 2 * chunk - 1]
    head = head[: head.rindex(b"\n") + 1]
    head += b"x" * (2 * chunk - 1 - len(head))  # a valid 2-byte character straddles a chunk edge
    path = tmp_path / "long.csv"
    path.write_bytes(head + "é,1\nZoé,1\n".encode() + "Zoé,1\n".encode("latin-1"))
    data = path.read_bytes()
    offset = data.rindex(b"\xe9")
    line = data[:offset].count(b"\n") + 1
    assert offset > chunk and line > 100_000
    raises(["long.csv", f"byte offset {offset:,}", f"(line {line})"], read_table, path)


def test_decode_error_offset_counts_the_bom(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + "a,n\nZoé,1\n".encode("latin-1"))
    offset = path.read_bytes().index(b"\xe9")
    raises(["bom.csv", f"byte offset {offset} ", "(line 2)"], read_table, path)


def test_latin1_in_gzip(tmp_path):
    path = tmp_path / "fr.csv.gz"
    path.write_bytes(gzip.compress("commune,n\nBéziers,3\n".encode("latin-1")))
    raises(["fr.csv.gz", "line 2", "decompressed"], read_table, path)
    assert read_table(path, encoding="latin-1")["commune"].tolist() == ["Béziers"]


def test_wrong_explicit_encoding_is_reported_as_such(tmp_path):
    path = write(tmp_path / "u.csv", "commune,n\nBéziers,3\n")
    message = raises(["u.csv", "'ascii'", "line 2"], read_table, path, encoding="ascii")
    assert "latin-1" not in message


def test_unknown_encoding_name(tmp_path):
    raises(["u.csv", "unknown encoding 'klingon'"], read_table,
           write(tmp_path / "u.csv", CSV), encoding="klingon")


def test_ragged_rows_name_the_line(tmp_path):
    path = write(tmp_path / "rag.csv", "a,b,c\n1,2,3\n4,5,6\n7,8,9,10\n")
    raises(["rag.csv", "malformed CSV", "line 4", "4 fields", "has 3"], read_table, path)


def test_unterminated_quote(tmp_path):
    raises(["quote.csv", "malformed CSV", "EOF inside string"], read_table,
           write(tmp_path / "quote.csv", 'a,b\n"1,2\n3,4\n'))


def test_duplicate_column_names_csv(tmp_path):
    raises(["dup.csv", "duplicate column names", "'n'", "[2, 3]"], read_table,
           write(tmp_path / "dup.csv", "county,n,n\n06037,1,2\n"))


def test_duplicate_column_names_after_stripping(tmp_path):
    raises(["dup.csv", "duplicate column names", "'n'"], read_table,
           write(tmp_path / "dup.csv", "n, n\n1,2\n"))


def test_duplicate_column_names_xlsx(tmp_path):
    pd.DataFrame([["county", "county"], ["06037", "06059"]]).to_excel(
        tmp_path / "dup.xlsx", index=False, header=False)
    raises(["dup.xlsx", "duplicate column names", "'county'"], read_table, tmp_path / "dup.xlsx")


def test_parquet_without_columns(tmp_path):
    pq.write_table(pa.table({}), tmp_path / "none.parquet")
    raises(["none.parquet", "no columns"], read_table, tmp_path / "none.parquet")


def test_parquet_without_rows(tmp_path):
    pd.DataFrame({"n": pd.Series([], dtype="int64")}).to_parquet(tmp_path / "zero.parquet")
    raises(["zero.parquet", "no data rows"], read_table, tmp_path / "zero.parquet")


@pytest.mark.parametrize("name, kind", [
    ("bad.parquet", "Parquet"), ("bad.xlsx", "Excel"), ("bad.feather", "Feather"),
])
def test_corrupted_binary_files(tmp_path, name, kind):
    path = tmp_path / name
    path.write_bytes(b"this is not a real file at all, just text pretending" * 10)
    raises([name, f"could not read the {kind} file", "corrupted"], read_table, path)


def test_truncated_parquet(tmp_path):
    pd.DataFrame({"n": range(100)}).to_parquet(tmp_path / "ok.parquet")
    data = (tmp_path / "ok.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    raises(["cut.parquet", "could not read the Parquet file"], read_table,
           tmp_path / "cut.parquet")


def test_corrupted_xlsx_zip(tmp_path):
    pd.DataFrame({"n": [1]}).to_excel(tmp_path / "ok.xlsx", index=False)
    data = (tmp_path / "ok.xlsx").read_bytes()
    (tmp_path / "cut.xlsx").write_bytes(data[: len(data) // 2])
    raises(["cut.xlsx", "could not read the Excel file"], read_table, tmp_path / "cut.xlsx")


def test_legacy_xls_garbage(tmp_path):
    path = tmp_path / "old.xls"
    path.write_bytes(b"\xd0\xcf\x11\xe0 not really an OLE file")
    raises(["old.xls"], read_table, path)


def test_corrupted_gzip(tmp_path):
    raises(["fake.csv.gz", "not a valid gzip file"], read_table,
           write(tmp_path / "fake.csv.gz", CSV))


# ---- validate_counts -----------------------------------------------------------------
def test_validate_counts_accepts_integral_floats_and_numeric_strings():
    t = pd.DataFrame({"a": [3.0, 0.0, 7.0], "b": ["3", " 4 ", "5"]})
    a = validate_counts(t, "a")
    assert a.dtype == np.int64 and a.tolist() == [3, 0, 7]
    assert validate_counts(t, "b").tolist() == [3, 4, 5]


def test_validate_counts_on_loaded_table(tmp_path):
    t = read_table(write(tmp_path / "c.csv", CSV))
    assert validate_counts(t, "n", file_name="c.csv").tolist() == [12, 3, 7]


def test_validate_counts_missing_column_lists_columns():
    t = pd.DataFrame({"county": ["a"], "n": [1]})
    raises(["c.csv", "count column 'count' not found", "['county', 'n']"],
           validate_counts, t, "count", file_name="c.csv")


def test_validate_counts_negative_names_rows():
    t = pd.DataFrame({"n": [1, -2, 3, -4]})
    raises(["2 negative", "row 2: -2", "row 4: -4"], validate_counts, t, "n")


def test_validate_counts_fraction_names_rows():
    t = pd.DataFrame({"n": [1.0, 1.5, 3.0]})
    message = raises(["c.csv", "non-integer", "row 2: 1.5"], validate_counts, t, "n",
                     file_name="c.csv")
    assert "row 3" not in message and "row 1" not in message


def test_validate_counts_non_numeric_names_rows_and_values():
    t = pd.DataFrame({"n": ["1", "abc", "3", "x1"]})
    raises(["non-numeric", "row 2: 'abc'", "row 4: 'x1'"], validate_counts, t, "n")


def test_validate_counts_nan_names_rows():
    t = pd.DataFrame({"n": [1.0, np.nan, 2.0]})
    raises(["1 missing", "row 2"], validate_counts, t, "n")


def test_validate_counts_missing_in_string_column():
    t = pd.DataFrame({"n": ["1", None, ""]})
    raises(["2 missing", "row 2", "row 3"], validate_counts, t, "n")


def test_validate_counts_lists_at_most_five_rows():
    t = pd.DataFrame({"n": [-1] * 8})
    message = raises(["8 negative", "row 5: -1", "and 3 more"], validate_counts, t, "n")
    assert "row 6" not in message


def test_validate_counts_infinite_and_bool():
    raises(["infinite", "row 1"], validate_counts, pd.DataFrame({"n": [np.inf, 1.0]}), "n")
    raises(["true/false"], validate_counts, pd.DataFrame({"n": [True, False]}), "n")


def test_validate_counts_too_large():
    raises(["too large", "row 1"], validate_counts, pd.DataFrame({"n": [1e19]}), "n")


# ---- validate_columns ----------------------------------------------------------------
def test_validate_columns_message():
    t = pd.DataFrame({"state": ["06"], "County": ["06037"], "n": [1]})
    raises(["geography level column 'county' not found", "['state', 'County', 'n']",
            "did you mean 'County'"], validate_columns, t, ["state", "county"], "geography level")


def test_validate_columns_several_missing_and_file_name():
    t = pd.DataFrame({"n": [1]})
    raises(["c.csv: geography level columns 'a', 'b' not found; the table has ['n']"],
           validate_columns, t, ["a", "b"], "geography level", file_name="c.csv")


def test_validate_columns_passes_when_present():
    t = pd.DataFrame({"state": ["06"], "n": [1]})
    assert validate_columns(t, "state", "geography level") is None
    assert validate_columns(t, ["state", "n"], "geography level") is None


def test_integer_count_column_is_checked_without_floats():
    """An int64 column is checked as integers: a negative count is named by row, and the
    exact values come back (no float64 round trip)."""
    big = 2**53 - 5
    assert validate_counts(pd.DataFrame({"n": [big, 3]}), "n").tolist() == [big, 3]
    with pytest.raises(InputError, match=r"1 negative value\(s\).*row 2: -4"):
        validate_counts(pd.DataFrame({"n": np.array([1, -4, 2], dtype=np.int64)}), "n")
    unsigned = pd.DataFrame({"n": np.array([1, 2**63], dtype=np.uint64)})
    with pytest.raises(InputError, match="too large for a 64-bit count"):
        validate_counts(unsigned, "n")


def test_lookalike_codes_of_a_categorical_ignore_unused_categories():
    """Codes read by pyarrow are Categoricals: only the values some row holds are compared
    (an unused category such as '02' makes no pair)."""
    from hierdp_core.data.loaders import lookalike_codes

    codes = pd.Categorical(["1", "01", "2", None], categories=["1", "01", "2", "02", "002"])
    assert lookalike_codes(pd.DataFrame({"c": codes}), ["c"]) == [("c", "01", "1")]
    assert lookalike_codes(pd.DataFrame({"c": codes.astype(object)}), ["c"]) == [
        ("c", "01", "1")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(" 0120a", max_size=4), max_size=25), st.integers(1, 6))
def test_lookalike_codes_equal_a_naive_pairing(values, limit):
    """Every later code (in sorted order) whose form without surrounding spaces and leading
    zeros ('0' for zeros only) equals an earlier one's is paired with the first of them."""
    from hierdp_core.data.loaders import lookalike_codes

    pairs, first = [], {}
    for value in sorted(set(values)):
        stripped = value.strip()
        key = stripped.lstrip("0") or ("0" if stripped else "")
        if key in first:
            pairs.append(("c", first[key], value))
        else:
            first[key] = value
    for column in (pd.Series(values, dtype=object), pd.Series(values, dtype="category")):
        assert lookalike_codes(pd.DataFrame({"c": column}), ["c"], limit) == pairs[:limit]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(" 0123.-aN\x1f\xa0\u0660", max_size=4), min_size=1, max_size=12))
@example(["1\x1f", " 2", "0\u0661"])
def test_the_string_kernels_strip_and_match_as_python_does(values):
    """The type rule runs on distinct values with pyarrow's kernels: they strip what
    ``str.strip`` strips and find a leading-zero code where ``re.match(r"0\\d")`` does."""
    import re

    from hierdp_core.data.loaders import _has_leading_zero, _stripped

    stripped = _stripped(values)
    assert stripped.tolist() == [v.strip() for v in values]
    assert _has_leading_zero(stripped) == any(re.match(r"0\d", v.strip()) for v in values)


def test_a_row_repeating_the_header_is_refused_naming_it(tmp_path):
    """Files joined with their headers: the repeated header would become a unit named
    'region' and a category 'sex'."""
    text = "region,sex,n\nA,F,3\nregion,sex,n\nB,M,4\n"
    raises(["j.csv", "data row(s) 2 repeat the header", "remove them"], read_table,
           write(tmp_path / "j.csv", text))
    raises(["data row(s) 2 repeat the header"], read_table, write(tmp_path / "k.csv", text),
           columns=["region", "n"])  # the columns a release reads, through pyarrow
    joined = "\ufeff" + text.replace("region,sex,n\nB", "\ufeffregion,sex,n\nB")
    raises(["data row(s) 2 repeat the header"], read_table,  # Excel's UTF-8 files, joined
           write(tmp_path / "bom.csv", joined))
    kept = read_table(write(tmp_path / "ok.csv", "region,sex,n\nregion,F,3\n"))
    assert kept["region"].tolist() == ["region"]  # one cell like its name is no header


def test_a_file_cut_in_the_middle_of_a_row_is_refused(tmp_path):
    """An interrupted copy: the last line has fewer fields than the header and no line
    break after it. It was padded with missing cells and reported as a missing code (with a
    hint to --ragged)."""
    raises(["cut.csv", "ends in the middle of a row", "2 of the header's 3 fields"],
           read_table, write(tmp_path / "cut.csv", "region,dep,n\nA,A1,3\nB,B1,4\nB,B2"))
    raises(["ends in the middle of a row"], read_table,
           write(tmp_path / "cut.csv", "region;dep;n\nA;A1;3\nB;B"), columns=["region", "n"])
    whole = read_table(write(tmp_path / "whole.csv", "region,dep,n\nA,A1,3\nB,B1,4"))
    assert whole["n"].tolist() == [3, 4]  # complete, only without the last line break
    short = read_table(write(tmp_path / "short.csv", "region,dep,n\nA,A1\nB,B1,4\n"))
    assert short["n"].isna().tolist() == [True, False]  # a short row before the end: padded
