"""Blocks of top-level units and their independent noise streams.

A count release is cut into **blocks**: the root, then runs of consecutive top-level units
(level 1, e.g. states) with their whole subtrees; a block is one top-level unit, or
``ceil(n / MAX_BLOCKS)`` of them when a tree has more than `MAX_BLOCKS` top-level units. The
blocks depend on the tree's shape alone (public), never on a machine or partitioning, so
that the noise of every block can come from its own stream: stream 0 measures the root,
stream ``b + 1`` the nodes of block ``b``, level by level, coarse to fine. Both engines
measure this way (`measure_in_blocks` in memory; `hierdp_core.engine.blockwise` one task per
block), so a seeded release is the same bit for bit whatever the engine or worker count.

A seeded (exploration) source gives every release fresh entropy drawn from its generator
(`Streams.of`), from which each stream is the `numpy.random.SeedSequence` child of that
index. A secure source has no streams: OpenDP measures each block's part of a level, the
same measurement on disjoint parts of one vector as one measurement of all of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from hierdp_core.hierarchy import Hierarchy
from hierdp_core.privacy.samplers import NOISES, NoiseSource

#: at most this many blocks (and noise streams) per release
MAX_BLOCKS = 256


@dataclass(frozen=True)
class Streams:
    """Where each block's noise comes from: ``entropy`` of a seeded source (None: secure,
    from ``backend``; each worker process keys its own keystream)."""

    entropy: tuple[int, ...] | None
    backend: str = "hierdp"

    @classmethod
    def of(cls, source: NoiseSource) -> Streams:
        """The streams of one release from ``source`` (a seeded source's generator moves on,
        so two releases from one source differ)."""
        if source.secure:
            return cls(None, source.backend)
        return cls(tuple(int(v) for v in source.rng.integers(0, 2**63, size=4)))

    def source(self, stream: int) -> NoiseSource:
        """A noise source for stream ``stream`` (0: the root; b + 1: block b)."""
        if self.entropy is None:
            return NoiseSource(secure=True, backend=self.backend)
        seq = np.random.SeedSequence(self.entropy, spawn_key=(stream,))
        return NoiseSource(generator=np.random.Generator(np.random.PCG64(seq)))


def block_starts(hierarchy: Hierarchy) -> np.ndarray:
    """The first top-level unit (index within level 1) of every block."""
    n = hierarchy.level_size(1)
    return np.arange(0, n, max(1, math.ceil(n / MAX_BLOCKS)), dtype=np.int64)


def block_bounds(hierarchy: Hierarchy, block: int) -> tuple[int, int]:
    """(first, end) of block ``block``'s top-level units, indices within level 1."""
    starts = block_starts(hierarchy)
    end = starts[block + 1] if block + 1 < starts.size else hierarchy.level_size(1)
    return int(starts[block]), int(end)


def first_leaves(hierarchy: Hierarchy) -> np.ndarray:
    """The first leaf (index within the leaf level) of every block."""
    base = int(hierarchy.level_offsets[hierarchy.depth])
    return np.array([ranges[-1][0] - base for ranges in block_ranges(hierarchy)],
                    dtype=np.int64)


def block_ranges(hierarchy: Hierarchy) -> list[list[tuple[int, int]]]:
    """`subtree_ranges` of every block, made once per hierarchy (and `MAX_BLOCKS`)."""
    return hierarchy.derived(("block_ranges", MAX_BLOCKS), lambda: [
        subtree_ranges(hierarchy, *block_bounds(hierarchy, b))
        for b in range(block_starts(hierarchy).size)])


def subtree_ranges(hierarchy: Hierarchy, first: int, end: int) -> list[tuple[int, int]]:
    """The node ranges [lo, hi) (global node indices) of the subtrees of level-1 units
    ``first..end-1``, one per level from level 1: one contiguous run per level."""
    h = hierarchy
    lo, hi = int(h.level_offsets[1]) + first, int(h.level_offsets[1]) + end
    ranges = [(lo, hi)]
    for _ in range(2, h.n_levels):
        lo, hi = int(h.child_ptr[lo]), int(h.child_ptr[hi])
        ranges.append((lo, hi))
    return ranges


def subtree_rows(ranges: list[tuple[int, int]]) -> np.ndarray:
    """The global node indices of a subtree, level by level (its node order)."""
    return np.concatenate([np.arange(lo, hi) for lo, hi in ranges])


