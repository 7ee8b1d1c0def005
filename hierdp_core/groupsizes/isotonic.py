"""Isotonic regression of many segments at once, under the L2 or the L1 loss: the
estimation step of Kuo et al.'s Hg and Hc estimators (spec ``group-sizes-kuo.md`` sec. 2.2
and 2.3, step 3; paper sec. 4.2-4.3), used by `hierdp_core.groupsizes.kuo_estimators`.

Contract: ``y`` is one flat array holding every segment back to back, ``starts`` the index
where each segment begins (0 first, strictly increasing, every segment non-empty); each fit
is non-decreasing within its segment and never pools across segments. Post-processing only
(no privacy cost): these functions never see the truth.
"""

from __future__ import annotations

import numpy as np

from hierdp_core.consistency.segments import segment_ids
from hierdp_core.errors import InputError, MechanismError

PAVA_CELLS = 1 << 15  # cells of whole rows fitted at once by `_pava_rows`


def _segment_starts(starts, size: int) -> np.ndarray:
    starts = np.asarray(starts, dtype=np.int64)
    if size and (starts.size == 0 or starts[0] != 0 or np.any(np.diff(starts) <= 0)
                 or starts[-1] >= size):
        raise InputError("segment starts must begin at 0 and increase strictly inside the "
                         "array (every segment non-empty)")
    return starts


