"""Texts of one byte length matched by their bytes (`hierdp_core.data.fixed_width`, issue 28
point 5): the declared reader places any batches exactly as its general path does (pyarrow's
hash or integer keys, then positions compared with the leaf's ancestors'), refusals
included, and takes the bytes path for codes of one width."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.data import declared_rows
from hierdp_core.data.fixed_width import AncestorCodes, CodeTable
from hierdp_core.data.sources import resolve_source
from hierdp_core.structure import geography_from_table

LEVELS = ["state", "county", "tract"]
VALUES = {"sex": np.array(["F", "M"]), "age": np.array(["0-17", "18-64", "65+"])}
#: what a row's code may become: a text the careful path reads otherwise
_EDITS = [
    lambda c: " " + c, lambda c: c + " ", lambda c: "", lambda c: c[1:] or "0",
    lambda c: "0" + c, lambda c: c[:-1] + "\u0663", lambda c: c[:-1] + "x",
    lambda c: c.lstrip("0") or "0", lambda c: c + "\x00"]
_ODD_VALUES = ["F", "M", "0-17", "18-64", "65+", "", "X", " F", "65", "0-170", "18-6",
               "\u00e9"]


@st.composite
def _placements(draw):
    """(a geography of states, counties and tracts with digit codes of one width per level
    (as GEOIDs) or of several, its codes, the rows' batches of pyarrow strings, some sliced
    out of longer ones)."""
    one_width = draw(st.booleans())

    def digits(most: int):
        return st.lists(st.text("0123456789", min_size=most if one_width else 1,
                                max_size=most), min_size=1, max_size=3, unique=True)

    tree = []
    for state in draw(digits(2)):
        for county in draw(digits(3)):
            for tract in draw(digits(6 if draw(st.booleans()) else 9)):
                tree.append((state, state + county, state + county + tract))
    table = pd.DataFrame(tree, columns=LEVELS)
    for code, parent in [("county", "state"), ("tract", "county")]:  # '1'+'23' is '12'+'3'
        table = table[table[parent] == table.groupby(code)[parent].transform("first")]
    geo = geography_from_table(table.astype(str), LEVELS)
    h = geo.hierarchy
    codes = [np.asarray(h.codes[lv]).astype(str) for lv in range(1, h.n_levels)]
    n = draw(st.integers(1, 40))
    leaf = draw(st.lists(st.integers(0, len(table) - 1), min_size=n, max_size=n))
    odd_codes, odd_values, odd_counts, missing = (
        draw(st.integers(0, k)) == 0 for k in (1, 4, 4, 6))  # each kind of odd row, or none
    bent = draw(st.sampled_from(LEVELS))  # the level whose codes may be odd, and how
    edit = draw(st.one_of(st.none(), st.sampled_from(_EDITS)))  # None: another node's code
    columns = {c: [] for c in [*LEVELS, *VALUES, "n"]}
    for i, at in enumerate(leaf):
        for c in LEVELS:
            code = table[c].iloc[at]
            if odd_codes and c == bent and draw(st.integers(0, 3)) == 0:
                code = draw(st.sampled_from(table[c].tolist())) if edit is None \
                    else edit(code)
            columns[c].append(code)
        for c, values in VALUES.items():
            plain = values[draw(st.integers(0, len(values) - 1))]
            columns[c].append(draw(st.sampled_from(_ODD_VALUES)) if odd_values and i % 5 == 0
                              else plain)
        columns["n"].append(draw(st.sampled_from(["1", "3", "0"] if not odd_counts
                                                 else ["1", "07", "2"])))
    if missing:
        columns["tract"][draw(st.integers(0, n - 1))] = None  # a missing cell
    cuts = sorted(draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=3)))
    batches = []
    for start, stop in zip([0, *cuts], [*cuts, n], strict=True):
        if start < stop:
            skip = draw(st.integers(0, 2))
            batch = pa.record_batch({c: pa.array(["9" * 20] * skip + v[start:stop],
                                                 pa.string()) for c, v in columns.items()})
            batches.append(batch.slice(skip))
    return geo, codes, batches


def _placed(geo, codes, batches):
    """What `_place` makes of the batches: its sums, seen, rows, total and cells, or None."""
    h = geo.hierarchy
    tally = declared_rows._place([iter(batches)], declared_rows._ancestors(h), LEVELS, "n",
                                 codes, VALUES, h.n_leaves)
    if tally is None:
        return None
    return (tally.sums.tolist(), tally.seen.tolist(), tally.rows, tally.total,
            np.concatenate(tally.cells).tolist())


@settings(max_examples=300, deadline=None)
@given(_placements(), st.booleans())
def test_the_bytes_path_places_rows_as_the_general_path(placement, digit_keys):
    """Any batches, plain or not, of one width or several within and across batches: the
    same sums, cells and totals, or None, with and without the bytes path (the general
    one by pyarrow's hash or by integer keys)."""
    with mock.patch.object(declared_rows, "DIGIT_KEYS_FROM", 1 if digit_keys else 10**9):
        fast = _placed(*placement)
        with mock.patch.object(CodeTable, "__call__", lambda self, column: None), \
                mock.patch.object(AncestorCodes, "__call__", lambda self, column, leaf: None):
            general = _placed(*placement)
    assert fast == general


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text("0123456789ab\u0663 ", min_size=1, max_size=17), min_size=1,
                max_size=60, unique=True),
       st.lists(st.integers(0, 80), min_size=1, max_size=40), st.integers(0, 3))
