"""Exact error moments of the tree least-squares estimate (`consistency.least_squares`) per
node, from the tree's shape and the per-level noise alone (no data: the estimator is
linear, so its error is the estimator applied to the noise).

With x_v = sum_u a_vu y_u the estimate of node v from the measurements y_u:

* `GlsPasses`: the variance P_v = sum_u a_vu^2 v_u. Up, V_v = 1 / (1/v_l + 1/S_v) with S_v
  the sum of the children's V (V = v at the leaves); down, A_root = v_0 (0 for an
  invariant root), U_c = A_p + S_p - V_c (what outside c's subtree says about c),
  P_c = 1 / (1/V_c + 1/U_c), A_c = 1 / (1/U_c + 1/v_c). One numpy segment operation per
  level.
* `power_sums`: sum_u |a_vu|^p w_u for any per-level weights w and power p, by the same two
  passes: every step combines estimates with disjoint supports by scalar weights (z_v from
  y_v and its children's z; x_c from z_c and the outside estimate o_c = a_p - sum of the
  siblings' z; a_c from y_c and o_c), so the parts' sums add, each scaled by |weight|^p.
  p = 1 with w = E|e| gives the triangle bound on E|error|; p = 4 with the noise's fourth
  cumulant gives the error's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.errors import BudgetError
from hierdp_core.hierarchy import Hierarchy


def _weight(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / (a + b) for non-negative variances (the inverse-variance weight of the estimate
    of variance b against the one of variance a): 0 where a is 0 and b is not, 1 where a
    is inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        w = 1.0 / (1.0 + np.asarray(b, dtype=float) / a)
    return np.where(np.isnan(w), np.where(np.isinf(a), 1.0, 0.0), w)


@dataclass(frozen=True)
class GlsPasses:
    """The variance passes of a tree (module doc), one array per level, root first:
    ``up`` V, ``child_sums`` S (per parent level), ``outside`` U (per node, the root's
    unused), ``variances`` P; ``level_variance`` v and ``root_invariant`` as given."""

    hierarchy: Hierarchy
    level_variance: np.ndarray
    root_invariant: bool
    up: list[np.ndarray]
    child_sums: list[np.ndarray]
    outside: list[np.ndarray]
    variances: list[np.ndarray]

    @classmethod
    def of(cls, hierarchy: Hierarchy, level_variance, root_invariant: bool = False
           ) -> GlsPasses:
        """The passes for per-level measurement variances (inf: not measured; the leaves
        must be)."""
        h = hierarchy
        v = np.asarray(level_variance, dtype=float)
        if not np.isfinite(v[h.depth]):
            raise BudgetError("least squares needs the finest level to be measured "
                              "(non-zero share)")
        up = [np.full(h.level_size(h.depth), v[h.depth])]
        child_sums = []
        with np.errstate(divide="ignore"):
            for level in range(h.depth - 1, -1, -1):
                s = np.add.reduceat(up[0], h.child_starts(level + 1))
                child_sums.insert(0, s)
                up.insert(0, 1.0 / (1.0 / v[level] + 1.0 / s))
            out = [np.zeros(1) if root_invariant else up[0]]
            outside = [np.zeros(1)]
            above = np.zeros(1) if root_invariant else v[:1]  # A: all but the children's
            for level in range(1, h.n_levels):
                u = (above + child_sums[level - 1])[h.segment_of_level(level)] - up[level]
                outside.append(u)
                out.append(1.0 / (1.0 / up[level] + 1.0 / u))
                above = 1.0 / (1.0 / u + 1.0 / v[level])
        return cls(h, v, root_invariant, up, child_sums, outside, out)


def power_sums(passes: GlsPasses, weights, power: float) -> list[np.ndarray]:
    """sum_u |a_vu|^power w_u for every node v, one array per level (root first), for
    per-level ``weights`` w (ignored on unmeasured levels)."""
    g = passes
    h, v = g.hierarchy, g.level_variance
    w = np.where(np.isfinite(v), np.nan_to_num(np.asarray(weights, dtype=float)), 0.0)
    up = [np.full(h.level_size(h.depth), w[h.depth])]
    child = []
    for level in range(h.depth - 1, -1, -1):  # z_v = V (y_v / v_l + sum z_c / S_v)
        s = np.add.reduceat(up[0], h.child_starts(level + 1))
        child.insert(0, s)
        own = _weight(g.child_sums[level], v[level])  # V / v_l
        up.insert(0, own**power * w[level] + (1 - own)**power * s)
    out = [np.zeros(1) if g.root_invariant else up[0]]
    above = np.zeros(1) if g.root_invariant else w[:1]
    for level in range(1, h.n_levels):
        outside = (above + child[level - 1])[h.segment_of_level(level)] - up[level]
        inside = _weight(g.outside[level], g.up[level])  # z_c's weight in x_c
        out.append(inside**power * up[level] + (1 - inside)**power * outside)
        own = _weight(g.outside[level], v[level])  # y_c's weight in a_c
        above = own**power * w[level] + (1 - own)**power * outside
    return out
