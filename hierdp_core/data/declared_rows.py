"""The rows of a large delimited text file placed straight in a declared structure: each
row's leaf, category cell and count, with no pandas table of the rows.

`place_rows` reads the level, category and count columns with pyarrow as plain strings, block
by block (a large file in two stretches of whole lines, each on its own thread), and matches
each block against the declared codes and values with pyarrow and numpy kernels: the finest
level's codes give the leaf, each coarser level's code must be the leaf's ancestor's, each
category value a declared one, each count a canonical non-negative integer. A column whose
texts in the block are all of one byte length (GEOID-like codes) is matched by its bytes
(`hierdp_core.data.fixed_width`: the leaf from a table of the codes' bytes, a coarser code
compared with the bytes of the leaf's ancestor's); any other by a hash lookup per row
(`pc.index_in`, or for many digit codes their integer value and length), a coarser code
then looked up and its position compared with the leaf's ancestor's. Each block's counts
are then summed by cell (leaf and category) on its thread, in int64 (`np.add.at`), so no
array of every row's leaf, cell or count is made, nor summed after the reading. It gives
the same sums by cell as the careful path (`hierdp_core.data.loaders.read_table`, its type
rule, then `hierdp_core.structure.Geography.leaf_of_rows` and `category_index`) or None,
and then the careful path reads the file and says what is wrong: a missing cell, a code
outside the geography or under another parent, an undeclared value, a count that is not a
plain integer, an undecodable byte, a ragged row.

Why the results agree: the careful path types a column by its distinct values, strips
them, and turns an all-numeric column into numbers. A declared code is used here only when
that cannot change it (`_usable`): digits alone (up to 17: an integer column prints them
back unchanged, and one with a leading zero stays text), or text that is no number and no
NA token, with nothing to strip. A row is placed only when its text equals such a code, so
the careful path would read the same code for it. Matched by bytes or by hash, a text is
taken for a code exactly when it equals it (the bytes path compares all of them and the
length), and a coarser text is accepted exactly when it is the leaf's ancestor's code (the
codes of a level are distinct, so equal positions and equal texts are one thing): the
result does not depend on which path a block takes.

Example
-------
>>> import io
>>> import pandas as pd
>>> from hierdp_core.data.sources import resolve_source
>>> from hierdp_core.structure import geography_from_table
>>> geo = geography_from_table(pd.DataFrame({"state": ["06", "06", "41"],
...                                          "county": ["06037", "06059", "41051"]}),
...                            ["state", "county"])
>>> csv = b"state,county,sex,n\\n06,06059,F,3\\n41,41051,M,2\\n06,06059,F,1\\n"
>>> rows = place_rows(resolve_source(io.BytesIO(csv), "t.csv", 10**6), ["state", "county"], "n",
...                   {"sex": ["F", "M"]}, geo)
>>> rows.sums.reshape(3, 2).tolist(), rows.distinct, rows.rows, rows.total, rows.present["county"]
([[0, 0], [4, 0], [0, 2]], 2, 3, 6, ['06059', '41051'])
>>> place_rows(resolve_source(io.BytesIO(csv.replace(b"06,06059,F,3", b"06,41051,F,3")),
...                           "t.csv", 10**6),
...            ["state", "county"], "n", {"sex": ["F", "M"]}, geo) is None  # not nested
True
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hierdp_core.data.fixed_width import AncestorCodes, CodeTable
from hierdp_core.data.integers import exact_total
from hierdp_core.data.prefetch import PARTS, declared_columns, read_parts
from hierdp_core.data.validate import NA_TOKENS

__all__ = ["PlacedRows", "place_rows"]

#: above this many codes a level of digit codes is matched by integer keys (value, length):
#: pyarrow's hash of 80,000 strings cost about 200 ns a row here, the integer keys 80
DIGIT_KEYS_FROM = 10_000


class PlacedRows(NamedTuple):
    """The rows placed, summed by cell (index leaf x k + category cell, k the product of the
    declared values' numbers, first column slowest): ``sums`` their counts (int64; rows,
    without a count column), exact when ``total`` is below 2^63; ``distinct`` the cells
    some row holds, ``rows`` the rows, ``total`` the exact sum of the counts (a Python
    int); ``cells`` every row's cell, in the file's order, block by block (for an error
    naming repeated rows); per level column, the codes some row holds (sorted)."""

    sums: np.ndarray
    distinct: int
    rows: int
    total: int
    cells: list[np.ndarray]
    present: dict[str, list[str]]


def place_rows(src, levels: Sequence[str], count_column: str | None,
               declared: Mapping[str, Sequence[str]], geography,
               encoding: str | None = None) -> PlacedRows | None:
    """The rows of the delimited text file ``src`` (a `hierdp_core.data.sources.Source`)
    placed in ``geography`` (whose levels are the columns ``levels``) and the product of the
    ``declared`` values of the category columns, or None when the careful path must read
    it (see the module doc)."""
    h = geography.hierarchy
    codes = [np.asarray(h.codes[lv]).astype(str) for lv in range(1, h.n_levels)]
    values = {c: np.asarray([str(v).strip() for v in vs]).astype(str)
              for c, vs in declared.items()}
    if len(levels) != len(codes) or not all(map(_usable, [*codes, *values.values()])):
        return None
    columns = declared_columns(levels, list(declared), count_column)
    ancestors = _ancestors(h)
    try:
        parts = read_parts(src, columns, encoding, PARTS)  # read ahead, or now
        tally = None if parts is None else _place(parts, ancestors, levels, count_column,
                                                  codes, values, h.n_leaves)
    except (pa.ArrowException, OSError, UnicodeError, ValueError):
        return None  # a malformed or undecodable file: the careful reader says where
    if tally is None:
        return None
    seen = _present_nodes(h, ancestors, tally.seen.reshape(h.n_leaves, -1).any(axis=1))
    present = {c: codes[i][seen[i]].tolist() for i, c in enumerate(levels)}
    return PlacedRows(tally.sums, int(np.count_nonzero(tally.seen)), tally.rows, tally.total,
                      tally.cells, present)


class _Tally:
    """Rows summed by cell as their blocks are placed (see `PlacedRows`), and whether a row
    lies in each cell."""

    def __init__(self, n_cells: int):
        self.sums = np.zeros(n_cells, dtype=np.int64)
        self.seen = np.zeros(n_cells, dtype=bool)
        self.rows = self.total = 0
        self.cells: list[np.ndarray] = []

    def add(self, cells: np.ndarray, counts: np.ndarray | None) -> None:
        np.add.at(self.sums, cells, 1 if counts is None else counts)
        self.seen[cells] = True
        self.rows += cells.size
        self.total += cells.size if counts is None else exact_total(counts)
        self.cells.append(cells)

    def absorb(self, other: _Tally) -> _Tally:
        """This tally with ``other``'s rows, which come after its own, added."""
        self.sums += other.sums
        self.seen |= other.seen
        self.rows += other.rows
        self.total += other.total
        self.cells += other.cells
        return self


