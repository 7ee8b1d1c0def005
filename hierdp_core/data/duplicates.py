"""Aggregated rows that repeat the cell of an earlier row (the same unit and category, the
same O/D pair, the same unit and size): refused (``duplicates="error"``, the default of the
command line, the API and the Dask engine: summing them is a guess about the table, never
made silently), or summed when declared (``"sum"``) and counted so the command line can say
so.

Example
-------
>>> repeated_rows(np.array([3, 1, 3]), "sum", "unit and category")
1
>>> repeated_rows(np.array([3, 1, 3]), "error", "unit and category",
...               name=lambda cell: f"unit {cell}")
Traceback (most recent call last):
...
hierdp_core.errors.DuplicateRowsError: 1 row(s) repeat the unit and category of an earlier row: the first repeated, unit 3, is on rows 1 and 3; sum them first, or declare that such rows are summed (--duplicates sum; duplicates="sum" in Python)
"""

from __future__ import annotations

import numpy as np

from hierdp_core.errors import DuplicateRowsError, InputError

POLICIES = ("sum", "error")
#: the rows of a repeated cell a refusal lists
MAX_ROWS_LISTED = 10
#: what a refusal of repeated rows asks for
SUM_THEM = 'sum them first, or declare that such rows are summed (--duplicates sum; ' \
           'duplicates="sum" in Python)'


def check_policy(duplicates: str) -> str:
    """``duplicates`` if it is a policy of `POLICIES`, else `InputError`."""
    if duplicates not in POLICIES:
        raise InputError(f"duplicates must be 'sum' or 'error', got {duplicates!r}")
    return duplicates


def repeated_rows(cells: np.ndarray, duplicates: str, what: str, *,
                  n_distinct: int | None = None, name=None, where: str = "") -> int:
    """How many rows repeat the cell of an earlier row (``cells``: one non-negative cell
    index per row; ``n_distinct``: their number of distinct values when the caller has it,
    else counted with a bincount). With ``duplicates="error"`` any repeat is a
    `DuplicateRowsError` naming ``what`` the cell is, the first repeated cell (``name``:
    cell index -> its words, e.g. the unit's id and the category) and its rows (from 1;
    ``where``: words after them, e.g. the partition they are counted in)."""
    check_policy(duplicates)
    cells = np.asarray(cells, dtype=np.int64)
    if cells.size == 0:
        return 0
    if n_distinct is None:
        n_distinct = int(np.count_nonzero(np.bincount(cells)))
    merged = cells.size - int(n_distinct)
    if merged and duplicates == "error":
        raise DuplicateRowsError(_repeat_message(cells, merged, what, name, where))
    return merged


def leaf_id(hierarchy, leaf: int) -> str:
    """The id (path of codes) of leaf unit ``leaf`` (its index within the leaf level)."""
    return str(hierarchy.node_ids()[hierarchy.level_offsets[hierarchy.depth] + leaf])


def unit_category(hierarchy, leaf: int, columns, label) -> str:
    """The words of a (unit, category) cell: the leaf unit's id, and the category columns
    with the cell's ``label`` when there are any."""
    unit = f"unit {leaf_id(hierarchy, leaf)}"
    return f"{unit}, {' / '.join(columns)} {label}" if len(columns) else unit


def _repeat_message(cells: np.ndarray, merged: int, what: str, name, where: str) -> str:
    """`repeated_rows`'s refusal: the cell of the first row that repeats an earlier one,
    with its rows (at most `MAX_ROWS_LISTED`)."""
    order = np.argsort(cells, kind="stable")
    later = order[1:][np.diff(cells[order]) == 0]  # the rows repeating an earlier row's cell
    cell = int(cells[later.min()])
    rows = (np.flatnonzero(cells == cell) + 1).tolist()
    listed = (", ".join(map(str, rows[:-1])) + f" and {rows[-1]}" if len(rows) <= MAX_ROWS_LISTED
              else ", ".join(map(str, rows[:MAX_ROWS_LISTED])) +
              f" and {len(rows) - MAX_ROWS_LISTED:,} more")
    first = f", {name(cell)}," if name is not None else ""
    return (f"{merged:,} row(s) repeat the {what} of an earlier row: the first "
            f"repeated{first} is on rows {listed}{where}; {SUM_THEM}")


def first_shared_cell(owners: list[int], *pieces: tuple) -> tuple[int, int, int] | None:
    """The smallest cell that two of ``pieces`` hold (the sparse cells of one block read in
    the partitions ``owners``, each (distinct cells, values)), with those two partitions;
    None when no cell is in two. A partition's rows are checked alone by `repeated_rows`;
    this finds the rows of one cell read in different partitions."""
    cells = np.concatenate([c for c, _ in pieces])
    owner = np.repeat(owners, [c.size for c, _ in pieces])
    order = np.lexsort((owner, cells))
    same = np.flatnonzero(np.diff(cells[order]) == 0)
    if not same.size:
        return None
    at = order[same[0]]
    return int(cells[at]), int(owner[at]), int(owner[order[same[0] + 1]])


def shared_cell_error(found: list, what: str, name) -> DuplicateRowsError | None:
    """`repeated_rows`'s refusal for the cells that several partitions hold (the results of
    `first_shared_cell`, one per block): the smallest, named by ``name``; None if none."""
    hits = [f for f in found if f is not None]
    if not hits:
        return None
    cell, i, j = min(hits)
    return DuplicateRowsError(f"rows of the dataset's partitions {i + 1} and {j + 1} repeat the "
                              f"{what}, {name(cell)}; {SUM_THEM}")
