"""A counts release whose table the workers write: every block's task makes its subtree
consistent (`hierdp_core.engine.block_steps.block_finish`) and writes its top-level units'
part files of the partitioned Parquet dataset (`hierdp_core.engine.partitioned`) into a
folder, returning their names, sha256 and rows only; the client writes the root's part and
keeps a `WrittenRelease`: the release's public metadata and its top (root and top-level
units), never the whole table. `hierdp_core.export.write_release` moves the parts into the
release folder and lists them, with their sha256, in the manifest.

The folder must be one every worker can write and the client can read (the same machine,
or a shared file system), beside the release folder so that the parts move by renaming.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from hierdp_core.engine.block_steps import block_finish
from hierdp_core.engine.partitioned import DATASET, write_part, write_units
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.mechanisms.streams import block_bounds
from hierdp_core.releases import Release, structure_record


@dataclass(frozen=True, eq=False)
class WrittenRelease:
    """A counts release written as part files in ``folder`` by the workers: ``top``, the
    `Release` of the root and the top-level units (its ``hierarchy`` the top of the tree,
    `blockwise.top_tree`), with the ledger, privacy and randomness of the whole release;
    ``hierarchy`` the whole tree; ``files`` part name -> sha256; ``rows`` of all parts."""

    top: Release
    hierarchy: Hierarchy
    folder: Path
    files: dict
    rows: int
    intervals = None  # none: intervals need the whole table (the in-memory path)

    mechanism = property(lambda self: self.top.mechanism)
    parameters = property(lambda self: self.top.parameters)
    privacy = property(lambda self: self.top.privacy)
    ledger = property(lambda self: self.top.ledger)
    randomness = property(lambda self: self.top.randomness)
    categories = property(lambda self: self.top.categories)
    invariants = property(lambda self: self.top.invariants)
    is_integer = property(lambda self: self.top.is_integer)

    def manifest_structure(self) -> dict:
        """The public shape of the whole release, for the manifest."""
        return structure_record(self.hierarchy, self.categories)

    def charged(self, release_id: str) -> WrittenRelease:
        """This release marked with its budget-ledger entry (`Release.charged`)."""
        return replace(self, top=self.top.charged(release_id))

    def move_into(self, stage: Path) -> dict[str, str]:
        """Move the parts into ``stage`` (a staging release folder), remove ``folder``;
        return the parts' names with their sha256."""
        (stage / DATASET).mkdir()
        for name in self.files:
            os.replace(self.folder / name, stage / name)
        self.discard()
        return dict(self.files)

    def discard(self) -> None:
        """Remove ``folder`` and what is left in it."""
        shutil.rmtree(self.folder, ignore_errors=True)


def block_write(state, top_est, top_values: np.ndarray, mechanism, p: dict,
                variance: np.ndarray, categories, folder: str, first_unit: int) -> list:
    """Step 3 of a block (`block_finish`) writing its units' parts; their (name, sha256,
    rows)."""
    values, _ = block_finish(state, top_est, top_values, mechanism, p, variance)
    full = np.zeros((values.shape[0] + 1, values.shape[1]), dtype=top_values.dtype)
    full[1:] = values  # row 0, the block's own root, is not written
    return write_units(state.tree, full, categories, None, Path(folder), first_unit)


def write_in_blocks(executor, top: Release, hierarchy: Hierarchy, finish: list, on: list,
                    folder) -> WrittenRelease:
    """Finish every block on its worker, each writing its parts into ``folder``
    (`block_write`, ``finish[b]`` its arguments, ``on[b]`` its submit options); the root's
    part written here."""
    folder = Path(folder)
    (folder / DATASET).mkdir(parents=True, exist_ok=True)
    parts = [write_part(top.to_arrow(np.array([0])), folder, 0)]
    handles = [executor.submit(block_write, *args, top.categories, str(folder),
                               block_bounds(hierarchy, b)[0], **on[b])
               for b, args in enumerate(finish)]
    for written in executor.gather(handles):
        parts += written
    return WrittenRelease(top, hierarchy, folder, {name: digest for name, digest, _ in parts},
                          sum(rows for _, _, rows in parts))