def _place(parts: list, ancestors, levels, count_column, codes, values,
           n_leaves: int) -> _Tally | None:
    """The rows summed by cell (`_Tally`), or None when a row is not plain (see
    `place_rows`; ``ancestors``: `_ancestors` of the geography) or the file holds no
    block. Each part of the file (`hierdp_core.data.arrow_text.text_string_parts`) is read,
    placed and summed on its own thread (pyarrow and numpy let go of the GIL); a single part
    is read one block ahead on a thread while a block is placed."""
    lookups = [_Lookup(k) for k in [*codes, *values.values()]]
    coarser = [AncestorCodes(k, up) for k, up in zip(codes, ancestors, strict=False)]
    sizes = [v.size for v in values.values()]
    n_cells = n_leaves * math.prod(sizes)
    cell_type = np.int32 if n_cells < 2**31 else np.int64

    def place(batch) -> tuple | None:
        if any(column.null_count for column in batch.columns):
            return None  # a missing cell
        at = [lookup(batch.column(c)) for lookup, c in zip(lookups[len(levels) - 1:],
                                                           levels[-1:] + [*values],
                                                           strict=True)]
        counts = _counts(batch.column(count_column)) if count_column else None
        if any(a is None for a in at) or (count_column and counts is None):
            return None
        leaf = at[0]
        for level, check in enumerate(coarser):  # each coarser code the leaf's ancestor's
            column = batch.column(levels[level])
            same = check(column, leaf)
            if same is None:  # texts of several lengths: looked up, positions compared
                found = lookups[level](column)
                same = found is not None and np.array_equal(ancestors[level][leaf], found)
            if not same:
                return None
        cell = leaf.astype(cell_type)
        for size, index in zip(sizes, at[1:], strict=True):
            cell = cell * size + index
        return cell, counts

    def tally(placed: Iterable[tuple | None]) -> _Tally | None:
        out = _Tally(n_cells)
        for block in placed:
            if block is None:
                return None
            out.add(*block)
        return out

    with ThreadPoolExecutor(max(len(parts), 2)) as pool:
        if len(parts) == 1:
            tallies = [tally(_read_ahead(pool, parts[0], place))]
        else:
            tallies = list(pool.map(lambda part: tally(map(place, part)), parts))
    if any(t is None for t in tallies) or not any(t.cells for t in tallies):
        return None
    first, *others = tallies
    for other in others:
        first.absorb(other)
    return first


