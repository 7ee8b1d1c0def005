"""An O/D flow release (InfTDA and the other top-down flow mechanisms) computed block by
block: the same released tree, bit for bit, as the whole-tree release from the same seed,
and with secure (OpenDP) noise the same distribution.

The O/D tree's level 1 splits one end into its top-level areas (the destination in a
destination tree, the origin in an origin tree), and every node below lies under one of
them; the blocks of top-level areas (`hierdp_core.mechanisms.streams.block_starts`) are
therefore subtrees of the O/D tree, and the top-down loop is per parent
(`hierdp_core.flows.tree.block_of_nodes`). Each block holds the trips of its areas only:

1. every block (one task each): the true values of its level-1 nodes (`block_level_one`);
2. the client: the root (measured under unbounded DP), level 1 measured and projected onto
   the root as the whole-tree loop does;
3. every block: levels 2 to the leaves from its released level-1 nodes, its noise from its
   own stream (`block_levels`).

Supported: the mechanisms whose `Capabilities` say ``blockwise`` (the top-down loop); the leaf baselines
(``vanilla-gauss``, ``stability-histogram``) are refused. Tasks go through an executor
(`hierdp_core.engine.blockwise.InProcess` or a Dask client).
"""

from __future__ import annotations

import functools

import numpy as np

from hierdp_core.engine.blockwise import InProcess, check_blockwise
from hierdp_core.errors import InputError
from hierdp_core.flows.data import FlowData
from hierdp_core.flows.tree import TreeLevel, block_of_nodes, draw_whole, grow, root_level
from hierdp_core.mechanisms.streams import Streams, block_starts, merge_measurements
from hierdp_core.privacy.samplers import NoiseSource


def block_data(shape: FlowData, origin: np.ndarray, destination: np.ndarray,
               counts: np.ndarray, block: int) -> FlowData:
    """The trips (leaf pairs, sorted, distinct, positive) of one block, over the whole
    public geography of ``shape``."""
    keep = block_of_nodes(shape, shape.depth, origin, destination) == block
    return FlowData(shape.geography, origin[keep], destination[keep], counts[keep],
                    tree=shape.tree)


def block_level_one(data: FlowData, origin: np.ndarray, destination: np.ndarray) -> np.ndarray:
    """Step 1 of a block: the true values of its level-1 nodes (given in order)."""
    return data.lookup(1, origin, destination)


def block_levels(data: FlowData, top: TreeLevel, plans, project, streams: Streams,
                 block: int) -> tuple[list[TreeLevel], list[dict], list[dict]]:
    """Step 3 of a block: its tree levels 2 to the leaves (parents indexing the block's
    own nodes of the level above), their diagnostics, and its secure measurements."""
    source = streams.source(block + 1)
    levels, diagnostics = [top], []
    for level in range(2, data.depth + 1):
        draw = functools.partial(draw_whole, data, level, plans[level], source)
        node, diagnostic = grow(data, level, levels[-1], project, draw)
        levels.append(node)
        diagnostics.append(diagnostic)
    return levels[1:], diagnostics, source.measurements if source.secure else []


def _apply_known(noise, truth: np.ndarray, source: NoiseSource, origin, destination):
    """``truth`` (the values of the nodes asked for, known already) noised from ``source``."""
    return noise.apply(truth, source)


def _joined(parts: list[TreeLevel], parents_before: np.ndarray) -> TreeLevel:
    """One tree level from the blocks' parts, their parents offset by the nodes of the
    level above in the blocks before."""
    return TreeLevel(*(np.concatenate([getattr(t, name) for t in parts])
                       for name in ("origin", "destination", "value")),
                     np.concatenate([t.parent + off for t, off in zip(parts, parents_before,
                                                                      strict=True)]))


def blockwise_flows(mechanism, shape: FlowData, blocks: list, budget, *, split=None,
                    source: NoiseSource | None = None, executor=None, **params):
    """The flow release of ``mechanism`` block by block. ``shape``: a `FlowData` of the
    public geography and tree (its trips unused); ``blocks``: every block's `FlowData`
    (`block_data`), or the executor's handles of them."""
    check_blockwise(mechanism)
    executor = executor or InProcess()
    p = mechanism.params(**params)
    source = source or NoiseSource(secure=True)
    plan, plans = mechanism.measured_plans(shape, budget, split, p)
    origin, destination, _ = shape.children(1, np.zeros(1, np.int64), np.zeros(1, np.int64))
    n_blocks = block_starts(shape.geography).size
    edges = np.searchsorted(block_of_nodes(shape, 1, origin, destination),
                            np.arange(n_blocks + 1))
    truth = np.concatenate(executor.gather([
        executor.submit(block_level_one, blocks[b], origin[edges[b]:edges[b + 1]],
                        destination[edges[b]:edges[b + 1]]) for b in range(n_blocks)]))
    if truth.sum() == 0:
        raise InputError("the flows are all zero: there is nothing to release")
    root, invariants = mechanism.root_value(int(truth.sum()), plans, p, source)
    project = mechanism.projection(p)
    draw = functools.partial(_apply_known, plans[1], truth, source)
    first, first_diagnostic = grow(shape, 1, root_level(root), project, draw)
    streams = Streams.of(source)
    block = block_of_nodes(shape, 1, first.origin, first.destination)
    cut = np.searchsorted(block, np.arange(n_blocks + 1))
    tops = [TreeLevel(*(getattr(first, name)[cut[b]:cut[b + 1]]
                        for name in ("origin", "destination", "value", "parent")))
            for b in range(n_blocks)]
    parts = executor.gather([executor.submit(block_levels, blocks[b], tops[b], plans,
                                             project, streams, b, pure=False)
                             for b in range(n_blocks)])
    for _, _, measurements in parts:
        merge_measurements(source, measurements)
    levels = [root_level(root), first]
    diagnostics = [{"level": 0, "parents": 0, "noised": 0, "released": 1}, first_diagnostic]
    for i in range(shape.depth - 1):
        above = [t.size for t in tops] if i == 0 else [part[0][i - 1].size for part in parts]
        levels.append(_joined([part[0][i] for part in parts],
                              np.cumsum([0, *above[:-1]])))
        counted = [part[1][i] for part in parts]
        diagnostics.append({"level": i + 2, **{key: sum(d[key] for d in counted)
                                               for key in ("parents", "noised", "released")}})
    return mechanism.make_release(shape, levels, diagnostics, plan, plans, budget, p,
                                  invariants, source)


def release_flow_data(mechanism, data: FlowData, budget, **kwargs):
    """`blockwise_flows` of a `FlowData` in this process (tests, comparisons)."""
    blocks = [block_data(data, data.origin, data.destination, data.counts, b)
              for b in range(block_starts(data.geography).size)]
    return blockwise_flows(mechanism, data, blocks, budget, **kwargs)
