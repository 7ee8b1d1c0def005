"""Counts releases on Dask: inputs larger than one machine's memory, read as a dataset (a
folder of CSV or Parquet files, or a glob) and released block by block
(`hierdp_core.engine.blockwise`) on a `dask.distributed` cluster.

What runs where: the client reads the declared geography (or the distinct units and
categories of the data, for exploration) and places every block on a worker
(`balanced_placement`); the workers turn every partition of the input into sparse leaf
counts per block (`hierdp_core.engine.leaf_counts`: integer codes, one bincount), every
block's task adds up its leaf counts from the pieces of the partitions that touch it,
measures and makes its subtree consistent, and with a ``parts_folder`` writes its part of
the release (`hierdp_core.engine.written`); the client measures the root and solves the
top of the tree. The result is the in-memory engine's release, bit for bit with a seed.

Only counts (with or without categories) run here. Dask is imported by this module alone.
"""

from __future__ import annotations

import glob
import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core.engine.blockwise import (
    balanced_placement,
    block_sizes,
    blockwise_release,
    on_worker,
)
from hierdp_core.errors import InputError
from hierdp_core.mechanisms.streams import first_leaves

#: the size of a CSV dataset's partitions (Parquet: one per row group or file)
PARTITION_BYTES = "64MB"
#: how long a client tries to reach a scheduler
CONNECT_TIMEOUT = "10s"


@dataclass(frozen=True, eq=False)
class DatasetCounts:
    """What a Dask release knows of its data on the client: the public shape only."""

    hierarchy: object
    categories: tuple[str, ...]
    category_columns: tuple[str, ...]
    declared_structure: bool
    merged_rows: int = 0

    @property
    def has_categories(self) -> bool:
        return bool(self.category_columns)


# ---- the cluster -------------------------------------------------------------------------
def open_client(scheduler: str | None = None, workers: int | None = None,
                memory_limit: str = "auto", processes: bool = True):
    """A `distributed.Client` of the scheduler at ``scheduler``, or of a new `LocalCluster`
    of ``workers`` single-threaded worker processes (default: this machine's cores), each
    limited to ``memory_limit``, without work stealing. An unreachable scheduler is an
    `InputError`."""
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {scheduler!r}: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                             ) from None
    if workers is not None and workers < 1:
        raise InputError(f"--workers needs at least 1 worker, got {workers}")
    import dask

    # no work stealing: a block's tasks stay on the worker they are placed on, where its
    # data is (`hierdp_core.engine.blockwise.balanced_placement`); no statistical profiler
    # sampling every worker's stack every 10 ms (CPU taken from the tasks; nothing reads it)
    with dask.config.set({"distributed.scheduler.work-stealing": False,
                          "distributed.worker.profile.enabled": False}):
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1,
                               threads_per_worker=1, processes=processes,
                               memory_limit=memory_limit, dashboard_address=":0",
                               silence_logs=logging.CRITICAL)
    return Client(cluster)


@contextmanager
def client_for(client=None, scheduler: str | None = None, workers: int | None = None,
               memory_limit: str = "auto"):
    """``client`` itself, else a client `open_client` makes, closed (with its cluster) on
    leaving."""
    if client is not None:
        yield client
        return
    own = open_client(scheduler, workers, memory_limit)
    try:
        yield own
    finally:
        close_client(own)