def pava_blocks(y: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L2 isotonic regression (non-decreasing) of every segment of ``y``, as blocks.

    Segment ``s`` is ``y[starts[s]:starts[s + 1]]``. Returns ``(block_starts, means)``: the
    fit is constant ``means[b]`` on ``y[block_starts[b]:block_starts[b + 1]]``; every
    segment start is a block start. One PAVA pass (`_pava_starts`) for all segments: each
    segment is shifted into its own value range, above the previous one, so no block can
    straddle two segments (the segments' problems are separable and each optimum lies
    within its segment's data range). The block means are then recomputed from the
    unshifted data (exact sums for integer data).
    """
    y = np.asarray(y)
    m = y.size
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    starts = _segment_starts(starts, m)
    if starts.size == 1:
        shifted = y
    else:
        lo = np.minimum.reduceat(y, starts).astype(np.float64)
        span = np.maximum.reduceat(y, starts) - lo + 1.0
        shifted = y + np.repeat(_bases(span) - lo, np.diff(np.append(starts, m)))
    return _block_means(y, _pava_starts(shifted, owned=starts.size > 1))


def _bases(span: np.ndarray) -> np.ndarray:
    """Where each segment's shifted range begins: after the spans of those before it."""
    return np.concatenate([[0.0], np.cumsum(span[:-1])])


def _block_means(y: np.ndarray, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(blocks, the mean of flat ``y`` on each block), exact sums for integer data."""
    sums = np.add.reduceat(y, blocks, dtype=np.int64 if y.dtype.kind in "iu" else np.float64)
    return blocks, sums / np.diff(np.append(blocks, y.size))


def _pava_starts(shifted: np.ndarray, owned: bool) -> np.ndarray:
    """The block starts of the L2 isotonic fit of ``shifted`` (int64): the PAVA of
    `scipy.optimize.isotonic_regression` (its blocks, so its merge decisions, bit for bit),
    its kernel called directly when it can be reached, without the function's copy of an
    ``owned`` array (a float64 one of the caller's own, then overwritten)."""
    try:  # scipy's own kernel: the function copies y first (25 MB a Hc level of counties)
        from scipy.optimize._pava_pybind import pava
    except ImportError:
        pava = None
    if pava is not None:
        x = shifted if owned else np.array(shifted, dtype=np.float64, order="C")
        blocks = np.empty(x.size + 1, dtype=np.intp)  # the kernel writes every block's start
        try:
            n_blocks = pava(x, np.ones(x.size), blocks)[3]
        except TypeError:  # a scipy whose private kernel takes other arguments (checked
            pass           # before it touches x): the public function below
        else:
            return blocks[:n_blocks].astype(np.int64)
    try:
        from scipy.optimize import isotonic_regression
    except ImportError as exc:  # pragma: no cover - scipy < 1.12
        raise MechanismError("Kuo et al.'s estimators need scipy >= 1.12 "
                             "(scipy.optimize.isotonic_regression)") from exc
    return isotonic_regression(shifted).blocks[:-1].astype(np.int64)


def isotonic_box_rows(y: np.ndarray, upper: np.ndarray, p: int) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """`isotonic_box` of every row of ``y`` (n, k), k >= 1, as blocks: ``(starts, fit)``,
    the flat index (in ``y.ravel()``) where each block of constant fit begins, every row's
    first cell among them, and the fit of each block, in [0, ``upper[row]``]. Exactly the
    values `isotonic_box` gives on the rows as segments, without a full-length fit: L2
    (integer ``y``): the PAVA blocks of the rows shifted apart (as `pava_blocks`: the same
    shifted values, so the same blocks), their exact means, clipped; L1: the exact fit of
    the clipped data, cut where it changes."""
    n, k = y.shape
    upper = np.asarray(upper)
    if p == 1:
        fit = isotonic_l1_segments(np.clip(y, 0, upper[:, None]).ravel(),
                                   np.arange(n, dtype=np.int64) * k)
        change = np.empty((n, k), dtype=bool)
        change[:, 0] = True
        change[:, 1:] = fit.reshape(n, k)[:, 1:] != fit.reshape(n, k)[:, :-1]
        starts = np.flatnonzero(change)
        return starts, fit[starts]
    blocks = (_pava_starts(y.astype(np.float64).ravel(), owned=True) if n == 1  # one
              else _pava_rows(y))  # segment: not shifted (as `pava_blocks`)
    starts, means = _block_means(y.ravel(), blocks)
    return starts, np.clip(means, 0, upper[starts // k])


def _pava_rows(y: np.ndarray) -> np.ndarray:
    """The flat block starts of `_pava_starts` on the rows of ``y`` (n, k) shifted apart as
    `pava_blocks` shifts segments, made `PAVA_CELLS` cells of whole rows at a time (each
    read once, its shifted copy and the kernel's arrays in the cache): the same shifted
    values (the bases summed in the same order), and no block reaches from one row into the
    next (a row's shifted values lie above all before it), so the blocks of one call."""
    n, k = y.shape
    rows = max(1, PAVA_CELLS // k)
    shifted = np.empty(min(rows, n) * k)
    base, parts = 0.0, []
    for a in range(0, n, rows):
        part = y[a:a + rows]
        lo = part.min(axis=1).astype(np.float64)
        span = part.max(axis=1) - lo + 1.0
        bases = np.cumsum(np.concatenate([[base], span]))
        base = bases[-1]
        x = shifted[:part.size]
        np.add(part, (bases[:-1] - lo)[:, None], out=x.reshape(part.shape), dtype=np.float64)
        parts.append(_pava_starts(x, owned=True) + a * k)
    return np.concatenate(parts)


def isotonic_l1_segments(y: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """argmin_x sum |x - y| with x non-decreasing within every segment (exact; one of the
    optimal solutions, with values taken from the candidate set below).

    Divide and conquer on the value range (the threshold decomposition of L1 isotonic
    regression): for a sub-problem (a run of positions with candidate values D[lo..hi]),
    the binary problem at the threshold between D[mid] and D[mid + 1] is solved exactly by
    a prefix sum (the smallest split k minimising #{i < k: y_i > D[mid]} + #{i >= k: y_i
    <= D[mid]}); positions before k take values in D[lo..mid], the rest in D[mid+1..hi].
    All sub-problems of all segments advance together, one vectorised pass per halving,
    and settled sub-problems leave the working set: O(n log |D|). Candidates D: a
    segment's sorted distinct values (one sort), or, for integer data spanning few values
    (e.g. Hg sizes clipped to [0, N]), the whole integer range (no sort; an optimum with
    values in the data exists, so a superset of candidates changes nothing). For the
    threshold decomposition and partitioning see Stout, "Isotonic regression via
    partitioning" (Algorithmica 2013); the tests check the objective against an LP.
    """
    y = np.asarray(y)
    m = y.size
    if m == 0:
        return np.zeros(0)
    starts = _segment_starts(starts, m)
    rank, decode = _l1_ranks(y, starts)
    idx = rank.dtype
    out = np.empty(m, dtype=idx)
    active = np.arange(m, dtype=idx)  # positions still being split, grouped by sub-problem
    sub = starts.astype(idx)  # sub-problem starts within `active`
    lo = np.minimum.reduceat(rank, starts)
    hi = np.maximum.reduceat(rank, starts)
    while active.size:
        lengths = np.diff(np.append(sub, active.size)).astype(idx)
        sid = np.repeat(np.arange(sub.size, dtype=idx), lengths)
        done = lo == hi
        if done.any():  # settled: assign the value, drop from the working set
            el = done[sid]
            out[active[el]] = lo[sid[el]]
            active = active[~el]
            lengths, lo, hi = lengths[~done], lo[~done], hi[~done]
            sub = np.cumsum(lengths, dtype=idx) - lengths
            sid = np.repeat(np.arange(sub.size, dtype=idx), lengths)
            if active.size == 0:
                break
        mid = (lo + hi) // 2
        c = np.cumsum(np.where(rank[active] > mid[sid], 1, -1).astype(idx), dtype=idx)
        c -= np.concatenate([np.zeros(1, idx), c])[sub][sid]  # restart per sub-problem
        cmin = np.minimum.reduceat(c, sub)
        first = np.minimum.reduceat(np.where(c == cmin[sid], np.arange(active.size, dtype=idx),
                                             active.size), sub)
        del c, sid
        k = np.where(cmin < 0, first + 1 - sub, 0).astype(idx)  # smallest optimal split
        new_sub = np.stack([sub, sub + k], axis=1).ravel()
        new_lo = np.stack([lo, mid + 1], axis=1).ravel()
        new_hi = np.stack([mid, hi], axis=1).ravel()
        keep = np.stack([k, lengths - k], axis=1).ravel() > 0
        sub, lo, hi = new_sub[keep], new_lo[keep], new_hi[keep]
    del rank, active
    return decode(out)


def _l1_ranks(y: np.ndarray, starts: np.ndarray):
    """Order-preserving integer codes of ``y`` whose ranges are disjoint across segments
    (later segments higher), and the function mapping codes back to values."""
    m = y.size
    seg = segment_ids(starts, m)
    if y.dtype.kind in "iu":
        ymin = np.minimum.reduceat(y, starts).astype(np.int64)
        span = np.maximum.reduceat(y, starts).astype(np.int64) - ymin + 1
        offset = np.concatenate([[0], np.cumsum(span[:-1])]) - ymin
        n_codes = int(span.sum())
        idx = np.int32 if max(n_codes, m) < 2**31 - 1 else np.int64
        if n_codes <= 4 * m:  # few values: the integer range itself

            def decode(code):
                return (code - offset[segment_ids(starts, m)]).astype(np.float64)

            return (y + offset[seg]).astype(idx), decode
        keys, rank = np.unique(y.astype(np.int64) + offset[seg], return_inverse=True)
        distinct = (keys - offset[np.searchsorted(offset + ymin, keys, side="right") - 1])
        return rank.reshape(-1).astype(idx), lambda code: distinct[code].astype(np.float64)
    order = np.lexsort((y, seg))
    ys, ss = y[order], seg[order]
    new = np.ones(m, dtype=bool)
    new[1:] = (ys[1:] != ys[:-1]) | (ss[1:] != ss[:-1])
    distinct = ys[new].astype(np.float64)
    idx = np.int32 if m < 2**31 - 1 else np.int64
    rank = np.empty(m, dtype=idx)
    rank[order] = np.cumsum(new) - 1
    return rank, lambda code: distinct[code]
