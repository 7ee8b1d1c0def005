"""The Release: what a mechanism publishes. It holds privatised values only (and, for
display, the noisy measurements they came from, which are private too); evaluation against
the truth is a separate step (`hierdp_core.metrics`). A counts release may carry an
interval for every cell (`CellIntervals`, made by `hierdp_core.intervals` from the release
alone). ``hierdp_core.release(table, levels=..., ...)`` is the Python API's function,
`hierdp_core.api.release`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
import pyarrow as pa

from hierdp_core.hierarchy import Hierarchy
from hierdp_core.privacy.samplers import NOISES, Noise
from hierdp_core.privacy.secure_apply import counterpart_noise, drew_counterparts
from hierdp_core.reading_order import reading_order
from hierdp_core.verdict import LEDGER_ENTRY

RELEASE_COLUMNS = ("level", "level_name", "node_id", "parent_id", "label", "category", "value",
                   "lower", "upper")


@dataclass(frozen=True, eq=False)
class CellIntervals:
    """An interval per released cell, arrays shaped like the release's ``values``, at a
    confidence level; ``record`` says how they were made (for the manifest)."""

    lower: np.ndarray
    upper: np.ndarray
    record: dict


@dataclass(frozen=True, eq=False, kw_only=True)
class ReleaseRecord(ABC):
    """What every release carries, whatever its query (`Release` and `RangeRelease` for
    tables, `hierdp_core.flows.release.FlowRelease` for O/D flows): how it was made
    (``mechanism``, ``parameters``), its privacy claim (``privacy``, ``ledger``), its
    randomness, the statistics published exactly (``invariants``: not protected by DP) and
    an interval per released value (``intervals``, made by `hierdp_core.intervals` from the
    release alone). Each kind adds its values and their shape, and says whether they are
    integers, its public shape for the manifest and its release table (the export writes
    any release through these)."""

    mechanism: str
    parameters: dict
    privacy: dict
    ledger: pd.DataFrame
    randomness: dict
    invariants: tuple[str, ...] = ()
    intervals: CellIntervals | None = field(default=None, repr=False)

    def charged(self, release_id: str):
        """This release marked with its entry in the budget ledger (its randomness names
        ``release_id``): only a path that reserved its charge there before drawing the
        noise marks it (`hierdp_core.verdict`: a secure release unmarked is not
        publishable)."""
        return replace(self, randomness={**self.randomness, LEDGER_ENTRY: release_id})

    @property
    @abstractmethod
    def is_integer(self) -> bool:
        """Whether every released value is an integer."""

    @abstractmethod
    def manifest_structure(self) -> dict:
        """The public shape of the release, for the manifest."""

    @abstractmethod
    def to_frame(self) -> pd.DataFrame:
        """The release table, one row per released value."""

    @abstractmethod
    def to_arrow(self) -> pa.Table:
        """`to_frame`'s table as a pyarrow Table (what the export writes)."""


@dataclass(frozen=True, eq=False)
class Release(ReleaseRecord):
    """Released values for every node (shape (n_nodes, k)), with how they were made
    (`ReleaseRecord`). ``categories`` is None when plain totals were released (k = 1);
    ``noisy``: the measurements the values came from (private too; for display)."""

    hierarchy: Hierarchy
    values: np.ndarray
    categories: tuple[str, ...] | None = None
    noisy: np.ndarray | None = field(default=None, repr=False)

    @property
    def is_integer(self) -> bool:
        return self.values.dtype.kind in "iu"

    def totals(self) -> np.ndarray:
        """Released total of every node (sum over categories), shape (n_nodes,)."""
        return self.values.sum(axis=1)

    def level_noises(self) -> list[Noise | None]:
        """Each level's noise as the ledger records it (distribution and scale; None where
        the level was not measured; continuous noise a secure release drew as its exact
        integer counterpart: that counterpart, `secure_apply.counterpart_noise`), root first. Counts releases only (one ledger row per
        level): public parameters, from which `hierdp_core.intervals` works."""
        drawn = drew_counterparts(getattr(self, "randomness", None))
        noises = []
        for name, scale in zip(self.ledger["noise"], self.ledger["noise_scale"], strict=True):
            if name in NOISES and drawn:  # secure: drawn as the exact integer counterpart
                name, scale = counterpart_noise(name, float(scale))
            noises.append(NOISES[name](float(scale)) if name in NOISES else None)
        return noises

    def manifest_structure(self) -> dict:
        """The public shape of the release, for the manifest: levels, units, categories."""
        return structure_record(self.hierarchy, self.categories)

    def to_frame(self) -> pd.DataFrame:
        """The release table: one row per node (x category) in reading order
        (`hierdp_core.reading_order`), columns `RELEASE_COLUMNS` (without ``category`` when no categories were released, without ``lower`` and
        ``upper`` when the release has no intervals)."""
        return self.to_arrow().to_pandas()

    def to_arrow(self, nodes: np.ndarray | None = None) -> pa.Table:
        """`to_frame`'s table as a pyarrow Table (`release_table`); with ``nodes`` (node
        indices), the rows of those nodes alone, in that order."""
        return release_table(self.hierarchy, self.values, self.categories, self.intervals,
                             nodes)


def structure_record(hierarchy: Hierarchy, categories: tuple[str, ...] | None) -> dict:
    """The public shape of a release, for the manifest: levels, units, categories."""
    h = hierarchy
    return {
        "hierarchy": {"levels": list(h.level_names),
                      "units_per_level": [h.level_size(lv) for lv in range(h.n_levels)]},
        "categories": list(categories) if categories is not None else None,
    }


def release_table(hierarchy: Hierarchy, values: np.ndarray, categories: tuple[str, ...] | None,
                  intervals: CellIntervals | None = None, nodes: np.ndarray | None = None,
                  ) -> pa.Table:
    """The release table of ``values`` (n_nodes, k) over ``hierarchy`` (columns
    `RELEASE_COLUMNS`, see `Release.to_frame`), built from one string per node (and per
    category) repeated by pyarrow, without a Python string per row; the nodes in reading
    order (`hierdp_core.reading_order`: '2' before '11'), or with ``nodes`` (node
    indices), the rows of those nodes alone, in that order."""
    h = hierarchy
    k = values.shape[1]
    nodes = reading_order(h) if nodes is None else np.asarray(nodes)
    levels = h.level_of_nodes()[nodes].astype(np.int64)
    node_rows = pa.array(np.repeat(np.arange(nodes.size, dtype=np.int64), k))

    def per_node(per) -> pa.Array:
        return pa.array(np.asarray(per, dtype=object)[nodes], pa.string()).take(node_rows)

    cols = {
        "level": pa.array(np.repeat(levels, k)),
        "level_name": pa.array(list(h.level_names), pa.string()).take(
            pa.array(np.repeat(levels, k))),
        "node_id": per_node(h.node_ids()),
        "parent_id": per_node(h.parent_ids()),
        "label": per_node(h.labels()),
    }
    if categories is not None:
        cols["category"] = pa.array(list(categories), pa.string()).take(
            pa.array(np.tile(np.arange(k, dtype=np.int64), nodes.size)))
    cols["value"] = pa.array(values[nodes].ravel())
    if intervals is not None:
        cols["lower"] = pa.array(intervals.lower[nodes].ravel())
        cols["upper"] = pa.array(intervals.upper[nodes].ravel())
    return pa.table(cols)
