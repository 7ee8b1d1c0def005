"""Batched operations on contiguous segments of a flat array (one segment per parent).

A segmentation is given by ``starts``: increasing offsets with ``starts[0] == 0``; segment
``s`` is ``values[starts[s]:starts[s + 1]]`` (the last runs to the end). Every segment is
non-empty. These are the building blocks of TopDown: for all parents of a level at once,

* `project_segments`: the closest non-negative real vector (weighted L2) with a given sum;
* `round_segments`: the closest integer vector with the same (integer) sum.

Both are exact closed forms computed by sorting each segment on its own (the segments as the
rows of blocks, `hierdp_core.consistency.segment_rows`; narrow ones column-major,
`hierdp_core.consistency.segment_columns`), O(m log L) for m elements in segments of
length L, no solver; a segment's result depends on its own values only.

Example
-------
>>> y = np.array([5.0, -1.0, 2.0, 0.4, 0.4, 0.2])
>>> starts = np.array([0, 3])
>>> x = project_segments(y, starts, np.array([4.0, 1.0]))
>>> x.round(6).tolist()
[3.5, 0.0, 0.5, 0.4, 0.4, 0.2]
>>> round_segments(x, starts, np.array([4, 1])).tolist()
[4, 0, 0, 1, 0, 0]
"""

from __future__ import annotations

import numpy as np

from hierdp_core.consistency.segment_columns import NARROW, nth_smallest, project_columns
from hierdp_core.consistency.segment_rows import RowBlock, row_blocks
from hierdp_core.errors import MechanismError

#: arrays of at most this many elements are ordered by one `numpy.lexsort` (the same order;
#: below it one C call costs less than laying out and sorting the padded blocks, measured
#: ~50x less at a hundred elements, about even near ten thousand)
SMALL_SORT = 4096
#: segmented cumulative sums padded to at most this many cells are computed as one block
SMALL_CUMSUM_CELLS = 4096


def segment_ids(starts: np.ndarray, size: int) -> np.ndarray:
    """Segment index of every element."""
    lengths = np.diff(np.append(starts, size))
    return np.repeat(np.arange(starts.size), lengths)


