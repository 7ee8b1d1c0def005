"""Counts releases on Dask: inputs larger than one machine's memory, read as a dataset (a
folder of CSV or Parquet files, or a glob) and released block by block
(`hierdp_core.engine.blockwise`) on a `dask.distributed` cluster.

What runs where: the client reads the declared geography (or the distinct units and
categories of the data, for exploration), the workers turn every partition of the input
into sparse leaf counts per block (`partition_cells`: leaf x category cells and their
sums), every block's task gathers its leaf counts from them (`block_leaf_counts`), measures
and makes its subtree consistent; the client measures the root and solves the top of the
tree. The result is the in-memory engine's release, bit for bit with a seed.

Only counts (with or without categories) run here. Dask is imported by this module alone.
"""

from __future__ import annotations

import glob
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core.engine.blockwise import blockwise_release
from hierdp_core.engine.streams import first_leaves
from hierdp_core.errors import InputError

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
    limited to ``memory_limit``. An unreachable scheduler is an `InputError`."""
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
    cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                           processes=processes, memory_limit=memory_limit,
                           dashboard_address=":0", silence_logs=logging.CRITICAL)
    return Client(cluster)


def close_client(client) -> None:
    """Close the client, and the cluster it started."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()


# ---- reading -----------------------------------------------------------------------------
def dataset_files(path: str | Path) -> list[Path]:
    """The files of a dataset: a folder's ``*.parquet`` or ``*.csv`` files, a glob's
    matches, or one file; sorted. One kind of file only."""
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
def partition_cells(frame: pd.DataFrame, geography, levels: list[str], categories: list[str],
                    values: dict, count_column: str | None, k: int,
                    first_leaves: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """One partition's records as sparse counts per block: block -> (cells, sums), a cell
    being ``leaf * k + category`` (leaves within the leaf level), sorted, distinct."""
    from hierdp_core.data.loaders import validate_counts
    from hierdp_core.structure import category_index

    if len(frame) == 0:
        return {}
    leaf = geography.leaf_of_rows(frame, levels)
    cat = (category_index(frame, categories, values)[0] if categories
           else np.zeros(len(frame), dtype=np.int64))
    weights = (np.ones(len(frame), dtype=np.int64) if count_column is None
               else validate_counts(frame, count_column))
    cells = leaf * k + cat
    order = np.argsort(cells, kind="stable")
    cells, weights = cells[order], weights[order]
    starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]])
    cells, sums = cells[starts], np.add.reduceat(weights, starts)
    block = np.searchsorted(first_leaves, cells // k, side="right") - 1
    bounds = np.flatnonzero(np.r_[True, block[1:] != block[:-1], True])
    return {int(block[a]): (cells[a:b], sums[a:b]) for a, b in zip(bounds[:-1], bounds[1:],
                                                                   strict=True)}


def block_leaf_counts(block: int, first_leaf: int, n_leaves: int, k: int,
                      *parts: dict) -> np.ndarray:
    """A block's dense leaf counts (n_leaves, k) from every partition's sparse counts."""
    dense = np.zeros(n_leaves * k, dtype=np.int64)
    for part in parts:
        if block in part:
            cells, sums = part[block]
            dense[cells - first_leaf * k] += sums
    return dense.reshape(n_leaves, k)


def dask_count_release(client, frame, geography, levels: list[str], categories: list[str],
                       values: dict, count_column: str | None, mechanism, budget, *,
                       declared: bool, split=None, source=None, **params):
    """The counts Release of the records of ``frame`` (a `dask.dataframe`) over
    ``geography`` with the category ``values`` (column -> values), block by block on
    ``client``; and the `DatasetCounts` describing its data."""
    from dask import delayed

    from hierdp_core.structure import category_index

    h = geography.hierarchy
    labels = (category_index(pd.DataFrame({c: [] for c in categories}), categories,
                             values)[1] if categories else ("total",))
    k = len(labels)
    first = first_leaves(h)
    geo = client.scatter(geography, broadcast=True)
    cells = delayed(partition_cells, pure=False)
    parts = client.compute([cells(part, geo, levels, categories, values, count_column, k,
                                  first) for part in frame.to_delayed(optimize_graph=True)])
    ends = np.append(first[1:], h.n_leaves)
    leaves = [client.submit(block_leaf_counts, b, int(first[b]), int(ends[b] - first[b]), k,
                            *parts, pure=False) for b in range(first.size)]
    data = DatasetCounts(h, labels, tuple(categories), declared)
    release = blockwise_release(mechanism, h, labels if categories else None, leaves, budget,
                                split=split, source=source, executor=client, tree=geo,
                                **params)
    return release, data


# ---- the Python API ----------------------------------------------------------------------
def release_dataset(dataset, levels: list[str], mechanism, budget, *, geography=None,
                    categories=(), category_values=None, count_column: str | None = None,
                    split=None, source=None, local_codes: bool = False,
                    max_cells: int | None = None, client=None, scheduler: str | None = None,
                    workers: int | None = None, memory_limit: str = "auto", **params):
    """A counts Release of the records in ``dataset`` (a folder of CSV or Parquet files, a
    glob, or a list of files) on Dask, and the `DatasetCounts` of its data.

    ``mechanism``: a count mechanism (`hierdp_core.engine.blockwise.BLOCKWISE_MECHANISMS`,
    by name or object); ``geography``: the declared `hierdp_core.structure.Geography`
    (None: the units of the data, exploration); ``category_values``: column -> declared
    values (a category column without them takes the data's values, exploration);
    ``split``: as the mechanism takes it, or a function of the `DatasetCounts` (the public
    shape) giving it. ``client``: a `distributed.Client` to use; else one of the scheduler
    at ``scheduler``, or of a local cluster of ``workers`` processes, closed at the end."""
    from hierdp_core.data.loaders import check_cells
    from hierdp_core.mechanisms.base import get_mechanism

    mechanism = get_mechanism(mechanism) if isinstance(mechanism, str) else mechanism
    files = dataset if isinstance(dataset, list) else dataset_files(dataset)
    categories, values = list(categories), dict(category_values or {})
    columns = list(dict.fromkeys([*levels, *categories, *([count_column] if count_column
                                                            else [])]))
    own = client is None
    client = open_client(scheduler, workers, memory_limit) if own else client
    try:
        frame = read_dataset(files, columns, [*levels, *categories])
        declared = geography is not None and set(categories) <= set(values)
        if geography is None:
            geography = units_of_data(frame, levels, local_codes)
        values.update({c: values_of_data(frame, c) for c in categories if c not in values})
        h, k = geography.hierarchy, int(np.prod([len(values[c]) for c in categories]))
        if max_cells is not None:
            check_cells(h.n_leaves * k, max_cells, f"{h.n_leaves:,} units x {k:,} categories")
        if callable(split):
            split = split(DatasetCounts(h, (), tuple(categories), declared))
        return dask_count_release(client, frame, geography, levels, categories, values,
                                  count_column, mechanism, budget, declared=declared,
                                  split=split, source=source, **params)
    finally:
        if own:
            close_client(client)


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