def close_client(client) -> None:
    """Close the client, and the cluster it started."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()


# ---- reading -----------------------------------------------------------------------------
def dataset_files(path: str | Path | list) -> list[Path]:
    """The files of a dataset: a folder's ``*.parquet`` or ``*.csv`` files, a glob's
    matches, or one file; sorted. One kind of file only. A list is taken as the files."""
    if isinstance(path, list):
        return path
    text = str(path)
    if any(ch in text for ch in "*?["):
        files = [Path(p) for p in glob.glob(text)]
    elif Path(text).is_dir():
        files = [p for p in Path(text).iterdir()
                 if p.suffix.lower() in (".parquet", ".csv") and not p.name.startswith(".")]
    elif Path(text).is_file():
        files = [Path(text)]
    else:
        raise InputError(f"{text!r} is not a file, a folder or a glob matching files")
    files = sorted(p for p in files if p.is_file())
    if not files:
        raise InputError(f"no .parquet or .csv file in {text!r}")
    kinds = {p.suffix.lower() for p in files}
    if len(kinds) > 1 or not kinds <= {".parquet", ".csv"}:
        raise InputError(f"a dataset is CSV or Parquet files, one kind; {text!r} has "
                         f"{sorted(kinds)}")
    return files


def read_dataset(files: list[Path], columns: list[str], text_columns: list[str]):
    """The dataset as a `dask.dataframe` of ``columns`` (``text_columns`` read as text)."""
    import dask.dataframe as dd

    names = [str(p) for p in files]
    try:
        if files[0].suffix.lower() == ".parquet":
            frame = dd.read_parquet(names, columns=columns)
        else:
            frame = dd.read_csv(names, usecols=columns, blocksize=PARTITION_BYTES,
                                dtype={c: str for c in text_columns})
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(f"cannot read the dataset: {str(exc).splitlines()[0]}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"column(s) {missing} not found; the dataset has "
                         f"{list(map(str, frame.columns))}")
    return frame


# ---- partitions to block leaf counts -----------------------------------------------------
def check_dataset_total(client, parts: list, what: str) -> int:
    """The exact total of the whole dataset (handles of every partition's sparse sums,
    block -> (cells, sums)), or `InputError` above 2^53 - 1 (`check_total`): each
    partition is checked on its worker, but partitions under the limit can add up above
    it."""
    from hierdp_core.data.integers import check_total
    from hierdp_core.engine.leaf_counts import part_total

    totals = client.gather([client.submit(part_total, part) for part in parts])
    return check_total(np.array(totals, dtype=np.int64), f"{what} (all partitions)")


def leaf_count_blocks(client, parts: list, hierarchy, k: int, placement: list | None) -> list:
    """Handles of every block's dense leaf counts (n_leaves, k), each made on its placed
    worker from the pieces of the partitions that touch it; ``parts``: handles of every
    partition's sparse cells, block -> (cells, sums) with a cell ``leaf * k + column``
    (`hierdp_core.engine.leaf_counts.partition_cells`). A partition's cells are freed once
    its pieces are taken (the caller drops its handles)."""
    from hierdp_core.engine.leaf_counts import block_leaf_counts, block_piece, blocks_of

    first = first_leaves(hierarchy)
    check_dataset_total(client, parts, "the dataset's counts")
    touched = client.gather([client.submit(blocks_of, part) for part in parts])
    pieces: list[list] = [[] for _ in range(first.size)]
    for part, blocks in zip(parts, touched, strict=True):  # a loop per partition
        for b in blocks:
            pieces[b].append(client.submit(block_piece, part, b))
    ends = np.append(first[1:], hierarchy.n_leaves)
    return [client.submit(block_leaf_counts, b, int(first[b]), int(ends[b] - first[b]), k,
                          *pieces[b], pure=False, **on_worker(placement, b))
            for b in range(first.size)]


def dask_count_release(client, frame, geography, levels: list[str], categories: list[str],
                       values: dict, count_column: str | None, mechanism, budget, *,
                       declared: bool, split=None, source=None, parts_folder=None,
                       duplicates: str = "sum", **params):
    """The counts Release of the records of ``frame`` (a `dask.dataframe`) over
    ``geography`` with the category ``values`` (column -> values), block by block on
    ``client``, the blocks spread over its workers (`balanced_placement`); and the
    `DatasetCounts` describing its data. With ``parts_folder``, the workers write the
    release's parts there (a `hierdp_core.engine.written.WrittenRelease`). Rows of a
    ``count_column`` repeating a unit and category are summed, or refused with
    ``duplicates="error"`` (`check_repeats`); ``split`` (a function of the `DatasetCounts`)
    is asked for once the data is checked, before any noise."""
    from dask import delayed

    from hierdp_core.categories import category_index
    from hierdp_core.data.duplicates import unit_category
    from hierdp_core.engine.leaf_counts import partition_cells

    h = geography.hierarchy
    labels = (category_index(pd.DataFrame({c: [] for c in categories}), categories,
                             values)[1] if categories else ("total",))
    workers = sorted(client.scheduler_info()["workers"])
    placement = balanced_placement(block_sizes(h), workers) if workers else None
    # a key of this run's own (not the content's hash, which an earlier release of the same
    # geography on a shared client may still be releasing: its tasks then lose it)
    geo = client.scatter(geography, broadcast=True, hash=False)
    cells, first = delayed(partition_cells, pure=False), first_leaves(h)
    parts = client.compute([cells(part, geo, levels, categories, values, count_column,
                                  len(labels), first, duplicates, i)
                            for i, part in enumerate(frame.to_delayed(optimize_graph=True))])
    if count_column is not None and duplicates == "error":
        k = len(labels)
        check_repeats(client, parts, "unit and category", lambda c: unit_category(
            h, c // k, categories, labels[c % k]))
    leaves = leaf_count_blocks(client, parts, h, len(labels), placement)
    data = DatasetCounts(h, labels, tuple(categories), declared)
    if callable(split):
        split = split(DatasetCounts(h, (), tuple(categories), declared))
    release = blockwise_release(mechanism, h, labels if categories else None, leaves, budget,
                                split=split, source=source, executor=client, tree=geo,
                                placement=placement, parts_folder=parts_folder, **params)
    return release, data


def check_repeats(client, parts: list, what: str, name) -> None:
    """Refuse (`DuplicateRowsError`) rows of one cell read in two partitions: ``parts``,
    handles of every partition's sparse cells (block -> (cells, values), each partition
    checked alone as it was made, its error raised here), compared block by block from
    their pieces of it (`block_piece`, the tasks `leaf_count_blocks` reuses); ``name``:
    cell -> its words."""
    from hierdp_core.data.duplicates import first_shared_cell, shared_cell_error
    from hierdp_core.engine.leaf_counts import block_piece, blocks_of

    touched = client.gather([client.submit(blocks_of, part) for part in parts])
    held: dict[int, list] = {}
    for i, (part, blocks) in enumerate(zip(parts, touched, strict=True)):
        for b in blocks:  # a loop per partition and block it touches, as leaf_count_blocks
            held.setdefault(b, []).append((i, client.submit(block_piece, part, b)))
    found = client.gather([client.submit(first_shared_cell, [i for i, _ in pieces],
                                         *[p for _, p in pieces], pure=False)
                           for pieces in held.values() if len(pieces) > 1])
    error = shared_cell_error(found, what, name)
    if error is not None:
        raise error


# ---- the Python API ----------------------------------------------------------------------
def release_dataset(dataset, levels: list[str], mechanism, budget, *, geography=None,
                    categories=(), category_values=None, count_column: str | None = None,
                    split=None, source=None, local_codes: bool = False,
                    max_cells: int | None = None, client=None, scheduler: str | None = None,
                    workers: int | None = None, memory_limit: str = "auto",
                    parts_folder=None, duplicates: str = "sum", **params):
    """A counts Release of the records in ``dataset`` (a folder of CSV or Parquet files, a
    glob, or a list of files) on Dask, and the `DatasetCounts` of its data.

    ``mechanism``: a count mechanism (its `Capabilities` say ``blockwise``,
    by name or object); ``geography``: the declared `hierdp_core.structure.Geography`
    (None: the units of the data, exploration); ``category_values``: column -> declared
    values (a category column without them takes the data's values, exploration);
    ``split``: as the mechanism takes it, or a function of the `DatasetCounts` (the public
    shape) giving it. ``client``: a `distributed.Client` to use; else one of the scheduler
    at ``scheduler``, or of a local cluster of ``workers`` processes, closed at the end.
    ``parts_folder``: the workers write the release's parts there and a
    `hierdp_core.engine.written.WrittenRelease` is returned (a folder every worker can
    write; `hierdp_core.export.write_release` moves the parts into the release folder);
    without it the whole Release is gathered here. ``duplicates``: rows of a
    ``count_column`` repeating a unit and category are summed (``"sum"``) or refused
    (``"error"``, the command line's default), before the split is asked for."""
    from hierdp_core.data.loaders import check_cells
    from hierdp_core.mechanisms.base import get_mechanism

    mechanism = get_mechanism(mechanism) if isinstance(mechanism, str) else mechanism
    files = dataset_files(dataset)
    categories, values = list(categories), dict(category_values or {})
    columns = list(dict.fromkeys([*levels, *categories, *([count_column] if count_column
                                                            else [])]))
    with client_for(client, scheduler, workers, memory_limit) as client:
        # the count column as text too: "3.000" is refused as the in-memory reader refuses
        # it, never parsed as 3 (`data.validate.validate_counts`)
        frame = read_dataset(files, columns, columns)
        declared = geography is not None and set(categories) <= set(values)
        if geography is None:
            geography = units_of_data(frame, levels, local_codes)
        values.update({c: values_of_data(frame, c) for c in categories if c not in values})
        h, k = geography.hierarchy, int(np.prod([len(values[c]) for c in categories]))
        if max_cells is not None:
            check_cells(h.n_leaves * k, max_cells, f"{h.n_leaves:,} units x {k:,} categories")
        return dask_count_release(client, frame, geography, levels, categories, values,
                                  count_column, mechanism, budget, declared=declared,
                                  split=split, source=source, parts_folder=parts_folder,
                                  duplicates=duplicates, **params)


def units_of_data(frame, levels: list[str], local_codes: bool):
    """The geography of the units in the data (exploration: not publishable)."""
    from hierdp_core.structure import geography_from_table

    distinct = frame[levels].drop_duplicates().compute()
    return geography_from_table(distinct.reset_index(drop=True), levels,
                                local_codes=local_codes)


def values_of_data(frame, column: str) -> tuple[str, ...]:
    """The distinct values of a category column in the data (exploration)."""
    from hierdp_core.structure import distinct_codes

    return tuple(distinct_codes(pd.Series(frame[column].unique().compute()), column))
