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
    position) for non-decreasing ``seg``, computed faster: one stable float sort by value, then
    an integer sort of (segment, rank) keys."""
    m = values.size
    by_value = np.argsort(-values, kind="stable")
    key = seg[by_value].astype(np.int64) * m
    key += np.arange(m)
    key.sort()
    key -= seg.astype(np.int64) * m
    return by_value[key]


def segmented_cumsum(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at every segment start, each segment summed on its own:
    bit for bit the cumsum of that segment alone, whatever the other segments hold (so a
    subtree released apart gives the whole tree's values). Segments are grouped by length
    (powers of two) and every group summed as the rows of a zero-padded 2-D array (a loop
    over at most 64 length groups)."""
    values = np.asarray(values, dtype=float)
    m = values.size
    lengths = np.diff(np.append(starts, m))
    out = np.empty(m)
    group = np.frexp(lengths - 1)[1]  # 0 for length 1, then ceil(log2(length))
    for g in np.unique(group):
        segs = np.flatnonzero(group == g)
        width = int(lengths[segs].max())
        index = starts[segs][:, None] + np.arange(width)
        inside = np.arange(width) < lengths[segs][:, None]
        padded = np.where(inside, values[np.minimum(index, m - 1)], 0.0)
        out[index[inside]] = np.cumsum(padded, axis=1)[inside]
    return out


def project_segments(
    y: np.ndarray,
    starts: np.ndarray,
    totals: np.ndarray,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """argmin_x sum w_i (x_i - y_i)^2 subject to x >= 0 and each segment summing to its total.

    ``totals`` must be >= 0. The solution is x_i = max(0, y_i - tau_s / w_i) with tau_s found
    per segment from the sorted breakpoints w_i y_i (the weighted simplex projection).
    """
    y = np.asarray(y, dtype=float)
    m = y.size
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=float)
    seg = segment_ids(starts, m)
    t = w * y
    order = segmented_argsort_desc(t, seg)
    ys, invw, ts = y[order], 1.0 / w[order], t[order]
    cy = segmented_cumsum(ys, starts)
    cw = segmented_cumsum(invw, starts)
    tau_k = (cy - totals[seg]) / cw
    positions = np.arange(m)
    candidate = np.where(ts > tau_k, positions, -1)
    last = np.maximum.reduceat(candidate, starts)
    tau = np.full(starts.size, np.inf)
    found = last >= 0
    tau[found] = tau_k[last[found]]
    tau[totals <= 0] = np.inf  # an empty parent has empty children
    x = np.maximum(0.0, y - tau[seg] / w)
    return x


def round_segments(x: np.ndarray, starts: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Integer vector closest to ``x >= 0`` (in L1 and L2) whose segments sum to ``totals``.

    Floors every value, then adds one to the largest fractional parts of each segment until
    its total is met (ties broken by position). Requires each segment of ``x`` to sum to its
    integer total up to rounding error; the output is non-negative.
    """
    x = np.asarray(x, dtype=float)
    m = x.size
    seg = segment_ids(starts, m)
    floors = np.floor(x + 1e-9)
    frac = x - floors
    lengths = np.diff(np.append(starts, m))
    deficit = np.asarray(totals) - np.add.reduceat(floors, starts)
    deficit = np.clip(np.rint(deficit), 0, lengths).astype(np.int64)
    order = segmented_argsort_desc(frac, seg)
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m) - starts[seg[order]]
    return floors.astype(np.int64) + (rank < deficit[seg])
