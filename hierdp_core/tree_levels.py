"""The nodes of every level of a tree, from one code array per level (one entry per row).

Both functions return, coarse level first, the parent of each node (its index within the
level above) and its code, with the nodes of a level ordered by (parent, code), and the
leaf (index within the leaf level) of every row; `hierdp_core.hierarchy.build_from_codes`
assembles the `Hierarchy` from them.

* `levels_in_tree_order`: rows already sorted by their codes (coarse level first, e.g. a
  file sorted by GEOID) in one pass per level, without sorting: O(rows) per level;
* `levels_any_order`: any rows, by factorising the codes and sorting (parent, code) pairs;
  codes that do not nest are a `HierarchyError` naming them and their rows, or, when they
  nest with the levels in another order, fewest codes first, a `LevelOrderError` naming it.

Example
-------
>>> parents, codes, leaf = levels_in_tree_order([np.array([1, 1, 2]), np.array([7, 8, 9])],
...                                             local_codes=False)
>>> [p.tolist() for p in parents], [c.tolist() for c in codes], leaf.tolist()
([[0, 0], [0, 0, 1]], [[1, 2], [7, 8, 9]], [0, 1, 2])
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierdp_core.errors import HierarchyError, LevelOrderError

_MAX_LISTED = 5


def _ordered_codes(raw) -> tuple[np.ndarray, np.ndarray | None]:
    """(keys, table): numeric keys, one per row, ordered like the codes, and the code of
    each key (None: a key is its code). Numbers are their own keys, a Categorical's keys
    are its codes (its categories are sorted), anything else is factorised (sorted)."""
    if isinstance(raw, pd.Categorical):
        return raw.codes, np.asarray(raw.categories)
    values = np.asarray(raw)
    if values.dtype.kind in "biuf":
        return values, None
    keys, uniques = pd.factorize(values, sort=True)
    return keys, np.asarray(uniques)


def levels_in_tree_order(level_codes, local_codes: bool):
    """The levels of rows already in tree order (sorted by their codes, coarse level first,
    e.g. a file sorted by GEOID), each in one pass without sorting: per level the parent
    (within the level above) and the code of each node, and the leaf of every row. None when
    the rows are not in that order, or a non-local code repeats in its level in a way this
    pass cannot tell apart from a code under two parents (`levels_any_order` decides)."""
    n_rows = len(level_codes[0])
    row_node = np.zeros(n_rows, dtype=np.int64)
    starts_node = np.zeros(n_rows, dtype=bool)  # the row starts a node of the level above
    starts_node[0] = True
    parents, codes = [], []
    for raw in level_codes:
        keys, table = _ordered_codes(raw)
        if np.any((keys[1:] < keys[:-1]) & ~starts_node[1:]):
            return None  # a code goes down within its parent: not in tree order
        starts_node[1:] |= keys[1:] != keys[:-1]
        first = np.flatnonzero(starts_node)
        node_keys = keys[first]
        if not local_codes and not np.all(node_keys[1:] > node_keys[:-1]):
            return None
        parents.append(row_node[first])
        codes.append(node_keys if table is None else table[node_keys])
        row_node = np.cumsum(starts_node, dtype=np.int64)
        row_node -= 1
    return parents, codes, row_node


def levels_any_order(level_codes, level_names, local_codes: bool, row_labels):
    """`levels_in_tree_order` for rows in any order: codes factorised and (parent, code)
    pairs made unique by sorting."""
    row_node = np.zeros(len(level_codes[0]), dtype=np.int64)  # node within the level above
    parents, codes_per_level = [], []
    parent_codes = None
    for li, raw in enumerate(level_codes):
        codes, uniques = pd.factorize(raw if isinstance(raw, pd.Categorical)
                                      else np.asarray(raw), sort=True)
        codes = codes.astype(np.int64)
        n_parent = 1 if li == 0 else parents[-1].size
        key = codes * n_parent + row_node
        pair_keys, inverse = np.unique(key, return_inverse=True)
        pair_code, pair_parent = np.divmod(pair_keys, n_parent)
        if not local_codes:
            try:
                _check_single_parent(pair_code, pair_parent, uniques, parent_codes,
                                     level_names, li, codes, row_node, row_labels)
            except HierarchyError:
                _refuse_finest_first(level_codes, level_names, row_labels)
                raise
        # order nodes by (parent, code)
        order = np.lexsort((pair_code, pair_parent))
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        row_node = rank[inverse]
        parents.append(pair_parent[order])
        codes_per_level.append(np.asarray(uniques)[pair_code[order]])
        parent_codes = codes_per_level[-1]
    return parents, codes_per_level, row_node


def _refuse_finest_first(level_codes, level_names, row_labels) -> None:
    """A `LevelOrderError` when the levels ordered by their number of distinct codes (fewest
    first, and more than one) differ from the order named and nest: they were named finest
    first."""
    sizes = [len(pd.unique(raw)) for raw in level_codes]
    order = sorted(range(len(sizes)), key=sizes.__getitem__)
    if order == sorted(order) or sizes[order[0]] < 2:  # one code: a total, not a level
        return
    try:
        levels_any_order([level_codes[i] for i in order], [level_names[i] for i in order],
                         False, row_labels)
    except HierarchyError:
        return  # they do not nest that way either: the codes say where
    raise LevelOrderError(level_names, [level_names[i] for i in order])


def _check_single_parent(pair_code, pair_parent, uniques, parent_codes, level_names, li,
                         row_codes, row_parent, row_labels):
    n_parents = np.bincount(pair_code, minlength=len(uniques))
    bad = np.flatnonzero(n_parents > 1)
    if bad.size == 0:
        return
    parent_level = "root" if li == 0 else level_names[li - 1]
    lines = []
    for c in bad[:_MAX_LISTED]:
        ps = pair_parent[pair_code == c]
        rows = [np.flatnonzero((row_codes == c) & (row_parent == p))[0] for p in ps[:3]]
        if row_labels is not None:
            rows = [row_labels[r] for r in rows]
        lines.append(
            f"{level_names[li]} {uniques[c]!r} lies in {parent_level} "
            + ", ".join(repr(str(parent_codes[p])) for p in ps[:3])
            + f" (rows {', '.join(str(r) for r in rows)})"
        )
    more = f" and {bad.size - _MAX_LISTED} more" if bad.size > _MAX_LISTED else ""
    raise HierarchyError(
        f"the levels do not nest: {bad.size} {level_names[li]} value(s) have more than one "
        f"{parent_level}: " + "; ".join(lines) + more
        + ". If these codes are only unique within their parent, use local codes."
    )
