"""A count release computed block by block (`hierdp_core.mechanisms.streams`): the same values,
bit for bit, as the mechanism's whole-tree release from the same seed.

1. every block (one task each): its true node counts from its leaf counts, its noise from
   its own stream, and for least squares the up pass of its subtree (`block_measure`);
2. the client: the root's noise (stream 0), the up pass's last step and the down pass from
   the root to the top-level units, TopDown's projection of the top-level units onto the
   root (`_top_values`);
3. every block: the down pass and TopDown below its top-level units given their values
   (`block_finish`), which depend on the subtree and its top alone (the least-squares and
   TopDown steps are per parent).

Tasks go through an ``executor`` with ``submit(fn, *args, **options)`` and
``gather(handles)``: a `dask.distributed.Client`, or `InProcess` (everything here, one block
after the other). A ``placement`` (`balanced_placement`) keeps each block's tasks on one
worker, the blocks spread so that every worker has about as many leaves. With a
``parts_folder`` the blocks write their part files of the release there themselves
(`hierdp_core.engine.written`) and the client keeps only the top of the tree.
Supported: the count mechanisms whose `Capabilities` say ``blockwise``, by the shape of
their ``estimate`` (raw: `Mechanism.estimate` of each block's rows; least squares; TopDown).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from hierdp_core.consistency.least_squares import (
    UpPass,
    down_pass,
    level_variances,
    up_level,
)
from hierdp_core.consistency.topdown import topdown_levels
from hierdp_core.engine.block_steps import (
    block_finish,
    block_measure,
    block_top,
    block_tree,
)
from hierdp_core.errors import BudgetError, InputError
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.mechanisms.base import list_mechanisms
from hierdp_core.mechanisms.streams import (
    Streams,
    block_bounds,
    block_starts,
    measure_top,
    noise_variances,
    subtree_ranges,
    subtree_rows,
)
from hierdp_core.privacy.samplers import NoiseSource


def check_blockwise(mechanism) -> None:
    """Refuse, in one line naming the ones that do, a mechanism whose `Capabilities` do not
    say ``blockwise`` (of any query kind: counts, group sizes, flows)."""
    info = mechanism.info
    if not info.capabilities.blockwise:
        kind = info.queries[0]
        able = [i.name for i in list_mechanisms(kind) if i.capabilities.blockwise]
        raise InputError(f"{kind} mechanism {info.name!r} cannot run block by block; use one "
                         f"of {', '.join(able)}, or the in-memory engine")


class InProcess:
    """An executor running every task at once in this process (options are ignored)."""

    def submit(self, fn, *args, **options):
        return fn(*args)

    def gather(self, handles):
        return list(handles)


def balanced_placement(sizes, workers: list) -> list:
    """The worker of every block, largest block first to the least loaded worker (a loop
    per block): every worker gets about the same number of leaves (``sizes``)."""
    load = np.zeros(len(workers))
    out = [None] * len(sizes)
    for b in np.argsort(-np.asarray(sizes), kind="stable"):
        w = int(np.argmin(load))
        out[b], load[w] = workers[w], load[w] + sizes[b]
    return out


def on_worker(placement: list | None, block: int) -> dict:
    """The submit options that run block ``block``'s task on its placed worker (none when
    there is no placement; another worker may take it when that one is gone)."""
    if placement is None:
        return {}
    return {"workers": [placement[block]], "allow_other_workers": True}


def block_sizes(hierarchy: Hierarchy) -> np.ndarray:
    """The number of leaves of every block."""
    ends = [subtree_ranges(hierarchy, *block_bounds(hierarchy, b))[-1]
            for b in range(block_starts(hierarchy).size)]
    return np.array([hi - lo for lo, hi in ends], dtype=np.int64)


def _uses_least_squares(estimate: str, p: dict) -> bool:
    """Whether an estimate of shape ``estimate`` (`Capabilities.estimate`) with parameters
    ``p`` goes through tree least squares."""
    return estimate == "least-squares" or (estimate == "topdown"
                                           and p.get("estimate") == "least-squares")


def top_tree(hierarchy: Hierarchy) -> Hierarchy:
    """The root and the top-level units alone."""
    h = hierarchy
    if h.n_levels == 2:
        return h
    n1 = h.level_size(1)
    return replace(h, level_names=h.level_names[:2], level_offsets=h.level_offsets[:3].copy(),
                   parent=h.parent[:1 + n1], child_ptr=np.concatenate(
                       [[1], np.full(1 + n1, 1 + n1)]).astype(np.int64),
                   codes=h.codes[:2], names={lv: v for lv, v in h.names.items() if lv == 1},
                   _cache={})


def _top_values(mechanism, p: dict, hierarchy: Hierarchy, noisy: np.ndarray,
                tops: list[dict], variance: np.ndarray, root) -> tuple:
    """The root's and top-level units' (estimates, released values) from the blocks'
    summaries, as the whole-tree pass computes them."""
    shape = mechanism.info.capabilities.estimate
    if shape == "raw":
        return None, mechanism.estimate(None, noisy, variance, None, p)
    ht = top_tree(hierarchy)
    if _uses_least_squares(shape, p):
        var = level_variances(hierarchy, variance)
        up = UpPass(np.concatenate([noisy[:1], *(t["z"] for t in tops)]),
                    np.concatenate([[0.0], *(t["node_var"] for t in tops)]))
        up_level(ht, 0, noisy, var, up)
        est = up.z  # the down pass writes over z
        if root is not None:
            est[0] = root
        down_pass(ht, up, est, first_level=1)
    else:
        est = noisy
    if shape == "least-squares":
        return est, est
    if root is not None:
        root_values = root
    else:  # an unmeasured root (estimate="noisy") is estimated by its children
        root_est = est[0] if np.isfinite(est[0]).all() else est[ht.level_slice(1)].sum(axis=0)
        root_values = np.maximum(np.rint(root_est), 0)
    out = np.empty(est.shape, dtype=np.int64)
    out[0] = np.asarray(root_values, dtype=np.int64).reshape(est.shape[1])
    topdown_levels(ht, est, out, first_level=1)
    return est, out


def blockwise_release(mechanism, hierarchy: Hierarchy, categories, leaf_blocks: list,
                      budget, *, split=None, source: NoiseSource | None = None,
                      executor=None, tree=None, placement: list | None = None,
                      parts_folder=None, **params):
    """The Release of ``mechanism`` computed block by block. ``leaf_blocks``: every block's
    leaf counts (arrays, or the executor's handles of them), in block order; ``tree``:
    the executor's handle of ``hierarchy`` (default: ``hierarchy`` itself); ``placement``:
    the worker of every block (`balanced_placement`). With ``parts_folder``, a
    `hierdp_core.engine.written.WrittenRelease` whose part files the blocks wrote there."""
    check_blockwise(mechanism)
    shape = mechanism.info.capabilities.estimate
    executor = executor or InProcess()
    tree = hierarchy if tree is None else tree
    p = mechanism.params(**params)
    source = source or NoiseSource(secure=True)
    noise, plans = mechanism.level_plans(hierarchy, budget, split, p)
    variance = noise_variances(hierarchy, plans)
    if shape == "topdown" and p.get("estimate") == "noisy" and np.isinf(variance[1:]).any():
        raise BudgetError("topdown with estimate='noisy' needs every level below the root "
                          "measured; give them a share or use least-squares")
    lsq = _uses_least_squares(shape, p)
    ls_variance = level_variances(hierarchy, variance) if lsq else variance
    streams = Streams.of(source)
    n_blocks = block_starts(hierarchy).size
    # the trees are held until the end, so that a cluster can recompute a lost block
    on = [on_worker(placement, b) for b in range(n_blocks)]
    trees = [executor.submit(block_tree, tree, *block_bounds(hierarchy, b), **on[b])
             for b in range(n_blocks)]
    states = [executor.submit(block_measure, trees[b], leaf_blocks[b], plans, streams, b,
                              ls_variance, lsq, pure=False, **on[b]) for b in range(n_blocks)]
    tops = executor.gather([executor.submit(block_top, s) for s in states])
    truth_root, noisy_top = measure_top(tops, plans, source, streams)
    root = truth_root if p.get("root_invariant") else None
    est, values_top = _top_values(mechanism, p, hierarchy, noisy_top, tops, variance, root)
    bounds = [block_bounds(hierarchy, b) for b in range(n_blocks)]
    finish = [(states[b], None if est is None else est[1 + first:1 + end],
               values_top[1 + first:1 + end], mechanism, p, variance)
              for b, (first, end) in enumerate(bounds)]
    if parts_folder is not None:
        from hierdp_core.engine.written import write_in_blocks

        top = mechanism.make_release(top_tree(hierarchy), categories, budget, noise, plans, p,
                                     values_top, noisy_top, source)
        return write_in_blocks(executor, top, hierarchy, finish, on, parts_folder)
    finished = [executor.submit(block_finish, *args, **on[b]) for b, args in enumerate(finish)]
    k = noisy_top.shape[1]
    values = np.empty((hierarchy.n_nodes, k), dtype=values_top.dtype)
    noisy = np.empty((hierarchy.n_nodes, k))
    values[:1], noisy[:1] = values_top[:1], noisy_top[:1]
    for b, (first, end) in enumerate(bounds):  # a block at a time: never all blocks twice
        [(part_values, part_noisy)] = executor.gather([finished[b]])
        finished[b] = None  # the block's result is freed where it ran
        rows = subtree_rows(subtree_ranges(hierarchy, first, end))
        values[rows], noisy[rows] = part_values, part_noisy
    return mechanism.make_release(hierarchy, categories, budget, noise, plans, p, values,
                                  noisy, source)


def release_count_data(mechanism, data, budget, **kwargs):
    """`blockwise_release` of a `CountData` in this process (for tests and comparisons)."""
    h = data.hierarchy
    depth_start = h.level_offsets[h.depth]
    blocks = []
    for b in range(block_starts(h).size):
        lo, hi = subtree_ranges(h, *block_bounds(h, b))[-1]
        blocks.append(data.leaf_counts[lo - depth_start:hi - depth_start])
    return blockwise_release(mechanism, h, data.categories if data.has_categories else None,
                             blocks, budget, **kwargs)

