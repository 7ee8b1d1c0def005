"""Origin/destination flows on a geographic hierarchy, and the destination tree over them.

Input: trips (one row per trip, an origin and a destination leaf area) or an aggregated O/D
table (one row per pair with a count). One geography is used for both ends, and the set of
areas is **public** (as the Boninsegna-Silvestri paper assumes, and as the counts query
assumes of its units): a declared `hierdp_core.structure.Geography` (every area of it is an
origin and a destination, with or without trips; a trip outside it is an error), or, for
exploration only (``declared_structure=False``), the union of the areas seen as origin or
destination in the data.

The **destination tree** (depth ``T = 2g`` for ``g`` geography levels) has at level ``2k``
the intra-level pairs (origin at geo level k, destination at k) and at level ``2k + 1`` the
cross-level pairs (k, k + 1): going down, the destination is split first, then the origin.
The **origin tree** splits the origin first: (k, k) -> (k + 1, k) -> (k + 1, k + 1). Every
level of either tree partitions the trips, so each level is a histogram.

Only the non-zero pairs are stored (sorted keys per level); the dense leaf matrix (Italy:
65 million cells) is never built. Children of a tree node are enumerated from the public
geography (`FlowData.children`), zeros included.

Example
-------
>>> import pandas as pd
>>> trips = pd.DataFrame({"o_state": ["A", "A", "B"], "o_city": ["a1", "a2", "b1"],
...                       "d_state": ["B", "A", "B"], "d_city": ["b1", "a1", "b1"]})
>>> d = flow_data_from_trips(trips, ["o_state", "o_city"], ["d_state", "d_city"])
>>> d.n, d.depth, d.level_names
(3, 4, ('total', 'total>state', 'state>state', 'state>city', 'city>city'))
>>> [d.level_table(level)[1].tolist() for level in range(5)]  # non-zero pairs per level
[[3], [1, 2], [1, 1, 1], [1, 1, 1], [1, 1, 1]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hierdp_core.data.duplicates import check_policy, leaf_id, repeated_rows
from hierdp_core.data.integers import check_total, sum_by_cell
from hierdp_core.data.loaders import validate_columns, validate_counts
from hierdp_core.errors import InputError
from hierdp_core.hierarchy import Hierarchy, build_from_codes, codes_of, missing_values
from hierdp_core.structure import Geography

TREES = ("destination", "origin")
PAIR_SEPARATOR = ">"


@dataclass(frozen=True, eq=False)
class FlowData:
    """Non-zero leaf O/D pairs (confidential counts) over a public geography.

    ``origin``/``destination`` are leaf indices within the geography's leaf level, sorted by
    (origin, destination) and unique; ``counts`` are positive. ``n`` (the number of trips) is
    public under bounded DP (one trip per user, records substituted).
    """

    geography: Hierarchy
    origin: np.ndarray
    destination: np.ndarray
    counts: np.ndarray
    tree: str = "destination"
    #: True when the areas came from a declared geography, not from the data
    declared_structure: bool = False
    #: aggregated rows merged into another row of the same O/D pair (summed)
    merged_rows: int = 0
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if self.tree not in TREES:
            raise InputError(f"tree must be one of {TREES}, got {self.tree!r}")

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def geo_levels(self) -> int:
        """g: the number of geography levels below the root."""
        return self.geography.n_levels - 1

    @property
    def depth(self) -> int:
        """T = 2g, the depth of the O/D tree."""
        return 2 * self.geo_levels

    def pair_levels(self, level: int) -> tuple[int, int]:
        """(origin geo level, destination geo level) of a tree level 0..T."""
        k, odd = divmod(level, 2)
        if not odd:
            return k, k
        return (k, k + 1) if self.tree == "destination" else (k + 1, k)

    @property
    def level_names(self) -> tuple[str, ...]:
        """'total' then 'ORIGIN_LEVEL>DESTINATION_LEVEL' for every tree level below the root."""
        geo = self.geography.level_names
        names = [geo[0]]
        for level in range(1, self.depth + 1):
            lo, ld = self.pair_levels(level)
            names.append(f"{geo[lo]}{PAIR_SEPARATOR}{geo[ld]}")
        return tuple(names)

    def split_side(self, level: int) -> str:
        """Which end is refined from tree level ``level - 1`` to ``level``."""
        (lo0, _), (lo1, _) = self.pair_levels(level - 1), self.pair_levels(level)
        return "origin" if lo1 > lo0 else "destination"

    def level_width(self, geo_level: int) -> int:
        return self.geography.level_size(geo_level)

    def level_cells(self, level: int) -> int:
        """The public number of O/D pairs of tree level ``level`` (from the geography)."""
        lo, ld = self.pair_levels(level)
        return self.level_width(lo) * self.level_width(ld)

    def ancestors(self, geo_level: int) -> np.ndarray:
        """For every leaf area, the index (within its level) of its ancestor at ``geo_level``."""
        key = ("anc", geo_level)
        if key not in self._cache:
            h = self.geography
            node = np.arange(h.level_size(h.depth)) + h.level_offsets[h.depth]
            for _ in range(h.depth - geo_level):
                node = h.parent[node]
            self._cache[key] = node - h.level_offsets[geo_level]
        return self._cache[key]

    def level_table(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        """True counts of tree level ``level`` as (sorted pair keys, counts), non-zero pairs
        only. A key is ``origin * width(destination level) + destination`` (level indices)."""
        key = ("table", level)
        if key not in self._cache:
            lo, ld = self.pair_levels(level)
            keys = (self.ancestors(lo)[self.origin] * self.level_width(ld)
                    + self.ancestors(ld)[self.destination])
            uniq, inverse = np.unique(keys, return_inverse=True)
            self._cache[key] = (uniq, sum_by_cell(inverse, self.counts, uniq.size))
        return self._cache[key]

    def lookup(self, level: int, origin: np.ndarray, destination: np.ndarray) -> np.ndarray:
        """True counts of the given pairs of a tree level (0 where the pair has no trip)."""
        keys, counts = self.level_table(level)
        _, ld = self.pair_levels(level)
        wanted = np.asarray(origin, dtype=np.int64) * self.level_width(ld) + destination
        pos = np.minimum(np.searchsorted(keys, wanted), max(keys.size - 1, 0))
        found = keys.size > 0
        hit = (keys[pos] == wanted) if found else np.zeros(wanted.size, dtype=bool)
        return np.where(hit, counts[pos] if found else 0, 0).astype(np.int64)

    def children(self, level: int, origin: np.ndarray, destination: np.ndarray):
        """All children (from the public geography) of the given nodes of tree level
        ``level - 1``: returns (child origin, child destination, number of children per
        parent); children of one parent are contiguous, in the geography's order."""
        side = self.split_side(level)
        lo, ld = self.pair_levels(level - 1)
        split, keep = (origin, destination) if side == "origin" else (destination, origin)
        split_level = lo if side == "origin" else ld
        h = self.geography
        glob = np.asarray(split, dtype=np.int64) + h.level_offsets[split_level]
        first = h.child_ptr[glob]
        n_children = h.child_ptr[glob + 1] - first
        total = int(n_children.sum())
        ends = np.cumsum(n_children)
        child = np.arange(total, dtype=np.int64) + np.repeat(first - (ends - n_children),
                                                              n_children)
        child -= h.level_offsets[split_level + 1]
        other = np.repeat(np.asarray(keep, dtype=np.int64), n_children)
        if side == "origin":
            return child, other, n_children
        return other, child, n_children

    def area_ids(self, geo_level: int) -> np.ndarray:
        """Codes of the areas of a geography level (the root's is 'total')."""
        return np.asarray(self.geography.codes[geo_level]).astype(str).astype(object)


