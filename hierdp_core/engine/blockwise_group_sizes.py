"""A group-size release computed block by block (`hierdp_core.mechanisms.streams`): the same
values, bit for bit, as the mechanism's whole-tree release from the same seed, and with
secure (OpenDP) noise the same distribution.

1. every block (one task each): its true size histograms from its leaves' histograms, its
   noise from its own stream, its number of groups per node (`block_measure`);
2. the client: the root's noise (stream 0), then the root and the top-level units as the
   whole-tree mechanism computes them (`top_values`);
3. every block: the levels below its top-level units given their values (`block_finish`).

Separable this way (their `Capabilities` say ``blockwise``, by the ``estimate`` shape):
``gs-noisy`` (raw: every cell on its own) and ``gs-topdown`` (TopDown, and with ``groups="exact"`` the hand-down of every
parent's groups by rank, both per parent). Refused: the relaxed QPs (one solver call over
the whole tree) and the chain mechanisms (chains across the top-level units of a level):
not separable; the exact dynamic programs (``gs-mh-dp``, ``gs-mc-dp``: cost tables merged
bottom up, allocation top down) and Kuo's (per-region estimates, matching per parent, their
own noise draws): separable in principle, not implemented block by block.
Tasks go through an executor (`hierdp_core.engine.blockwise.InProcess` or a Dask client).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.consistency.topdown import topdown, topdown_levels
from hierdp_core.engine.blockwise import InProcess, block_tree, check_blockwise, top_tree
from hierdp_core.groupsizes.group_counts import hand_down, keep_group_counts, rescale_rows
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.mechanisms.group_sizes import root_on_simplex
from hierdp_core.mechanisms.group_sizes_base import estimated_total
from hierdp_core.mechanisms.streams import (
    Streams,
    block_bounds,
    block_starts,
    measure_block,
    measure_top,
    subtree_ranges,
    subtree_rows,
)
from hierdp_core.privacy.samplers import NoiseSource


@dataclass
class GroupBlock:
    """What a block keeps between its two steps (where it ran)."""

    tree: Hierarchy
    noisy: np.ndarray
    groups: np.ndarray  # the number of groups of every node of the block (public)
    top: dict


def block_measure(tree: Hierarchy, leaf_hist: np.ndarray, plans, streams: Streams,
                  block: int) -> GroupBlock:
    """Step 1 of a block: its levels measured from its stream. ``state.top`` holds what
    the client needs: the block's true histogram, its top-level units' noisy histograms
    and numbers of groups, and its secure measurements."""
    truth = tree.aggregate(np.asarray(leaf_hist))
    source = streams.source(block + 1)
    noisy = measure_block(truth, tree, plans, source)
    groups = truth.sum(axis=1)
    top = tree.level_slice(1)
    summary = {"total": truth[0], "noisy": noisy[top], "groups": groups[top],
               "measurements": source.measurements if source.secure else []}
    return GroupBlock(tree, noisy, groups, summary)


def block_top(state: GroupBlock) -> dict:
    return state.top


def top_values(mechanism, p: dict, hierarchy: Hierarchy, noisy: np.ndarray,
               groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(TopDown's values, released values) of the root and the top-level units from their
    noisy histograms and numbers of groups, as the whole-tree release computes them."""
    if mechanism.info.capabilities.estimate == "raw":
        values = mechanism.estimate(None, noisy, None, p)
        return values, values
    ht = top_tree(hierarchy)
    total = estimated_total(noisy[0]) if p.get("groups") == "estimated" else int(groups[0])
    released = topdown(ht, noisy, root_on_simplex(total, noisy[0]))
    if p.get("groups") != "exact":
        return released, released
    return released, keep_group_counts(ht, released, groups)


