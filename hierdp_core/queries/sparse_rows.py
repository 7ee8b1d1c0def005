"""Histograms of many units over a large domain held by their non-zero cells
(`SparseRows`): the input of the sparse PrivTree (`hierdp_core.ranges.sparse_privtree`)
and of a range release over a domain kept sparse (`hierdp_core.queries.sparse_ranges`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.errors import InputError


@dataclass(frozen=True, eq=False)
class SparseRows:
    """Histograms of ``rows`` units over the cells 0..n-1, held by their non-zero cells:
    ``keys`` (row * n + cell, increasing) and their ``counts`` (non-negative)."""

    keys: np.ndarray
    counts: np.ndarray
    rows: int
    n: int

    @classmethod
    def from_triples(cls, row, cell, count, *, rows: int, n: int) -> SparseRows:
        """From (row, cell, count) triples (repeats summed, zeros dropped)."""
        row, cell = np.asarray(row, dtype=np.int64), np.asarray(cell, dtype=np.int64)
        count = np.asarray(count, dtype=float)
        if n < 1 or rows < 0 or rows * n >= 2**62:
            raise InputError(f"{rows:,} units x {n:,} cells cannot be keyed in 64 bits")
        if ((cell < 0) | (cell >= n) | (row < 0) | (row >= rows)).any() or (count < 0).any():
            raise InputError("a sparse histogram wants cells in 0..n-1 of rows 0..rows-1 "
                             "and non-negative counts")
        keys, where = np.unique(row * n + cell, return_inverse=True)
        sums = np.bincount(where.ravel(), weights=count, minlength=keys.size)
        kept = sums != 0
        return cls(keys[kept], sums[kept], rows, n)

    @classmethod
    def from_dense(cls, x: np.ndarray) -> SparseRows:
        x = np.atleast_2d(np.asarray(x, dtype=float))
        row, cell = np.nonzero(x)
        return cls.from_triples(row, cell, x[row, cell], rows=x.shape[0], n=x.shape[1])

    def bounds(self, row: np.ndarray, cell: np.ndarray) -> np.ndarray:
        """Positions in ``keys`` of the first non-zero cell at or after (row, cell)."""
        return np.searchsorted(self.keys, row * self.n + cell)
