"""A released O/D tree: the positive nodes of every tree level as flat arrays, built either
top-down (InfTDA and its variants) or by aggregating released leaf cells (the baselines).

Level ``l`` holds parallel arrays ``origin``, ``destination`` (area indices within the
geography levels of `FlowData.pair_levels(l)`), ``value`` and ``parent`` (the index of the
parent node in level ``l - 1``; -1 at the root). Nodes absent from a level are zero.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hierdp_core.flows.data import FlowData
from hierdp_core.mechanisms.streams import Streams, block_starts
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


@dataclass(frozen=True)
class Forest:
    """The released trees of several releases, level by level: ``levels[l]`` holds every
    release's nodes of tree level l, release after release (``parent`` indexes the level
    above across releases), ``trial[l]`` the release of each node; ``diagnostics`` (of
    the top-down loop) as `topdown`'s, summed over the releases."""

    levels: list[TreeLevel]
    trial: list[np.ndarray]
    diagnostics: list[dict] = field(default_factory=list)


def topdown(data: FlowData, root_value: int, noises: list, project: Projection,
            source: NoiseSource) -> tuple[list[TreeLevel], list[dict]]:
    """The top-down loop (Boninsegna & Silvestri, Alg. 1), one batch per level.

    For every released parent with a positive value, all its children (from the public
    geography, zeros included) get independent noise from ``noises[l - 1]`` (a `Noise` or a
    level plan: anything whose ``apply(values, source)`` returns the noisy values); ``project``
    maps each parent's noisy children to non-negative integers summing to the parent's
    value; children released as 0 are dropped with their subtrees. Returns the levels and,
    per level, how many children were noised and released (both private outputs).

    A seeded source draws level 1 itself, then, below, the noise of every block of
    top-level areas (`block_of_nodes`) from the block's own stream
    (`hierdp_core.mechanisms.streams`), as the block-by-block engine does; a secure source
    measures every level at once.
    """
    forest = topdown_trials(data, lambda _: root_value, noises, project, [source])
    return forest.levels, forest.diagnostics


def topdown_trials(data: FlowData, root: Callable[[NoiseSource], int], noises: list,
                   project: Projection, sources: list[NoiseSource], *,
                   jointly: bool = True) -> Forest:
    """`topdown` for ``len(sources)`` releases at once (audits): release t's root is
    ``root(sources[t])``, its noise comes from ``sources[t]`` and, for a seeded source, is
    bit for bit `topdown`'s (a source may recur: its releases draw in turn, each its root,
    level 1 and the streams below). Every level's parents of all releases are projected
    together (``jointly=False``: release by release, for a projection whose choice among
    optima depends on the other parents it is given)."""
    n = len(sources)
    origin, destination, _ = data.children(1, np.zeros(1, np.int64), np.zeros(1, np.int64))
    truth = data.lookup(1, origin, destination) if data.depth else None
    roots, first, below = [], [], []
    for source in sources:
        roots.append(root(source))
        if data.depth:
            first.append(noises[0].apply(truth, source))
        if data.depth > 1:
            below.append(_block_sources(data, source))
    prev = TreeLevel(np.zeros(n, np.int64), np.zeros(n, np.int64),
                     np.asarray(roots, dtype=np.int64), np.full(n, -1, dtype=np.int64))
    levels, trials = [prev], [np.arange(n)]
    diagnostics = [{"level": 0, "parents": 0, "noised": 0, "released": n}]
    for level in range(1, data.depth + 1):
        origin, destination, n_children = data.children(level, prev.origin, prev.destination)
        trial = np.repeat(trials[-1], n_children)
        noisy = (np.concatenate(first) if level == 1 else
                 _draw_trials(data, level, noises[level - 1], below, trial, origin,
                              destination))
        each = (project if jointly or n == 1
                else functools.partial(_each_trial, project, trials[-1]))
        prev, diagnostic = projected(level, prev, origin, destination, n_children, noisy,
                                     each)
        levels.append(prev)
        trials.append(trials[-1][prev.parent])
        diagnostics.append(diagnostic)
    return Forest(levels, trials, diagnostics)