def subtree(hierarchy: Hierarchy, first: int, end: int) -> Hierarchy:
    """The tree of level-1 units ``first..end-1`` and their subtrees under a root of their
    own (whose values are never used): the same levels, codes and names, nodes in the
    whole tree's order."""
    h = hierarchy
    ranges = subtree_ranges(h, first, end)
    sizes = [1] + [hi - lo for lo, hi in ranges]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    parents = [np.array([-1], dtype=np.int64), np.zeros(sizes[1], dtype=np.int64)]
    for level in range(2, h.n_levels):
        lo, hi = ranges[level - 1]
        parents.append(h.parent[lo:hi] - ranges[level - 2][0] + offsets[level - 1])
    parent = np.concatenate(parents)
    counts = np.bincount(parent[1:], minlength=offsets[-1])
    child_ptr = np.concatenate([[1], 1 + np.cumsum(counts)]).astype(np.int64)
    lows = [0] + [lo - int(h.level_offsets[lv]) for lv, (lo, _) in enumerate(ranges, 1)]
    codes = (h.codes[0], *(h.codes[lv][lows[lv]:lows[lv] + sizes[lv]]
                           for lv in range(1, h.n_levels)))
    names = {lv: np.asarray(v)[lows[lv]:lows[lv] + sizes[lv]] for lv, v in h.names.items()}
    return replace(h, level_offsets=offsets, parent=parent, child_ptr=child_ptr,
                   codes=codes, names=names, _cache={})


def measure_ranges(truth: np.ndarray, ranges: list[tuple[int, int]], plans,
                   source: NoiseSource, out: np.ndarray) -> None:
    """Write to ``out`` the noisy values of a block whose level ``l`` (from 1) holds the
    nodes ``ranges[l - 1]`` of ``truth``, levels 1 to the leaves in order (a level not
    measured is left as it is): what the block's values and stream alone decide."""
    for p in plans:
        if p.noise is not None and p.level >= 1:
            lo, hi = ranges[p.level - 1]
            out[lo:hi] = p.apply(truth[lo:hi], source)


def measure_block(truth: np.ndarray, hierarchy: Hierarchy, plans, source: NoiseSource,
                  ) -> np.ndarray:
    """Noisy values (NaN on unmeasured levels and at the root) of a block's tree
    (`subtree`) from its true node counts, levels 1 to the leaves in order."""
    noisy = np.full(truth.shape, np.nan)
    levels = [hierarchy.level_slice(lv) for lv in range(1, hierarchy.n_levels)]
    measure_ranges(truth, [(sl.start, sl.stop) for sl in levels], plans, source, noisy)
    return noisy


def measure_root(truth_root: np.ndarray, plans, source: NoiseSource) -> np.ndarray:
    """The root's noisy values (NaN when the root is not measured), from stream 0."""
    if plans[0].noise is None:
        return np.full(np.shape(truth_root), np.nan)
    return plans[0].apply(truth_root, source)


def measure_top(tops: list[dict], plans, source: NoiseSource, streams: Streams,
                ) -> tuple[np.ndarray, np.ndarray]:
    """(the root's true values, the noisy values of the root and the top-level units) from
    the blocks' summaries (``total``, ``noisy``, ``measurements``, in block order): the root
    measured from stream 0 (secure: from ``source``), the blocks' secure measurements
    logged on ``source``."""
    truth_root = np.sum([t["total"] for t in tops], axis=0)
    root_noisy = measure_root(truth_root, plans,
                              source if source.secure else streams.source(0))
    for t in tops:
        merge_measurements(source, t["measurements"])
    return truth_root, np.concatenate([root_noisy[None, :], *(t["noisy"] for t in tops)])


def noise_variances(hierarchy: Hierarchy, plans) -> np.ndarray:
    """Each level's noise variance (inf where not measured)."""
    variance = np.full(hierarchy.n_levels, np.inf)
    for p in plans:
        if p.noise is not None:
            variance[p.level] = p.noise.variance
    return variance


def measure_in_blocks(truth: np.ndarray, hierarchy: Hierarchy, plans, source: NoiseSource,
                      ) -> tuple[np.ndarray, np.ndarray]:
    """`hierdp_core.mechanisms.measure.measure` with the noise of each block from its own
    stream (a loop per block): noisy counts (n_nodes, k) and each level's variance."""
    from hierdp_core.mechanisms.measure import measure

    if source.secure:
        return measure(truth, hierarchy, plans, source)
    streams = Streams.of(source)
    noisy = np.full(truth.shape, np.nan)
    noisy[0] = measure_root(truth[0], plans, streams.source(0))
    for block, ranges in enumerate(block_ranges(hierarchy)):  # a level of a block: one run
        measure_ranges(truth, ranges, plans, streams.source(block + 1), noisy)
    return noisy, noise_variances(hierarchy, plans)


def merge_measurements(source: NoiseSource, measurements: list[dict]) -> None:
    """Log a block's secure measurements (`NoiseSource.measurements`) on ``source``: the
    parts of one level make one entry, their cells added up."""
    for m in measurements:
        how = {k: m[k] for k in ("sampler", "sampled", "drawn_on") if k in m}
        source.record(m["measurement"], NOISES[m["noise"]](m["scale"]), m["cells"],
                      m["sensitivity"], m["privacy_loss"], m["budget_share"], how)