def segmented_argsort_desc(values: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """The order of ``np.lexsort((-values, seg))`` (by segment, then value descending, ties by
    position; NaN last) for non-decreasing ``seg``, computed faster: each segment sorted
    alone as a row of a padded block (`row_blocks`), no sort of the whole array (arrays of
    at most `SMALL_SORT` elements: that lexsort itself)."""
    values = np.asarray(values)
    m = values.size
    if m <= SMALL_SORT:
        return np.lexsort((-values, seg)).astype(np.int64, copy=False)
    order = np.empty(m, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    # the padding sorts after every value, stably: NaN for floats, the largest integer else
    pad = np.nan if values.dtype.kind == "f" else np.iinfo(values.dtype).max
    negated = -values
    for block in row_blocks(starts, m):
        by_row = np.argsort(block.rows(negated, pad), axis=1, kind="stable")
        block.scatter(order, np.take_along_axis(block.index, by_row, axis=1))
    return order


def segmented_cumsum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at every segment start, each segment summed on its own:
    bit for bit the cumsum of that segment alone, whatever the other segments hold (so a
    subtree released apart gives the whole tree's values). Segments are grouped by length
    (powers of two) and every group summed as the rows of a zero-padded 2-D array (a loop
    over at most 64 length groups; one group when all fit in `SMALL_CUMSUM_CELLS`: a
    row's sums do not depend on its padding)."""
    values = np.asarray(values, dtype=float)
    m = values.size
    lengths = np.diff(np.append(starts, m))
    out = np.empty(m)
    if m and lengths.size * int(lengths.max()) <= SMALL_CUMSUM_CELLS:
        _cumsum_rows(values, starts, lengths, np.arange(lengths.size), out)
        return out
    group = np.frexp(lengths - 1)[1]  # 0 for length 1, then ceil(log2(length))
    for g in np.unique(group):
        _cumsum_rows(values, starts, lengths, np.flatnonzero(group == g), out)
    return out


def _cumsum_rows(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                 segs: np.ndarray, out: np.ndarray) -> None:
    """The cumulative sums of segments ``segs`` as the zero-padded rows of one block."""
    width = int(lengths[segs].max())
    index = starts[segs][:, None] + np.arange(width)
    inside = np.arange(width) < lengths[segs][:, None]
    padded = np.where(inside, values[np.minimum(index, values.size - 1)], 0.0)
    out[index[inside]] = np.cumsum(padded, axis=1)[inside]


def project_segments(
    y: np.ndarray,
    starts: np.ndarray,
    totals: np.ndarray,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """argmin_x sum w_i (x_i - y_i)^2 subject to x >= 0 and each segment summing to its total.

    ``totals`` must be >= 0. The solution is x_i = max(0, y_i - tau_s / w_i) with tau_s found
    per segment from its breakpoints w_i y_i sorted in decreasing order (the weighted simplex
    projection); every segment's sums run over its own sorted values only, and a segment of
    total 0 is all zeros (not computed: most parents of a sparse level).
    """
    y, w, totals = _as_float(y), _weights(weights), _as_float(totals)
    x = np.zeros(y.size)
    for block in row_blocks(starts, y.size, only=totals > 0,
                            column_major_up_to=_narrow(y, w)):
        block.scatter(x, _project_rows(block, y, w, totals[block.segments]))
    return x


def round_segments(x: np.ndarray, starts: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Integer vector closest to ``x >= 0`` (in L1 and L2) whose segments sum to ``totals``.

    Floors every value, then adds one to the largest fractional parts of each segment until
    its total is met. Fractional parts are compared on a grid of 2^-35 (about 2.9e-11):
    closer ones count as ties, broken by position, so the result is closest up to that and
    does not depend on the last bits of ``x``. Requires each segment of ``x`` to sum to its
    integer total up to rounding error; the output is non-negative.
    """
    x, totals = _as_float(x), _as_float(totals)
    out = np.zeros(x.size, dtype=np.int64)
    for block in row_blocks(starts, x.size, only=totals > 0,
                            column_major_up_to=_narrow(x, None)):
        block.scatter(out, _round_rows(block.rows(x, 0.0), block, totals[block.segments]))
    return out


def project_and_round(y: np.ndarray, starts: np.ndarray, totals: np.ndarray,
                      weights: np.ndarray | None = None, out: np.ndarray | None = None
                      ) -> np.ndarray:
    """``round_segments(project_segments(y, starts, totals, weights), starts, totals)`` in
    one pass over the segments (``totals`` non-negative integers), written to ``out`` (an
    int64 array of y's size) when given."""
    y, w, totals = _as_float(y), _weights(weights), _as_float(totals)
    if out is None:
        out = np.zeros(y.size, dtype=np.int64)
    else:
        out.fill(0)
    for block in row_blocks(starts, y.size, only=totals > 0,
                            column_major_up_to=_narrow(y, w)):
        seg_totals = totals[block.segments]
        x = _project_rows(block, y, w, seg_totals)
        block.scatter(out, _round_rows(x, block, seg_totals))
    return out


# ---- one block of segments (one segment per row) ------------------------------------------
_FRAC_SHIFT = 2.0**-20  # fractional parts lie in [-1e-9, 1): shifted above 0 for the keys
_FRAC_BITS = 35  # fractional parts compared on a grid of 2^-35; shifted, they are < 2
_POSITION_BITS = 27  # the position within a segment, the tie break (segments < 2^27 long)
_NO_KEY = np.iinfo(np.uint64).max


def _as_float(values) -> np.ndarray:
    return np.asarray(values, dtype=float).reshape(-1)


def _weights(weights) -> np.ndarray | None:
    return None if weights is None else _as_float(weights)


def _narrow(values: np.ndarray, weights: np.ndarray | None) -> int:
    """The widest blocks laid out column-major: `NARROW` without weights and NaN (a
    sorting network and numpy's sort place NaN differently; checked on the sum, which is
    NaN if any value is, without a temporary as large as ``values``), else none."""
    return 0 if weights is not None or np.isnan(np.add.reduce(values)) else NARROW


def _project_rows(block: RowBlock, y: np.ndarray, w: np.ndarray | None,
                  totals: np.ndarray) -> np.ndarray:
    """The projection of every row's segment (rows padded with 0)."""
    if block.column_major:
        return project_columns(block.rows(y, -np.inf).T, totals).T
    if w is None:
        yr = block.rows(y, -np.inf)
        ys = np.sort(yr, axis=1)[:, ::-1]  # decreasing, the padding last
        ts, cw = ys, np.arange(1, ys.shape[1] + 1, dtype=float)
    else:
        yr, wr = block.rows(y, 0.0), block.rows(w, 1.0)
        tr = yr * wr
        tr[block.padding] = -np.inf
        order = np.argsort(-tr, axis=1, kind="stable")
        ts = np.take_along_axis(tr, order, axis=1)
        ys = np.take_along_axis(yr, order, axis=1)
        cw = np.cumsum(np.take_along_axis(1.0 / wr, order, axis=1), axis=1)
    tau_k = np.cumsum(ys, axis=1)
    tau_k -= totals[:, None]
    tau_k /= cw
    active = ts > tau_k  # true on a prefix of each sorted row: the support
    last = active.shape[1] - 1 - np.argmax(active[:, ::-1], axis=1)
    rows = np.arange(last.size)
    tau = np.where(active[rows, last] & (totals > 0), tau_k[rows, last], np.inf)
    x = yr - (tau[:, None] if w is None else tau[:, None] / wr)
    np.maximum(x, 0.0, out=x)  # the padding of y is -inf without weights
    if w is not None:
        x[block.padding] = 0.0
    return x


def _round_rows(x: np.ndarray, block: RowBlock, totals: np.ndarray) -> np.ndarray:
    """`round_segments` of every row (rows padded with 0) of ``x``, laid out like
    ``block``."""
    lengths, width = block.lengths, x.shape[1]
    if width > 1 << _POSITION_BITS:
        raise MechanismError(f"a segment of more than 2^{_POSITION_BITS} values cannot be "
                             "rounded")
    floors = x + 1e-9
    np.floor(floors, out=floors)
    deficit = np.clip(np.rint(totals - floors.sum(axis=1)), 0, lengths).astype(np.int64)
    grid = x - floors
    grid += _FRAC_SHIFT
    grid *= 2.0**_FRAC_BITS
    np.floor(grid, out=grid)
    np.subtract(2.0 ** (_FRAC_BITS + 1), grid, out=grid)
    key = grid.astype(np.uint64)  # a larger fraction, a smaller key
    key <<= np.uint64(_POSITION_BITS)
    key |= np.arange(width, dtype=np.uint64)
    block.pad(key, _NO_KEY)
    nth = np.minimum(deficit, width - 1)
    if block.column_major:
        threshold = nth_smallest(key.T, nth)
    else:
        threshold = np.sort(key, axis=1)[np.arange(x.shape[0]), nth]
    threshold[deficit >= lengths] = _NO_KEY
    out = floors.astype(np.int64)
    out += key < threshold[:, None]
    return out
