"""O/D flow releases on Dask: trips (one row per trip, or ``count_column`` trips a row)
read as a dataset (a folder of CSV or Parquet files, or a glob) over a declared geography,
released block by block (`hierdp_core.engine.blockwise_flows`).

What runs where: every input partition turns its rows into sparse (origin leaf,
destination leaf) pair counts per block of top-level areas (`partition_pairs`; the block of
the end that the O/D tree's level 1 splits); each block's task builds its `FlowData` from
them (`block_pairs`), gives the client its level-1 values, and runs the top-down loop below
its released level-1 nodes; the client draws the root (unbounded DP) and level 1. With a
seed the release is the in-memory engine's, bit for bit. Only the pairs with trips are
ever held, never the O/D matrix.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierdp_core.data.duplicates import leaf_id
from hierdp_core.engine.blockwise import check_blockwise
from hierdp_core.engine.blockwise_flows import blockwise_flows
from hierdp_core.engine.dask_engine import (
    check_dataset_total,
    check_repeats,
    client_for,
    dataset_files,
    read_dataset,
)
from hierdp_core.errors import InputError
from hierdp_core.flows.data import FlowData
from hierdp_core.flows.tree import block_of_nodes
from hierdp_core.mechanisms.streams import block_starts


def partition_pairs(frame: pd.DataFrame, geography, shape: FlowData,
                    origin_levels: list[str], destination_levels: list[str],
                    count_column: str | None, duplicates: str = "sum",
                    part: int = 0) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """One partition's trips as sparse pair counts per block: block -> (keys, trips), a key
    being ``origin leaf * n_leaves + destination leaf``, sorted, distinct. Rows of a
    ``count_column`` repeating a pair are summed, or with ``duplicates="error"`` refused
    (`repeated_rows`, rows counted in partition ``part``)."""
    from hierdp_core.data.duplicates import repeated_rows
    from hierdp_core.data.loaders import validate_counts

    if len(frame) == 0:
        return {}
    origin = geography.leaf_of_rows(frame, origin_levels)
    destination = geography.leaf_of_rows(frame, destination_levels)
    trips = (np.ones(len(frame), dtype=np.int64) if count_column is None
             else validate_counts(frame, count_column))
    n_leaves = shape.level_width(shape.geo_levels)
    keys, inverse = np.unique(origin * n_leaves + destination, return_inverse=True)
    if count_column is not None:
        repeated_rows(inverse, duplicates, "origin and destination", n_distinct=keys.size,
                      where=f" of the dataset's partition {part + 1}",
                      name=lambda i: pair_words(shape, int(keys[i])))
    sums = np.bincount(inverse, weights=trips, minlength=keys.size).astype(np.int64)
    o, d = np.divmod(keys, n_leaves)
    block = block_of_nodes(shape, shape.depth, o, d)
    order = np.argsort(block, kind="stable")
    keys, sums, block = keys[order], sums[order], block[order]
    edges = np.flatnonzero(np.diff(block)) + 1
    return {int(b[0]): (k, s) for b, k, s in zip(np.split(block, edges), np.split(keys, edges),
                                                  np.split(sums, edges), strict=True)
            if b.size}


def block_pairs(shape: FlowData, block: int, *parts: dict) -> FlowData:
    """A block's `FlowData`: its trips from every partition's sparse pair counts."""
    pieces = [part[block] for part in parts if block in part]
    keys = np.concatenate([k for k, _ in pieces] + [np.zeros(0, np.int64)])
    trips = np.concatenate([s for _, s in pieces] + [np.zeros(0, np.int64)])
    keys, inverse = np.unique(keys, return_inverse=True)
    totals = np.bincount(inverse, weights=trips, minlength=keys.size).astype(np.int64)
    o, d = np.divmod(keys[totals > 0], shape.level_width(shape.geo_levels))
    return FlowData(shape.geography, o, d, totals[totals > 0], tree=shape.tree)


def pair_words(shape: FlowData, key: int) -> str:
    """The words of an O/D pair key (``origin leaf * n_leaves + destination leaf``)."""
    o, d = divmod(key, shape.level_width(shape.geo_levels))
    return f"origin {leaf_id(shape.geography, o)} to destination {leaf_id(shape.geography, d)}"


def dask_flow_release(client, frame, geography, origin_levels: list[str],
                      destination_levels: list[str], count_column: str | None, tree: str,
                      mechanism, budget, *, split=None, source=None, duplicates: str = "sum",
                      **params):
    """The flow release of the trips of ``frame`` (a `dask.dataframe`) over ``geography``
    (both ends), block by block on ``client``. Rows of a ``count_column`` repeating a pair
    are summed, or refused with ``duplicates="error"`` (`check_repeats`); ``split`` (a
    function of the public shape, a `FlowData` without trips) is asked for once the data
    is checked, before any noise."""
    from dask import delayed

    empty = np.zeros(0, np.int64)
    shape = FlowData(geography.hierarchy, empty, empty, empty, tree=tree,
                     declared_structure=True)
    geo, public = client.scatter([geography, shape], broadcast=True, hash=False)
    pairs = delayed(partition_pairs, pure=False)
    parts = client.compute([pairs(part, geo, public, origin_levels, destination_levels,
                                  count_column, duplicates, i)
                            for i, part in enumerate(frame.to_delayed(optimize_graph=True))])
    n_blocks = block_starts(shape.geography).size
    if count_column is not None and duplicates == "error":
        check_repeats(client, parts, "origin and destination",
                      lambda key: pair_words(shape, key))
    check_dataset_total(client, parts, "the dataset's trips")
    blocks = [client.submit(block_pairs, public, b, *parts, pure=False)
              for b in range(n_blocks)]
    if callable(split):
        split = split(shape)
    return blockwise_flows(mechanism, shape, blocks, budget, split=split, source=source,
                           executor=client, **params), shape


# ---- the Python API ----------------------------------------------------------------------
def release_flows_dataset(dataset, origin_levels: list[str], destination_levels: list[str],
                          mechanism, budget, *, geography, count_column: str | None = None,
                          tree: str = "destination", split=None, source=None, client=None,
                          scheduler: str | None = None, workers: int | None = None,
                          memory_limit: str = "auto", duplicates: str = "sum", **params):
    """A flow release (`hierdp_core.flows.release.FlowRelease`) of the trips in ``dataset``
    (a folder of CSV or Parquet files, a glob, or a list of files) on Dask, and the
    `FlowData` of its public shape (no trips).

    ``mechanism``: a top-down flow mechanism (its `Capabilities` say ``blockwise``,
    by name or object); ``geography``: the declared areas of both ends
    (`hierdp_core.flows.data.read_flow_geography`); ``tree``: ``destination`` or ``origin``.
    ``duplicates``: rows of a ``count_column`` repeating a pair are summed (``"sum"``) or
    refused (``"error"``, the command line's default) before ``split`` is asked for (a
    value, or a function of the public shape giving it).
    ``client``, ``scheduler``, ``workers``, ``memory_limit``: as
    `hierdp_core.engine.dask_engine.release_dataset`."""
    from hierdp_core.mechanisms.base import get_mechanism

    mechanism = get_mechanism(mechanism) if isinstance(mechanism, str) else mechanism
    check_blockwise(mechanism)
    origin_levels, destination_levels = list(origin_levels), list(destination_levels)
    if geography is None:
        raise InputError("flows on Dask need the declared geography of both ends "
                         "(--geography)")
    if len(geography.levels) != len(origin_levels) or \
            len(origin_levels) != len(destination_levels):
        raise InputError(f"the geography has {len(geography.levels)} level(s); give as many "
                         f"origin and destination levels, got {origin_levels} and "
                         f"{destination_levels}")
    files = dataset_files(dataset)
    levels = [*origin_levels, *destination_levels]
    columns = [*levels, *([count_column] if count_column else [])]
    with client_for(client, scheduler, workers, memory_limit) as client:
        frame = read_dataset(files, columns, levels)
        return dask_flow_release(client, frame, geography, origin_levels, destination_levels,
                                 count_column, tree, mechanism, budget, split=split,
                                 source=source, duplicates=duplicates, **params)