def _present_nodes(h, ancestors: list[np.ndarray], leaves: np.ndarray) -> list[np.ndarray]:
    """For each geography level below the root, coarse to fine, whether a row lies under
    each of its nodes: the ``leaves`` some row holds (flags) and their ancestors
    (``ancestors``: `_ancestors`; a row's coarser codes are its leaf's ancestors', `_place`
    checked)."""
    out = []
    for level, up in enumerate(ancestors, start=1):
        flags = np.zeros(h.level_size(level), dtype=bool)
        flags[up[leaves]] = True
        out.append(flags)
    return [*out, leaves]


def _read_ahead(pool, batches, place):
    """``place`` of each batch, the next batch read on ``pool`` meanwhile; stops after the
    first None."""
    ahead = pool.submit(next, batches, None)
    while (batch := ahead.result()) is not None:
        ahead = pool.submit(next, batches, None)
        placed = place(batch)
        yield placed
        if placed is None:
            return


def _ancestors(h) -> list[np.ndarray]:
    """For each geography level above the leaves, coarse to fine, the node within that
    level of every leaf's ancestor."""
    node = np.arange(h.level_offsets[h.depth], h.level_offsets[h.depth + 1])
    out = []
    for level in range(h.depth - 1, 0, -1):
        node = h.parent[node]
        out.append((node - h.level_offsets[level]).astype(np.int32))
    return out[::-1]


def _usable(codes: np.ndarray) -> bool:
    """Whether none of the codes repeats and every one is plain: the careful path reads a
    cell holding exactly the code as the code. Digits alone (at most 17) are; other text
    is when it is no number to pandas (the type rule's ``pd.to_numeric``), no NA token and
    has nothing to strip."""
    if codes.size == 0:
        return False
    text = pa.array(codes, pa.string())
    if pc.count_distinct(text).as_py() != codes.size:  # a hash: sorting 80,000 took 60 ms
        return False
    digits = pc.and_(pc.ascii_is_decimal(text), pc.less_equal(pc.binary_length(text), 17))
    other = codes[~digits.to_numpy(zero_copy_only=False)]
    if other.size == 0:
        return True
    numbers = pd.to_numeric(pd.Series(other, dtype=object), errors="coerce")
    return bool(numbers.isna().all() and (other != "").all()
                and (np.char.strip(other) == other).all()
                and not np.isin(other, list(NA_TOKENS)).any())


def _digit_codes(codes: np.ndarray) -> bool:
    """Whether every code is 1-17 ASCII digits."""
    text = pa.array(codes, pa.string())
    return bool(pc.all(pc.ascii_is_decimal(text)).as_py()
                and pc.max(pc.binary_length(text)).as_py() <= 17)