def _check_present(table: pd.DataFrame, columns: Sequence[str]) -> None:
    for col in columns:
        missing = missing_values(table[col])
        if missing.any():
            rows = (np.flatnonzero(missing)[:5] + 1).tolist()
            raise InputError(f"column {col!r} has {int(missing.sum())} missing value(s), "
                             f"e.g. in rows {rows}")


def _geo_name(origin: str, destination: str) -> str:
    """The level's name common to its origin and destination columns: ``state`` for
    ``o_state`` / ``d_state``, and for any two names that differ in their first or last
    word alone (``bo_fylke`` / ``arb_fylke``, ``gemeente_woon`` / ``gemeente_werk``);
    else both joined by '|'.

    >>> _geo_name("bo_fylke", "arb_fylke"), _geo_name("os", "ds")
    ('fylke', 'os|ds')
    """
    for prefix in ("o_", "origin_", "from_"):
        if origin.startswith(prefix):
            stripped = origin[len(prefix):]
            if destination in {f"d_{stripped}", f"destination_{stripped}", f"to_{stripped}"}:
                return stripped
    if origin == destination:
        return origin
    o, d = origin.split("_"), destination.split("_")
    if len(o) > 1 and len(d) > 1 and (o[1:] == d[1:] or o[:-1] == d[:-1]):
        return "_".join(o[1:] if o[1:] == d[1:] else o[:-1])
    return f"{origin}|{destination}"


