"""Group-size histograms on a geographic hierarchy (the confidential input of group-size
mechanisms), and the conversions and metrics every group-size mechanism shares.

Model (Fioretto, Van Hentenryck & Zhu 2021; Kuo et al. 2018). People belong to groups
(households); every group lies in one leaf region. The set of groups, their regions, hence
the number of groups ``G_v`` of every region and the total ``G``, are **public**; the sizes
are not. Public means declared (``group_counts``, `hierdp_core.groupsizes.declared_groups`):
without a declaration they are counted from the records, and the data says so
(``groups_declared`` False; a release keeping them exactly is then not publishable). Sizes
are top-coded at a public ``N`` (``max_size``): a group of N or more people counts as size
N; and bottom-coded at a public minimum ``m`` (``min_size``, default 0): a group of fewer
people (a declared group with no member in the data, e.g. in a neighbouring dataset)
counts as size m. Bins are sizes ``m..N``, column ``s - m`` holding size s.

Neighbouring datasets: one person is added to, or removed from, an existing group. At
every level that moves one group of one region by one size (nothing moves at the top code):
the plain histogram of a level changes by L1 = 2, the per-region cumulative histogram
``c_s = #groups of size <= s`` by L1 = 1 (one cell). Levels compose sequentially.

Arrays: ``hist`` has shape (n_nodes, N + 1), column s = number of groups of size s;
``cumulative(hist)`` has the same shape with last column = G_v (shape (n_nodes, N - m + 1)
with a minimum size m).

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

from hierdp_core.data.duplicates import leaf_id, repeated_rows
from hierdp_core.data.integers import sum_by_cell
from hierdp_core.data.loaders import (
    check_cells,
    default_max_cells,
    validate_columns,
    validate_counts,
)
from hierdp_core.data.unit_names import unit_names
from hierdp_core.errors import InputError
from hierdp_core.groupsizes.declared_groups import with_declared_groups
from hierdp_core.hierarchy import build_hierarchy
from hierdp_core.queries.counts import CountData
from hierdp_core.structure import Geography

MAX_SIZE_LIMIT = 100_000
SIZE_COLUMN = "size"


@dataclass(frozen=True, eq=False)
class GroupSizeData(CountData):
    """Per-leaf group-size histograms (confidential): ``leaf_counts`` has shape
    (n_leaves, max_size - min_size + 1), categories are the sizes ``'m'..'N'``. ``groups()``
    (G per node) is public by the model: declared when ``groups_declared``, else counted
    from the records."""

    max_size: int = 0
    top_coded: int = 0  # groups whose true size exceeded max_size (evaluation only)
    min_size: int = 0
    groups_declared: bool = False

    def node_counts(self) -> np.ndarray:
        """True histograms of every node, shape (n_nodes, max_size - min_size + 1),
        computed once (a sweep releases the same data many times) and read-only."""
        return self._node_counts

    @cached_property
    def _node_counts(self) -> np.ndarray:
        counts = super().node_counts()
        counts.flags.writeable = False
        return counts

    def groups(self) -> np.ndarray:
        """Number of groups of every node (public), shape (n_nodes,), computed once and
        read-only."""
        return self._groups

    @cached_property
    def _groups(self) -> np.ndarray:
        groups = self.node_totals()
        groups.flags.writeable = False
        return groups

    @property
    def total_groups(self) -> int:
        return int(self.leaf_counts.sum())


def check_max_size(max_size) -> int:
    if isinstance(max_size, bool) or not isinstance(max_size, int | np.integer) \
            or not 1 <= int(max_size) <= MAX_SIZE_LIMIT:
        raise InputError(f"max_size (the public top-code N) must be an integer from 1 to "
                         f"{MAX_SIZE_LIMIT:,}, got {max_size!r}")
    return int(max_size)


def check_size_domain(min_size, max_size) -> tuple[int, int]:
    """(m, N) of the public size domain m..N, or `InputError` (one line)."""
    max_size = check_max_size(max_size)
    if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer) \
            or not 0 <= int(min_size) < max_size:
        raise InputError(f"min_size (the public smallest group size m) must be an integer "
                         f"from 0 to max_size - 1 = {max_size - 1:,}, got {min_size!r}")
    return int(min_size), max_size


def size_categories(min_size: int, max_size: int) -> tuple[str, ...]:
    """The released sizes ``'m'..'N'``."""
    return tuple(str(s) for s in range(min_size, max_size + 1))


def size_columns(sizes: np.ndarray, min_size: int, max_size: int) -> np.ndarray:
    """The histogram column of every size: bottom-coded at m, top-coded at N."""
    return np.clip(sizes, min_size, max_size) - min_size


def size_coding(sizes: Sequence[str]) -> str:
    """The manifest's words on the released sizes (``sizes``: m..N in order), which are
    top-coded at N and bottom-coded at m (`size_columns`).

    >>> size_coding(["1", "2", "3"])
    'size 3 counts every group of 3 or more (top-coded at the public largest size); size 1 every group of 1 or fewer (bottom-coded at the public smallest size)'
    """
    first, last = sizes[0], sizes[-1]
    bottom = ("" if int(first) == 0 else f"; size {first} every group of {first} or fewer "
              "(bottom-coded at the public smallest size)")
    return (f"size {last} counts every group of {last} or more (top-coded at the public "
            f"largest size){bottom}")


def _hierarchy(table, levels, local_codes, name_columns, geography: Geography | None,
               width: int, max_cells: int | None):
    """The tree (the declared geography's, or read from the data), the leaf of every row,
    and the unit names (if any); `SizeLimitError` before the histograms are allocated when
    units x ``width`` sizes exceed ``max_cells`` (None: this machine's default)."""
    levels = list(levels)
    validate_columns(table, levels, "geography level")
    if geography is not None:
        if name_columns:
            raise InputError("with a geography, unit names come from the geography's name "
                             "columns")
        h, leaf = geography.hierarchy, geography.leaf_of_rows(table, levels)
    else:
        h, leaf = build_hierarchy(table, levels, local_codes=local_codes)
    check_cells(h.n_leaves * width, default_max_cells() if max_cells is None else max_cells,
                f"{h.n_leaves:,} units x {width:,} sizes")
    if name_columns and geography is None:
        h = h.with_names(unit_names(table, h, leaf, levels, name_columns))
    return h, leaf


def _data(hierarchy, leaf_hist: np.ndarray, domain: tuple[int, int], top_coded: int,
          declared: bool, group_counts) -> GroupSizeData:
    """The GroupSizeData of ``leaf_hist`` (sizes ``domain`` = (m, N)), with the declared
    ``group_counts`` (None: counted from the records) filled in as groups of size m."""
    groups_declared = False
    if group_counts is not None:
        leaf_hist, groups_declared = with_declared_groups(hierarchy, leaf_hist, group_counts)
    min_size, max_size = domain
    return GroupSizeData(hierarchy, leaf_hist, size_categories(min_size, max_size),
                         (SIZE_COLUMN,), declared_structure=declared, max_size=max_size,
                         top_coded=top_coded, min_size=min_size,
                         groups_declared=groups_declared)


def group_size_data_from_people(
    table: pd.DataFrame,
    levels: Sequence[str],
    group_column: str,
    *,
    max_size: int,
    min_size: int = 0,
    count_column: str | None = None,
    local_codes: bool = False,
    name_columns: dict[str, str] | None = None,
    geography: Geography | None = None,
    max_cells: int | None = None,
    group_counts=None,
) -> GroupSizeData:
    """Histograms from person records: one row per person (or ``count_column`` persons per
    row) with the group id in ``group_column``. A group must lie in one leaf region (it is
    an error naming the group otherwise); sizes above ``max_size`` are top-coded, below
    ``min_size`` bottom-coded.

    ``group_counts``: the declared number of groups of leaf regions (`DeclaredGroups`, or
    an array of one count per leaf, or a mapping from the leaf code to a count whose leaves
    not named have the groups of their records: `declared_groups.leaf_group_counts`).
    Person records only show groups with members: a leaf declared with more groups has
    the others as groups of size ``min_size`` (an error if it is declared with fewer).

    ``geography``: the declared regions (a region with no group gets an all-zero
    histogram; a row outside the geography is an error); with it and the public
    ``max_size`` the shape is declared (``declared_structure``). ``max_cells``: the cap on
    units x sizes (`SizeLimitError`; None: sized to this machine's memory)."""
    domain = check_size_domain(min_size, max_size)
    width = domain[1] - domain[0] + 1
    validate_columns(table, [group_column], "group")
    h, leaf = _hierarchy(table, levels, local_codes, name_columns, geography, width,
                         max_cells)
    groups = table[group_column]
    missing = groups.isna().to_numpy()
    if missing.any():
        rows = (np.flatnonzero(missing)[:5] + 1).tolist()
        raise InputError(f"group column {group_column!r} has {int(missing.sum())} missing "
                         f"value(s), e.g. in rows {rows}")
    persons = (np.ones(len(table), dtype=np.int64) if count_column is None
               else validate_counts(table, count_column, roles=[*levels, group_column]))
    group_id, group_names = pd.factorize(groups.astype(str))
    first_leaf = np.full(len(group_names), -1, dtype=np.int64)
    first_leaf[group_id[::-1]] = leaf[::-1]  # leaf of each group's first row
    split = np.flatnonzero(first_leaf[group_id] != leaf)
    if split.size:
        raise spanning_groups(pd.unique(group_names[group_id[split]]), levels[-1])
    sizes = sum_by_cell(group_id, persons, len(group_names))
    top_coded = int(np.count_nonzero(sizes > domain[1]))
    cells = first_leaf * width + size_columns(sizes, *domain)
    leaf_hist = np.bincount(cells, minlength=h.n_leaves * width).reshape(
        h.n_leaves, width).astype(np.int64)
    return _data(h, leaf_hist, domain, top_coded, geography is not None, group_counts)


def spanning_groups(names, leaf_level: str) -> InputError:
    """The error for groups (``names``, up to five named) with people in several leaves."""
    return InputError(f"group(s) {list(names)[:5]} have people in more than one leaf "
                      f"region; a group must lie in one {leaf_level!r}")


def group_size_data_from_histograms(
    table: pd.DataFrame,
    levels: Sequence[str],
    size_column: str,
    count_column: str,
    *,
    max_size: int,
    min_size: int = 0,
    local_codes: bool = False,
    name_columns: dict[str, str] | None = None,
    geography: Geography | None = None,
    duplicates: str = "sum",
    max_cells: int | None = None,
    group_counts=None,
) -> GroupSizeData:
    """Histograms from rows (leaf geography, size, number of groups of that size); sizes
    are non-negative integers, top-coded at ``max_size`` and bottom-coded at ``min_size``.
    Rows repeating a unit and size as written are summed (``duplicates="sum"``, counted
    in ``merged_rows``) or refused (``"error"``); sizes the declared domain codes to one
    size (above ``max_size``, below ``min_size``) are summed as declared, never a repeat.
    ``geography``, ``max_cells`` and ``group_counts`` as in `group_size_data_from_people`."""
    domain = check_size_domain(min_size, max_size)
    width = domain[1] - domain[0] + 1
    sizes = validate_counts(table, size_column, role="size")
    counts = validate_counts(table, count_column, roles=[*levels, size_column])
    h, leaf = _hierarchy(table, levels, local_codes, name_columns, geography, width,
                         max_cells)
    top_coded = int(counts[sizes > domain[1]].sum())
    cells = leaf * width + size_columns(sizes, *domain)
    span = int(sizes.max(initial=0)) + 1  # the sizes as written, before any coding
    written = None  # sizes this large are numbered in order instead
    if h.n_leaves * span >= 2**62:
        written, codes = np.unique(sizes, return_inverse=True)
        span = written.size
    raw = leaf.astype(np.int64) * span + (sizes if written is None else codes)
    dense = h.n_leaves * span <= 4 * raw.size + (1 << 20)  # else counted by sorting
    merged = repeated_rows(raw, duplicates, "unit and size",
                           n_distinct=None if dense else np.unique(raw).size,
                           name=lambda c: f"unit {leaf_id(h, c // span)}, size "
                                          f"{c % span if written is None else written[c % span]}")
    leaf_hist = sum_by_cell(cells, counts, h.n_leaves * width)
    return replace(_data(h, leaf_hist.reshape(h.n_leaves, width), domain, top_coded,
                         geography is not None, group_counts), merged_rows=merged)


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
