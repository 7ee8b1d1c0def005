"""Many short segments of a flat array, sorted at once as the rows of padded 2-D blocks.

A segmentation is given by ``starts`` (see `hierdp_core.consistency.segments`). Segments of
similar length are laid out as the rows of one block (`row_width`; numpy sorts a block row
by row), and blocks are cut to about `BLOCK_CELLS` cells so that
they stay in cache. Sorting every segment this way costs O(m log L) for m elements in
segments of length L, against O(m log m) for one sort of the whole array, and needs no
ordering of the elements by segment: the levels of a tree are already in that order.

What a row holds depends on its own segment only, so a computation made row by row gives
the same result for a segment whether the rest of the array is there or not (e.g. one
sub-tree processed alone).

Example
-------
>>> values = np.array([3.0, 1.0, 2.0, 7.0, 5.0])
>>> [b.rows(values, np.inf).tolist() for b in row_blocks(np.array([0, 3]), 5)]
[[[3.0, 1.0, 2.0], [7.0, 5.0, inf]]]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

BLOCK_CELLS = 1 << 17  # cells (rows x width) per block: a few arrays of it fit in L2 cache
#: the fewest segments of one width laid out as `ColumnBlock` s (the work per column block
#: does not grow with its number of segments until a few hundred)
COLUMN_MIN_SEGMENTS = 256
#: segments of one width that fit in this many cells at the next width are laid out at it
#: (a block costs some fixed work; small levels would otherwise be a dozen small blocks)
MERGED_CELLS = 4096


@dataclass(frozen=True)
class RowBlock:
    """Some segments of one width as the rows of a (rows, width) block.

    ``segments``: their indices; ``lengths``: their lengths; ``index``: the
    element of every cell (cells past a segment's end repeat an element); ``padding``: True
    on those cells, so each row holds its segment's elements from the left, in array order."""

    segments: np.ndarray
    lengths: np.ndarray
    index: np.ndarray
    padding: np.ndarray
    column_major = False

    def rows(self, values: np.ndarray, pad) -> np.ndarray:
        """``values`` of the block's segments, one segment per row, padded with ``pad``."""
        return self.pad(values[self.index], pad)

    def pad(self, rows: np.ndarray, pad) -> np.ndarray:
        """``rows`` (the block's shape) with its padding cells set to ``pad``, in place."""
        rows[self.padding] = pad
        return rows

    def scatter(self, out: np.ndarray, rows: np.ndarray) -> None:
        """Write the cells of ``rows`` that are not padding back to their elements of
        ``out``."""
        kept = ~self.padding
        out[self.index[kept]] = rows[kept]


@dataclass(frozen=True)
class ColumnBlock(RowBlock):
    """A `RowBlock` stored column-major: ``index`` is the transposed view of a (width,
    rows) array, and so are the blocks `rows` returns. The segments are in decreasing
    length (not in index order), so that the cells of column ``j`` that are not padding
    are its first ``filled[j]``: no mask is needed to pad, gather or scatter."""

    filled: np.ndarray = None
    column_major = True

    def pad(self, rows: np.ndarray, pad) -> np.ndarray:
        for column, n in zip(rows.T, self.filled.tolist(), strict=True):
            column[n:] = pad
        return rows

    def scatter(self, out: np.ndarray, rows: np.ndarray) -> None:
        for index, column, n in zip(self.index.T, rows.T, self.filled.tolist(), strict=True):
            out[index[:n]] = column[:n]


def segment_lengths(starts: np.ndarray, size: int) -> np.ndarray:
    """Length of every segment (int64)."""
    return np.diff(np.append(starts, size)).astype(np.int64)


def row_width(lengths: np.ndarray) -> np.ndarray:
    """The row width of segments of these lengths: the least of 2^k and 3 * 2^(k-1) that
    holds them (1, 2, 3, 4, 6, 8, 12, ...), so rows are at most a third padding."""
    power = np.left_shift(1, np.frexp(lengths - 1)[1])  # 2^ceil(log2 L); 1 for L = 1
    three_quarters = power // 4 * 3
    return np.where((lengths <= three_quarters) & (three_quarters > 2), three_quarters, power)


def row_blocks(starts: np.ndarray, size: int, block_cells: int = BLOCK_CELLS,
               only: np.ndarray | None = None, column_major_up_to: int = 0
               ) -> Iterator[RowBlock]:
    """The segments of an array of ``size`` elements as row blocks, by `row_width`; a block
    has at most ``block_cells`` cells (at least one row); segments of a width that would
    fill at most `MERGED_CELLS` at the next width are laid out at that width. ``only`` (a
    mask over the segments) keeps some of them; the widths at most ``column_major_up_to``
    of at least `COLUMN_MIN_SEGMENTS` segments are cut into `ColumnBlock` s."""
    starts = np.asarray(starts, dtype=np.int64)
    if starts.size == 0:
        return
    lengths = segment_lengths(starts, size)
    chosen = np.arange(starts.size) if only is None else np.flatnonzero(only)
    widths = row_width(lengths[chosen])
    if chosen.size and _one_block(chosen.size, int(widths.max()), block_cells):
        yield _block(chosen, starts, lengths, size, np.arange(widths.max(), dtype=np.int64))
        return
    by_width = np.argsort(_small(widths), kind="stable")
    order, widths = chosen[by_width], widths[by_width]
    if order.size == 0:
        return
    bounds = np.flatnonzero(np.diff(widths)) + 1
    groups, group_widths = np.split(order, bounds), widths[np.r_[0, bounds]].tolist()
    carried = order[:0]
    for at, (group, width) in enumerate(zip(groups, group_widths, strict=True)):
        group = np.concatenate([carried, group])
        if at + 1 < len(groups) and group.size * group_widths[at + 1] <= MERGED_CELLS:
            carried = group
            continue
        carried = order[:0]
        if width <= column_major_up_to and group.size >= COLUMN_MIN_SEGMENTS:
            yield from _column_blocks(group, starts, lengths, size, width, block_cells)
            continue
        columns = np.arange(width, dtype=np.int64)
        per_block = max(1, block_cells // width)
        for first in range(0, group.size, per_block):
            yield _block(group[first:first + per_block], starts, lengths, size, columns)


def _one_block(n_segments: int, width: int, block_cells: int) -> bool:
    """Whether segments this few and narrow end up in one row block at the widest width
    (every width merged into the next, `MERGED_CELLS`; not cut, ``block_cells``; too few
    for column blocks, `COLUMN_MIN_SEGMENTS`): then they are laid out so at once."""
    return (n_segments * width <= min(MERGED_CELLS, block_cells)
            and n_segments < COLUMN_MIN_SEGMENTS)


def _block(segs: np.ndarray, starts: np.ndarray, lengths: np.ndarray, size: int,
           columns: np.ndarray) -> RowBlock:
    """The segments ``segs`` as the rows of one block of ``columns.size`` columns."""
    index = starts[segs, None] + columns
    np.minimum(index, size - 1, out=index)
    seg_lengths = lengths[segs]
    return RowBlock(segs, seg_lengths, index, columns >= seg_lengths[:, None])


def _small(values: np.ndarray) -> np.ndarray:
    """Non-negative integers as int16 when they fit (numpy's stable sort of them is then a
    radix sort)."""
    return values.astype(np.int16) if values.max(initial=0) < 1 << 15 else values


def _column_blocks(group: np.ndarray, starts: np.ndarray, lengths: np.ndarray, size: int,
                   width: int, block_cells: int) -> Iterator[ColumnBlock]:
    """The segments ``group`` (all of row width ``width``) as column blocks."""
    group = group[np.argsort(-_small(lengths[group]), kind="stable")]
    columns = np.arange(width, dtype=np.int64)[:, None]
    per_block = max(1, block_cells // width)
    for first in range(0, group.size, per_block):
        segs = group[first:first + per_block]
        seg_lengths = lengths[segs]
        index = columns + starts[segs]
        np.minimum(index, size - 1, out=index)
        filled = np.searchsorted(-seg_lengths, -columns[:, 0])  # lengths > j, per column j
        yield ColumnBlock(segs, seg_lengths, index.T, None, filled)
