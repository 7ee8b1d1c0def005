"""The declared counts reader (`hierdp_core.data.declared_rows` and
`hierdp_core.cli.declared_input`, issue 28 point 5): on plain input it builds the same
CountData as the careful path (read_table's type rule, `Geography.leaf_of_rows`,
`category_index`); on anything the careful path would prepare, refuse or read differently it
steps aside (None), so a release gives the careful path's result or its error, word for word."""

from __future__ import annotations

import doctest
import re
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.cli.config_file import settings_of_args
from hierdp_core.cli.declared_input import declared_count_input
from hierdp_core.cli.parser import build_parser
from hierdp_core.cli.release import memory_input
from hierdp_core.cli.table import lookalike_warning, read_input
from hierdp_core.data import declared_rows
from hierdp_core.data.declared_rows import _usable
from hierdp_core.data.sources import resolve_source
from hierdp_core.errors import HierdpError

GEO = "state,county,tract\n06,06037,06037000100\n06,06037,06037000200\n06,06059,06059000100\n" \
      "41,41051,41051000100\n"
ROWS = "state,county,tract,sex,n\n06,06037,06037000100,F,3\n41,41051,41051000100,M,2\n" \
       "06,06059,06059000100,F,0\n06,06037,06037000100,F,4\n"


def _write(tmp_path, rows: str | bytes, geo: str = GEO, *flags: str) -> tuple:
    """The settings (`ReleaseConfig`, `RunOptions`) of a release of ``rows``."""
    (tmp_path / "geo.csv").write_text(geo)
    people = tmp_path / "people.csv"
    people.write_bytes(rows if isinstance(rows, bytes) else rows.encode())
    return settings_of_args(build_parser().parse_args(
        ["release", str(people), "--levels", "state,county,tract", "--categories", "sex",
         "--category-values", "sex=F|M", "--geography", str(tmp_path / "geo.csv"),
         "--mechanism", "topdown", "--epsilon", "1", "--out", str(tmp_path / "out"), *flags]))


def _input(settings):
    return settings[0].data["file"]


def _careful(args):
    """What the careful path makes of the input: (data facts, lookalike warning) or the
    error's class and message."""
    cfg, run = args
    try:
        cfg, table, _, data, _ = memory_input(cfg, run, _input(args),
                                              read_input(cfg, _input(args)))
    except HierdpError as exc:
        return type(exc).__name__, str(exc)
    return _facts(data), lookalike_warning(cfg, table)


def _release_input(args):
    """The same through `memory_input` as a release runs it (the declared reader first)."""
    cfg, run = args
    try:
        cfg, table, _, data, _ = memory_input(cfg, run, _input(args))
    except HierdpError as exc:
        return type(exc).__name__, str(exc)
    return _facts(data), lookalike_warning(cfg, table)


def _facts(data):
    return (data.leaf_counts.tolist(), data.categories, data.category_columns,
            data.declared_structure, data.merged_rows, data.hierarchy.n_nodes)


def test_doctests():
    assert doctest.testmod(declared_rows).failed == 0


@pytest.mark.parametrize("count", [["--count-column", "n", "--duplicates", "sum"], []])
def test_plain_rows_give_the_careful_data(tmp_path, count):
    args = _write(tmp_path, ROWS, GEO, *count)
    assert declared_count_input(*args, _input(args)) is not None
    assert _release_input(args) == _careful(args)


def test_many_digit_codes_are_matched_by_integer_keys(tmp_path):
    """12,000 tracts (integer keys, not pyarrow's hash), codes with and without leading
    zeros, rows in random order over several blocks: the careful path's counts."""
    rng = np.random.default_rng(5)
    n = 12_000
    assert n >= declared_rows.DIGIT_KEYS_FROM
    county = rng.integers(0, 40, n)
    state = county % 7
    tract = [f"{c:03d}{i:06d}" if i % 3 else str(10**8 + i) for i, c in enumerate(county)]
    geo = "state,county,tract\n" + "".join(
        f"{s:02d},{s:02d}{c:03d},{t}\n" for s, c, t in zip(state, county, tract, strict=True))
    pick = rng.integers(0, n, 60_000)
    sexes = np.array(["F", "M"])[rng.integers(0, 2, pick.size)]
    rows = "state,county,tract,sex,n\n" + "".join(
        f"{state[i]:02d},{state[i]:02d}{county[i]:03d},{tract[i]},{s},{w}\n"
        for i, s, w in zip(pick, sexes, rng.integers(0, 5, pick.size), strict=True))
    args = _write(tmp_path, rows, geo, "--count-column", "n", "--duplicates", "sum")
    placed = declared_count_input(*args, _input(args))
    assert placed is not None and placed[1].merged_rows > 0
    assert _release_input(args) == _careful(args)


