"""Keeping every region's number of groups: a consistent hierarchy of group-size histograms
in which every region has exactly its given number of groups ``G_v`` (post-processing; no
privacy cost, nothing here reads the truth unless ``counts`` are the public ones).

`rescale_rows` turns any non-negative estimate of a region's histogram into one with exactly
``G_v`` groups and the same size distribution (its cumulative shares rounded, so at most one
group per size moves). `keep_group_counts` then goes top down: the root keeps its rescaled
row, and at every level each parent's groups are handed to its children by rank (Kuo et
al.'s optimal matching, Algorithm 2, `kuo_matching.match_level`): the k-th smallest group of
the parent goes to the child holding the k-th smallest of the union of the children's
estimated groups, and takes the parent's size. A child therefore receives exactly ``G_c``
groups, the children of every parent sum to it size by size, and the parents' histograms
(more precise: they pool more people) are kept while the children's estimates decide which
child gets which group. Whole levels at once, on run-length encoded groups (`kuo_runs.Runs`).

Example
-------
>>> import pandas as pd
>>> from hierdp_core.hierarchy import build_hierarchy
>>> h, _ = build_hierarchy(pd.DataFrame({"state": ["A", "B"]}), ["state"])
>>> est = np.array([[0, 4, 2, 1], [0, 1, 2, 0], [0, 2, 0, 1]])  # A and B: 3 groups each
>>> keep_group_counts(h, est, np.array([7, 4, 3])).tolist()
[[0, 4, 2, 1], [0, 2, 2, 0], [0, 2, 0, 1]]
"""

from __future__ import annotations

import numpy as np

from hierdp_core.errors import InputError
from hierdp_core.groupsizes.kuo_matching import match_level, merge_level
from hierdp_core.groupsizes.kuo_runs import Runs
from hierdp_core.hierarchy import Hierarchy


def rescale_rows(estimate, counts) -> np.ndarray:
    """Integer histograms with rows summing to ``counts`` exactly, distributed like the
    non-negative ``estimate`` rows (cumulative shares scaled and rounded: monotone, so every
    cell stays >= 0). A row estimated empty puts its groups at the smallest size."""
    x = np.maximum(np.asarray(estimate, dtype=float), 0.0)
    counts = np.asarray(counts, dtype=np.int64)
    cum = np.cumsum(x, axis=1)
    total = cum[:, -1:]
    share = np.divide(cum, total, out=np.ones_like(cum), where=total > 0)
    scaled = np.floor(share * counts[:, None] + 0.5)
    scaled[:, -1] = counts
    return np.diff(scaled, axis=1, prepend=0.0).astype(np.int64)


def keep_group_counts(h: Hierarchy, estimate, counts) -> np.ndarray:
    """A consistent integer hierarchy (n_nodes, N + 1) with every row summing to ``counts``
    (the number of groups of every node: consistent, parent = sum of children), close to
    ``estimate`` (n_nodes, N + 1) non-negative (see the module docstring)."""
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    if counts.shape != (h.n_nodes,) or np.any(counts < 0):
        raise InputError(f"expected {h.n_nodes} non-negative group counts, got {counts.shape}")
    if np.any(h.aggregate(counts[h.level_slice(h.depth)]) != counts):
        raise InputError("every node's number of groups must be the sum of its children's")
    return h.aggregate(hand_down(h, rescale_rows(estimate, counts), first_level=1))


def hand_down(h: Hierarchy, rows: np.ndarray, first_level: int) -> np.ndarray:
    """The leaves' histograms (n_leaves, N + 1): the groups of level ``first_level - 1``
    (its ``rows``, kept exactly) handed to their children by rank, level by level; ``rows``
    of the levels below rank them. Every parent's children depend on that parent alone (a
    subtree given its top gives the whole tree's values)."""
    top = rows[h.level_slice(first_level - 1)]
    # the parent's sizes are taken as exact (variance 0), the children's only rank them
    current = Runs.from_hist(top, np.zeros(top.shape))
    for level in range(first_level, h.n_levels):
        sl = h.level_slice(level)
        child = Runs.from_hist(rows[sl], np.ones(rows[sl].shape))
        pairs = match_level(current, child, h.segment_of_level(level))
        current = merge_level(current, child, pairs)
    return current.to_hist(rows.shape[1] - 1)
