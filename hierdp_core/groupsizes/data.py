"""Group-size histograms on a geographic hierarchy (the confidential input of group-size
mechanisms), and the conversions and metrics every group-size mechanism shares.

Model (Fioretto, Van Hentenryck & Zhu 2021; Kuo et al. 2018). People belong to groups
(households); every group lies in one leaf region. The set of groups, their regions, hence
the number of groups ``G_v`` of every region and the total ``G``, are **public**; the sizes
are not. Sizes are top-coded at a public ``N`` (``max_size``): a group of N or more people
counts as size N. Bins are sizes ``0..N`` (a public group may have no member in a
neighbouring dataset, so size 0 is a bin).

Neighbouring datasets: one person is added to, or removed from, an existing group. At
every level that moves one group of one region by one size (nothing moves at the top code):
the plain histogram of a level changes by L1 = 2, the per-region cumulative histogram
``c_s = #groups of size <= s`` by L1 = 1 (one cell). Levels compose sequentially.

Arrays: ``hist`` has shape (n_nodes, N + 1), column s = number of groups of size s;
``cumulative(hist)`` has the same shape with last column = G_v.

Example
-------
>>> import pandas as pd
>>> people = pd.DataFrame({"state": ["GA"] * 5 + ["NY"] * 6,
...                        "household": list("AABAC") + list("DEDDFF")})
>>> d = group_size_data_from_people(people, ["state"], "household", max_size=5)
>>> d.node_counts().tolist()  # root, GA, NY; sizes 0..5
[[0, 3, 1, 2, 0, 0], [0, 2, 0, 1, 0, 0], [0, 1, 1, 1, 0, 0]]
>>> d.groups().tolist()
[6, 3, 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd

from hierdp_core.data.duplicates import repeated_rows
from hierdp_core.data.integers import sum_by_cell
from hierdp_core.data.loaders import (
    check_cells,
    default_max_cells,
    validate_columns,
    validate_counts,
)
from hierdp_core.errors import InputError
from hierdp_core.hierarchy import build_hierarchy
from hierdp_core.queries.counts import CountData, unit_names
from hierdp_core.structure import Geography

MAX_SIZE_LIMIT = 100_000
SIZE_COLUMN = "size"


@dataclass(frozen=True, eq=False)
class GroupSizeData(CountData):
    """Per-leaf group-size histograms (confidential): ``leaf_counts`` has shape
    (n_leaves, max_size + 1), categories are the sizes ``'0'..'N'``. ``groups()`` (G per
    node) is public by the model."""

    max_size: int = 0
    top_coded: int = 0  # groups whose true size exceeded max_size (evaluation only)

    def node_counts(self) -> np.ndarray:
        """True histograms of every node, shape (n_nodes, max_size + 1), computed once (a
        sweep releases the same data many times) and read-only."""
        return self._node_counts

    @cached_property
    def _node_counts(self) -> np.ndarray:
        counts = super().node_counts()
        counts.flags.writeable = False
        return counts

    def groups(self) -> np.ndarray:
        """Number of groups of every node (public), shape (n_nodes,)."""
        return self.node_totals()

    @property
    def total_groups(self) -> int:
        return int(self.leaf_counts.sum())


def check_max_size(max_size) -> int:
    if isinstance(max_size, bool) or not isinstance(max_size, int | np.integer) \
            or not 1 <= int(max_size) <= MAX_SIZE_LIMIT:
        raise InputError(f"max_size (the public top-code N) must be an integer from 1 to "
                         f"{MAX_SIZE_LIMIT:,}, got {max_size!r}")
    return int(max_size)


def _hierarchy(table, levels, local_codes, name_columns, geography: Geography | None,
               max_size: int, max_cells: int | None):
    """The tree (the declared geography's, or read from the data), the leaf of every row,
    and the unit names (if any); `SizeLimitError` before the histograms are allocated when
    units x sizes 0..``max_size`` exceed ``max_cells`` (None: this machine's default)."""
    levels = list(levels)
    validate_columns(table, levels, "geography level")
    if geography is not None:
        if name_columns:
            raise InputError("with a geography, unit names come from the geography's name "
                             "columns")
        h, leaf = geography.hierarchy, geography.leaf_of_rows(table, levels)
    else:
        h, leaf = build_hierarchy(table, levels, local_codes=local_codes)
    check_cells(h.n_leaves * (max_size + 1),
                default_max_cells() if max_cells is None else max_cells,
                f"{h.n_leaves:,} units x sizes 0..{max_size:,}")
    if name_columns and geography is None:
        h = h.with_names(unit_names(table, h, leaf, levels, name_columns))
    return h, leaf


def _data(hierarchy, leaf_hist: np.ndarray, max_size: int, top_coded: int,
          declared: bool) -> GroupSizeData:
    return GroupSizeData(hierarchy, leaf_hist, tuple(str(s) for s in range(max_size + 1)),
                         (SIZE_COLUMN,), declared_structure=declared, max_size=max_size,
                         top_coded=top_coded)


def group_size_data_from_people(
    table: pd.DataFrame,
    levels: Sequence[str],
    group_column: str,
    *,
    max_size: int,
    count_column: str | None = None,
    local_codes: bool = False,
    name_columns: dict[str, str] | None = None,
    geography: Geography | None = None,
    max_cells: int | None = None,
    group_counts=None,
) -> GroupSizeData:
    """Histograms from person records: one row per person (or ``count_column`` persons per
    row) with the group id in ``group_column``. A group must lie in one leaf region (it is
    an error naming the group otherwise); sizes above ``max_size`` are top-coded.

    ``group_counts``: the declared number of groups of leaf regions (a mapping or Series
    from the leaf code to a count; leaves not named have the groups of their records).
    Person records only show groups with members: a leaf declared with more groups has
    the others as groups of size 0 (an error if it is declared with fewer).

    ``geography``: the declared regions (a region with no group gets an all-zero
    histogram; a row outside the geography is an error); with it and the public
    ``max_size`` the shape is declared (``declared_structure``). ``max_cells``: the cap on
    units x sizes (`SizeLimitError`; None: sized to this machine's memory)."""
    max_size = check_max_size(max_size)
    validate_columns(table, [group_column], "group")
    h, leaf = _hierarchy(table, levels, local_codes, name_columns, geography, max_size,
                         max_cells)
    groups = table[group_column]
    missing = groups.isna().to_numpy()
    if missing.any():
        rows = (np.flatnonzero(missing)[:5] + 1).tolist()
        raise InputError(f"group column {group_column!r} has {int(missing.sum())} missing "
                         f"value(s), e.g. in rows {rows}")
    persons = (np.ones(len(table), dtype=np.int64) if count_column is None
               else validate_counts(table, count_column))
    group_id, group_names = pd.factorize(groups.astype(str))
    first_leaf = np.full(len(group_names), -1, dtype=np.int64)
    first_leaf[group_id[::-1]] = leaf[::-1]  # leaf of each group's first row
    split = np.flatnonzero(first_leaf[group_id] != leaf)
    if split.size:
        raise spanning_groups(pd.unique(group_names[group_id[split]]), levels[-1])
    sizes = sum_by_cell(group_id, persons, len(group_names))
    top_coded = int(np.count_nonzero(sizes > max_size))
    cells = first_leaf * (max_size + 1) + np.minimum(sizes, max_size)
    leaf_hist = np.bincount(cells, minlength=h.n_leaves * (max_size + 1)).reshape(
        h.n_leaves, max_size + 1).astype(np.int64)
    if group_counts is not None:
        leaf_hist[:, 0] += _empty_groups(h, leaf_hist.sum(axis=1), group_counts)
    return _data(h, leaf_hist, max_size, top_coded, geography is not None)


def spanning_groups(names, leaf_level: str) -> InputError:
    """The error for groups (``names``, up to five named) with people in several leaves."""
    return InputError(f"group(s) {list(names)[:5]} have people in more than one leaf "
                      f"region; a group must lie in one {leaf_level!r}")


def _empty_groups(h, observed: np.ndarray, group_counts) -> np.ndarray:
    """Groups of size 0 per leaf: the declared number of groups minus those with members."""
    declared = pd.Series(group_counts, dtype=object)
    leaf_of = pd.Series(np.arange(h.n_leaves), index=np.asarray(h.codes[h.depth]).astype(str))
    codes = declared.index.astype(str)
    unknown = codes[~codes.isin(leaf_of.index)]
    if unknown.size:
        raise InputError(f"group counts name unknown leaf region(s) {unknown[:5].tolist()}")
    counts = validate_counts(pd.DataFrame({"group_counts": declared.to_numpy()}),
                             "group_counts")
    total = observed.copy()
    total[leaf_of[codes].to_numpy()] = counts
    short = np.flatnonzero(total < observed)
    if short.size:
        bad = np.asarray(h.codes[h.depth])[short][:5].tolist()
        raise InputError(f"leaf region(s) {bad} are declared with fewer groups than their "
                         "person records show")
    return total - observed


def group_size_data_from_histograms(
    table: pd.DataFrame,
    levels: Sequence[str],
    size_column: str,
    count_column: str,
    *,
    max_size: int,
    local_codes: bool = False,
    name_columns: dict[str, str] | None = None,
    geography: Geography | None = None,
    duplicates: str = "sum",
    max_cells: int | None = None,
) -> GroupSizeData:
    """Histograms from rows (leaf geography, size, number of groups of that size); sizes
    are non-negative integers, top-coded at ``max_size``. Rows repeating a unit and size
    are summed (``duplicates="sum"``, counted in ``merged_rows``; sizes above ``max_size``
    are one size) or refused (``"error"``). ``geography`` and ``max_cells`` as in
    `group_size_data_from_people`."""
    max_size = check_max_size(max_size)
    sizes = validate_counts(table, size_column)
    counts = validate_counts(table, count_column)
    h, leaf = _hierarchy(table, levels, local_codes, name_columns, geography, max_size,
                         max_cells)
    top_coded = int(counts[sizes > max_size].sum())
    cells = leaf * (max_size + 1) + np.minimum(sizes, max_size)
    merged = repeated_rows(cells, duplicates, "unit and size")
    leaf_hist = sum_by_cell(cells, counts, h.n_leaves * (max_size + 1))
    return replace(_data(h, leaf_hist.reshape(h.n_leaves, max_size + 1), max_size, top_coded,
                         geography is not None), merged_rows=merged)


# ---- conversions and metrics -----------------------------------------------------------
def cumulative(hist: np.ndarray) -> np.ndarray:
    """``c[..., s] = #groups of size <= s`` (last column = number of groups)."""
    return np.cumsum(hist, axis=-1)


def decumulate(cum: np.ndarray) -> np.ndarray:
    """Inverse of `cumulative`."""
    return np.diff(cum, axis=-1, prepend=0)


def emd(true_hist: np.ndarray, released_hist: np.ndarray) -> np.ndarray:
    """Earth mover's distance per row (node) between histograms over the same sizes with
    the same number of groups: the L1 distance of the cumulative histograms, i.e. how many
    people must be added or removed to turn one into the other (Kuo et al. 2018)."""
    a, b = np.asarray(true_hist), np.asarray(released_hist)
    if a.shape != b.shape:
        raise InputError(f"histograms must have the same shape, got {a.shape} and {b.shape}")
    return np.abs(cumulative(a) - cumulative(b)).sum(axis=-1)


def group_size_metrics(data: GroupSizeData, released: np.ndarray) -> pd.DataFrame:
    """Per level: the paper's L1 error (sum over regions and sizes of |n - n_hat|), mean
    and max earth mover's distance per region, the faithfulness gap |sum - G| and the
    number of (parent, size) consistency violations. Reads the truth."""
    h = data.hierarchy
    truth = data.node_counts()
    released = np.asarray(released)
    node_emd = emd(truth, released)
    rows = []
    for level in range(h.n_levels):
        sl = h.level_slice(level)
        violations = 0
        if level + 1 < h.n_levels:
            sums = np.add.reduceat(released[h.level_slice(level + 1)], h.child_starts(level + 1),
                                   axis=0)
            violations = int(np.count_nonzero(released[sl] != sums))
        rows.append({
            "level": level, "level_name": h.level_names[level], "regions": h.level_size(level),
            "l1": float(np.abs(released[sl] - truth[sl]).sum()),
            "emd_mean": float(node_emd[sl].mean()), "emd_max": float(node_emd[sl].max()),
            "faithfulness_gap": float(abs(released[sl].sum() - data.total_groups)),
            "consistency_violations": violations,
        })
    return pd.DataFrame(rows)
