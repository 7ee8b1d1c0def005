"""The geographic tree as flat arrays, and level-wise aggregation.

Nodes are numbered level by level (root = 0), and within a level by (parent, code), so the
children of every node are one contiguous run of the next level. All per-level work is then a
numpy segment operation (`np.add.reduceat` over `child_ptr`), never a Python loop per node.

Example
-------
>>> import pandas as pd
>>> t = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"], "n": [3, 4, 5]})
>>> h, leaf = build_hierarchy(t, ["state", "county"])
>>> h.aggregate(np.bincount(leaf, weights=t["n"], minlength=h.n_leaves)).tolist()
[12.0, 7.0, 5.0, 3.0, 4.0, 5.0]
>>> h.node_ids().tolist()
['root', 'A', 'B', 'A/a1', 'A/a2', 'B/b1']

Node ids escape the characters that separate them (`escape_codes`), so any code is allowed:

>>> h, _ = build_hierarchy(pd.DataFrame({"a": ["A/B", "A"], "b": ["x", "B/x"]}), ["a", "b"])
>>> h.node_ids().tolist()
['root', 'A', 'A%2FB', 'A/B%2Fx', 'A%2FB/x']
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np
import pandas as pd

from hierdp_core.errors import HierarchyError, InputError
from hierdp_core.ids import PATH_SEPARATOR, ROOT_ID, escape_codes
from hierdp_core.text_arrays import packed, sorted_int_texts, unpacked
from hierdp_core.tree_levels import levels_any_order, levels_in_tree_order

_MAX_LISTED = 5
T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A rooted tree whose leaves all sit at the deepest level.

    Attributes
    ----------
    level_names: names of levels, root first (``level_names[0]`` is the root's name).
    level_offsets: nodes of level ``l`` are ``range(level_offsets[l], level_offsets[l + 1])``.
    parent: parent index of every node, -1 at the root.
    child_ptr: children of node ``v`` are ``range(child_ptr[v], child_ptr[v + 1])``.
    codes: for each level, the code (the value in the input column) of each node of that level.
    names: optional readable names (public metadata, e.g. 'Los Angeles' for '06037'): a
        mapping level -> one name per node of that level; see `with_names`.
    """

    level_names: tuple[str, ...]
    level_offsets: np.ndarray
    parent: np.ndarray
    child_ptr: np.ndarray
    codes: tuple[np.ndarray, ...]
    names: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __reduce__(self):
        """Pickled with its text codes and names as pyarrow arrays
        (`hierdp_core.text_arrays.packed`): a buffer each instead of a Python string per
        node (a geography sent to every Dask worker)."""
        return (_unpacked, (type(self), self.level_names, self.level_offsets, self.parent,
                            self.child_ptr, tuple(map(packed, self.codes)),
                            {lv: packed(v) for lv, v in self.names.items()}, self._cache))

    # ---- shape -------------------------------------------------------------------------
    @property
    def n_levels(self) -> int:
        """Number of levels including the root."""
        return len(self.level_names)

    @property
    def depth(self) -> int:
        """Index of the leaf level."""
        return self.n_levels - 1

    @property
    def n_nodes(self) -> int:
        return int(self.level_offsets[-1])

    @property
    def n_leaves(self) -> int:
        return self.level_size(self.depth)

    def level_slice(self, level: int) -> slice:
        return slice(int(self.level_offsets[level]), int(self.level_offsets[level + 1]))

    def level_size(self, level: int) -> int:
        return int(self.level_offsets[level + 1] - self.level_offsets[level])

    def level_of_nodes(self) -> np.ndarray:
        """Level of every node (int32 array of length n_nodes)."""
        sizes = np.diff(self.level_offsets)
        return np.repeat(np.arange(self.n_levels, dtype=np.int32), sizes)

    def derived(self, key: Hashable, build: Callable[[], T]) -> T:
        """``build()``, computed once per hierarchy and ``key``: for what depends on the
        tree's shape and ``key`` alone (e.g. a solver's constraint matrices), reused by every
        release over this hierarchy. The result is shared: treat it as read-only."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def child_starts(self, level: int) -> np.ndarray:
        """For level >= 1: offsets, within that level, where each parent's run of children starts.

        Suitable for ``np.add.reduceat(values_of_level, starts)``; one entry per node of
        ``level - 1``, in node order.
        """
        parents = self.level_slice(level - 1)
        return (self.child_ptr[parents] - self.level_offsets[level]).astype(np.int64)

    def segment_of_level(self, level: int) -> np.ndarray:
        """For level >= 1: the index (within level - 1) of each node's parent."""
        sl = self.level_slice(level)
        return self.parent[sl] - self.level_offsets[level - 1]

    def children(self, node: int) -> np.ndarray:
        return np.arange(self.child_ptr[node], self.child_ptr[node + 1])

    # ---- aggregation -------------------------------------------------------------------
    def aggregate(self, leaf_values: np.ndarray) -> np.ndarray:
        """Sum leaf values up the tree.

        ``leaf_values`` has shape (n_leaves,) or (n_leaves, k); the result has shape
        (n_nodes,) or (n_nodes, k) with every parent equal to the sum of its children.
        """
        leaf_values = np.asarray(leaf_values)
        if leaf_values.shape[0] != self.n_leaves:
            raise InputError(
                f"expected {self.n_leaves} leaf values, got {leaf_values.shape[0]}"
            )
        out = np.empty((self.n_nodes,) + leaf_values.shape[1:], dtype=leaf_values.dtype)
        out[self.level_slice(self.depth)] = leaf_values
        for level in range(self.depth, 0, -1):
            child_values = out[self.level_slice(level)]
            out[self.level_slice(level - 1)] = np.add.reduceat(
                child_values, self.child_starts(level), axis=0
            )
        return out

    def consistency_violations(self, values: np.ndarray, tol: float = 0.0) -> int:
        """Number of (parent, column) cells where the parent differs from its children's sum."""
        values = np.asarray(values)
        count = 0
        for level in range(1, self.n_levels):
            sums = np.add.reduceat(values[self.level_slice(level)], self.child_starts(level), axis=0)
            count += int(np.count_nonzero(np.abs(values[self.level_slice(level - 1)] - sums) > tol))
        return count

    # ---- names ----------------------------------------------------------------------------
    def pass_through(self) -> np.ndarray:
        """Mask of the nodes that are their parent passing through their level (a ragged
        hierarchy: the unit has no subdivision at that level, so its code there repeats its
        parent's code); False at the root and level 1."""
        if "pass_through" not in self._cache:
            parts = [np.zeros(int(self.level_offsets[min(2, self.n_levels)]), dtype=bool)]
            for level in range(2, self.n_levels):
                codes = np.asarray(self.codes[level]).astype(str)
                parents = np.asarray(self.codes[level - 1]).astype(str)
                parts.append(codes == parents[self.segment_of_level(level)])
            self._cache["pass_through"] = np.concatenate(parts)
        return self._cache["pass_through"]

    def labels(self) -> np.ndarray:
        """A label per node: its name where `names` has one, else its code (the root's is the
        root level's name); a node passing its parent through its level (`pass_through`) is
        labelled ``"<parent label> (no <level name>)"``, e.g. ``06 (no county)``."""
        if "labels" not in self._cache:
            through = self.pass_through()
            parts = [np.array([self.level_names[0]], dtype=object)]
            for level in range(1, self.n_levels):
                label = pd.Series(np.asarray(self.names.get(level, self.codes[level]))
                                  .astype(str), dtype=object)
                mask = through[self.level_slice(level)]
                if mask.any():
                    parent = pd.Series(parts[-1][self.segment_of_level(level)[mask]],
                                       dtype=object)
                    label[mask] = (parent + f" (no {self.level_names[level]})").to_numpy()
                parts.append(label.to_numpy(dtype=object))
            self._cache["labels"] = np.concatenate(parts)
        return self._cache["labels"]

    def with_names(self, names: dict[int, np.ndarray]) -> Hierarchy:
        """A copy with readable node names for some levels (level -> one name per node)."""
        for level, values in names.items():
            if not 1 <= level < self.n_levels or len(values) != self.level_size(level):
                raise InputError(f"names for level {level} must have one entry per node "
                                 f"({self.level_size(level) if 0 < level < self.n_levels else 0})")
        return replace(self, names={**self.names, **names}, _cache={})

    def id_codes(self, level: int) -> np.ndarray:
        """The codes of a level as written in ids (`escape_codes`)."""
        key = ("id_codes", level)
        if key not in self._cache:
            self._cache[key] = escape_codes(self.codes[level]).to_numpy(dtype=object)
        return self._cache[key]

    def node_ids(self) -> np.ndarray:
        """Stable ids: the path of escaped codes (`escape_codes`) below the root joined by
        '/', e.g. ``06/06037``; `split_node_id` gives the codes back."""
        if "ids" not in self._cache:
            ids = [pd.Series([ROOT_ID])]
            prev = None
            for level in range(1, self.n_levels):
                code = pd.Series(self.id_codes(level))
                if prev is None:
                    cur = code
                else:
                    cur = (prev.iloc[self.segment_of_level(level)].reset_index(drop=True)
                           + PATH_SEPARATOR + code)
                ids.append(cur)
                prev = cur
            self._cache["ids"] = pd.concat(ids, ignore_index=True).to_numpy(dtype=object)
        return self._cache["ids"]

    def parent_ids(self) -> np.ndarray:
        """Id of every node's parent ('' at the root)."""
        ids = self.node_ids()
        out = np.empty(self.n_nodes, dtype=object)
        out[0] = ""
        out[1:] = ids[self.parent[1:]]
        return out

    def summary(self, leaf_totals: np.ndarray | None = None) -> pd.DataFrame:
        """One row per level: units, and with ``leaf_totals`` min / median / max / empty units."""
        rows = []
        totals = None if leaf_totals is None else self.aggregate(np.asarray(leaf_totals))
        for level, name in enumerate(self.level_names):
            row = {"level": level, "level_name": name, "units": self.level_size(level)}
            if totals is not None:
                v = totals[self.level_slice(level)]
                row.update(
                    min=float(v.min()), median=float(np.median(v)), max=float(v.max()),
                    empty_units=int(np.count_nonzero(v == 0)),
                )
            rows.append(row)
        return pd.DataFrame(rows)