def _block_sources(data: FlowData, source: NoiseSource) -> list[NoiseSource]:
    """Where a release draws the levels below level 1: a secure source itself, a seeded
    one the streams of every block (`hierdp_core.mechanisms.streams`), made once level 1
    is drawn."""
    if source.secure:
        return [source]
    streams = Streams.of(source)
    return [streams.source(b + 1) for b in range(block_starts(data.geography).size)]


def _draw_trials(data: FlowData, level: int, noise, sources: list[list[NoiseSource]],
                 trial: np.ndarray, origin: np.ndarray, destination: np.ndarray) -> np.ndarray:
    """The true values of the given nodes (release after release) noised, those of release
    t from ``sources[t]``: block by block when a release has a source per block (each
    block's nodes contiguous, in block order; every block draws at every level, with or
    without nodes)."""
    values = data.lookup(level, origin, destination)
    blocks = np.array([len(s) for s in sources], dtype=np.int64)
    first = np.cumsum(blocks) - blocks  # the first block of every release
    block = first[trial]
    if blocks.max(initial=1) > 1:
        block += np.where(blocks[trial] > 1, block_of_nodes(data, level, origin, destination), 0)
    edges = np.searchsorted(block, np.arange(blocks.sum() + 1))
    drawn = [s for release in sources for s in release]
    return np.concatenate([noise.apply(values[a:b], drawn[i]) for i, (a, b) in
                           enumerate(zip(edges[:-1], edges[1:], strict=True))])


def _each_trial(project: Projection, trial: np.ndarray, x: np.ndarray, starts: np.ndarray,
                c: np.ndarray) -> np.ndarray:
    """``project`` release by release (``trial``: the release of every parent, in order)."""
    ends = np.append(starts, x.size)
    cuts = np.concatenate([[0], np.flatnonzero(np.diff(trial)) + 1, [trial.size]])
    return np.concatenate([project(x[ends[a]:ends[b]], starts[a:b] - ends[a], c[a:b])
                           for a, b in zip(cuts[:-1], cuts[1:], strict=True)])


def grow(data: FlowData, level: int, prev: TreeLevel, project: Projection,
         draw: Callable) -> tuple[TreeLevel, dict]:
    """Tree level ``level`` from its released parents ``prev``: their children noised
    (``draw(origin, destination)`` gives their noisy values), projected, the zeros
    dropped; and its diagnostic (parents, children noised, children released)."""
    origin, destination, n_children = data.children(level, prev.origin, prev.destination)
    return projected(level, prev, origin, destination, n_children,
                     draw(origin, destination), project)


def projected(level: int, prev: TreeLevel, origin: np.ndarray, destination: np.ndarray,
              n_children: np.ndarray, noisy: np.ndarray, project: Projection,
              ) -> tuple[TreeLevel, dict]:
    """`grow` from the children of ``prev`` (``n_children`` per parent) and their noisy
    values."""
    starts = np.cumsum(n_children) - n_children
    value = project(noisy, starts, prev.value)
    keep = value > 0
    parent = np.repeat(np.arange(prev.size, dtype=np.int64), n_children)
    return (TreeLevel(origin[keep], destination[keep], value[keep], parent[keep]),
            {"level": level, "parents": prev.size, "noised": int(origin.size),
             "released": int(keep.sum())})


def block_of_nodes(data: FlowData, level: int, origin: np.ndarray,
                   destination: np.ndarray) -> np.ndarray:
    """The block (`hierdp_core.mechanisms.streams.block_starts`, of top-level areas) of every
    node of tree level ``level`` >= 1: that of its top-level area on the side that tree
    level 1 splits (the destination in a destination tree, the origin in an origin tree).
    A node's children are in its block, so the blocks are subtrees of the O/D tree."""
    h = data.geography
    lo, ld = data.pair_levels(level)
    side, geo_level = ((destination, ld) if data.split_side(1) == "destination"
                       else (origin, lo))
    node = np.asarray(side, dtype=np.int64) + h.level_offsets[geo_level]
    for _ in range(geo_level - 1):
        node = h.parent[node]
    top = node - h.level_offsets[1]
    return np.searchsorted(block_starts(h), top, side="right") - 1