def test_code_table_finds_exactly_the_codes(codes, picks, skip):
    """Each text of one length found at its code's position, -1 where it is none (texts
    of 1-17 bytes, a slice of a longer column); None for texts of several lengths."""
    codes = np.array(codes)
    texts = [codes[p] if p < codes.size else str(p) * 3 for p in picks]
    column = pa.array(["x" * 5] * skip + texts, pa.string()).slice(skip)
    got = CodeTable(codes)(column)
    lengths = {len(t.encode()) for t in texts}
    if len(lengths) > 1 or max(lengths) > 16:
        assert got is None
    else:
        where = {c: i for i, c in enumerate(codes.tolist())}
        assert got.tolist() == [where.get(t, -1) for t in texts]


def test_codes_of_one_width_take_the_bytes_path(tmp_path):
    """GEOID-like codes (2, 5 and 11 digits): the tract found by its bytes, the state and
    county compared with the tract's ancestors', never looked up by hash or integer keys."""
    geo = geography_from_table(pd.DataFrame(
        {"state": ["06", "06", "41"], "county": ["06037", "06059", "41051"],
         "tract": ["06037000100", "06059000100", "41051000100"]}), LEVELS)
    csv = (b"state,county,tract,sex,n\n06,06059,06059000100,F,3\n41,41051,41051000100,M,2\n"
           b"06,06037,06037000100,F,1\n")
    looked_up = []
    lookup = declared_rows._Lookup.__call__

    def spy(self, column):
        looked_up.append(len(column))
        return lookup(self, column)

    with mock.patch.object(declared_rows._Lookup, "_general", side_effect=AssertionError), \
            mock.patch.object(declared_rows._Lookup, "__call__", spy):
        rows = declared_rows.place_rows(resolve_source(_file(tmp_path, csv), None, 10**6),
                                        LEVELS, "n", {"sex": ["F", "M"]}, geo)
    assert rows is not None and rows.total == 6 and looked_up == [3, 3]  # tract and sex
    assert rows.sums.reshape(3, 2).tolist() == [[1, 0], [3, 0], [0, 2]]


def _file(tmp_path, data: bytes):
    path = tmp_path / "rows.csv"
    path.write_bytes(data)
    return path


def test_a_nul_byte_does_not_make_a_code():
    """Words are zero-padded: a text with a trailing NUL byte, of another length, is not
    the code, nor is a code's prefix."""
    leaf = np.array([0, 0])
    for codes in (np.array(["06"]), np.array(["06", "123"])):
        check = AncestorCodes(codes, np.arange(codes.size))  # leaf i under code i
        assert check(pa.array(["06\x00", "06\x00"]), leaf) is False
        assert check(pa.array(["0", "0"]), leaf) is False
        assert check(pa.array(["06", "06"]), leaf) is True
        assert CodeTable(codes)(pa.array(["06\x00"])).tolist() == [-1]
