"""Exact sums of counts: a table's total computed without wrapping 64 bits and refused above
2^53 - 1, and sums by cell that are then exact.

Why 2^53: the mechanisms compute in float64 (Laplace and Gaussian noise, least squares,
TopDown's projections), which holds every whole number only up to 2^53. Above it the
noise's low bits round away (a count of 2^62 plus noise of scale 1 is 2^62 again) and the
sums of a level wrap int64 near 2^63; no population comes near (the world's is about 2^33).
Every count table is checked once (`check_total`, called by
`hierdp_core.data.loaders.validate_counts`); every partial sum (a unit, a level, a cell) is
then below the limit too, so ``np.bincount`` with float64 weights is exact (`sum_by_cell`).

Example
-------
>>> exact_total(np.array([2**62, 2**62, 1]))
9223372036854775809
>>> check_total(np.array([2**52, 2**52]), "count column 'n'")
Traceback (most recent call last):
...
hierdp_core.errors.InputError: count column 'n' sums to 9,007,199,254,740,992, more than 2^53 - 1 = 9,007,199,254,740,991, the largest total whose noisy sums stay exact in float64 (and far from wrapping 64 bits); split the table or use coarser units
>>> sum_by_cell(np.array([0, 2, 0]), np.array([2**50 + 1, 5, 2**50]), 3).tolist()
[2251799813685249, 0, 5]
"""

from __future__ import annotations

import numpy as np

from hierdp_core.errors import InputError

#: the largest total a count table may have (see the module's docstring)
MAX_TOTAL = 2**53 - 1
_LOW_BITS = (1 << 32) - 1


def exact_total(values: np.ndarray) -> int:
    """The exact sum of non-negative int64 values, as a Python int (no wrap): the high and
    low 32 bits are summed apart, each sum far from overflowing."""
    v = np.asarray(values, dtype=np.int64)
    return (int((v >> 32).sum()) << 32) + int((v & _LOW_BITS).sum())


def check_total(values: np.ndarray, what: str) -> int:
    """`exact_total`, or `InputError` when it exceeds `MAX_TOTAL` (``what`` names the
    values, e.g. "count column 'n'")."""
    return checked_total(exact_total(values), what)


def checked_total(total: int, what: str) -> int:
    """``total`` (the exact sum of the values ``what`` names), or `InputError` when it
    exceeds `MAX_TOTAL`."""
    if total > MAX_TOTAL:
        raise InputError(f"{what} sums to {total:,}, more than 2^53 - 1 = {MAX_TOTAL:,}, the "
                         "largest total whose noisy sums stay exact in float64 (and far from "
                         "wrapping 64 bits); split the table or use coarser units")
    return total


def sum_by_cell(cells: np.ndarray, weights: np.ndarray, n_cells: int) -> np.ndarray:
    """Sums of non-negative integer ``weights`` by cell index (``n_cells`` cells) as int64,
    exact for weights whose total passed `check_total`."""
    return np.rint(np.bincount(cells, weights=weights, minlength=n_cells)).astype(np.int64)
