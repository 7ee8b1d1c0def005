"""The tree of intervals DAWA's Stage-2 strategies ask, and the row weights it gives.

The paper's bottom-up tree: level 0 holds the k single buckets; level l+1 groups t consecutive
nodes of level l, the last group possibly smaller; the last level is the root (all leaves at
the same depth). When the last group of a level would hold a single node, no duplicate is made:
that node itself moves up a level and is asked once (a duplicate row would only split its
weight between two equal queries). Greedy gives such a node one lambda, chosen where it is
made; the fixed-weight baselines give it the sum of the weights of all the levels it spans.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tree:
    """The bottom-up tree: ``edges[l]`` bounds the nodes of level l (level 0: the buckets; the
    last level: the root); ``made[l]`` marks the nodes made at level l (leaves, and groups of
    two or more nodes) as opposed to a single node moved up; ``top[l]`` is the highest level
    at which each node still appears."""

    branching: int
    edges: tuple[np.ndarray, ...]
    made: tuple[np.ndarray, ...]
    top: tuple[np.ndarray, ...]

    @property
    def height(self) -> int:
        return len(self.edges) - 1

    def decay(self, level: int) -> float:
        """mu = t^(-depth/2), root depth 0."""
        return float(self.branching) ** (-(self.height - level) / 2)


def build_tree(k: int, branching: int) -> Tree:
    """The tree over k >= 1 buckets with fan-out ``branching`` >= 2 (checked by the caller)."""
    edges, made = [np.arange(k + 1)], [np.ones(k, dtype=bool)]
    while edges[-1].size > 2:
        n_below = edges[-1].size - 1
        bounds = np.append(np.arange(0, n_below, branching), n_below)
        edges.append(edges[-1][bounds])
        made.append(np.diff(bounds) >= 2)
    top = [np.full(e.size - 1, level) for level, e in enumerate(edges)]
    for level in range(len(edges) - 2, -1, -1):
        if not made[level + 1][-1]:
            top[level][-1] = top[level + 1][-1]
    return Tree(branching, tuple(edges), tuple(made), tuple(top))


def collapsed_nodes(tree: Tree, groups: np.ndarray | None, r: int) -> list[np.ndarray]:
    """Per level, (r, nodes): the nodes all of whose buckets share one group label."""
    if groups is None:
        return [np.zeros((r, e.size - 1), dtype=bool) for e in tree.edges]
    k = tree.edges[0][-1]
    # run_end[u, i]: the first j > i where a new label starts (k if none)
    starts = np.where(groups[:, 1:] != groups[:, :-1], np.arange(1, k), k)
    run_end = np.minimum.accumulate(np.concatenate([starts, np.full((r, 1), k)], axis=1)[:, ::-1],
                                    axis=1)[:, ::-1]
    return [run_end[:, e[:-1]] >= e[1:] for e in tree.edges]


def row_weights(tree: Tree, own: list[np.ndarray]):
    """Final weights c_q = own_q * prod over the ancestors a of (1 - own_a), (r, q), for the
    tree nodes lo..hi (q,) from the root down, given each level's own weight fractions
    ``own`` (r, nodes); zero rows kept."""
    remaining = np.ones((own[0].shape[0], tree.edges[0][-1]))
    rows = []
    for edges, fraction in zip(reversed(tree.edges), reversed(own), strict=True):
        rows.append((edges[:-1], edges[1:], fraction * remaining[:, edges[:-1]]))
        remaining *= np.repeat(1.0 - fraction, np.diff(edges), axis=1)
    lo, hi, weights = zip(*rows, strict=True)
    return (np.concatenate(lo).astype(np.int64), np.concatenate(hi).astype(np.int64),
            np.concatenate(weights, axis=1))
