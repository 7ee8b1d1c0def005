"""TopDown: consistent, non-negative integer counts, level by level from the root.

For each level, for every parent (and every category) at once: project the children's
estimates onto the non-negative reals summing to the parent's released value (L2, exact
closed form by sorting), then round to integers keeping the sum (minimal change). The
result is non-negative, integral, and every parent equals the sum of its children in every
category. With exact inputs (no noise) it returns the inputs.

Example
-------
>>> import pandas as pd
>>> from hierdp_core.hierarchy import build_hierarchy
>>> h, _ = build_hierarchy(pd.DataFrame({"s": ["A", "A", "B"], "c": ["a", "b", "c"]}), ["s", "c"])
>>> est = np.array([[9.6], [7.2], [2.1], [5.5], [-1.0], [2.4]])
>>> topdown(h, est, root_values=np.array([10])).ravel().tolist()
[10, 8, 2, 7, 1, 2]
"""

from __future__ import annotations

import numpy as np

from hierdp_core.consistency.segments import project_and_round
from hierdp_core.hierarchy import Hierarchy


def topdown(
    hierarchy: Hierarchy,
    estimates: np.ndarray,
    root_values: np.ndarray,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Integer release (n_nodes, k) from real estimates (n_nodes, k) and the root's
    non-negative integer values (k,). ``weights`` (n_nodes,), optional, weight each node's
    squared deviation in the projection (e.g. inverse noise variance)."""
    est = np.asarray(estimates, dtype=float)
    if est.ndim == 1:
        est = est[:, None]
    k = est.shape[1]
    out = np.empty(est.shape, dtype=np.int64)
    out[0] = np.asarray(root_values, dtype=np.int64).reshape(k)
    topdown_levels(hierarchy, est, out, first_level=1, weights=weights)
    return out


def topdown_levels(hierarchy: Hierarchy, est: np.ndarray, out: np.ndarray, first_level: int,
                   weights: np.ndarray | None = None) -> None:
    """Fill ``out`` (int64, like ``est``) from ``first_level`` to the leaves, given ``out``
    of the level above: every parent's children depend on that parent alone (a subtree
    given its top gives the whole tree's values)."""
    h = hierarchy
    k = est.shape[1]
    for level in range(first_level, h.n_levels):
        sl = h.level_slice(level)
        n = h.level_size(level)
        base = h.child_starts(level)
        starts = (base[None, :] + n * np.arange(k)[:, None]).ravel()
        totals = out[h.level_slice(level - 1)].T.ravel().astype(float)
        y = est[sl].T.ravel()
        w = None if weights is None else np.tile(weights[sl], k)
        if k == 1:  # written in place
            project_and_round(y, starts, totals, w, out=out[sl].reshape(n))
        else:
            out[sl] = project_and_round(y, starts, totals, w).reshape(k, n).T
