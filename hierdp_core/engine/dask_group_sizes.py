"""Group-size releases on Dask: person records (one row per person, or ``count_column``
persons a row) with a group (household) id, read as a dataset (a folder of CSV or Parquet
files, or a glob), released block by block (`hierdp_core.engine.blockwise_group_sizes`).

What runs where: every input partition gives each row its leaf and its persons
(`group_rows`); Dask's groupby by group id (a shuffle, as many output
partitions as input ones) gives every group its size and its leaves, and every output
partition turns its groups into sparse leaf x size cells per block (`group_cells`; a group
with people in two leaves is an `InputError` naming it, as in memory); each block's task
gathers its leaves' histograms (`dask_engine.leaf_count_blocks`), measures and finishes its
subtree; the client measures the root and solves the top. With a seed the release is the
in-memory engine's, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierdp_core.engine.blockwise import check_blockwise
from hierdp_core.engine.blockwise_group_sizes import blockwise_group_sizes
from hierdp_core.engine.dask_engine import (
    DatasetCounts,
    client_for,
    dataset_files,
    leaf_count_blocks,
    read_dataset,
    units_of_data,
)
from hierdp_core.errors import InputError
from hierdp_core.mechanisms.streams import first_leaves

#: the columns of `group_rows`' output besides the group id
LEAF, PERSONS = "_leaf", "_persons"


def group_rows(frame: pd.DataFrame, geography, levels: list[str], group_column: str,
               count_column: str | None) -> pd.DataFrame:
    """One partition's rows as (group id, leaf, persons) (Dask's groupby sums them per
    group within the partition before the shuffle)."""
    from hierdp_core.data.loaders import validate_counts

    missing = int(frame[group_column].isna().sum())
    if missing:
        raise InputError(f"group column {group_column!r} has {missing} missing value(s)")
    persons = (np.ones(len(frame), dtype=np.int64) if count_column is None
               else validate_counts(frame, count_column))
    return pd.DataFrame({group_column: frame[group_column].to_numpy(),
                         LEAF: geography.leaf_of_rows(frame, levels), PERSONS: persons})


def group_cells(groups: pd.DataFrame, domain: tuple[int, int], first_leaves: np.ndarray,
                leaf_level: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Whole groups (one row per group: its ``lo`` and ``hi`` leaf, its persons) as sparse
    histogram cells per block: block -> (cells, numbers of groups), a cell being
    ``leaf * (N - m + 1) + size - m`` (``domain`` = (m, N), sizes bottom- and top-coded),
    sorted, distinct."""
    from hierdp_core.groupsizes.data import size_columns, spanning_groups

    lo, hi = groups["lo"].to_numpy(), groups["hi"].to_numpy()
    if np.any(lo != hi):
        raise spanning_groups(groups.index[lo != hi], leaf_level)
    width = domain[1] - domain[0] + 1
    sizes = size_columns(groups[PERSONS].to_numpy(), *domain)
    cells, counts = np.unique(lo * width + sizes, return_counts=True)
    block = np.searchsorted(first_leaves, cells // width, side="right") - 1
    edges = np.flatnonzero(np.diff(block)) + 1
    return {int(b[0]): (c, n) for b, c, n in zip(np.split(block, edges),
                                                  np.split(cells, edges),
                                                  np.split(counts.astype(np.int64), edges),
                                                  strict=True) if b.size}


def dask_group_size_release(client, frame, geography, levels: list[str], group_column: str,
                            count_column: str | None, domain: tuple[int, int], mechanism,
                            budget, *, group_counts=None, split=None, source=None,
                            **params):
    """The group-size Release of the person records of ``frame`` (a `dask.dataframe`) over
    ``geography``, block by block on ``client``; sizes ``domain`` = (m, N);
    ``group_counts``: the declared number of groups of every leaf (`DeclaredGroups` or an
    array; None: counted from the records), its groups without members added per block
    on the workers (`declared_groups.with_block_groups`)."""
    from dask import delayed

    from hierdp_core.groupsizes.data import size_categories
    from hierdp_core.groupsizes.declared_groups import leaf_group_counts, with_block_groups

    h = geography.hierarchy
    first = first_leaves(h)
    geo = client.scatter(geography, broadcast=True, hash=False)
    rows = frame.map_partitions(group_rows, geo, levels, group_column, count_column,
                                meta={group_column: frame[group_column].dtype,
                                      LEAF: np.int64, PERSONS: np.int64})
    groups = rows.groupby(group_column).agg(
        lo=(LEAF, "min"), hi=(LEAF, "max"), **{PERSONS: (PERSONS, "sum")},
        split_out=frame.npartitions)
    cells = delayed(group_cells, pure=False)
    parts = client.compute([cells(part, domain, first, levels[-1])
                            for part in groups.to_delayed(optimize_graph=True)])
    sizes = size_categories(*domain)
    leaves = leaf_count_blocks(client, parts, h, len(sizes), placement=None)
    if group_counts is not None:
        declared, _ = leaf_group_counts(h, np.zeros(h.n_leaves, dtype=np.int64),
                                        group_counts)
        ends = np.append(first[1:], h.n_leaves)
        leaves = [client.submit(with_block_groups, block, declared[lo:hi], geo, int(lo),
                                pure=False)
                  for block, lo, hi in zip(leaves, first, ends, strict=True)]
    return blockwise_group_sizes(mechanism, h, sizes, leaves, budget, split=split,
                                 source=source, executor=client, tree=geo,
                                 groups_declared=group_counts is not None, **params)


# ---- the Python API ----------------------------------------------------------------------
def release_group_sizes_dataset(dataset, levels: list[str], group_column: str, mechanism,
                                budget, *, max_size: int, min_size: int = 0, geography=None,
                                group_counts=None, count_column: str | None = None,
                                split=None, source=None,
                                local_codes: bool = False, max_cells: int | None = None,
                                client=None, scheduler: str | None = None,
                                workers: int | None = None, memory_limit: str = "auto",
                                **params):
    """A group-size Release of the person records in ``dataset`` (a folder of CSV or
    Parquet files, a glob, or a list of files) on Dask, and the `DatasetCounts` of its data
    (the public shape: the tree, the sizes ``'m'..'N'``).

    ``mechanism``: ``gs-noisy`` or ``gs-topdown`` (by name or object; others are refused);
    ``max_size``: the public top-code N; ``min_size``: the public bottom-code m;
    ``geography``: the declared `hierdp_core.structure.Geography` (None: the units of the
    data, exploration); ``group_counts``: the declared number of groups of every leaf of
    ``geography`` (`hierdp_core.groupsizes.declared_groups.DeclaredGroups`; None: counted
    from the records, and a release keeping them exactly is not publishable);
    ``split``: as the mechanism takes it, or a function of the `DatasetCounts` giving it.
    ``client``, ``scheduler``, ``workers``, ``memory_limit``: as
    `hierdp_core.engine.dask_engine.release_dataset`."""
    from hierdp_core.data.loaders import check_cells
    from hierdp_core.groupsizes.data import SIZE_COLUMN, check_size_domain, size_categories
    from hierdp_core.mechanisms.base import get_mechanism

    mechanism = get_mechanism(mechanism) if isinstance(mechanism, str) else mechanism
    check_blockwise(mechanism)
    domain = check_size_domain(min_size, max_size)
    sizes = size_categories(*domain)
    if group_counts is not None and geography is None:
        raise InputError("declared group counts need the declared geography of their regions")
    files = dataset_files(dataset)
    columns = list(dict.fromkeys([*levels, group_column, *([count_column] if count_column
                                                           else [])]))
    with client_for(client, scheduler, workers, memory_limit) as client:
        frame = read_dataset(files, columns, [*levels, group_column])
        declared = geography is not None
        if geography is None:
            geography = units_of_data(frame, levels, local_codes)
        h = geography.hierarchy
        if max_cells is not None:
            check_cells(h.n_leaves * len(sizes), max_cells,
                        f"{h.n_leaves:,} units x {len(sizes):,} sizes")
        data = DatasetCounts(h, sizes, (SIZE_COLUMN,), declared)
        if callable(split):
            split = split(data)
        release = dask_group_size_release(client, frame, geography, list(levels),
                                          group_column, count_column, domain, mechanism,
                                          budget, group_counts=group_counts, split=split,
                                          source=source, **params)
        return release, data