# ---- construction ----------------------------------------------------------------------
def build_from_codes(
    level_codes: Sequence[np.ndarray],
    level_names: Sequence[str],
    *,
    root_name: str = "total",
    local_codes: bool = False,
    row_labels: np.ndarray | None = None,
) -> tuple[Hierarchy, np.ndarray]:
    """Build a Hierarchy from one code array per level (coarse to fine), one entry per row.

    Codes are any sortable values (ints or strings, no missing values), or a
    ``pd.Categorical`` whose categories are sorted (see `level_codes`). With
    ``local_codes=False`` a code names the same unit wherever it appears in its level, so a
    code under two different parents is a `HierarchyError`; with ``local_codes=True`` a code
    is only unique within its parent (e.g. 3-digit county codes within a state).
    Returns the hierarchy and, for every row, the index of its leaf within the leaf level.
    """
    if len(level_codes) == 0:
        raise HierarchyError("at least one geography level is needed")
    if len(level_codes) != len(level_names):
        raise HierarchyError("one name per level is needed")
    if len(level_codes[0]) == 0:
        raise InputError("the table has no rows")
    levels = levels_in_tree_order(level_codes, local_codes)
    if levels is None:
        levels = levels_any_order(level_codes, level_names, local_codes, row_labels)
    parents, codes_per_level, row_node = levels
    sizes = [1] + [p.size for p in parents]
    level_offsets = np.cumsum([0] + sizes).astype(np.int64)
    parent = np.concatenate([np.array([-1], dtype=np.int64)]
                            + [p + level_offsets[i] for i, p in enumerate(parents)])
    counts = np.bincount(parent[1:], minlength=level_offsets[-1])
    child_ptr = np.concatenate([[1], 1 + np.cumsum(counts)]).astype(np.int64)
    h = Hierarchy(
        level_names=(root_name, *level_names),
        level_offsets=level_offsets,
        parent=parent,
        child_ptr=child_ptr,
        codes=(np.array([root_name], dtype=object), *codes_per_level),
    )
    return h, row_node


