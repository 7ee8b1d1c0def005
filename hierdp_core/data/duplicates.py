"""Aggregated rows that repeat the cell of an earlier row (the same unit and category, the
same O/D pair, the same unit and size): summed, and counted so the command line can say so,
or refused with ``duplicates="error"``.

Example
-------
>>> repeated_rows(np.array([3, 1, 3]), "sum", "unit and category")
1
>>> repeated_rows(np.array([3, 1, 3]), "error", "unit and category")
Traceback (most recent call last):
...
hierdp_core.errors.DuplicateRowsError: 1 row(s) repeat the unit and category of an earlier row (e.g. rows 1 and 3); sum them first, or use --duplicates sum
"""

from __future__ import annotations

import numpy as np

from hierdp_core.errors import DuplicateRowsError, InputError

POLICIES = ("sum", "error")


def check_policy(duplicates: str) -> str:
    """``duplicates`` if it is a policy of `POLICIES`, else `InputError`."""
    if duplicates not in POLICIES:
        raise InputError(f"duplicates must be 'sum' or 'error', got {duplicates!r}")
    return duplicates


def repeated_rows(cells: np.ndarray, duplicates: str, what: str, *,
                  n_distinct: int | None = None) -> int:
    """How many rows repeat the cell of an earlier row (``cells``: one non-negative cell
    index per row; ``n_distinct``: their number of distinct values when the caller has it,
    else counted with a bincount). With ``duplicates="error"`` any repeat is a
    `DuplicateRowsError` naming two such rows (1-based) and ``what`` the cell is."""
    check_policy(duplicates)
    cells = np.asarray(cells, dtype=np.int64)
    if cells.size == 0:
        return 0
    if n_distinct is None:
        n_distinct = int(np.count_nonzero(np.bincount(cells)))
    merged = cells.size - int(n_distinct)
    if merged and duplicates == "error":
        order = np.argsort(cells, kind="stable")
        same = np.flatnonzero(np.diff(cells[order]) == 0)
        first, second = sorted((int(order[same[0]]) + 1, int(order[same[0] + 1]) + 1))
        raise DuplicateRowsError(f"{merged:,} row(s) repeat the {what} of an earlier row "
                                 f"(e.g. rows {first} and {second}); sum them first, or use "
                                 "--duplicates sum")
    return merged
