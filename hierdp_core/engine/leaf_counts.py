"""Records to leaf counts on the workers, in integers: every partition's rows reduced to
their distinct tuples of level codes (a Categorical column, e.g. a dictionary-encoded
Parquet column, gives its codes without hashing the text), each tuple placed in the
geography once (`hierdp_core.structure.Geography.leaf_of_rows`), then one `np.bincount`
over (tuple, category) ids; the sparse cells are cut by block, and every block's dense leaf
counts are added up from the pieces of the partitions that touch it.

Example
-------
>>> import pandas as pd
>>> from hierdp_core.structure import geography_from_table
>>> geo = geography_from_table(pd.DataFrame({"s": ["A", "A", "B"], "c": ["1", "2", "3"]}),
...                            ["s", "c"])
>>> rows = pd.DataFrame({"s": ["B", "A", "B"], "c": ["3", "1", "3"], "sex": ["F", "M", "F"]})
>>> cells = partition_cells(rows, geo, ["s", "c"], ["sex"], {"sex": ("F", "M")}, None, 2,
...                         np.array([0, 2]))
>>> {b: (c.tolist(), s.tolist()) for b, (c, s) in cells.items()}
{0: ([1], [1]), 1: ([4], [2])}
>>> block_leaf_counts(1, 2, 1, 2, cells[1]).tolist()
[[2, 0]]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierdp_core.errors import StructureError


def _row_codes(series: pd.Series) -> np.ndarray:
    """A Categorical column's integer codes, else its values."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.cat.codes.to_numpy()
    return series.to_numpy()


def _first_rows(ids: np.ndarray) -> np.ndarray:
    """The first row of every id, ids numbered in order of first appearance (as
    `pd.factorize` numbers them)."""
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    top = np.maximum.accumulate(ids)
    return np.flatnonzero(np.r_[True, top[1:] > top[:-1]])


def distinct_tuples(frame: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(the id of every row's tuple of ``columns``, 0..m-1 in order of first appearance;
    the first row of each tuple). Usually the last column's code fixes the tuple (checked
    per row against the tuple's first row); else the columns are combined one by one."""
    key = pd.factorize(_row_codes(frame[columns[-1]]), use_na_sentinel=False)[0]
    first = _first_rows(key)
    if all(np.array_equal(codes[first][key], codes)
           for codes in (_row_codes(frame[c]) for c in columns[:-1])):
        return key, first
    key = np.zeros(len(frame), dtype=np.int64)
    for column in columns:
        codes, uniques = pd.factorize(_row_codes(frame[column]), use_na_sentinel=False)
        key = pd.factorize(key * len(uniques) + codes)[0]  # ids stay below the rows
    return key, _first_rows(key)


def tuple_leaves(frame: pd.DataFrame, first: np.ndarray, geography, levels: list[str],
                 ) -> np.ndarray:
    """`Geography.leaf_of_rows` of the rows ``first`` (one per distinct tuple of codes); a
    row outside the geography raises the error of the whole partition, its rows counted."""
    try:
        return geography.leaf_of_rows(frame.iloc[first], levels)
    except StructureError:
        geography.leaf_of_rows(frame, levels)  # raises, naming the rows at fault
        raise


def partition_cells(frame: pd.DataFrame, geography, levels: list[str], categories: list[str],
                    values: dict, count_column: str | None, k: int,
                    first_leaves: np.ndarray, duplicates: str = "sum",
                    part: int = 0) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """One partition's records as sparse counts per block: block -> (cells, sums), a cell
    being ``leaf * k + category`` (leaves within the leaf level), sorted, distinct, nonzero
    sums (a count column may hold zeros: their cells are left out, a zero either way).
    Rows of a count column that repeat a cell are summed, or with ``duplicates="error"``
    refused (`repeated_rows`, rows counted in partition ``part``), their cells then kept
    even when they sum to 0 (`first_shared_cell` finds those in several partitions)."""
    from hierdp_core.categories import category_index
    from hierdp_core.data.duplicates import repeated_rows, unit_category
    from hierdp_core.data.loaders import validate_counts

    if len(frame) == 0:
        return {}
    key, first = distinct_tuples(frame, levels)
    leaf = tuple_leaves(frame, first, geography, levels)
    cat, labels = (category_index(frame, categories, values) if categories
                   else (np.zeros(len(frame), dtype=np.int64), ("total",)))
    weights = (None if count_column is None
               else validate_counts(frame, count_column, roles=[*levels, *categories]))
    checked = count_column is not None and duplicates == "error"
    if checked:
        repeated_rows(key * k + cat, duplicates, "unit and category",
                      where=f" of the dataset's partition {part + 1}", name=lambda c: (
                          unit_category(geography.hierarchy, leaf[c // k], categories,
                                        labels[c % k])))
    sums = np.bincount(key * k + cat, weights, minlength=first.size * k)
    nonzero = np.flatnonzero(np.bincount(key * k + cat, minlength=sums.size) if checked
                             else sums)
    cells = leaf[nonzero // k] * k + nonzero % k
    order = np.argsort(cells)
    cells, sums = cells[order], sums[nonzero[order]].astype(np.int64)
    block = np.searchsorted(first_leaves, cells // k, side="right") - 1
    bounds = np.flatnonzero(np.r_[True, block[1:] != block[:-1], True])
    return {int(block[a]): (cells[a:b], sums[a:b]) for a, b in zip(bounds[:-1], bounds[1:],
                                                                   strict=True)}


def part_total(cells: dict) -> int:
    """The exact total of a partition's sparse sums (block -> (cells, sums)), as a Python
    int: each partition passed `check_total` alone, their sum is checked by the client."""
    from hierdp_core.data.integers import exact_total

    return sum(exact_total(sums) for _, sums in cells.values())


def blocks_of(cells: dict) -> list[int]:
    """The blocks a partition's cells touch."""
    return sorted(cells)


def block_piece(cells: dict, block: int) -> tuple[np.ndarray, np.ndarray]:
    """A partition's (cells, sums) of one block."""
    return cells[block]


def block_leaf_counts(block: int, first_leaf: int, n_leaves: int, k: int,
                      *pieces: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """A block's dense leaf counts (n_leaves, k) from the partitions' pieces of it."""
    dense = np.zeros(n_leaves * k, dtype=np.int64)
    for cells, sums in pieces:
        dense[cells - first_leaf * k] += sums
    return dense.reshape(n_leaves, k)
