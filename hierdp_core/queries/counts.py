"""Count queries: per-node totals, or per-node category histograms.

Neighbouring relation: add/remove one person (one row of microdata, or one unit of one
aggregated row). A person lies in exactly one node per level and in one category, so for a
whole level the count vector (all nodes x categories) changes in one cell by 1:
L1 sensitivity = L2 sensitivity = 1 per level (stated once, in the privacy plan of the count
mechanisms, `hierdp_core.mechanisms.counts`). Measuring every level composes sequentially
over levels (epsilons or rhos add up).

The shape is public (DESIGN principle 7). With a declared `hierdp_core.structure.Geography`
the units are the geography's (a unit with no rows is a leaf of count 0) and with declared
``category_values`` the categories are those values, in the declared order; a row outside
either is an error. Without them (``geography=None``: exploration) the units are those that
appear in the data and the categories the distinct values of the category columns (the full
cartesian product of each column's values); the data object then says
``declared_structure=False``.

Example
-------
>>> import pandas as pd
>>> t = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"],
...                   "sex": ["F", "M", "F"], "n": [3, 4, 5]})
>>> d = count_data_from_table(t, ["state", "county"], count_column="n", category_columns=["sex"])
>>> d.categories, d.node_counts()[0].tolist()
(('F', 'M'), [8, 4])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierdp_core.categories import category_index
from hierdp_core.data.duplicates import check_policy, repeated_rows, unit_category
from hierdp_core.data.integers import sum_by_cell
from hierdp_core.data.loaders import validate_columns, validate_counts
from hierdp_core.data.unit_names import unit_names
from hierdp_core.hierarchy import Hierarchy, build_hierarchy
from hierdp_core.structure import Geography, distinct_codes

TOTAL = "total"


@dataclass(frozen=True, eq=False)
class CountData:
    """The true per-leaf counts (confidential): shape (n_leaves, n_categories), int64."""

    hierarchy: Hierarchy
    leaf_counts: np.ndarray
    categories: tuple[str, ...] = (TOTAL,)
    category_columns: tuple[str, ...] = ()
    #: True when the units and categories came from public declarations, not the data
    declared_structure: bool = False
    #: aggregated rows merged into another row of the same unit and category (summed)
    merged_rows: int = 0

    @property
    def has_categories(self) -> bool:
        return bool(self.category_columns)

    def node_counts(self) -> np.ndarray:
        """True counts at every node, shape (n_nodes, n_categories)."""
        return self.hierarchy.aggregate(self.leaf_counts)

    def node_totals(self) -> np.ndarray:
        """True total of every node, shape (n_nodes,)."""
        return self.hierarchy.aggregate(self.leaf_counts.sum(axis=1))


def count_data_from_table(
    table: pd.DataFrame,
    levels: Sequence[str],
    *,
    count_column: str | None = None,
    category_columns: Sequence[str] = (),
    local_codes: bool = False,
    root_name: str = "total",
    name_columns: dict[str, str] | None = None,
    geography: Geography | None = None,
    category_values: Mapping[str, Sequence[str]] | None = None,
    duplicates: str = "sum",
    duplicate_cell: str = "unit and category",
    max_cells: int | None = None,
) -> CountData:
    """Per-leaf counts from microdata (one row per person, ``count_column=None``) or
    aggregated rows (``count_column`` holds non-negative integer counts; rows of the same
    leaf and category: ``duplicates``). ``name_columns`` maps a level column to a
    column of readable unit names (public metadata used as release labels).

    ``geography``: the declared units (``levels`` are the data's level columns, matched to
    the geography's levels in order; its names and codes rule, so ``local_codes``,
    ``root_name`` and ``name_columns`` do not apply). ``category_values``: the declared
    values of some or all category columns. ``declared_structure`` is True when the
    geography and the values of every category column were declared.

    ``duplicates``: ``"sum"`` (aggregated rows of the same unit and category are summed;
    how many were merged is ``merged_rows`` of the result) or ``"error"`` (the command
    line's and the API's default: `DuplicateRowsError` naming the ``duplicate_cell``, the
    first repeated and its rows). ``max_cells``: refuse (`SizeLimitError`) a release of more
    cells (units x categories) before allocating it; None: no limit. A count column that
    is also a level or category column is a `ColumnRoleError`."""
    from hierdp_core.data.loaders import check_cells, check_column_roles
    from hierdp_core.errors import InputError

    check_policy(duplicates)
    check_column_roles(count_column, levels=levels, categories=category_columns)

    category_columns = list(category_columns)
    declared = dict(category_values or {})
    validate_columns(table, list(levels), "geography level")
    validate_columns(table, category_columns, "category")
    overlap = set(levels) & set(category_columns)
    if overlap:
        raise InputError(f"column(s) {sorted(overlap)} cannot be both a level and a category")
    unknown = sorted(set(declared) - set(category_columns))
    if unknown:
        raise InputError(f"values declared for {unknown}, which are not category columns "
                         f"{category_columns}")
    if geography is not None:
        if name_columns:
            raise InputError("with a geography, unit names come from the geography's name "
                             "columns")
        hierarchy, leaf = geography.hierarchy, geography.leaf_of_rows(table, levels)
    else:
        hierarchy, leaf = build_hierarchy(table, levels, root_name=root_name,
                                          local_codes=local_codes)
    weights = (np.ones(len(table), dtype=np.int64) if count_column is None
               else validate_counts(table, count_column,
                                    roles=[*levels, *category_columns]))
    if max_cells is not None:
        k_estimate = 1
        for col in category_columns:
            k_estimate *= (len(declared[col]) if col in declared
                           else int(table[col].nunique(dropna=False)))
        check_cells(hierarchy.n_leaves * k_estimate, max_cells,
                    f"{hierarchy.n_leaves:,} units x {k_estimate:,} categories")
    if category_columns and set(category_columns) <= set(declared):
        cat_index, categories = category_index(table, category_columns, declared)
    elif category_columns:
        cat_index, categories = _category_index(table, category_columns, declared)
    else:
        cat_index, categories = np.zeros(len(table), dtype=np.int64), (TOTAL,)
    if name_columns:
        hierarchy = hierarchy.with_names(unit_names(table, hierarchy, leaf, list(levels),
                                                     name_columns))
    declared_structure = geography is not None and set(category_columns) <= set(declared)
    return count_data_of_rows(hierarchy, leaf, cat_index, weights, categories,
                              category_columns, declared_structure=declared_structure,
                              aggregated=count_column is not None, duplicates=duplicates,
                              duplicate_cell=duplicate_cell)


def count_data_of_rows(hierarchy: Hierarchy, leaf: np.ndarray, cell: np.ndarray,
                       weights: np.ndarray, categories: tuple[str, ...],
                       category_columns: Sequence[str], *, declared_structure: bool,
                       aggregated: bool, duplicates: str = "sum",
                       duplicate_cell: str = "unit and category") -> CountData:
    """The CountData of rows placed at their ``leaf`` and category ``cell``, each standing
    for ``weights`` persons; ``aggregated`` rows repeating a leaf and category are summed
    (`merged_rows`) or refused by ``duplicates``."""
    k = len(categories)
    cells = leaf * k + cell
    merged = repeated_cells(hierarchy, cells, categories, category_columns, duplicates,
                            duplicate_cell) if aggregated else 0
    leaf_counts = sum_by_cell(cells, weights, hierarchy.n_leaves * k).reshape(
        hierarchy.n_leaves, k)
    return CountData(hierarchy, leaf_counts, categories, tuple(category_columns),
                     declared_structure, merged)


def repeated_cells(hierarchy: Hierarchy, cells: np.ndarray, categories: tuple[str, ...],
                   category_columns: Sequence[str], duplicates: str,
                   duplicate_cell: str = "unit and category", *,
                   n_distinct: int | None = None) -> int:
    """`repeated_rows` of rows at ``cells`` (leaf x the number of categories + category):
    how many repeat an earlier row's cell, or its `DuplicateRowsError` naming the unit and
    category of the first repeated (``n_distinct``: the distinct cells, when known)."""
    k = len(categories)
    return repeated_rows(cells, duplicates, duplicate_cell, n_distinct=n_distinct,
                         name=lambda c: unit_category(hierarchy, c // k, category_columns,
                                                      categories[c % k]))


def _category_index(table: pd.DataFrame, columns: list[str],
                    declared: Mapping[str, Sequence[str]] | None = None,
                    ) -> tuple[np.ndarray, tuple]:
    """Index of every row in the cartesian product of the category columns' values: the
    declared ones where given, else the distinct values of the data (sorted)."""
    values = dict(declared or {})
    for col in columns:
        if col not in values:
            values[col] = distinct_codes(table[col], col)
    return category_index(table, columns, values)
