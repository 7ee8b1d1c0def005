"""What makes two inputs "the same dataset" in the budget ledger (`hierdp_core.privacy.ledger`):
keyed fingerprints of their content, not of a file's bytes.

A counts release's dataset is keyed by `counts_fingerprint`: an HMAC-SHA256 under the
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


def counts_fingerprint(data, key: bytes) -> str:
    """The keyed fingerprint of a `hierdp_core.queries.counts.CountData`'s true counts (see
    the module doc): the same for the same counts per unit path and category, whatever the
    order of the rows, units or categories and whatever empty units are declared."""
    counts = np.asarray(data.leaf_counts)
    h = data.hierarchy
    rows, cols = np.nonzero(counts)
    names = data.categories if data.has_categories else ("",)  # plain totals: one name
    mac = hmac.new(key, COUNTS_TAG, digestmod=hashlib.sha256)
    ranks = []
    for index, texts in ((rows, h.node_ids()[h.level_slice(h.depth)]), (cols, names)):
        present = np.unique(index)  # the units (categories) with a count, by position
        labels = np.asarray(texts, dtype=object)[present].astype(str)
        order = np.argsort(labels, kind="stable")
        rank = np.empty(present.size, dtype=np.int64)
        rank[order] = np.arange(present.size)
        ranks.append(rank[np.searchsorted(present, index)])
        mac.update(present.size.to_bytes(8, "little"))
        mac.update("\0".join(labels[order].tolist()).encode())
    order = np.lexsort((ranks[1], ranks[0]))
    for column in (ranks[0][order], ranks[1][order], counts[rows, cols][order]):
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