def build_hierarchy(
    table: pd.DataFrame,
    levels: Sequence[str],
    *,
    root_name: str = "total",
    local_codes: bool = False,
) -> tuple[Hierarchy, np.ndarray]:
    """Build the tree from the level columns of a table (coarse to fine).

    Raises `InputError` for missing columns and `HierarchyError` for missing level values
    or levels that do not nest, naming the values and rows at fault (rows are 1-based data
    rows, header excluded). Returns the hierarchy and the leaf index of every row.
    """
    levels = list(levels)
    if not levels:
        raise HierarchyError("choose at least one geography level")
    if len(set(levels)) != len(levels):
        raise HierarchyError(f"a level is listed twice: {levels}")
    missing = [c for c in levels if c not in table.columns]
    if missing:
        raise InputError(
            f"column(s) {missing} not found; the table has {list(map(str, table.columns))}"
        )
    if len(table) == 0:
        raise InputError("the table has no rows")
    row_labels = np.arange(1, len(table) + 1)
    arrays = []
    for col in levels:
        series = table[col]
        na = missing_values(series)
        if na.any():
            rows = row_labels[na][:_MAX_LISTED].tolist()
            raise HierarchyError(
                f"level column {col!r} has {int(na.sum())} missing value(s), e.g. in rows {rows}"
            )
        arrays.append(level_codes(series))
    return build_from_codes(arrays, levels, root_name=root_name, local_codes=local_codes,
                            row_labels=row_labels)


