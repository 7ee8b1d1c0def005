"""Projection and rounding of narrow segments laid out column-major: one segment per column.

A numpy operation along the rows of a (rows, width) block pays a fixed cost per row (a
call of its inner loop), which dominates when segments are a few elements long (the many
parents with one to four children of a census tree). Here a block of narrow segments is
a (width, segments) array: every step is a numpy operation over all segments at once, one
per column position (at most `NARROW` of them), and the sorts are sorting networks
(`network`: compare-exchanges of whole rows with ``np.minimum`` / ``np.maximum``).

The results are bit for bit those of the row layout (`hierdp_core.consistency.segments`):
the same floating-point operations on the same values in the same order (a running sum
adds one position at a time; sums of integer-valued floats are exact in any order); a
sorting network gives the same sorted values as a sort, except that it may swap a -0.0
with a 0.0, which changes no comparison, and no sum once a positive total is subtracted.

Example
-------
>>> network(3)
[(0, 1), (0, 2), (1, 2)]
>>> sort_rows(np.array([[3.0], [1.0], [2.0]]), descending=True)[:, 0].tolist()
[3.0, 2.0, 1.0]
"""

from __future__ import annotations

from functools import cache

import numpy as np

#: the widest segments laid out column-major (wider ones: row-major, sorted by numpy)
NARROW = 16


@cache
def network(width: int) -> list[tuple[int, int]]:
    """Compare-exchange pairs (i, j), i < j, that sort ``width`` values: Batcher's odd-even
    merge sort for the next power of two, without the pairs touching positions past
    ``width`` (those would hold +inf, which no pair moves)."""
    size = 1 << max(width - 1, 0).bit_length()
    pairs = []
    merged = 1  # sorted runs of this length are merged into runs of twice it
    while merged < size:
        gap = merged
        while gap >= 1:
            for first in range(gap % merged, size - gap, 2 * gap):
                for i in range(first, first + min(gap, size - first - gap)):
                    same_run = i // (2 * merged) == (i + gap) // (2 * merged)
                    if same_run and i + gap < width:
                        pairs.append((i, i + gap))
            gap //= 2
        merged *= 2
    return pairs


def sort_rows(block: np.ndarray, descending: bool = False) -> np.ndarray:
    """``block`` (width, n) with every column sorted (ascending or descending), NaN-free."""
    block = block.copy()
    low, high = (np.maximum, np.minimum) if descending else (np.minimum, np.maximum)
    for i, j in network(block.shape[0]):
        first = low(block[i], block[j])
        high(block[i], block[j], out=block[j])
        block[i] = first
    return block


def running_sums(block: np.ndarray) -> np.ndarray:
    """Cumulative sums down every column (one addition per row, in order)."""
    sums = block.copy()
    for i in range(1, sums.shape[0]):
        sums[i] += sums[i - 1]
    return sums


def last_support(sorted_y: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """tau of every column's projection: ``(sum of the first k sorted values - total) / k``
    at the last k where the k-th value exceeds it; +inf where there is none or the total
    is not positive."""
    tau_k = running_sums(sorted_y)
    tau_k -= totals
    tau_k /= np.arange(1, tau_k.shape[0] + 1, dtype=float)[:, None]
    active = sorted_y > tau_k
    tau = np.full(totals.size, np.inf)
    for i in range(tau_k.shape[0]):
        np.copyto(tau, tau_k[i], where=active[i])
    tau[~(totals > 0)] = np.inf
    return tau


def project_columns(y: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """The unweighted projection of every column's segment (``y`` padded with -inf)."""
    tau = last_support(sort_rows(y, descending=True), totals)
    x = y - tau
    np.maximum(x, 0.0, out=x)  # the padding is -inf
    return x


def nth_smallest(keys: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The ``n``-th smallest (0-based) key of every column."""
    return sort_rows(keys)[n, np.arange(keys.shape[1])]
