"""FlowRelease: what an O/D mechanism publishes, the released tree (privatised values
only) with how it was made; `to_frame` gives the standard release table, one row per
released node of the O/D tree."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from hierdp_core.errors import InputError
from hierdp_core.flows.data import PAIR_SEPARATOR, FlowData
from hierdp_core.flows.tree import TreeLevel
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.reading_order import reading_positions
from hierdp_core.releases import ReleaseRecord

FLOW_RELEASE_COLUMNS = ("level", "level_name", "node_id", "parent_id", "label", "origin_id",
                        "destination_id", "value")


@dataclass(frozen=True, eq=False)
class FlowRelease(ReleaseRecord):
    """Released O/D tree, with how it was made (`ReleaseRecord`; its ``intervals`` are per
    released node, level after level in ``levels``' order; `to_frame` lists the rows in
    reading order). ``levels[l]`` holds the nodes of tree level l
    that were released non-zero (a node that is absent is released as 0). ``geography``,
    ``tree`` and ``level_names`` are public."""

    geography: Hierarchy
    tree: str
    level_names: tuple[str, ...]
    pair_levels: tuple[tuple[int, int], ...]
    levels: list[TreeLevel]
    diagnostics: list[dict] = field(default_factory=list)

    @classmethod
    def of(cls, data: FlowData, levels: list[TreeLevel], **kwargs) -> FlowRelease:
        return cls(data.geography, data.tree, data.level_names,
                   tuple(data.pair_levels(level) for level in range(data.depth + 1)),
                   levels, **kwargs)

    @property
    def is_integer(self) -> bool:
        return all(lv.value.dtype.kind in "iu" for lv in self.levels)

    @property
    def depth(self) -> int:
        return len(self.levels) - 1

    def total(self) -> int:
        return int(self.levels[0].value.sum())

    def manifest_structure(self) -> dict:
        """The public shape of the release, for the manifest: geography, tree and its levels,
        and the number of released (non-zero) nodes per level (private outputs)."""
        h = self.geography
        return {
            "hierarchy": {"levels": list(h.level_names),
                          "units_per_level": [h.level_size(lv) for lv in range(h.n_levels)]},
            "tree": {"kind": self.tree, "levels": list(self.level_names),
                     "released_nodes": [lv.size for lv in self.levels]},
            "categories": None,
        }

    def level_frame(self, level: int) -> pd.DataFrame:
        """One row per released node of ``level``: origin and destination codes, value."""
        lv, (lo, ld) = self.levels[level], self.pair_levels[level]
        codes = self.geography.codes
        return pd.DataFrame({
            "origin_id": np.asarray(codes[lo], dtype=object)[lv.origin].astype(str),
            "destination_id": np.asarray(codes[ld], dtype=object)[lv.destination].astype(str),
            "value": lv.value,
        })

    def to_frame(self) -> pd.DataFrame:
        """The release table (`FLOW_RELEASE_COLUMNS`), level by level, each level's pairs
        by origin, then destination, in reading order (`hierdp_core.reading_order`):
        ``node_id`` is
        ``ORIGIN>DESTINATION`` (area codes escaped as in `hierdp_core.ids`; the root is
        ``total>total``), unique within its level, ``parent_id`` the parent pair ('' at the
        root), ``label`` the pair with readable names, ``origin_id`` and
        ``destination_id`` the area codes as they are; ``lower`` and ``upper`` when the release
        carries intervals."""
        frames, parent_ids = [], np.array([""], dtype=object)
        geo = self.geography
        lab, offs = geo.labels(), geo.level_offsets
        listed, rows = reading_positions(geo), []
        for level in range(self.depth + 1):
            lv, (lo, ld) = self.levels[level], self.pair_levels[level]
            by = np.lexsort((listed[lv.destination + offs[ld]], listed[lv.origin + offs[lo]]))
            rows.append(by + sum(map(len, frames)))
            f = self.level_frame(level)
            node_id = (pd.Series(geo.id_codes(lo)[lv.origin]) + PAIR_SEPARATOR
                       + pd.Series(geo.id_codes(ld)[lv.destination])).to_numpy(object)
            frames.append(pd.DataFrame({
                "level": level,
                "level_name": self.level_names[level],
                "node_id": node_id,
                "parent_id": parent_ids if level == 0 else parent_ids[lv.parent],
                "label": (pd.Series(lab[lv.origin + offs[lo]]).astype(str) + " -> "
                          + pd.Series(lab[lv.destination + offs[ld]]).astype(str)).to_numpy(),
                "origin_id": f["origin_id"].to_numpy(),
                "destination_id": f["destination_id"].to_numpy(),
                "value": lv.value,
            }))
            parent_ids = node_id
        table = pd.concat(frames, ignore_index=True)[list(FLOW_RELEASE_COLUMNS)]
        if self.intervals is not None:
            table["lower"], table["upper"] = self.intervals.lower, self.intervals.upper
        return table.iloc[np.concatenate(rows)].reset_index(drop=True)

    def to_arrow(self) -> pa.Table:
        """`to_frame` as a pyarrow Table (what `hierdp_core.export` writes)."""
        return pa.Table.from_pandas(self.to_frame(), preserve_index=False)

    def consistency_violations(self) -> int:
        """Number of released parents whose value differs from the sum of their children."""
        bad = 0
        for level in range(1, self.depth + 1):
            parents, nodes = self.levels[level - 1], self.levels[level]
            sums = np.bincount(nodes.parent, weights=nodes.value, minlength=parents.size)
            bad += int(np.count_nonzero(np.rint(sums).astype(np.int64) != parents.value))
        return bad


def levels_from_table(data: FlowData, table: pd.DataFrame) -> FlowRelease:
    """A release table read back (columns ``level, origin_id, destination_id, value``) as a
    FlowRelease over ``data``'s geography, for evaluation; rows naming unknown areas or
    levels are an `InputError`."""
    missing = {"level", "origin_id", "destination_id", "value"} - set(table.columns)
    if missing:
        raise InputError(f"the release table lacks column(s) {sorted(missing)}")
    levels = []
    for level in range(data.depth + 1):
        rows = table[table["level"] == level]
        lo, ld = data.pair_levels(level)
        o = _positions(data.area_ids(lo), rows["origin_id"], level)
        d = _positions(data.area_ids(ld), rows["destination_id"], level)
        levels.append(TreeLevel(o, d, rows["value"].to_numpy(dtype=np.int64),
                                np.full(o.size, -1, dtype=np.int64)))
    if len(table) != sum(lv.size for lv in levels):
        raise InputError(f"the release has levels beyond 0..{data.depth}: different input?")
    return FlowRelease.of(data, levels, mechanism="", parameters={}, privacy={},
                          ledger=pd.DataFrame(), randomness={})


def _positions(ids: np.ndarray, wanted: pd.Series, level: int) -> np.ndarray:
    pos = pd.Index(ids).get_indexer(wanted.astype(str))
    if (pos < 0).any():
        raise InputError(f"the release names areas unknown to the input at level {level}, "
                         f"e.g. {wanted.astype(str)[pos < 0].iloc[0]!r}: different input?")
    return pos.astype(np.int64)
