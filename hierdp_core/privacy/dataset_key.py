"""What makes two inputs "the same dataset" in the budget ledger (`hierdp_core.privacy.ledger`):
keyed fingerprints of their content, not of a file's bytes.

A release's dataset is keyed by `data_fingerprint` of its true data, the same on the command
line and the dashboard's pages: for counts (group sizes and range histograms alike, their
sizes or values the categories) `counts_fingerprint`, for O/D trips `flows_fingerprint`
(per pair of leaf areas). `counts_fingerprint` is an HMAC-SHA256 under the
publisher's key of its built true counts, cell by cell: every cell with a count other than
0 as (its unit's path id, e.g. ``01/01001``, its category label, its count), in sorted
order. The same records in any row order, any file format (CSV, Parquet, a DataFrame), with
blank lines, one row per person or summed in a count column, or over a geography that
lists more empty units, give the same key. It is computed from the leaf-count array before
any noise is drawn: O(cells with a count), not O(rows).

The ledger also records the other keys an input has (`hierdp_core.privacy.ledger.Ledger`'s
aliases): the keyed fingerprint of the file's bytes (the manifest's ``input.fingerprint``,
so the same file released over other levels or categories, or by another query, stays the
same dataset, and ``hierdp budget --dataset FILE`` finds it), the dashboard's fingerprint of
an uploaded table (`table_fingerprint`) and a bundled sample's name (`sample_fingerprint`).
A key is an HMAC, so no key tells anything about the data to someone without the
publisher's key.
"""

from __future__ import annotations

import hashlib
import hmac

import numpy as np

COUNTS_TAG = b"hierdp-counts/1\0"
FLOWS_TAG = b"hierdp-flows/1\0"


def data_fingerprint(data, key: bytes) -> str | None:
    """The keyed fingerprint of a query's true data, the ledger's key of its dataset: of
    its counts for counts, group sizes and ranges (`counts_fingerprint`: per unit and
    category, size or value), of its pairs for flows (`flows_fingerprint`); None for
    anything else (the Dask engine's public shapes: their key is the file's)."""
    from hierdp_core.flows.data import FlowData
    from hierdp_core.queries.counts import CountData
    from hierdp_core.queries.ranges import RangeData

    if isinstance(data, CountData | RangeData):
        return counts_fingerprint(data, key)
    if isinstance(data, FlowData) and data.counts.size:
        return flows_fingerprint(data, key)
    return None


def counts_fingerprint(data, key: bytes) -> str:
    """The keyed fingerprint of a `hierdp_core.queries.counts.CountData`'s true counts (or
    a group-size or range data's, whose categories are sizes or values; see the module
    doc): the same for the same counts per unit path and category, whatever the order of
    the rows, units or categories and whatever empty units are declared."""
    counts = np.asarray(data.leaf_counts)
    h = data.hierarchy
    rows, cols = np.nonzero(counts)
    names = data.categories if getattr(data, "has_categories", True) else ("",)  # totals
    leaves = h.node_ids()[h.level_slice(h.depth)]
    return _cells_fingerprint(COUNTS_TAG, key, (rows, leaves), (cols, names),
                              counts[rows, cols])


def flows_fingerprint(data, key: bytes) -> str:
    """The keyed fingerprint of a `hierdp_core.flows.data.FlowData`'s true trips: per pair
    of leaf areas (their path ids) with trips, whatever the order of the pairs or the
    tree built over them."""
    h = data.geography
    leaves = h.node_ids()[h.level_slice(h.depth)]
    kept = np.asarray(data.counts) != 0
    return _cells_fingerprint(FLOWS_TAG, key, (np.asarray(data.origin)[kept], leaves),
                              (np.asarray(data.destination)[kept], leaves),
                              np.asarray(data.counts)[kept])


def _cells_fingerprint(tag: bytes, key: bytes, rows: tuple, cols: tuple,
                       values: np.ndarray) -> str:
    """HMAC-SHA256 under ``key`` of cells (row, column, value): ``rows`` and ``cols`` are
    (each cell's index, the labels indexed), the labels present sorted, then the cells by
    their labels' ranks."""
    mac = hmac.new(key, tag, digestmod=hashlib.sha256)
    ranks = []
    for index, texts in (rows, cols):
        present = np.unique(index)  # the units (categories) with a count, by position
        labels = np.asarray(texts, dtype=object)[present].astype(str)
        order = np.argsort(labels, kind="stable")
        rank = np.empty(present.size, dtype=np.int64)
        rank[order] = np.arange(present.size)
        ranks.append(rank[np.searchsorted(present, index)])
        mac.update(present.size.to_bytes(8, "little"))
        mac.update("\0".join(labels[order].tolist()).encode())
    order = np.lexsort((ranks[1], ranks[0]))
    for column in (ranks[0][order], ranks[1][order], np.asarray(values)[order]):
        mac.update(np.ascontiguousarray(column, dtype="<i8").tobytes())
    return mac.hexdigest()


def table_fingerprint(table, key: bytes) -> str:
    """HMAC-SHA256 under the publisher's key of a table's content (its column names and
    every value, row by row, whatever its file format): the dashboard's key of an uploaded
    table as read, before any reshape (an alias beside `counts_fingerprint`, and the key of
    the query pages' uploads)."""
    import pandas as pd

    mac = hmac.new(key, b"hierdp-table/1\0", digestmod=hashlib.sha256)
    mac.update("\0".join(map(str, table.columns)).encode())
    mac.update(pd.util.hash_pandas_object(table, index=False).to_numpy().tobytes())
    return mac.hexdigest()


def sample_fingerprint(sample: str, key: bytes) -> str:
    """The keyed fingerprint of a bundled sample's name: every page's draws on one sample
    are one dataset (its file is fixed)."""
    return hmac.new(key, f"hierdp-sample/1\0{sample}".encode(), hashlib.sha256).hexdigest()