def block_finish(state: GroupBlock, top_topdown: np.ndarray, top_released: np.ndarray,
                 mechanism, p: dict) -> tuple[np.ndarray, np.ndarray]:
    """Step 3 of a block: (released values, noisy values) of its nodes, levels 1 to the
    leaves, given its top-level units' values (`top_values`)."""
    tree, noisy = state.tree, state.noisy
    if mechanism.info.capabilities.estimate == "raw":
        return mechanism.estimate(None, noisy[1:], None, p), noisy[1:]
    top = tree.level_slice(1)
    out = np.empty(noisy.shape, dtype=np.int64)
    out[top] = top_topdown
    topdown_levels(tree, noisy, out, first_level=2)
    if p.get("groups") == "exact":
        rows = rescale_rows(out, state.groups)
        rows[top] = top_released
        out = tree.aggregate(hand_down(tree, rows, first_level=2))
    return out[1:], noisy[1:]


def blockwise_group_sizes(mechanism, hierarchy: Hierarchy, sizes: tuple[str, ...],
                          leaf_blocks: list, budget, *, split=None,
                          source: NoiseSource | None = None, executor=None, tree=None,
                          groups_declared: bool = False, **params):
    """The group-size Release of ``mechanism`` computed block by block. ``sizes``: the
    released sizes (the categories, ``'m'..'N'``); ``leaf_blocks``: every block's leaves'
    size histograms (n_leaves of the block, len(sizes)), or the executor's handles of them,
    in block order; ``tree``: the executor's handle of ``hierarchy`` (default:
    ``hierarchy`` itself); ``groups_declared``: whether the histograms' numbers of groups
    were declared (as `GroupSizeMechanism.make_release` records it)."""
    check_blockwise(mechanism)
    executor = executor or InProcess()
    tree = hierarchy if tree is None else tree
    p = mechanism.params(**params)
    source = source or NoiseSource(secure=True)
    plans = mechanism.measured_plans(hierarchy, budget, split, p)
    streams = Streams.of(source)
    bounds = [block_bounds(hierarchy, b) for b in range(block_starts(hierarchy).size)]
    trees = [executor.submit(block_tree, tree, *b) for b in bounds]
    states = [executor.submit(block_measure, trees[b], leaf_blocks[b], plans, streams, b,
                              pure=False) for b in range(len(bounds))]
    tops = executor.gather([executor.submit(block_top, s) for s in states])
    truth_root, noisy_top = measure_top(tops, plans, source, streams)
    groups_top = np.concatenate([[truth_root.sum()], *(t["groups"] for t in tops)])
    by_topdown, released = top_values(mechanism, p, hierarchy, noisy_top, groups_top)
    finished = []
    for b, (first, end) in enumerate(bounds):
        rows = slice(1 + first, 1 + end)
        finished.append(executor.submit(block_finish, states[b], by_topdown[rows],
                                        released[rows], mechanism, p))
    values = np.empty((hierarchy.n_nodes, len(sizes)), dtype=np.int64)
    noisy = np.empty(values.shape)
    values[0], noisy[0] = released[0], noisy_top[0]
    for (first, end), (part_values, part_noisy) in zip(bounds, executor.gather(finished),
                                                       strict=True):
        rows = subtree_rows(subtree_ranges(hierarchy, first, end))
        values[rows], noisy[rows] = part_values, part_noisy
    return mechanism.make_release(hierarchy, tuple(sizes), plans, p, values, noisy, source,
                                  groups_declared=groups_declared)


def release_group_size_data(mechanism, data, budget, **kwargs):
    """`blockwise_group_sizes` of a `GroupSizeData` in this process (tests, comparisons)."""
    h = data.hierarchy
    depth_start = h.level_offsets[h.depth]
    blocks = []
    for first, end in (block_bounds(h, b) for b in range(block_starts(h).size)):
        lo, hi = subtree_ranges(h, first, end)[-1]
        blocks.append(data.leaf_counts[lo - depth_start:hi - depth_start])
    return blockwise_group_sizes(mechanism, h, data.categories, blocks, budget,
                                 groups_declared=data.groups_declared, **kwargs)
