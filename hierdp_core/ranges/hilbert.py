"""2-D histograms as 1-D ones: cells of a ``side x side`` grid (side a power of two) ordered
along a Hilbert curve, which keeps nearby cells nearby, so DAWA's contiguous buckets become
compact regions (DAWA paper, section 5.4). Rectangle queries become general linear queries
over the ordered cells (`Workload` with a matrix).

Rectangles here are whole cells (no partly covered cells), so true answers are exact sums of
cells and need no uniformity assumption.

Example
-------
>>> hilbert_cells(2).tolist()  # (row, column) of the cells at curve positions 0..3
[[0, 0], [1, 0], [1, 1], [0, 1]]
>>> grid = np.arange(16).reshape(4, 4)
>>> bool((from_hilbert(to_hilbert(grid)) == grid).all())
True
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import sparse

from hierdp_core.errors import InputError
from hierdp_core.ranges.workloads import Workload


def _check_side(side: int) -> int:
    if side < 1 or side & (side - 1):
        raise InputError(f"a Hilbert-ordered grid needs a side that is a power of two, got "
                         f"{side}; pad the grid")
    return side


@lru_cache(maxsize=8)
def hilbert_cells(side: int) -> np.ndarray:
    """(row, column) of the cell at every curve position, (side^2, 2), all at once."""
    _check_side(side)
    t = np.arange(side * side, dtype=np.int64)
    x = np.zeros_like(t)
    y = np.zeros_like(t)
    s = 1
    while s < side:
        rx = (t >> 1) & 1
        ry = (t ^ rx) & 1
        flip = (ry == 0) & (rx == 1)
        x = np.where(flip, s - 1 - x, x)
        y = np.where(flip, s - 1 - y, y)
        swap = ry == 0
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        x += s * rx
        y += s * ry
        t >>= 2
        s <<= 1
    cells = np.stack([y, x], axis=1)
    cells.setflags(write=False)
    return cells


def hilbert_positions(side: int) -> np.ndarray:
    """Curve position of every cell in row-major order, (side^2,)."""
    cells = hilbert_cells(side)
    positions = np.empty(side * side, dtype=np.int64)
    positions[cells[:, 0] * side + cells[:, 1]] = np.arange(side * side)
    return positions


def to_hilbert(grid: np.ndarray) -> np.ndarray:
    """A (side, side) grid as its cells in curve order, (side^2,)."""
    grid = np.asarray(grid)
    if grid.ndim != 2 or grid.shape[0] != grid.shape[1]:
        raise InputError(f"a Hilbert ordering needs a square grid, got shape {grid.shape}")
    cells = hilbert_cells(_check_side(grid.shape[0]))
    return grid[cells[:, 0], cells[:, 1]]


def from_hilbert(vector: np.ndarray) -> np.ndarray:
    """Inverse of `to_hilbert` (keeps the dtype: estimates stay real-valued)."""
    vector = np.asarray(vector)
    side = int(round(np.sqrt(vector.size)))
    if side * side != vector.size:
        raise InputError(f"{vector.size} cells do not form a square grid")
    cells = hilbert_cells(_check_side(side))
    grid = np.empty((side, side), dtype=vector.dtype)
    grid[cells[:, 0], cells[:, 1]] = vector
    return grid


def rectangles(side: int, m: int, height: int, width: int, seed: int = 0) -> Workload:
    """``m`` rectangles of ``height x width`` cells placed uniformly on the grid, as queries
    over the Hilbert-ordered cells."""
    _check_side(side)
    if not (1 <= height <= side and 1 <= width <= side):
        raise InputError(f"rectangles of {height} x {width} cells do not fit a {side} x {side} "
                         "grid")
    rng = np.random.default_rng(seed)
    top = rng.integers(0, side - height + 1, size=m)
    left = rng.integers(0, side - width + 1, size=m)
    dr, dc = np.divmod(np.arange(height * width), width)
    rows = (top[:, None] + dr[None, :]).ravel()
    cols = (left[:, None] + dc[None, :]).ravel()
    query = np.repeat(np.arange(m), height * width)
    position = hilbert_positions(side)[rows * side + cols]
    matrix = sparse.csr_matrix((np.ones(query.size), (query, position)),
                               shape=(m, side * side))
    return Workload(n=side * side, name=f"rectangles {height}x{width}", matrix=matrix)