def flow_data_from_table(
    table: pd.DataFrame,
    origin_levels: Sequence[str],
    destination_levels: Sequence[str],
    count_column: str | None = None,
    *,
    tree: str = "destination",
    root_name: str = "total",
    geography: Geography | None = None,
    duplicates: str = "sum",
    local_codes: bool = False,
) -> FlowData:
    """Flow data from trips (``count_column`` None: one row per trip) or an aggregated O/D
    table (one row per pair, possibly repeated, with a non-negative integer count).

    Origin and destination level columns are given coarse to fine, the same number of each;
    the k-th origin and destination columns use the same codes (one geography). Raises
    `InputError` / `HierarchyError` naming the column, rows or values at fault.
    ``geography``: the declared areas of both ends (`geography_for_flows` reads one), one
    level per pair of origin and destination columns; ``declared_structure`` then; else the
    areas are read from both ends' codes; with ``local_codes`` codes that repeat across
    parents are refused naming one (a released pair is named by its codes).
    ``duplicates``: rows of an O/D table that repeat a pair are summed (``"sum"``, counted
    in ``merged_rows``) or refused (``"error"``, the command line's and the API's default:
    `DuplicateRowsError` naming the first pair and its rows); trips are never duplicates.
    """
    check_policy(duplicates)
    repeats = None if count_column is None else duplicates
    origin_levels, destination_levels = list(origin_levels), list(destination_levels)
    if not origin_levels or len(origin_levels) != len(destination_levels):
        raise InputError("give the same number (at least one) of origin and destination "
                         f"levels, coarse to fine; got {origin_levels} and {destination_levels}")
    if len(set(origin_levels + destination_levels)) != 2 * len(origin_levels):
        raise InputError("origin and destination level columns must all be different, got "
                         f"{origin_levels} and {destination_levels}")
    validate_columns(table, origin_levels, "origin level")
    validate_columns(table, destination_levels, "destination level")
    if len(table) == 0:
        raise InputError("the table has no rows")
    _check_present(table, origin_levels + destination_levels)
    counts = (np.ones(len(table), dtype=np.int64) if count_column is None
              else validate_counts(table, count_column,
                                   roles=origin_levels + destination_levels))
    if geography is not None:
        if len(geography.levels) != len(origin_levels):
            raise InputError(f"the geography has {len(geography.levels)} level(s) "
                             f"{list(geography.levels)}; the flows have {len(origin_levels)}")
        _refuse_repeated_codes(geography.hierarchy)  # read with local codes
        origin = geography.leaf_of_rows(table, origin_levels)
        destination = geography.leaf_of_rows(table, destination_levels)
        return flow_data_from_leaves(geography.hierarchy, origin, destination, counts,
                                     tree=tree, declared_structure=True, duplicates=repeats)
    n_rows = len(table)
    labels = np.concatenate([np.arange(1, n_rows + 1).astype(str).astype(object) + " (origin)",
                             np.arange(1, n_rows + 1).astype(str).astype(object)
                             + " (destination)"])
    codes = [np.concatenate([codes_of(table[o]), codes_of(table[d])])
             for o, d in zip(origin_levels, destination_levels, strict=True)]
    names = [_geo_name(o, d) for o, d in zip(origin_levels, destination_levels, strict=True)]
    for level_codes, o, d in zip(codes, origin_levels, destination_levels, strict=True):
        _check_one_format(level_codes[:n_rows], level_codes[n_rows:], o, d)
    geography, leaf = build_from_codes(codes, names, root_name=root_name, row_labels=labels,
                                       local_codes=local_codes)
    if local_codes:
        _refuse_repeated_codes(geography)
    return flow_data_from_leaves(geography, leaf[:n_rows], leaf[n_rows:], counts, tree=tree,
                                 duplicates=repeats)


def _refuse_repeated_codes(geography: Hierarchy) -> None:
    """An `InputError` when a level's code names areas of two parents (local codes): a
    released pair is named by its areas' codes, which must tell them apart."""
    for level in range(1, geography.n_levels):
        codes = pd.Series(np.asarray(geography.codes[level], dtype=object).astype(str))
        repeated = codes[codes.duplicated()]
        if len(repeated):
            raise InputError(
                f"flows need area codes unique within each level, and code "
                f"{repeated.iloc[0]!r} of {geography.level_names[level]!r} names areas of "
                "two parents (local codes): write each with its parent's code (e.g. '06' "
                "and '037' as '06037')")