def missing_values(series: pd.Series) -> np.ndarray:
    """Mask of missing values: NaN/None, and blank strings in text columns."""
    na = series.isna().to_numpy().copy()
    if isinstance(series.dtype, pd.CategoricalDtype):  # test the categories, not the rows
        blank = missing_values(pd.Series(np.asarray(series.cat.categories)))
        return na | np.append(blank, False)[series.cat.codes.to_numpy()]
    if series.dtype == object or pd.api.types.is_string_dtype(series):
        na |= series.astype(str).str.strip().eq("").to_numpy()
    return na


def codes_of(series: pd.Series) -> np.ndarray:
    """Level codes as strings, with integral floats (from CSV) shown without '.0'."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return np.asarray(level_codes(series)).astype(object)
    if pd.api.types.is_float_dtype(series):
        values = series.to_numpy()
        if np.all(np.abs(values) < 2.0**63) and np.all(np.mod(values, 1) == 0):
            series = series.astype(np.int64)
    return series.astype(str).str.strip().to_numpy(dtype=object)


def level_codes(series: pd.Series) -> pd.Categorical:
    """`codes_of` for `build_from_codes`: a Categorical of the codes with sorted categories,
    the text made from the distinct values only (a Categorical column, e.g. read by pyarrow,
    gives its categories; any other column is factorised first): no Python string per row."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        rows, raw = series.cat.codes.to_numpy(), series.cat.categories
    else:
        rows, raw = pd.factorize(series)
    raw = np.asarray(raw)
    if raw.dtype.kind in "iu":  # distinct integers: distinct texts, sorted by pyarrow
        distinct, code = sorted_int_texts(raw)
    else:
        text = codes_of(pd.Series(raw))
        distinct, code = np.unique(text.astype(str), return_inverse=True)
    code = np.append(code, -1)[rows]  # a missing value stays missing
    return pd.Categorical.from_codes(code, categories=pd.Index(distinct.astype(object),
                                                               dtype=object))


def _unpacked(cls, level_names, level_offsets, parent, child_ptr, codes, names, cache):
    """The `Hierarchy` that `Hierarchy.__reduce__` pickled, object arrays back."""
    return cls(level_names, level_offsets, parent, child_ptr, tuple(map(unpacked, codes)),
               {lv: unpacked(v) for lv, v in names.items()}, cache)