def test_text_codes_and_lookalikes(tmp_path):
    """Codes with letters (pyarrow's hash), and counties '1' and '01' of one state: the same
    warning as the careful path."""
    geo = "state,county,tract\nA,1,A-1-x\nA,01,A-01-y\nB,2,B-2-z\n"
    rows = "state,county,tract,sex,n\nA,1,A-1-x,M,1\nA,01,A-01-y,F,2\nB,2,B-2-z,F,5\n"
    args = _write(tmp_path, rows, geo, "--count-column", "n", "--duplicates", "sum")
    assert declared_count_input(*args, _input(args)) is not None
    result = _release_input(args)
    assert result == _careful(args) and "'01'" in result[1]


@pytest.mark.parametrize("row", [
    "06,,06037000100,F,3",  # a missing code
    "06,06037,06037009999,F,3",  # not in the geography
    "06,06059,06037000100,F,3",  # under another county
    "41,06037,06037000100,F,3",  # under another state
    "06,06037,06037000100,X,3",  # an undeclared value
    "06,06037,06037000100,FM,3",  # two bytes where every declared value is one
    "06,06037,06037000100,,3",  # a missing value
    "06,06037,06037000100,F,",  # a missing count
    "06,06037,06037000100,F,007", "06,06037,06037000100,F,1.0",
    "06,06037,06037000100,F,-1", "06,06037,06037000100,F,+3",
    "06,06037,06037000100,F, 3", "06,06037,06037000100,F,abc",
    "06,06037,06037000100,F,99999999999999999999",
    " 06,06037,06037000100,F,3",  # surrounding space: stripped by the careful path
    "06,06037,6037000100,F,3",  # a leading zero lost
    "06,06037,+6037000100,F,3",  # the integer key of '06037000100' without the check
    "06,06037",  # a short row
    "06,06037,06037000100,F,3,9",  # a long row
    ",,,,",  # an empty row at the end
])
def test_odd_rows_go_to_the_careful_path(tmp_path, row):
    args = _write(tmp_path, ROWS + row + "\n", GEO, "--count-column", "n", "--duplicates",
                  "sum")
    assert declared_count_input(*args, _input(args)) is None
    assert _release_input(args) == _careful(args)


@pytest.mark.parametrize("row", [b"06,06037,06037000100,\xff,3", b"06,06037,06037000100,F\xff,3",
                                 b"06\xff,06037,06037000100,F,3", b"06,0603\xe9,06037000100,F,3",
                                 b"06,06037,06037000100\xc3,F,3", b"06,06037,06037000100,F,3\xff"])
@pytest.mark.parametrize("digit_keys", [False, True])
def test_undecodable_bytes_go_to_the_careful_path(tmp_path, monkeypatch, row, digit_keys):
    """The declared reader does not check its texts as UTF-8: a byte that is none, in any
    column (codes looked up by hash or by digit keys, a category, a count), matches no
    declared text, and the careful path names it."""
    if digit_keys:
        monkeypatch.setattr(declared_rows, "DIGIT_KEYS_FROM", 1)
    args = _write(tmp_path, ROWS.encode() + row + b"\n", GEO, "--count-column", "n",
                  "--duplicates", "sum")
    assert declared_count_input(*args, _input(args)) is None
    careful = _careful(args)
    assert _release_input(args) == careful and careful[0] == "EncodingError"


@pytest.mark.parametrize("code", ["1e3", "1.50", "NA", "inf", "+5", "Infinity"])
def test_codes_the_type_rule_may_change_go_to_the_careful_path(tmp_path, code):
    geo = GEO + f"41,41051,{code}\n"
    args = _write(tmp_path, ROWS, geo, "--count-column", "n", "--duplicates", "sum")
    assert declared_count_input(*args, _input(args)) is None
    assert _release_input(args) == _careful(args)


def test_plain_codes():
    def plain(code: str) -> bool:
        return _usable(np.array([code]))

    assert all(map(plain, ["06", "0", "12345678901234567", "A1", "06-x", "0-17", "65+",
                           "1_0", "0x10"]))
    assert not any(map(plain, ["", " 06", "1e3", "1.0", "nan", "NaN", "NA", "-", "inf",
                               "123456789012345678", "+5"]))
    assert not _usable(np.array(["A1", "B2", "A1"]))  # a repeated code


@pytest.mark.parametrize("code", ["1_0", "0x10", "\u0663", "A 1"])
def test_text_codes_pandas_does_not_read_as_numbers(tmp_path, code):
    """Codes pandas does not read as numbers stay text on both paths."""
    geo = GEO + f"41,41051,{code}\n"
    rows = ROWS + f"41,41051,{code},M,4\n"
    args = _write(tmp_path, rows, geo, "--count-column", "n", "--duplicates", "sum")
    assert declared_count_input(*args, _input(args)) is not None
    assert _release_input(args) == _careful(args)


