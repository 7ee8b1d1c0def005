"""Exact integer sums of counts: totals that never wrap around 64 bits, and sums by cell
that stay exact above 2^53 (where ``np.bincount(..., weights=...)``, which adds in float64,
starts rounding).

Every count table is checked once (`check_total`, called by
`hierdp_core.data.loaders.validate_counts`): when its non-negative counts sum to at most
2^63 - 1, every partial sum (a unit, a level, a cell) fits an int64 too.

Example
-------
>>> exact_total(np.array([2**62, 2**62, 1]))
9223372036854775809
>>> check_total(np.array([2**62, 2**62]), "count column 'n'")
Traceback (most recent call last):
...
hierdp_core.errors.InputError: count column 'n' sums to 9,223,372,036,854,775,808, more than 2^63 - 1: a 64-bit total would wrap; split the table or use smaller units
>>> sum_by_cell(np.array([0, 2, 0]), np.array([2**60 + 1, 5, 2**60]), 3).tolist()
[2305843009213693953, 0, 5]
"""

from __future__ import annotations

import numpy as np

from hierdp_core.errors import InputError

INT64_MAX = int(np.iinfo(np.int64).max)
#: below this total, float64 sums of integers are exact
_FLOAT_EXACT = 2**53
_LOW_BITS = (1 << 32) - 1


def exact_total(values: np.ndarray) -> int:
    """The exact sum of non-negative int64 values, as a Python int (no wrap): the high and
    low 32 bits are summed apart, each sum far from overflowing."""
    v = np.asarray(values, dtype=np.int64)
    return (int((v >> 32).sum()) << 32) + int((v & _LOW_BITS).sum())


def check_total(values: np.ndarray, what: str) -> int:
    """`exact_total`, or `InputError` when it exceeds 2^63 - 1 (``what`` names the
    values, e.g. "count column 'n'")."""
    total = exact_total(values)
    if total > INT64_MAX:
        raise InputError(f"{what} sums to {total:,}, more than 2^63 - 1: a 64-bit total "
                         "would wrap; split the table or use smaller units")
    return total


def sum_by_cell(cells: np.ndarray, weights: np.ndarray, n_cells: int) -> np.ndarray:
    """Exact int64 sums of non-negative integer ``weights`` by cell index (``n_cells``
    cells); the weights' total must fit an int64 (`check_total`)."""
    weights = np.asarray(weights, dtype=np.int64)
    if exact_total(weights) < _FLOAT_EXACT:
        return np.rint(np.bincount(cells, weights=weights, minlength=n_cells)).astype(np.int64)
    out = np.zeros(n_cells, dtype=np.int64)
    np.add.at(out, cells, weights)
    return out
