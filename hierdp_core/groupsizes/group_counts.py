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
from hierdp_core.groupsizes.kuo_runs import Runs, side_by_side
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
    return keep_group_counts_trials(h, np.asarray(estimate)[None], counts)[0]


def keep_group_counts_trials(h: Hierarchy, estimates, counts) -> np.ndarray:
    """`keep_group_counts` of K estimates (K, n_nodes, N + 1) at once, ``counts`` one per
    node (n_nodes,) or per trial and node (K, n_nodes): (K, n_nodes, N + 1), each bit for
    bit its own (the trials' levels side by side, `hand_down`)."""
    estimates = np.asarray(estimates)
    trials, width = len(estimates), estimates.shape[-1]
    counts = np.asarray(counts, dtype=np.int64)
    if counts.shape == (h.n_nodes,):  # the same for every trial
        counts = np.broadcast_to(counts, (trials, h.n_nodes))
    if counts.shape != (trials, h.n_nodes) or np.any(counts < 0):
        raise InputError(f"expected {h.n_nodes} non-negative group counts, got "
                         f"{counts.shape}")
    if np.any(_aggregate(h, counts[:, h.level_slice(h.depth), None]) != counts[..., None]):
        raise InputError("every node's number of groups must be the sum of its children's")
    rows = rescale_rows(estimates.reshape(-1, width), counts.reshape(-1))
    return _aggregate(h, hand_down(h, rows.reshape(trials, h.n_nodes, width), first_level=1))


def _aggregate(h: Hierarchy, leaves: np.ndarray) -> np.ndarray:
    """`Hierarchy.aggregate` of every trial's leaf rows (K, n_leaves, k): (K, n_nodes, k)."""
    trials, _, k = leaves.shape
    flat = h.aggregate(leaves.transpose(1, 0, 2).reshape(h.n_leaves, trials * k))
    return flat.reshape(h.n_nodes, trials, k).transpose(1, 0, 2)


def hand_down(h: Hierarchy, rows: np.ndarray, first_level: int) -> np.ndarray:
    """The leaves' histograms (n_leaves, N + 1): the groups of level ``first_level - 1``
    (its ``rows``, kept exactly) handed to their children by rank, level by level; ``rows``
    of the levels below rank them. Every parent's children depend on that parent alone (a
    subtree given its top gives the whole tree's values). ``rows`` (K, n_nodes, N + 1): K
    trials side by side, each handed down as alone, (K, n_leaves, N + 1)."""
    width = rows.shape[-1]
    stack = rows.reshape(-1, h.n_nodes, width)

    def level(lv: int) -> np.ndarray:
        return stack[:, h.level_slice(lv)].reshape(-1, width)

    top = level(first_level - 1)
    # the parent's sizes are taken as exact (variance 0), the children's only rank them
    current = Runs.from_hist(top, np.zeros(top.shape))
    for lv in range(first_level, h.n_levels):
        child = Runs.from_hist(level(lv), np.ones((len(stack) * h.level_size(lv), width)))
        parents = side_by_side(h.segment_of_level(lv), h.level_size(lv - 1), len(stack))
        current = merge_level(current, child, match_level(current, child, parents))
    return current.to_hist(width - 1).reshape(rows.shape[:-2] + (h.n_leaves, width))