def test_other_flags_use_the_careful_path(tmp_path):
    for flags in (["--ragged"], ["--structure-from-data"], ["--local-codes"]):
        args = _write(tmp_path, ROWS, GEO, "--count-column", "n", *flags)
        if "--structure-from-data" in flags:
            args = (replace(args[0], data={"file": _input(args)}), args[1])
        assert declared_count_input(*args, _input(args)) is None


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("parts", [2, 3])
def test_a_file_read_in_parts_gives_the_careful_data(tmp_path, monkeypatch, newline, parts):
    """A large file is parsed in stretches of whole lines on several threads (here any
    file): the same data in the same row order (a duplicate names its rows), and a bad row
    in the last stretch still goes to the careful path."""
    from hierdp_core.data import arrow_text

    monkeypatch.setattr(arrow_text, "SPLIT_FROM", 1)
    monkeypatch.setattr(declared_rows, "PARTS", parts)
    body = "".join(ROWS.splitlines(keepends=True)[1:]) * 50
    rows = (ROWS.splitlines()[0] + "\n" + body).replace("\n", newline)
    args = _write(tmp_path, rows, GEO, "--count-column", "n", "--duplicates", "sum")
    src = resolve_source(_input(args), None, 10**9)
    assert len(arrow_text.text_string_parts(src, ["tract"], None, parts)) == parts
    assert declared_count_input(*args, _input(args)) is not None
    assert _release_input(args) == _careful(args)
    args = _write(tmp_path, rows, GEO, "--count-column", "n", "--duplicates", "error")
    refused = _release_input(args)
    assert refused == _careful(args) and refused[0] == "DuplicateRowsError"
    args = _write(tmp_path, rows + "06,06059,06037000100,F,3" + newline, GEO,
                  "--count-column", "n", "--duplicates", "sum")
    assert declared_count_input(*args, _input(args)) is None
    assert _release_input(args) == _careful(args)


@pytest.mark.parametrize("header, data_quote, split", [
    ('"state","county","tract","sex","n"', False, True),  # as pyarrow and R write it
    ("state,county,tract,sex,n", True, False),  # a quote in a row: a value may hold a break
])
def test_a_quoted_header_alone_does_not_stop_the_parts(tmp_path, monkeypatch, header,
                                                        data_quote, split):
    """A quoted header holds no line break, so the rows below may still be cut at any line
    break and parsed on several threads; a quote in a row may not be."""
    from hierdp_core.data import arrow_text

    monkeypatch.setattr(arrow_text, "SPLIT_FROM", 1)
    body = "".join(ROWS.splitlines(keepends=True)[1:]) * 50
    if data_quote:
        body = body.replace("06,06059,06059000100,F,0", '06,06059,"06059000100",F,0')
    args = _write(tmp_path, header + "\n" + body, GEO, "--count-column", "n", "--duplicates",
                  "sum")
    src = resolve_source(_input(args), None, 10**9)
    assert len(arrow_text.text_string_parts(src, ["tract"], None, 2)) == (2 if split else 1)
    assert _release_input(args) == _careful(args)


_COUNT_TEXT = st.text(alphabet="0123456789 +-./:a\u0663", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(_COUNT_TEXT, min_size=1, max_size=30), st.integers(0, 3))
def test_counts_are_read_only_when_canonical(texts, skip):
    """Any count texts (and a slice of them, as a batch of a file is): their integers when
    every one is canonical (ASCII digits, no leading zero, at most 18), else None, on the
    one-digit fast path and the general one alike."""
    column = pa.array(["7"] * skip + texts, pa.string()).slice(skip)
    canonical = all(re.fullmatch(r"0|[1-9][0-9]{0,17}", t) for t in texts)
    got = declared_rows._counts(column)
    assert (got.tolist() if got is not None else None) == (
        [int(t) for t in texts] if canonical else None)


def test_more_cells_than_the_limit_go_to_the_careful_path(tmp_path):
    """The declared reader sums into one array of every cell: a release over more cells
    than --max-cells is not read by it, and the careful path refuses it in its own words."""
    args = _write(tmp_path, ROWS, GEO, "--count-column", "n", "--duplicates", "sum",
                  "--max-cells", "7")  # 4 tracts x 2 values
    assert declared_count_input(*args, _input(args)) is None
    refused = _release_input(args)
    assert refused == _careful(args) and refused[0] == "SizeLimitError"
    args = _write(tmp_path, ROWS, GEO, "--count-column", "n", "--duplicates", "sum",
                  "--max-cells", "8")
    assert declared_count_input(*args, _input(args)) is not None
