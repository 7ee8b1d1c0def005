"""The order in which a release lists its units for people (`reading_order`).

The tree numbers the children of a parent by their codes as text, which every engine, seed
and lookup relies on: region '11' comes before region '2'. A published table should not:
its rows are listed level by level, the children of a parent together in their parent's
order, and among them by code, where every code of those children is a whole number
written in digits by its numeric value ('2' before '11'; '007' before '10'), else as
text. The choice is made per parent, so a subtree (a Dask block, a part of a partitioned
table) lists its units as the whole tree does. Zero-padded codes of one length (FIPS,
INSEE) read the same either way.

Example
-------
>>> import pandas as pd
>>> from hierdp_core.hierarchy import build_hierarchy
>>> t = pd.DataFrame({"r": ["1", "1", "2", "2", "11"], "c": ["10", "9", "B", "A1", "3"]})
>>> h, _ = build_hierarchy(t, ["r", "c"])
>>> h.node_ids().tolist()
['root', '1', '11', '2', '1/10', '1/9', '11/3', '2/A1', '2/B']
>>> h.node_ids()[reading_order(h)].tolist()
['root', '1', '2', '11', '1/9', '1/10', '2/A1', '2/B', '11/3']
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hierdp_core.hierarchy import Hierarchy
from hierdp_core.text_arrays import as_texts

_NUMBER_ORDER = [("length", "ascending"), ("digits", "ascending"), ("code", "ascending")]


def reading_order(hierarchy: Hierarchy) -> np.ndarray:
    """Every node's index (int64, n_nodes) in reading order (module doc), computed once
    per hierarchy; ``reading_order(h)[i]`` is the node listed i-th."""
    return hierarchy.derived("reading_order", lambda: _order(hierarchy))


def reading_positions(hierarchy: Hierarchy) -> np.ndarray:
    """Where each node is listed: the inverse of `reading_order` (int64, n_nodes), computed
    once per hierarchy."""
    return hierarchy.derived("reading_positions",
                             lambda: _inverse(reading_order(hierarchy)))


def _inverse(order: np.ndarray) -> np.ndarray:
    positions = np.empty_like(order)
    positions[order] = np.arange(order.size)
    return positions


def listed(hierarchy: Hierarchy, nodes: np.ndarray) -> np.ndarray:
    """``nodes`` (node indices) in reading order, e.g. the units a page shows."""
    nodes = np.asarray(nodes)
    return nodes[np.argsort(reading_positions(hierarchy)[nodes], kind="stable")]


def sibling_order(codes) -> np.ndarray:
    """The order (indices) in which to list the children of one parent from their codes
    (module doc), e.g. the top-level units of a partitioned table's parts."""
    codes = as_texts(codes)
    if not pc.all(pc.ascii_is_decimal(codes)).as_py():
        return pc.sort_indices(codes).to_numpy()
    return pc.sort_indices(_number_keys(codes), sort_keys=_NUMBER_ORDER).to_numpy()


def _number_keys(codes: pa.Array) -> pa.Table:
    stripped = pc.utf8_ltrim(codes, "0")
    return pa.table({"length": pc.utf8_length(stripped), "digits": stripped, "code": codes})


def _order(h: Hierarchy) -> np.ndarray:
    parts = [np.zeros(1, dtype=np.int64)]
    parent_position = np.zeros(1, dtype=np.int64)  # within the level above, as listed
    for level in range(1, h.n_levels):
        within = _within_parent_rank(h, level)
        by = np.lexsort((within, parent_position[h.segment_of_level(level)]))
        parts.append(by.astype(np.int64) + int(h.level_offsets[level]))
        parent_position = _inverse(by.astype(np.int64))
    return np.concatenate(parts)


def _within_parent_rank(h: Hierarchy, level: int) -> np.ndarray:
    """A rank per node of ``level`` that orders the children of each parent: by number
    where all of them are digit codes (their length without leading zeros, then those
    digits, then the code: numeric order), else their place in the tree (text order)."""
    n = h.level_size(level)
    place = np.arange(n, dtype=np.int64)
    codes = as_texts(h.codes[level])
    lengths = pc.utf8_length(codes).to_numpy(zero_copy_only=False)
    if n == 0 or lengths.min() == lengths.max():  # one length: numeric order is text order
        return place
    digits = pc.ascii_is_decimal(codes).to_numpy(zero_copy_only=False)
    starts = h.child_starts(level)
    numeric = np.logical_and.reduceat(digits, starts)[h.segment_of_level(level)]
    if not numeric.any():
        return place
    keys = _number_keys(codes).append_column("other", pa.array(~numeric))
    by_number = pc.sort_indices(keys, sort_keys=[("other", "ascending"), *_NUMBER_ORDER])
    by_number = by_number.to_numpy()
    rank = np.empty(n, dtype=np.int64)
    rank[by_number] = place
    return np.where(numeric, rank, place)