class _Lookup:
    """The position in ``codes`` of every row's text (None when one is not there): for
    codes of one byte each (``F``/``M``) from a table of the bytes when every row's text
    is one byte too (pyarrow's hash took 15-20 ns a row there, the table about 2); else,
    when every row's text is of one length, by its bytes (`CodeTable`); else by pyarrow's
    hash of the codes, or for many digit codes by their integer keys."""

    def __init__(self, codes: np.ndarray):
        self.codes = codes
        encoded = [code.encode() for code in codes.tolist()] if codes.size <= 256 else []
        self.bytes = None
        if encoded and all(len(code) == 1 for code in encoded):
            self.bytes = np.full(256, -1, dtype=np.int32)
            self.bytes[[code[0] for code in encoded]] = np.arange(codes.size)
        self.fixed = CodeTable(codes)
        self.lock = threading.Lock()
        self.table = None

    def __call__(self, column: pa.Array) -> np.ndarray | None:
        one = _one_byte_texts(column) if self.bytes is not None else None
        at = self.bytes[one] if one is not None else self.fixed(column)
        if at is None:
            at = self._general(column)
        return None if at is None or (at.size and at.min() < 0) else at.astype(np.int32,
                                                                                copy=False)

    def _general(self, column: pa.Array) -> np.ndarray | None:
        """The positions by integer keys or pyarrow's hash, -1 (or None) where a text is
        none of the codes."""
        table = self._table()
        if isinstance(table, pd.Index):
            keys = _digit_keys(column)
            return None if keys is None else table.get_indexer(keys)
        found = pc.index_in(column, value_set=table)
        return None if found.null_count else found.to_numpy()

    def _table(self) -> pd.Index | pa.Array:
        """The integer keys of many digit codes in pandas' hash, else the codes for
        pyarrow's: made, whole, by the first block that needs them (0.07 CPU-s for the
        80,000 tracts, which their bytes match), which the threads then share."""
        with self.lock:
            if self.table is None:
                codes = self.codes
                if codes.size >= DIGIT_KEYS_FROM and _digit_codes(codes):
                    self.table = pd.Index(codes.astype(np.int64) * 32 + np.char.str_len(codes))
                    self.table.get_indexer(np.array([1, 0], dtype=np.int64))  # its hash
                else:
                    self.table = pa.array(codes, pa.string())
            return self.table


def _digit_keys(column: pa.Array) -> np.ndarray | None:
    """value * 32 + length of every row's text when each is 1-17 ASCII digits (the pair
    tells digit strings apart, leading zeros included), else None."""
    if not pc.all(pc.ascii_is_decimal(column)).as_py():
        return None
    length = pc.binary_length(column).to_numpy().astype(np.int64)
    if length.size and length.max() > 17:
        return None
    return pc.cast(column, pa.int64()).to_numpy() * 32 + length


def _counts(column: pa.Array) -> np.ndarray | None:
    """The counts as int64 when every cell is a canonical non-negative integer (digits,
    no leading zero, at most 18), which the careful path reads as the same integer; else
    None."""
    single = _single_digits(column)
    if single is not None:
        return single
    if not pc.all(pc.ascii_is_decimal(column)).as_py():
        return None
    length = pc.binary_length(column)
    if pc.max(length).as_py() > 18 or pc.any(pc.and_(pc.starts_with(column, "0"),
                                                     pc.greater(length, 1))).as_py():
        return None
    return pc.cast(column, pa.int64()).to_numpy()


def _single_digits(column: pa.Array) -> np.ndarray | None:
    """The counts as int64 when every cell is one ASCII digit, read from the text's bytes
    (about 50 times faster than parsing it), else None."""
    one = _one_byte_texts(column)
    if one is None:
        return None
    digits = one - np.uint8(48)
    return digits.astype(np.int64) if (digits <= 9).all() else None


def _one_byte_texts(column: pa.Array) -> np.ndarray | None:
    """The bytes (uint8) of a string column whose every text is one byte, else None."""
    if column.type != pa.string() or not len(column):
        return None
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32, count=len(column) + 1,
                            offset=column.offset * 4)
    if not (np.diff(offsets) == 1).all():
        return None
    return np.frombuffer(column.buffers()[2], dtype=np.uint8, count=len(column),
                         offset=int(offsets[0]))
