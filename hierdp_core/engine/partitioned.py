"""A release table as a partitioned Parquet dataset: the folder ``release.parquet/`` in the
release folder, one file for the root and one per top-level unit with its whole subtree
(``part-00000.parquet`` the root, ``part-{u + 1:05d}.parquet`` top-level unit ``u``), each
listed with its sha256 in the manifest like any release file. Read back (`read_dataset`)
and sorted by level (stable), the rows come in the order of the single-file table. The
parts are written here (`write_dataset`) or, on a cluster, by the workers
(`hierdp_core.engine.written`), each part hashed as it is written. Within a part the rows
are in reading order (`hierdp_core.reading_order`), and the parts are read back in the
reading order of their top-level units.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from hierdp_core.errors import InputError
from hierdp_core.ids import split_node_id
from hierdp_core.mechanisms.streams import subtree_ranges, subtree_rows
from hierdp_core.reading_order import reading_positions, sibling_order
from hierdp_core.releases import release_table

DATASET = "release.parquet"


def part_name(index: int) -> str:
    """The file of part ``index`` (0: the root; u + 1: top-level unit u) in the dataset."""
    return f"{DATASET}/part-{index:05d}.parquet"


def write_part(table: pa.Table, folder: Path, index: int) -> tuple[str, str, int]:
    """Write part ``index`` of the dataset into ``folder`` (its ``release.parquet/``
    exists); return (its name, its sha256, its rows)."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = sink.getvalue()
    name = part_name(index)
    (Path(folder) / name).write_bytes(data)
    return name, hashlib.sha256(data).hexdigest(), table.num_rows


def write_units(hierarchy, values: np.ndarray, categories, intervals, folder: Path,
                first_unit: int = 0) -> list[tuple[str, str, int]]:
    """Write the part of every top-level unit of ``hierarchy`` (a whole tree, or a block's
    `hierdp_core.mechanisms.streams.subtree` whose first unit is ``first_unit`` of the whole)
    from its ``values`` (n_nodes, k) into ``folder`` (a loop per top-level unit)."""
    out, listed = [], reading_positions(hierarchy)
    for unit in range(hierarchy.level_size(1)):
        rows = subtree_rows(subtree_ranges(hierarchy, unit, unit + 1))
        rows = rows[np.argsort(listed[rows], kind="stable")]
        table = release_table(hierarchy, values, categories, intervals, rows)
        out.append(write_part(table, folder, first_unit + unit + 1))
    return out


def write_dataset(release, stage: Path) -> dict[str, str]:
    """Write the release's parts into ``stage`` (a staging folder, `hierdp_core.atomic`), or
    move them there when the workers wrote them (``move_into``); return their names
    relative to it, in order, with their sha256."""
    if hasattr(release, "move_into"):
        return release.move_into(stage)
    (stage / DATASET).mkdir()
    parts = [write_part(release.to_arrow(np.array([0])), stage, 0),
             *write_units(release.hierarchy, release.values, release.categories,
                          release.intervals, stage)]
    return {name: digest for name, digest, _ in parts}


def is_dataset_file(name: str) -> bool:
    """True for a manifest file name inside the dataset folder."""
    head, _, tail = name.partition("/")
    return head == DATASET and bool(tail) and "/" not in tail and tail.endswith(".parquet")


def unlisted_parts(folder: Path, files: dict) -> list[str]:
    """Files in the dataset folder that the manifest does not list."""
    base = folder / DATASET
    if not base.is_dir():
        return []
    return sorted(f"{DATASET}/{p.name}" for p in base.iterdir()
                  if f"{DATASET}/{p.name}" not in files)


def read_dataset(folder: Path, files: dict) -> pd.DataFrame:
    """The release table from the dataset's parts listed in ``files``, level by level, in
    the order of the single-file table: the root's part, then the others in the reading
    order of their top-level units."""
    parts = sorted(name for name in files if is_dataset_file(name))
    if not parts:
        raise InputError(f"no part of {DATASET} is listed in the manifest of {str(folder)!r}")
    tables = [pd.read_parquet(folder / name) for name in parts]
    units = [t["node_id"].iloc[0] if len(t) and t["level"].iloc[0] == 1 else None
             for t in tables]
    others = [i for i, unit in enumerate(units) if unit is not None]
    listed = [i for i, unit in enumerate(units) if unit is None]
    codes = [split_node_id(units[i])[0] for i in others]
    listed += [others[i] for i in sibling_order(codes)]
    table = pd.concat([tables[i] for i in listed], ignore_index=True)
    return table.sort_values("level", kind="stable", ignore_index=True)
