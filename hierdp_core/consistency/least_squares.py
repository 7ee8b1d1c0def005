"""Generalised least squares on a tree (Hay et al. 2010, generalised to any tree and to
per-level noise variances).

Model: every measured node v has y_v = x_v + e_v with independent noise of variance
sigma^2_level(v); unmeasured levels have infinite variance. The estimate minimises
sum (y_v - x_v)^2 / sigma^2_v subject to every parent equalling the sum of its children.
Two passes over the levels, O(nodes), each a numpy segment operation:

* up: z_v, the best estimate of x_v from v's subtree alone, and its variance V_v
  (inverse-variance combination of y_v with the sum of the children's z);
* down: x_root = z_root (or a fixed invariant), then for every child c of v:
  x_c = z_c + (V_c / sum V_children) * (x_v - sum z_children).

Example
-------
>>> import pandas as pd
>>> from hierdp_core.hierarchy import build_hierarchy
>>> h, _ = build_hierarchy(pd.DataFrame({"s": ["A", "A"], "c": ["a", "b"]}), ["s", "c"])
>>> y = np.array([[10.0], [10.0], [4.0], [4.0]])  # root, A, A/a, A/b
>>> x = tree_least_squares(h, y, np.array([1.0, 1.0, 1.0]))
>>> bool(abs(x[0, 0] - x[2:, 0].sum()) < 1e-9), x[:, 0].round(3).tolist()
(True, [9.6, 9.6, 4.8, 4.8])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hierdp_core.consistency.segment_rows import segment_lengths
from hierdp_core.errors import BudgetError
from hierdp_core.hierarchy import Hierarchy

_MIN_VARIANCE = 1e-30
_CHUNK_NODES = 1 << 16  # the leaves updated at a time: no temporary as large as the level


def tree_least_squares(
    hierarchy: Hierarchy,
    measurements: np.ndarray,
    level_variance: np.ndarray,
    root_value: np.ndarray | None = None,
) -> np.ndarray:
    """Consistent real-valued estimates for every node, shape like ``measurements``
    (n_nodes, k). ``level_variance[l]`` is the noise variance of level l (``np.inf`` where the
    level was not measured; the leaf level must be measured). ``root_value`` fixes the root
    (an invariant)."""
    h = hierarchy
    var = level_variances(h, level_variance)
    y = np.asarray(measurements, dtype=float)
    up = up_pass(h, y, var)
    x = up.z  # the down pass overwrites z level by level, parents before their children
    if root_value is not None:
        x[0] = root_value
    down_pass(h, up, x, first_level=1)
    return x


@dataclass
class UpPass:
    """The up pass: ``z`` and ``node_var`` of every node it reached, and per parent level
    the sums over each parent's children of ``z`` and of ``node_var``. With ``leaf_var``
    (the leaves' variance), ``node_var`` of the leaves is only written when they are the
    last level reached (a leaf-sized array less to write and read)."""

    z: np.ndarray
    node_var: np.ndarray
    leaf_var: float | None = None
    child_sums: dict = field(default_factory=dict)
    child_var_sums: dict = field(default_factory=dict)


def level_variances(hierarchy: Hierarchy, level_variance) -> np.ndarray:
    """The level variances used: an exact level (variance 0, e.g. integer noise at a huge
    epsilon) gets a negligible variance instead, so that precisions stay finite; the leaf
    level must be measured."""
    var = np.maximum(np.asarray(level_variance, dtype=float), _MIN_VARIANCE)
    if not np.isfinite(var[hierarchy.depth]):
        raise BudgetError("least squares needs the finest level to be measured (non-zero share)")
    return var


def up_pass(hierarchy: Hierarchy, y: np.ndarray, var: np.ndarray, last_level: int = 0,
            ) -> UpPass:
    """The up pass from the leaves to ``last_level`` (1 for a subtree whose root is not
    estimated): each parent's value depends on its own subtree alone."""
    h = hierarchy
    leaves = h.level_slice(h.depth)
    up = UpPass(np.empty_like(y), np.empty(h.n_nodes), leaf_var=float(var[h.depth]))
    up.z[leaves] = y[leaves]
    if h.depth <= last_level:
        up.node_var[leaves] = up.leaf_var
    for level in range(h.depth - 1, last_level - 1, -1):
        up_level(h, level, y, var, up)
    return up


def up_level(hierarchy: Hierarchy, level: int, y: np.ndarray, var: np.ndarray,
             up: UpPass) -> None:
    """One step of the up pass: ``level``'s z and node_var from its children's."""
    h = hierarchy
    starts = h.child_starts(level + 1)
    children = h.level_slice(level + 1)
    s = np.add.reduceat(up.z[children], starts, axis=0)
    if level + 1 == h.depth and up.leaf_var is not None:
        vs = repeated_sums(up.leaf_var, segment_lengths(starts, h.level_size(level + 1)))
    else:
        vs = np.add.reduceat(up.node_var[children], starts)
    up.child_sums[level], up.child_var_sums[level] = s, vs
    sl = h.level_slice(level)
    if np.isfinite(var[level]):
        own_precision = 1.0 / var[level]
        precision = own_precision + 1.0 / vs
        up.z[sl] = (y[sl] * own_precision + s / vs[:, None]) / precision[:, None]
        up.node_var[sl] = 1.0 / precision
    else:
        up.z[sl] = s
        up.node_var[sl] = vs


def repeated_sums(value: float, lengths: np.ndarray) -> np.ndarray:
    """``np.add.reduceat`` of ``value`` repeated ``lengths[i]`` times in segment i (lengths
    >= 1), bit for bit, with one sum per distinct length: a sum of equal values depends on
    its length alone."""
    distinct = np.flatnonzero(np.bincount(lengths))
    firsts = np.cumsum(distinct) - distinct
    by_length = np.zeros(distinct[-1] + 1)
    by_length[distinct] = np.add.reduceat(np.broadcast_to(value, int(distinct.sum())), firsts)
    return by_length[lengths]


def down_pass(hierarchy: Hierarchy, up: UpPass, x: np.ndarray, first_level: int) -> None:
    """The down pass from ``first_level`` to the leaves, in place: ``x`` holds the estimates
    of the level above and the up pass's z below (it may be ``up.z`` itself); each child
    depends on its parent and its own subtree alone."""
    h = hierarchy
    for level in range(first_level, h.n_levels):
        sl = h.level_slice(level)
        parents = h.level_slice(level - 1)
        lengths = np.diff(h.child_ptr[parents.start:parents.stop + 1])
        residual = x[parents] - up.child_sums[level - 1]
        if level == h.depth and up.leaf_var is not None:  # one variance for all leaves
            residual *= (up.leaf_var / up.child_var_sums[level - 1])[:, None]
            add_to_children(x[sl], residual, h.child_ptr[parents.start:parents.stop + 1]
                            - h.level_offsets[level])
            continue
        share = np.repeat(up.child_var_sums[level - 1], lengths)
        np.divide(up.node_var[sl], share, out=share)
        residual = np.repeat(residual, lengths, axis=0)
        residual *= share[:, None]
        x[sl] += residual


def add_to_children(children: np.ndarray, per_parent: np.ndarray, ptr: np.ndarray) -> None:
    """``children[ptr[i]:ptr[i + 1]] += per_parent[i]`` for every parent i, in place, a few
    thousand parents at a time (``ptr``: the offsets of each parent's children, then their
    number)."""
    cuts = np.unique(np.searchsorted(ptr, np.arange(0, ptr[-1], _CHUNK_NODES), side="right") - 1)
    cuts = np.append(cuts, ptr.size - 1).tolist()
    lengths = np.diff(ptr)
    for first, end in zip(cuts[:-1], cuts[1:], strict=True):
        children[ptr[first]:ptr[end]] += np.repeat(per_parent[first:end], lengths[first:end],
                                                   axis=0)
