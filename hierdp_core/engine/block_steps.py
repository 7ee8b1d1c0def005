"""The steps a block of the blockwise engines runs where it is placed
(`hierdp_core.engine.blockwise`): measure its levels (`block_measure`), hand the client its
top (`block_top`), and make its nodes consistent under the released top
(`block_finish`); `hierdp_core.engine.written` finishes a block writing its parts."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hierdp_core.consistency.least_squares import UpPass, down_pass, up_pass
from hierdp_core.consistency.topdown import topdown_levels
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.mechanisms.streams import Streams, measure_block, subtree


@dataclass
class BlockState:
    """What a block keeps between its two steps (where it ran)."""

    tree: Hierarchy
    noisy: np.ndarray
    up: UpPass | None
    top: dict = field(default_factory=dict)


def block_tree(whole, first: int, end: int) -> Hierarchy:
    """`subtree` of a Hierarchy or of a Geography's hierarchy."""
    return subtree(getattr(whole, "hierarchy", whole), first, end)


def block_measure(tree: Hierarchy, leaf_counts: np.ndarray, plans, streams: Streams,
                  block: int, variance: np.ndarray, least_squares: bool) -> BlockState:
    """Step 1 of a block: measure its levels from its stream; the up pass of least squares.
    ``state.top`` holds what the client needs: the block's true total, its top-level
    units' noisy values, up-pass estimates and variances, and its secure measurements."""
    truth = tree.aggregate(np.asarray(leaf_counts))
    source = streams.source(block + 1)
    noisy = measure_block(truth, tree, plans, source)
    up = up_pass(tree, noisy, variance, last_level=1) if least_squares else None
    top = tree.level_slice(1)
    summary = {"total": truth[0], "noisy": noisy[top],
               "measurements": source.measurements if source.secure else []}
    if up is not None:
        summary.update(z=up.z[top], node_var=up.node_var[top])
    return BlockState(tree, noisy, up, summary)


def block_top(state: BlockState) -> dict:
    return state.top


def block_finish(state: BlockState, top_est: np.ndarray | None, top_values: np.ndarray,
                 mechanism, p: dict, variance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step 3 of a block: (released values, noisy values) of its nodes, levels 1 to the
    leaves, given its top-level units' estimates (least squares) and released values."""
    tree, noisy, shape = state.tree, state.noisy, mechanism.info.capabilities.estimate
    top = tree.level_slice(1)
    if shape == "raw":
        return mechanism.estimate(None, noisy[1:], variance, None, p), noisy[1:]
    if state.up is not None:
        est = state.up.z.copy()  # the down pass below the top writes over z
        est[top] = top_est
        down_pass(tree, state.up, est, first_level=2)
    else:
        est = noisy
    if shape == "least-squares":
        return est[1:], noisy[1:]
    out = np.empty(est.shape, dtype=np.int64)
    out[top] = top_values
    topdown_levels(tree, est, out, first_level=2)
    return out[1:], noisy[1:]