def _check_one_format(origin: np.ndarray, destination: np.ndarray, o: str, d: str) -> None:
    """An `InputError` when an origin code and a destination code differ only by leading
    zeros ('01001' and '1001'): one area written two ways (a side saved through Excel)
    would be two areas, and people living and working in one place would be moving."""
    origin_codes, destination_codes = (
        pd.DataFrame({"code": pd.unique(pd.Series(side, dtype=object).astype(str))})
        .assign(digits=lambda t: t["code"].str.lstrip("0")) for side in (origin, destination))
    pairs = origin_codes.merge(destination_codes, on="digits", suffixes=("_o", "_d"))
    differ = pairs[(pairs["code_o"] != pairs["code_d"]) & (pairs["digits"] != "")]
    if len(differ):
        first = differ.iloc[0]
        raise InputError(f"origin {o} {first['code_o']!r} and destination {d} "
                         f"{first['code_d']!r} differ only by leading zeros: one area "
                         "written two ways (a column saved through Excel?) would be two "
                         "areas; write the origin and destination codes alike")


def flow_data_from_trips(table, origin_levels, destination_levels, **kwargs) -> FlowData:
    """`flow_data_from_table` for one row per trip."""
    return flow_data_from_table(table, origin_levels, destination_levels, None, **kwargs)


def geography_levels(origin_levels: Sequence[str], destination_levels: Sequence[str],
                     ) -> tuple[list[str], ...]:
    """The level columns a flow geography may have: the origin levels, the destination
    levels, or the common names (``state`` for ``o_state``/``d_state``)."""
    common = [_geo_name(o, d) for o, d in zip(origin_levels, destination_levels, strict=True)]
    candidates = [list(origin_levels), list(destination_levels)]
    return tuple(candidates + ([common] if common not in candidates else []))


def read_flow_geography(path, origin_levels: Sequence[str], destination_levels: Sequence[str],
                        *, root_name: str = "total", ragged: bool = False,
                        local_codes: bool = False, encoding: str | None = None) -> Geography:
    """The declared geography of both ends, from a file whose level columns are named as
    the origin levels, the destination levels or their common names (`geography_levels`);
    its levels are named by the common names (``state>state`` in the O/D tree). ``ragged``:
    an empty code passes the unit above through that level (`structure.read_geography`);
    ``local_codes``: codes unique only within their parent (`flow_data_from_table` refuses
    those that repeat)."""
    from hierdp_core.structure import read_geography

    first, *others = geography_levels(origin_levels, destination_levels)
    names = [_geo_name(o, d) for o, d in zip(origin_levels, destination_levels, strict=True)]
    return read_geography(path, first, alternatives=others, root_name=root_name,
                          level_names=names, ragged=ragged, local_codes=local_codes,
                          encoding=encoding)


def flow_data_from_leaves(geography: Hierarchy, origin: np.ndarray, destination: np.ndarray,
                          counts: np.ndarray, *, tree: str = "destination",
                          declared_structure: bool = False,
                          duplicates: str | None = None) -> FlowData:
    """Aggregate (origin leaf, destination leaf, count) rows into unique non-zero pairs.
    ``duplicates`` ("sum" or "error", see `repeated_rows`): the rows are an O/D table whose
    repeated pairs are counted or refused; None: trips, which repeat pairs by nature."""
    n_leaves = geography.level_size(geography.depth)
    origin = np.asarray(origin, dtype=np.int64)
    destination = np.asarray(destination, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if origin.shape != destination.shape or origin.shape != counts.shape:
        raise InputError("origin, destination and counts must have the same length")
    if origin.size and (origin.min() < 0 or destination.min() < 0
                        or max(origin.max(), destination.max()) >= n_leaves):
        raise InputError(f"leaf indices must lie in 0..{n_leaves - 1}")
    if np.any(counts < 0):
        raise InputError("flow counts must be >= 0")
    check_total(counts, "the flow counts")
    keys = origin * n_leaves + destination
    uniq, inverse = np.unique(keys, return_inverse=True)
    merged = (0 if duplicates is None else
              repeated_rows(keys, duplicates, "origin and destination", n_distinct=uniq.size,
                            name=lambda key: "origin {} to destination {}".format(
                                *(leaf_id(geography, x) for x in divmod(key, n_leaves)))))
    total = sum_by_cell(inverse, counts, uniq.size)
    keep = total > 0
    if not keep.any():
        raise InputError("the flows are all zero: there is nothing to release")
    o, d = np.divmod(uniq[keep], n_leaves)
    return FlowData(geography, o, d, total[keep], tree=tree,
                    declared_structure=declared_structure, merged_rows=merged)

