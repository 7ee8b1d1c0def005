"""Batched operations on contiguous segments of a flat array (one segment per parent).

A segmentation is given by ``starts``: increasing offsets with ``starts[0] == 0``; segment
``s`` is ``values[starts[s]:starts[s + 1]]`` (the last runs to the end). Every segment is
non-empty. These are the building blocks of TopDown: for all parents of a level at once,

* `project_segments`: the closest non-negative real vector (weighted L2) with a given sum;
* `round_segments`: the closest integer vector with the same (integer) sum.

Both are exact closed forms computed by sorting, O(m log m) for m elements, no solver.

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


def segment_ids(starts: np.ndarray, size: int) -> np.ndarray:
    """Segment index of every element."""
    lengths = np.diff(np.append(starts, size))
    return np.repeat(np.arange(starts.size), lengths)


def segmented_argsort_desc(values: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """The order of ``np.lexsort((-values, seg))`` (by segment, then value descending, ties by
    position) for non-decreasing ``seg``, computed faster: segments of similar length (within
    a factor 2) are sorted as the rows of one padded block, a stable sort per row (rows are
    short: no sort of the whole array)."""
    values = np.asarray(values)
    m = values.size
    order = np.empty(m, dtype=np.int64)
    if m == 0:
        return order
    starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
    lengths = np.diff(np.append(starts, m))
    # padding sorts after every value, stably: NaN for floats, the largest integer else
    pad = np.nan if values.dtype.kind == "f" else np.iinfo(values.dtype).max
    bucket = np.log2(lengths).astype(np.int64)  # lengths in [2^b, 2^(b+1))
    for b in np.unique(bucket):  # one block per length class: at most log2(m) of them
        rows = np.flatnonzero(bucket == b)
        width = int(lengths[rows].max())
        index = starts[rows, None] + np.arange(width)
        valid = np.arange(width) < lengths[rows, None]
        np.minimum(index, m - 1, out=index)
        block = -values[index]
        block[~valid] = pad
        ranked = np.take_along_axis(index, np.argsort(block, axis=1, kind="stable"), axis=1)
        order[index[valid]] = ranked[valid]
    return order


def segmented_cumsum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at every segment start.

    One global cumsum in which each segment start subtracts the previous segment's sum, so the
    running total stays near zero (no cancellation across a long array); the remaining rounding
    drift is removed per segment.
    """
    values = np.asarray(values, dtype=float)
    v = values.copy()
    if starts.size > 1:
        v[starts[1:]] -= np.add.reduceat(values, starts)[:-1]
    out = np.cumsum(v)
    drift = out[starts] - values[starts]
    return out - np.repeat(drift, np.diff(np.append(starts, values.size)))


def project_segments(
    y: np.ndarray,
    starts: np.ndarray,
    totals: np.ndarray,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """argmin_x sum w_i (x_i - y_i)^2 subject to x >= 0 and each segment summing to its total.

    ``totals`` must be >= 0. The solution is x_i = max(0, y_i - tau_s / w_i) with tau_s found
    per segment from the sorted breakpoints w_i y_i (the weighted simplex projection); a
    segment of total 0 is all zeros. Without weights and with integer ``y`` every sum is
    exact, so a segment's result depends on that segment alone: only the segments of
    positive total are computed (the same numbers, bit for bit).
    """
    y = np.asarray(y, dtype=float)
    totals = np.asarray(totals)
    if weights is None and _exact_sums(y):
        live = totals > 0
        if not live.all():
            x = np.zeros(y.size)
            kept, kept_starts = _segments_kept(starts, y.size, live)
            if kept_starts.size:
                x[kept] = _project(y[kept], kept_starts, totals[live], None)
            return x
    return _project(y, starts, totals, weights)


def _exact_sums(y: np.ndarray) -> bool:
    """Whether every sum of elements of ``y`` is exact in floating point: integers whose
    absolute values sum to less than 2**52."""
    return bool(np.abs(y).sum() < 2.0**52 and np.array_equal(y, np.floor(y)))


def _segments_kept(starts: np.ndarray, size: int, keep: np.ndarray):
    """The elements of the segments chosen by ``keep`` (a mask), and where those segments
    start once the others are left out."""
    lengths = np.diff(np.append(starts, size))
    kept = lengths[keep]
    return np.repeat(keep, lengths), np.cumsum(kept) - kept


def _project(y: np.ndarray, starts: np.ndarray, totals: np.ndarray,
             weights: np.ndarray | None) -> np.ndarray:
    """`project_segments` of every segment."""
    m = y.size
    seg = segment_ids(starts, m)
    if weights is None:  # w = 1: the same arithmetic without the multiplications by one
        order = segmented_argsort_desc(y, seg)
        ys = ts = y[order]
        cw = (np.arange(m) - starts[seg] + 1).astype(float)  # cumulative sums of ones
    else:
        w = np.asarray(weights, dtype=float)
        t = w * y
        order = segmented_argsort_desc(t, seg)
        ys, ts = y[order], t[order]
        cw = segmented_cumsum(1.0 / w[order], starts)
    cy = segmented_cumsum(ys, starts)
    tau_k = (cy - totals[seg]) / cw
    positions = np.arange(m)
    candidate = np.where(ts > tau_k, positions, -1)
    last = np.maximum.reduceat(candidate, starts)
    tau = np.full(starts.size, np.inf)
    found = last >= 0
    tau[found] = tau_k[last[found]]
    tau[totals <= 0] = np.inf  # an empty parent has empty children
    shift = tau[seg] if weights is None else tau[seg] / w
    return np.maximum(0.0, y - shift)


def round_segments(x: np.ndarray, starts: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Integer vector closest to ``x >= 0`` (in L1 and L2) whose segments sum to ``totals``.

    Floors every value, then adds one to the largest fractional parts of each segment until
    its total is met (ties broken by position; only the segments short of their total are
    sorted). Requires each segment of ``x`` to sum to its integer total up to rounding
    error; the output is non-negative.
    """
    x = np.asarray(x, dtype=float)
    m = x.size
    floors = np.floor(x + 1e-9)
    lengths = np.diff(np.append(starts, m))
    deficit = np.asarray(totals) - np.add.reduceat(floors, starts)
    deficit = np.clip(np.rint(deficit), 0, lengths).astype(np.int64)
    out = floors.astype(np.int64)
    short = deficit > 0
    kept, kept_starts = _segments_kept(starts, m, short)
    if kept_starts.size:
        frac = x[kept] - floors[kept]
        seg = segment_ids(kept_starts, frac.size)
        order = segmented_argsort_desc(frac, seg)
        rank = np.empty(frac.size, dtype=np.int64)
        rank[order] = np.arange(frac.size) - kept_starts[seg]  # seg[order] is seg
        out[kept] += rank < deficit[short][seg]
    return out
