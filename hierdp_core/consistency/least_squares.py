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

import numpy as np

from hierdp_core.errors import BudgetError
from hierdp_core.hierarchy import Hierarchy

_MIN_VARIANCE = 1e-30


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
    # an exact level (variance 0, e.g. integer noise at a huge epsilon) gets a negligible
    # variance instead, so that precisions stay finite
    var = np.maximum(np.asarray(level_variance, dtype=float), _MIN_VARIANCE)
    if not np.isfinite(var[h.depth]):
        raise BudgetError("least squares needs the finest level to be measured (non-zero share)")
    y = np.asarray(measurements, dtype=float)
    z = np.empty_like(y)
    node_var = np.empty(int(h.level_offsets[h.depth]))  # the leaves' is var[depth]

    def level_var(level: int):
        return var[h.depth] if level == h.depth else node_var[h.level_slice(level)]

    z[h.level_slice(h.depth)] = y[h.level_slice(h.depth)]
    child_sums, child_var_sums = {}, {}
    for level in range(h.depth - 1, -1, -1):
        starts = h.child_starts(level + 1)
        s = np.add.reduceat(z[h.level_slice(level + 1)], starts, axis=0)
        vs = np.add.reduceat(np.broadcast_to(level_var(level + 1), h.level_size(level + 1)),
                             starts)
        child_sums[level], child_var_sums[level] = s, vs
        sl = h.level_slice(level)
        if np.isfinite(var[level]):
            own_precision = 1.0 / var[level]
            precision = own_precision + 1.0 / vs
            z[sl] = (y[sl] * own_precision + s / vs[:, None]) / precision[:, None]
            node_var[sl] = 1.0 / precision
        else:
            z[sl] = s
            node_var[sl] = vs
    x = z  # the down pass overwrites z level by level, parents before their children
    if root_value is not None:
        x[0] = root_value
    for level in range(1, h.n_levels):
        sl = h.level_slice(level)
        parents = h.level_slice(level - 1)
        lengths = np.diff(h.child_ptr[parents.start:parents.stop + 1])
        residual = x[parents] - child_sums[level - 1]
        if level == h.depth:  # one variance for all leaves: each parent's share, spread
            residual *= (var[h.depth] / child_var_sums[level - 1])[:, None]
            x[sl] += np.repeat(residual, lengths, axis=0)
            continue
        share = np.repeat(child_var_sums[level - 1], lengths)
        np.divide(level_var(level), share, out=share)
        residual = np.repeat(residual, lengths, axis=0)
        residual *= share[:, None]
        x[sl] += residual
    return x
