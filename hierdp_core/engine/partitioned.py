"""A release table as a partitioned Parquet dataset: the folder ``release.parquet/`` in the
release folder, one file for the root and one per top-level unit with its whole subtree
(``part-00000.parquet`` the root, ``part-{u + 1:05d}.parquet`` top-level unit ``u``), each
listed with its sha256 in the manifest like any release file. Read back (`read_dataset`)
and sorted by level (stable), the rows come in the order of the single-file table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from hierdp_core.engine.streams import subtree_ranges, subtree_rows
from hierdp_core.errors import InputError

DATASET = "release.parquet"


def part_name(index: int) -> str:
    """The file of part ``index`` (0: the root; u + 1: top-level unit u) in the dataset."""
    return f"{DATASET}/part-{index:05d}.parquet"


def write_dataset(release, stage: Path) -> list[str]:
    """Write the release's parts into ``stage`` (a staging folder, `hierdp_core.atomic`);
    return their names relative to it, in order (a loop per top-level unit)."""
    h = release.hierarchy
    (stage / DATASET).mkdir()
    names = [part_name(0)]
    pq.write_table(release.to_arrow(np.array([0])), stage / names[0])
    for unit in range(h.level_size(1)):
        rows = subtree_rows(subtree_ranges(h, unit, unit + 1))
        names.append(part_name(unit + 1))
        pq.write_table(release.to_arrow(rows), stage / names[-1])
    return names


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
    """The release table from the dataset's parts listed in ``files``, level by level."""
    parts = sorted(name for name in files if is_dataset_file(name))
    if not parts:
        raise InputError(f"no part of {DATASET} is listed in the manifest of {str(folder)!r}")
    table = pd.concat([pd.read_parquet(folder / name) for name in parts], ignore_index=True)
    return table.sort_values("level", kind="stable", ignore_index=True)
