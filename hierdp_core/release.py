"""The Release: what a mechanism publishes. It holds privatised values only (and, for
display, the noisy measurements they came from, which are private too); evaluation against
the truth is a separate step (`hierdp_core.metrics`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from hierdp_core.hierarchy import Hierarchy

RELEASE_COLUMNS = ("level", "level_name", "node_id", "parent_id", "label", "category", "value")


@dataclass(frozen=True, eq=False)
class Release:
    """Released values for every node (shape (n_nodes, k)), with how they were made.

    ``categories`` is None when plain totals were released (k = 1). ``invariants`` lists
    statistics published exactly (e.g. ``"root total"``); they are not protected by DP.
    """

    hierarchy: Hierarchy
    values: np.ndarray
    mechanism: str
    parameters: dict
    privacy: dict
    ledger: pd.DataFrame
    randomness: dict
    categories: tuple[str, ...] | None = None
    invariants: tuple[str, ...] = ()
    noisy: np.ndarray | None = field(default=None, repr=False)

    @property
    def is_integer(self) -> bool:
        return self.values.dtype.kind in "iu"

    def totals(self) -> np.ndarray:
        """Released total of every node (sum over categories), shape (n_nodes,)."""
        return self.values.sum(axis=1)

    def manifest_structure(self) -> dict:
        """The public shape of the release, for the manifest: levels, units, categories."""
        h = self.hierarchy
        return {
            "hierarchy": {"levels": list(h.level_names),
                          "units_per_level": [h.level_size(lv) for lv in range(h.n_levels)]},
            "categories": list(self.categories) if self.categories is not None else None,
        }

    def to_frame(self) -> pd.DataFrame:
        """The release table: one row per node (x category), columns `RELEASE_COLUMNS`
        (without ``category`` when no categories were released)."""
        h = self.hierarchy
        k = self.values.shape[1]
        levels = h.level_of_nodes()
        names = np.asarray(h.level_names, dtype=object)[levels]
        cols = {
            "level": np.repeat(levels.astype(np.int64), k),
            "level_name": np.repeat(names, k),
            "node_id": np.repeat(h.node_ids(), k),
            "parent_id": np.repeat(h.parent_ids(), k),
            "label": np.repeat(h.labels(), k),
        }
        if self.categories is not None:
            cols["category"] = np.tile(np.asarray(self.categories, dtype=object), h.n_nodes)
        cols["value"] = self.values.ravel()
        return pd.DataFrame(cols)
