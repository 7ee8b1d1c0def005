"""Texts of one byte length matched by their bytes, for `hierdp_core.data.declared_rows`.

When every text of a pyarrow string column has the same byte length L (1 to `MAX_BYTES`),
its data buffer is an (n, L) array of bytes; zero-padded to whole 8-byte words it gives
each row ceil(L / 8) uint64 words (`row_words`). Two texts of length L are equal exactly
when their words are, whatever their bytes (digits, letters, bytes that are no UTF-8).

- `CodeTable(codes)` finds each row's text among ``codes`` (distinct str) by its words, in
  an open-addressing table per length built once (a multiplicative hash, linear probing,
  at most a quarter full): about 20 ns a row for 80,000 tract codes, where their integer
  keys in pandas' hash took 33.
- `AncestorCodes(codes, node)` says whether each row's text is the code of ``node[leaf]``
  for the row's ``leaf``: one gather and one comparison of words per row, instead of
  looking the code up and comparing positions.

Both answer None when the column is not of one length within bounds (or is empty): the
caller then uses its general path, so the results never depend on which path is taken.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["MAX_BYTES", "AncestorCodes", "CodeTable", "row_words"]

#: the longest texts matched by their words (two words)
MAX_BYTES = 16
_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F], dtype=np.uint64)


def row_words(column: pa.Array) -> tuple[int, list[np.ndarray]] | None:
    """(L, the texts' bytes as ceil(L / 8) uint64 arrays of words, zero-padded) when every
    text of the string ``column`` is L bytes long, 1 <= L <= `MAX_BYTES`; else None."""
    if column.type != pa.string() or not len(column):
        return None
    n = len(column)
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32, count=n + 1,
                            offset=column.offset * 4)
    width = int(offsets[1] - offsets[0])
    if not 1 <= width <= MAX_BYTES or offsets[n] - offsets[0] != n * width \
            or not (np.diff(offsets) == width).all():
        return None
    data, start = column.buffers()[2], int(offsets[0])
    if data.size - start < n * width + 8:  # room to read 8 bytes at the last row's start
        data = np.concatenate([np.frombuffer(data, dtype=np.uint8, count=n * width,
                                             offset=start), np.zeros(8, np.uint8)])
        start = 0
    words = []
    for first in range(0, width, 8):  # one or two words of each row, read in place
        word = np.ndarray((n,), dtype="<u8", buffer=data, offset=start + first,
                          strides=(width,))
        tail = width - first
        words.append(word & np.uint64((1 << 8 * tail) - 1) if tail < 8 else word.copy())
    return width, words


def _code_words(codes: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """(byte length, two arrays of zero-padded words) of each code; a code longer than
    `MAX_BYTES` gets length 0, which no row's width equals."""
    text = pa.array(codes, pa.string())
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32, count=len(text) + 1)
    lengths = np.diff(offsets)
    data = np.frombuffer(text.buffers()[2], dtype=np.uint8, count=int(offsets[-1]))
    at = offsets[:-1, None] + np.arange(MAX_BYTES)
    inside = np.arange(MAX_BYTES) < lengths[:, None]
    padded = np.where(inside, data[np.where(inside, at, 0)] if data.size else 0, 0)
    lengths = np.where(lengths <= MAX_BYTES, lengths, 0)
    words = np.ascontiguousarray(padded, dtype=np.uint8).view("<u8")  # as `row_words`
    return lengths, [words[:, 0].copy(), words[:, 1].copy()]


def _slots(words: list[np.ndarray], bits: int) -> np.ndarray:
    """The home slot (of 2^bits) of each row's words."""
    mixed = words[0] * _MULT[0]
    if len(words) > 1:
        mixed ^= words[1] * _MULT[1]
    return (mixed >> np.uint64(64 - bits)).astype(np.int64)


class _Table:
    """The positions of codes of one length, by their words (linear probing)."""

    def __init__(self, words: list[np.ndarray], positions: np.ndarray):
        self.bits = max(int(np.ceil(np.log2(4 * len(positions)))), 4)
        size = 1 << self.bits
        self.words = [np.zeros(size, dtype=np.uint64) for _ in words]
        self.at = np.full(size, -1, dtype=np.int32)
        home = _slots(words, self.bits)
        waiting = np.arange(len(positions))
        step = 0
        while waiting.size:  # one round per probe step, every waiting code at once
            slot = (home[waiting] + step) & (size - 1)
            free = self.at[slot] < 0
            taken, first = np.unique(slot[free], return_index=True)
            placed = waiting[np.flatnonzero(free)[first]]
            for mine, theirs in zip(self.words, words, strict=True):
                mine[taken] = theirs[placed]
            self.at[taken] = positions[placed]
            waiting = np.setdiff1d(waiting, placed, assume_unique=True)
            step += 1

    def _same(self, slot: np.ndarray, words: list[np.ndarray]) -> np.ndarray:
        same = self.words[0][slot] == words[0]
        if len(words) > 1:
            same &= self.words[1][slot] == words[1]
        return same

    def find(self, words: list[np.ndarray]) -> np.ndarray:
        """Each row's code position, -1 where its words are no code's."""
        slot = _slots(words, self.bits)
        found = self.at[slot]
        rows = np.flatnonzero((found >= 0) & ~self._same(slot, words))
        found[rows] = -1
        slot = slot[rows]
        while rows.size:  # rows whose slot holds another code: the next slot
            slot = (slot + 1) & (len(self.at) - 1)
            at = self.at[slot]
            hit = (at >= 0) & self._same(slot, [w[rows] for w in words])
            found[rows[hit]] = at[hit]
            going = (at >= 0) & ~hit
            rows, slot = rows[going], slot[going]
        return found


class CodeTable:
    """Each row's position in ``codes`` (distinct texts) by the words of the texts, when
    they are of one length (`row_words`): an int32 array, -1 where a text is none of the
    codes; None when the column is not of one length within bounds."""

    def __init__(self, codes: np.ndarray):
        lengths, words = _code_words(codes)
        self.tables = {}
        for length in np.unique(lengths[lengths > 0]).tolist():  # a few lengths at most
            mine = np.flatnonzero(lengths == length)
            self.tables[length] = _Table([w[mine] for w in words[:-(-length // 8)]],
                                         mine.astype(np.int32))

    def __call__(self, column: pa.Array) -> np.ndarray | None:
        rows = row_words(column)
        if rows is None:
            return None
        width, words = rows
        table = self.tables.get(width)
        return np.full(len(words[0]), -1, np.int32) if table is None else table.find(words)


class AncestorCodes:
    """Whether each row's text is the code (in ``codes``) of node ``node[leaf]`` of the
    row's leaf: True when every row's is, False when one's is not, None when the column is
    not of one length within bounds."""

    def __init__(self, codes: np.ndarray, node: np.ndarray):
        lengths, words = _code_words(codes)
        self.lengths = lengths[node]
        self.words = [w[node] for w in words]
        self.one_length = not node.size or bool((self.lengths == self.lengths[0]).all())

    def __call__(self, column: pa.Array, leaf: np.ndarray) -> bool | None:
        rows = row_words(column)
        if rows is None:
            return None
        width, words = rows
        if self.one_length:
            if not self.lengths.size or self.lengths[0] != width:
                return False
        elif not (self.lengths[leaf] == width).all():
            return False
        return all(np.array_equal(mine[leaf], theirs)
                   for mine, theirs in zip(self.words, words, strict=False))