def draw_whole(data: FlowData, level: int, noise, source: NoiseSource, origin: np.ndarray,
               destination: np.ndarray) -> np.ndarray:
    """The true values of the given nodes of tree level ``level``, noised from ``source``."""
    return noise.apply(data.lookup(level, origin, destination), source)


def from_leaves(data: FlowData, origin: np.ndarray, destination: np.ndarray,
                value: np.ndarray) -> list[TreeLevel]:
    """The tree whose leaves are the given released cells (zeros dropped, negatives kept)
    and whose every other node is the sum of its children (kept even if the sum is 0, so
    that every node has its parent)."""
    return leaves_forest(data, origin, destination, value, np.zeros(np.size(value), np.int64),
                         1).levels


def leaves_forest(data: FlowData, origin: np.ndarray, destination: np.ndarray,
                  value: np.ndarray, trial: np.ndarray, n: int) -> Forest:
    """`from_leaves` of ``n`` releases at once, ``trial`` the release of every cell (each
    release's root present, 0 when it released no cell)."""
    o, d, v, t = (np.asarray(a, dtype=np.int64) for a in (origin, destination, value, trial))
    o, d, v, t = o[v != 0], d[v != 0], v[v != 0], t[v != 0]
    levels: list[TreeLevel] = []
    trials: list[np.ndarray] = []
    for level in range(data.depth, -1, -1):
        lo, ld = data.pair_levels(level)
        width = data.level_width(ld)
        space = data.level_width(lo) * width
        keys = t * space + data.ancestors(lo)[o] * width + data.ancestors(ld)[d]
        uniq, total = _sum_by_key(keys, v, n * space)
        at, uniq = np.divmod(uniq, space)
        uo, ud = np.divmod(uniq, width)
        levels.append(TreeLevel(uo, ud, np.rint(total).astype(np.int64),
                                np.full(uo.size, -1, dtype=np.int64)))
        trials.append(at)
    levels.reverse()
    trials.reverse()
    roots = np.zeros(n, dtype=np.int64)  # an explicit zero root where nothing is released
    roots[trials[0]] = levels[0].value
    levels[0] = TreeLevel(np.zeros(n, np.int64), np.zeros(n, np.int64), roots,
                          np.full(n, -1, dtype=np.int64))
    trials[0] = np.arange(n)
    return Forest([levels[0]] + [_with_parents(data, level, levels[level - 1], levels[level],
                                               trials[level - 1: level + 1], n)
                                 for level in range(1, data.depth + 1)], trials)


def _sum_by_key(keys: np.ndarray, values: np.ndarray, space: int):
    """(distinct keys ascending, sum of values per key): by counting over the whole key
    space when it is small next to the number of keys (linear time), else by sorting."""
    if space <= max(4 * keys.size, 1 << 20):
        present = np.flatnonzero(np.bincount(keys, minlength=space))
        return present, np.bincount(keys, weights=values, minlength=space)[present]
    uniq, inverse = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inverse, weights=values, minlength=uniq.size)


def _with_parents(data: FlowData, level: int, parents: TreeLevel, nodes: TreeLevel,
                  trials: list[np.ndarray], n: int) -> TreeLevel:
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
    space = data.level_width(lo) * width
    # ascending: the levels come from _sum_by_key (by release, then pair)
    parent_keys = trials[0] * space + parents.keys(width)
    wanted = trials[1] * space + po * width + pd_
    space *= n
    if space <= max(4 * wanted.size, 1 << 20):  # a direct look-up table
        index = np.full(space, -1, dtype=np.int64)
        index[parent_keys] = np.arange(parent_keys.size)
        return TreeLevel(nodes.origin, nodes.destination, nodes.value, index[wanted])
    return TreeLevel(nodes.origin, nodes.destination, nodes.value,
                     np.searchsorted(parent_keys, wanted))
