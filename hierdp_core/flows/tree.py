"""A released O/D tree: the positive nodes of every tree level as flat arrays, built either
top-down (InfTDA and its variants) or by aggregating released leaf cells (the baselines).

Level ``l`` holds parallel arrays ``origin``, ``destination`` (area indices within the
geography levels of `FlowData.pair_levels(l)`), ``value`` and ``parent`` (the index of the
parent node in level ``l - 1``; -1 at the root). Nodes absent from a level are zero.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hierdp_core.flows.data import FlowData
from hierdp_core.privacy.samplers import NoiseSource

Projection = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class TreeLevel:
    """The released nodes of one tree level (privatised values only)."""

    origin: np.ndarray
    destination: np.ndarray
    value: np.ndarray
    parent: np.ndarray

    @property
    def size(self) -> int:
        return int(self.value.size)

    def keys(self, destination_width: int) -> np.ndarray:
        return self.origin * destination_width + self.destination


def root_level(value: int) -> TreeLevel:
    one = np.zeros(1, dtype=np.int64)
    return TreeLevel(one, one.copy(), np.array([value], dtype=np.int64),
                     np.array([-1], dtype=np.int64))


def topdown(data: FlowData, root_value: int, noises: list, project: Projection,
            source: NoiseSource) -> tuple[list[TreeLevel], list[dict]]:
    """The top-down loop (Boninsegna & Silvestri, Alg. 1), one batch per level.

    For every released parent with a positive value, all its children (from the public
    geography, zeros included) get independent noise from ``noises[l - 1]`` (a `Noise` or a
    level plan: anything whose ``apply(values, source)`` returns the noisy values); ``project``
    maps each parent's noisy children to non-negative integers summing to the parent's
    value; children released as 0 are dropped with their subtrees. Returns the levels and,
    per level, how many children were noised and released (both private outputs).
    """
    levels = [root_level(root_value)]
    diagnostics = [{"level": 0, "parents": 0, "noised": 0, "released": 1}]
    for level in range(1, data.depth + 1):
        prev = levels[-1]
        origin, destination, n_children = data.children(level, prev.origin, prev.destination)
        noisy = noises[level - 1].apply(data.lookup(level, origin, destination), source)
        starts = np.cumsum(n_children) - n_children
        value = project(noisy, starts, prev.value)
        keep = value > 0
        parent = np.repeat(np.arange(prev.size, dtype=np.int64), n_children)
        levels.append(TreeLevel(origin[keep], destination[keep], value[keep], parent[keep]))
        diagnostics.append({"level": level, "parents": prev.size, "noised": int(origin.size),
                            "released": int(keep.sum())})
    return levels, diagnostics


def from_leaves(data: FlowData, origin: np.ndarray, destination: np.ndarray,
                value: np.ndarray) -> list[TreeLevel]:
    """The tree whose leaves are the given released cells (zeros dropped, negatives kept)
    and whose every other node is the sum of its children (kept even if the sum is 0, so
    that every node has its parent)."""
    o, d, v = (np.asarray(a, dtype=np.int64) for a in (origin, destination, value))
    o, d, v = o[v != 0], d[v != 0], v[v != 0]
    levels: list[TreeLevel] = []
    for level in range(data.depth, -1, -1):
        lo, ld = data.pair_levels(level)
        width = data.level_width(ld)
        keys = data.ancestors(lo)[o] * width + data.ancestors(ld)[d]
        uniq, total = _sum_by_key(keys, v, data.level_width(lo) * width)
        uo, ud = np.divmod(uniq, width)
        levels.append(TreeLevel(uo, ud, np.rint(total).astype(np.int64),
                                np.full(uo.size, -1, dtype=np.int64)))
    levels.reverse()
    if levels[0].size == 0:  # nothing released: an explicit zero root
        levels[0] = root_level(0)
    return [levels[0]] + [_with_parents(data, level, levels[level - 1], levels[level])
                          for level in range(1, data.depth + 1)]


def _sum_by_key(keys: np.ndarray, values: np.ndarray, space: int):
    """(distinct keys ascending, sum of values per key): by counting over the whole key
    space when it is small next to the number of keys (linear time), else by sorting."""
    if space <= max(4 * keys.size, 1 << 20):
        present = np.flatnonzero(np.bincount(keys, minlength=space))
        return present, np.bincount(keys, weights=values, minlength=space)[present]
    uniq, inverse = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inverse, weights=values, minlength=uniq.size)


def _with_parents(data: FlowData, level: int, parents: TreeLevel, nodes: TreeLevel) -> TreeLevel:
    side = data.split_side(level)
    lo, ld = data.pair_levels(level - 1)
    if side == "origin":
        po = data.geography.parent[nodes.origin + data.geography.level_offsets[lo + 1]]
        po = po - data.geography.level_offsets[lo]
        pd_ = nodes.destination
    else:
        po = nodes.origin
        pd_ = data.geography.parent[nodes.destination + data.geography.level_offsets[ld + 1]]
        pd_ = pd_ - data.geography.level_offsets[ld]
    width = data.level_width(ld)
    parent_keys = parents.keys(width)  # ascending: the levels come from _sum_by_key
    wanted = po * width + pd_
    space = data.level_width(lo) * width
    if space <= max(4 * wanted.size, 1 << 20):  # a direct look-up table
        index = np.full(space, -1, dtype=np.int64)
        index[parent_keys] = np.arange(parent_keys.size)
        return TreeLevel(nodes.origin, nodes.destination, nodes.value, index[wanted])
    return TreeLevel(nodes.origin, nodes.destination, nodes.value,
                     np.searchsorted(parent_keys, wanted))
