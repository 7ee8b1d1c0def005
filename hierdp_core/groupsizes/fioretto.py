"""Exact post-processing of Fioretto, Van Hentenryck & Zhu (AIJ 2021) for group sizes.

Pure functions on already-noisy arrays (the privacy step is the caller's; nothing here reads
the truth). Spec: ``shared/specs/group-sizes-fioretto.md`` (section numbers below are its).
Histograms have shape (n_nodes, N + 1) over sizes ``0..N`` (`hierdp_core.groupsizes.data`);
``G`` (``total_groups``) is public. Every output is an int64 (n_nodes, N + 1) array that is
**consistent** (parent = sum of children for every size), **valid** (non-negative integers)
and **faithful** (the root sums to G, hence every level does).

* `mh_dp` -- M_H^dp (sec. 2.3-2.4): the exact integer optimum of Model 1,
  ``min sum_v sum_s w_lev(v) (x_vs - y_vs)^2`` over consistent non-negative integer
  hierarchies whose root sums to G. Exact over **all** non-negative integers, not only over
  the paper's truncated domains D (sec. 3 "optimality caveat"): windows are a speed device
  only and are widened until the optimum is certified (see `mh_dp`).
* `mc_dp` -- M_c^dp (sec. 2.6): per-region isotonic regression of noisy cumulative
  histograms, clip to [0, G], round, decumulate, then `mh_dp` on the result.
* `chain_dp` -- M_c^ch post-processing (sec. 2.7): the exact integer optimum of Model 3 with
  the "<= otherwise" fix; `chain_order` describes the chain, `chain_cumulative` maps a
  histogram to its level-wide chain values (the paper-literal, NOT private input, to which
  the caller adds noise) and `chain_from_region_cumulative` derives chain values from
  per-region noisy cumulative histograms (the private variant S1).

Algorithms (all vectorised: loops run over levels, passes and chunks of sizes only):

* **Cost tables by sorted slopes** (TableMerge, sec. 2.4, with the fixes: the parent's own
  term ``w (v - y)^2`` is part of its table; step costs rather than the paper's off-by-one
  downward list). A convex table on an integer range ``[lo, hi]`` is stored as ``lo`` and its
  non-decreasing step costs ``tau(v + 1) - tau(v)``; the infimal convolution of the children
  (``phi``) starts at ``sum lo_c`` with the children's step costs merged in ascending order,
  and the parent adds its own (increasing) step costs. Only step costs drive decisions, so
  no large absolute cost is ever formed (pitfall 11).
* **Leaves in closed form**: a leaf's table ``w (x - y)^2`` on all of ``x >= 0`` has step
  costs ``w (2x - 1 - 2y)``; at a water level ``u`` a leaf holds ``max(0, floor(y + u))``.
  The parents of leaves get their tables on a window by enumerating only the leaf steps
  between two water levels bracketing the window (found by a sorted water-filling), so no
  leaf table is ever materialised (3.2M leaves x 43k domain values at eps = 0.1 would not fit).
* **The top node** (sec. 2.3): no own term, domain {G}; its allocation of G over the root's
  N + 1 size tables is the same sorted-slope selection, done once.
* **Certified windows**: every internal (node, size) cell works on a window of values,
  centred on a cheap estimate of the optimum (quadratic approximations of the tables, the
  top node's constraint by a weighted simplex projection; `_MHSolver._estimates`) with a
  half-width from ``delta`` or the residual spread. The windowed problem is Model 1
  plus box constraints and is solved exactly. Model 1 is a separable convex integer flow
  (top -> root -> ... -> leaves -> sink), so a feasible integer solution is optimal iff no
  unit-step cycle improves it; if no cell sits on a window bound other than 0 or G, the
  residual steps of the windowed and the full problem coincide, so the windowed optimum is
  the optimum of Model 1. Otherwise the windows of the cells on a bound are doubled on that
  side and the affected sizes are solved again (windows only grow, up to [0, G], so this
  ends).
* **Chain** (sec. 2.7): with the fix, every consecutive pair of the chain is ``<=`` and some
  are ``=``, so Model 3 is integer isotonic regression along the chain with tied blocks,
  bounds [0, G] and the last block pinned to G. For squared costs the integer optimum is
  the rounded continuous optimum (a step ``x - 1 -> x`` costs ``f'(x - 1/2)``, so the
  threshold sets of the integer and continuous problems coincide), and the bounded optimum
  is the clipped unbounded one. One PAVA call (`scipy.optimize.isotonic_regression`) replaces
  the sequential prefix-min recurrence; `chain_cost_tables` keeps the literal recurrence for
  explanation and for tests.

Exactness: with integer noisy values and integer level weights every step cost is an exact
integer in float64 (below 2**53), so ties and comparisons are exact. Otherwise costs are
rounded to float64, and a solution may differ from the optimum only where two allocations
differ in cost by about 1e-12 relative. `chain_dp` rounds each pooled block mean exactly
from integer sums when the input is integral.

Cost: time and memory grow with the window widths: with ``delta`` and with how far the
optimum lies from the estimate (a few noise standard deviations on noisy data). Sizes are
processed in batches of about `EVENT_BUDGET` leaf steps.

Example (the running example of sec. 1.7: US -> {GA, NY}, sizes 0..5, G = 6; the noisy
size-1 values are the paper's 2, 3, 0)
-------
>>> import pandas as pd
>>> from hierdp_core.hierarchy import build_hierarchy
>>> h, _ = build_hierarchy(pd.DataFrame({"state": ["GA", "NY"]}), ["state"])
>>> truth = np.array([[0, 3, 1, 2, 0, 0], [0, 2, 0, 1, 0, 0], [0, 1, 1, 1, 0, 0]])
>>> noisy = np.array([[0, 2, 2, 2, 0, 0], [0, 3, 0, 1, -1, 0], [1, 0, 1, 1, 0, 0]])
>>> mh_dp(h, noisy, 6).tolist()
[[1, 2, 1, 2, 0, 0], [0, 2, 0, 1, 0, 0], [1, 0, 1, 1, 0, 0]]
>>> chain_cumulative(h, truth)[1:].tolist()  # GA, NY: chain 2, 3, 3, 4, 5, 6, 6, ...
[[0, 2, 3, 5, 6, 6], [0, 3, 4, 6, 6, 6]]
>>> chain_dp(h, chain_cumulative(h, truth), 6).tolist() == truth.tolist()
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.optimize import isotonic_regression

from hierdp_core.consistency.segments import (
    project_segments,
    segment_ids,
    segmented_argsort_desc,
    segmented_cumsum,
)
from hierdp_core.errors import InputError
from hierdp_core.hierarchy import Hierarchy

# Target number of leaf step events (and table entries) handled at once; bounds memory.
EVENT_BUDGET = 1 << 22
MAX_PASSES = 1000  # a guard only: windows grow every pass, so passes are finite


# ---- input checks ----------------------------------------------------------------------
def _values(h: Hierarchy, values, name: str) -> np.ndarray:
    """``values`` as a finite float64 (n_nodes, N + 1) array."""
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != h.n_nodes or a.shape[1] < 1:
        raise InputError(f"{name} must have shape (n_nodes={h.n_nodes}, N + 1), got "
                         f"{a.shape}")
    if not np.all(np.isfinite(a)):
        raise InputError(f"{name} has non-finite values")
    return a


def _total(total_groups) -> int:
    g = np.asarray(total_groups)
    if g.ndim != 0 or not np.isfinite(g) or g < 0 or g != np.floor(g):
        raise InputError(f"total_groups must be a non-negative integer, got {total_groups!r}")
    return int(g)


def _weights(h: Hierarchy, level_weights) -> np.ndarray:
    """One positive finite weight per level (default all 1)."""
    if level_weights is None:
        return np.ones(h.n_levels)
    w = np.asarray(level_weights, dtype=np.float64)
    if w.shape != (h.n_levels,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise InputError(f"level_weights must be {h.n_levels} positive finite numbers (one "
                         f"per level), got {level_weights!r}")
    return w


def _starts_of(counts: np.ndarray) -> np.ndarray:
    """Exclusive cumulative sum: where each run of ``counts`` starts."""
    out = np.zeros(counts.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=out[1:])
    return out


def _rank_in_runs(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For runs of the given lengths laid end to end: the run of every element and its
    position within the run."""
    run = np.repeat(np.arange(counts.size), counts)
    return run, np.arange(run.size) - _starts_of(counts)[run]


def _sort_in_segments(values: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """Order sorting by (segment, value ascending) for non-decreasing ``seg``."""
    return segmented_argsort_desc(-values, seg)


# ---- convex tables -----------------------------------------------------------------------
@dataclass
class _Tables:
    """Convex integer cost tables of a batch of cells, stored by step costs.

    Cell k's table lives on ``[lo[k], lo[k] + n[k]]``; ``slopes[off[k] + j]`` is
    ``tau(lo[k] + j + 1) - tau(lo[k] + j)`` (non-decreasing in j). Absolute costs are never
    needed for decisions and are not stored.
    """

    lo: np.ndarray
    off: np.ndarray
    slopes: np.ndarray
    phi: np.ndarray | None = None  # the children's merged steps (explicit merges only)

    @property
    def n(self) -> np.ndarray:
        return np.diff(self.off)

    def take(self, cells: np.ndarray) -> _Tables:
        """The tables of ``cells`` (indices), in that order."""
        n = self.n[cells]
        run, pos = _rank_in_runs(n)
        at = self.off[cells][run] + pos
        return _Tables(self.lo[cells], np.concatenate([[0], np.cumsum(n)]), self.slopes[at],
                       None if self.phi is None else self.phi[at])

    @staticmethod
    def concat(parts: list[_Tables]) -> _Tables:
        n = np.concatenate([p.n for p in parts])
        phi = None if parts[0].phi is None else np.concatenate([p.phi for p in parts])
        return _Tables(np.concatenate([p.lo for p in parts]),
                       np.concatenate([[0], np.cumsum(n)]),
                       np.concatenate([p.slopes for p in parts]), phi)


def _merge_children(child: _Tables, starts: np.ndarray):
    """phi of every parent (its children = the cells of one segment of ``child``).

    Returns ``(mink_lo, counts, slopes, slope_cell)``: phi lives on
    ``[mink_lo, mink_lo + counts]`` (the Minkowski sum of the children's ranges) and its step
    costs are ``slopes`` (all children's step costs, sorted ascending per parent; the
    greedy / marginal-allocation result, spec sec. 2.4), ``slope_cell`` naming the child of
    each. Taking the first k steps of a parent allocates ``mink_lo + k`` optimally.
    """
    n = child.n
    mink_lo = np.add.reduceat(child.lo, starts)
    counts = np.add.reduceat(n, starts)
    cell = np.repeat(np.arange(n.size), n)
    seg = segment_ids(starts, n.size)[cell]
    order = _sort_in_segments(child.slopes, seg)
    return mink_lo, counts, child.slopes[order], cell[order]


def _own_steps(v: np.ndarray, y: np.ndarray, w: float) -> np.ndarray:
    """Step costs of the node's own term ``w (v - y)^2`` from v to v + 1."""
    return w * (2.0 * v + 1.0 - 2.0 * y)


def _domain(lo_w, hi_w, mink_lo, mink_hi):
    """Own window intersected with the reachable range; if they miss each other, the
    reachable value nearest to the window (a value the certification step then rejects)."""
    dlo = np.maximum(lo_w, mink_lo)
    dhi = np.minimum(hi_w, mink_hi)
    below = hi_w < mink_lo
    above = lo_w > mink_hi
    dlo = np.where(below, mink_lo, np.where(above, mink_hi, dlo))
    dhi = np.where(below, mink_lo, np.where(above, mink_hi, dhi))
    return dlo, dhi


def _explicit_parent_tables(child: _Tables, starts, y_par, w_par, lo_w, hi_w) -> _Tables:
    """Tables of parents whose children have explicit tables (TableMerge, sec. 2.4 fixed),
    on each parent's own window ``[lo_w, hi_w]`` intersected with its reachable range."""
    mink_lo, counts, phi, _ = _merge_children(child, starts)
    dlo, dhi = _domain(lo_w, hi_w, mink_lo, mink_lo + counts)
    par, j = _rank_in_runs(counts)
    v = mink_lo[par] + j
    keep = (v >= dlo[par]) & (v < dhi[par])
    v, phi, par = v[keep], phi[keep], par[keep]
    return _Tables(dlo, np.concatenate([[0], np.cumsum(dhi - dlo)]),
                   phi + _own_steps(v, y_par[par], w_par), phi)


# ---- leaves in closed form ---------------------------------------------------------------
@dataclass
class _Leaves:
    """Leaf values of a batch, grouped in segments (one per parent cell) by ``starts``;
    ``order`` sorts them descending within segments (for water levels)."""

    y: np.ndarray
    w: float
    starts: np.ndarray
    seg: np.ndarray
    order: np.ndarray

    @property
    def n_parents(self) -> int:
        return self.starts.size


def _water(leaves: _Leaves, targets: np.ndarray, rho: float = 0.0) -> np.ndarray:
    """Per segment the level u with ``sum_c max(0, y_c + u) + rho u = target``.

    The sorted water-filling of a simplex projection: with the j largest values active,
    ``u_j = (target - their sum) / (j + rho)``; the answer is ``u_J`` for the largest j with
    ``y_(j) + u_j > 0``. With ``rho = 0`` and target 0 it returns ``-max y``.
    """
    ys = leaves.y[leaves.order]
    starts, seg = leaves.starts, leaves.seg
    cy = segmented_cumsum(ys, starts)
    rank = np.arange(ys.size) - starts[seg] + 1
    u = (targets[seg] - cy) / (rank + rho)
    cand = np.where(ys + u > 0, np.arange(ys.size), -1)
    last = np.maximum.reduceat(cand, starts)
    found = last >= 0
    out = targets / rho if rho > 0 else -ys[starts]
    out = np.asarray(out, dtype=np.float64).copy()
    out[found] = u[last[found]]
    return out


def _held(leaves: _Leaves, u: np.ndarray) -> np.ndarray:
    """What each leaf holds at water level u of its parent: all steps of cost <= w (2u - 1)."""
    return np.maximum(0.0, np.floor(leaves.y + u[leaves.seg])).astype(np.int64)


def _leaf_steps(leaves: _Leaves, lo: np.ndarray, hi: np.ndarray):
    """The leaf steps a parent needs to reach every total in ``[lo, hi]`` (lo <= hi, >= 0).

    Returns ``(held, base, ev_start, ev_slope, ev_leaf)``: at ``held`` the leaves of parent p
    sum to ``base[p] <= lo[p]``; the events (one step ``x - 1 -> x`` of one leaf, cost
    ``w (2x - 1 - 2y)``) of parent p are ``ev_start[p]:ev_start[p + 1]``, sorted ascending,
    and reach at least ``hi[p]``. Taking the first ``t - base`` events gives an optimal
    allocation of total t. Their number is about ``hi - lo + 2 x (active leaves)``.
    """
    u_lo = _water(leaves, lo.astype(np.float64))  # sum max(0, y+u) = lo  =>  held <= lo
    u_hi = _water(leaves, hi.astype(np.float64)) + 1.0  # held >= sum max(0, y+u-1) = hi
    held = _held(leaves, u_lo)
    base = np.add.reduceat(held, leaves.starts)
    while np.any(base > lo):  # floating-point safety; normally never runs
        u_lo = np.where(base > lo, u_lo - 1.0, u_lo)
        held = _held(leaves, u_lo)
        base = np.add.reduceat(held, leaves.starts)
    top = _held(leaves, u_hi)
    while np.any(np.add.reduceat(top, leaves.starts) < hi):
        u_hi = np.where(np.add.reduceat(top, leaves.starts) < hi, u_hi + 1.0, u_hi)
        top = _held(leaves, u_hi)
    k = top - held
    ev_leaf, pos = _rank_in_runs(k)
    x = held[ev_leaf] + 1 + pos
    slope = leaves.w * (2.0 * x - 1.0 - 2.0 * leaves.y[ev_leaf])
    ev_seg = leaves.seg[ev_leaf]
    order = _sort_in_segments(slope, ev_seg)
    per_parent = np.bincount(ev_seg, minlength=leaves.n_parents)
    ev_start = np.concatenate([[0], np.cumsum(per_parent)])
    return held, base, ev_start, slope[order], ev_leaf[order]


def _leaf_parent_tables(leaves: _Leaves, y_par, w_par, lo_w, hi_w) -> _Tables:
    """Tables of the parents of leaves on their own windows ``[lo_w, hi_w]`` (the reachable
    range of leaves is [0, inf), so the window is the domain)."""
    _, base, ev_start, ev_slope, _ = _leaf_steps(leaves, lo_w, hi_w)
    par, j = _rank_in_runs(hi_w - lo_w)
    v = lo_w[par] + j
    tau = ev_slope[ev_start[par] + v - base[par]] + _own_steps(v, y_par[par], w_par)
    return _Tables(lo_w.copy(), np.concatenate([[0], np.cumsum(hi_w - lo_w)]), tau)


# ---- allocations (top-down) --------------------------------------------------------------
def _allocate_tables(child: _Tables, starts: np.ndarray, x_par: np.ndarray) -> np.ndarray:
    """Children values realising each parent's value: the parent's first ``x - mink_lo``
    merged steps (clipped to what exists, which only happens in an infeasible window)."""
    mink_lo, counts, _, cell = _merge_children(child, starts)
    par, j = _rank_in_runs(counts)
    k = np.clip(x_par - mink_lo, 0, counts)
    taken = cell[j < k[par]]
    return child.lo + np.bincount(taken, minlength=child.lo.size)


def _allocate_by_threshold(parent: _Tables, child: _Tables, starts: np.ndarray,
                           x_par: np.ndarray) -> np.ndarray:
    """`_allocate_tables` without sorting, for parents built by an explicit merge.

    The parent's stored merged steps give the k-th smallest child step ``t`` (k = x -
    reachable minimum; the step into x, or the step out of x at the window's low end); the
    children take every step cheaper than t and enough steps equal to t. Parents whose
    table has no step at hand (a one-value domain) fall back to sorting.
    """
    n_par = parent.lo.size
    n = child.n
    k = x_par - np.add.reduceat(child.lo, starts)
    has_step = parent.n > 0
    # the step into x (the k-th smallest), or out of x when x is the window's low end
    # (the (k+1)-th): either way <= k steps are cheaper and >= k are no dearer
    step = np.clip(x_par - 1 - parent.lo, 0, np.maximum(parent.n - 1, 0))
    t = np.full(n_par, -np.inf)
    t[has_step] = parent.phi[parent.off[:-1][has_step] + step[has_step]]
    fallback = (k > 0) & ~has_step
    cell = np.repeat(np.arange(n.size), n)
    seg = segment_ids(starts, n.size)[cell]
    lt = child.slopes < t[seg]
    eq = child.slopes == t[seg]
    need = k - np.bincount(seg, weights=lt, minlength=n_par).astype(np.int64)
    eq_before = np.cumsum(eq) - eq  # equal steps before this one (all parents) ...
    eq_before -= _starts_of(np.bincount(seg, weights=eq, minlength=n_par).astype(np.int64))[
        seg]  # ... minus those of earlier parents
    taken = lt | (eq & (eq_before < need[seg]))
    out = child.lo + np.bincount(cell[taken], minlength=n.size)
    if fallback.any():
        pars = np.flatnonzero(fallback)
        m = np.diff(np.append(starts, n.size))[pars]
        run, pos = _rank_in_runs(m)
        kids = starts[pars][run] + pos
        out[kids] = _allocate_tables(child.take(kids), _starts_of(m), x_par[pars])
    return out


def _allocate_leaves(leaves: _Leaves, x_par: np.ndarray) -> np.ndarray:
    """Leaf values realising each parent's value (the first ``x - base`` leaf steps)."""
    held, base, ev_start, _, ev_leaf = _leaf_steps(leaves, x_par, x_par)
    par, j = _rank_in_runs(np.diff(ev_start))
    taken = ev_leaf[j < (x_par - base)[par]]
    return held + np.bincount(taken, minlength=held.size)


# ---- reference helpers (explainers, tests) -----------------------------------------------
def leaf_cost_table(noisy: float, lo: int, hi: int, weight: float = 1.0) -> np.ndarray:
    """A leaf's cost table ``weight (v - noisy)^2`` for v = lo..hi (spec sec. 2.3)."""
    v = np.arange(lo, hi + 1, dtype=np.float64)
    return weight * (v - noisy) ** 2


def merge_cost_tables(children, noisy: float, weight: float = 1.0):
    """TableMerge of one node (spec sec. 2.4, fixed): ``tau(v) = weight (v - noisy)^2 +
    phi(v)``, phi the min-plus convolution of the children's convex tables.

    ``children``: a sequence of ``(lo, values)``, values the child's costs on lo, lo+1, ...
    (convex). Returns ``(lo, values)`` of the node on the Minkowski range of the children.
    Uses the production step-cost merge (`_merge_children`).
    """
    los = np.array([int(lo) for lo, _ in children], dtype=np.int64)
    vals = [np.asarray(t, dtype=np.float64) for _, t in children]
    tab = _Tables(los, np.concatenate([[0], np.cumsum([t.size - 1 for t in vals])]),
                  np.concatenate([np.diff(t) for t in vals]))
    mink_lo, _, phi_steps, _ = _merge_children(tab, np.array([0]))
    base = sum(t[0] for t in vals)
    phi = base + np.concatenate([[0.0], np.cumsum(phi_steps)])
    v = np.arange(mink_lo[0], mink_lo[0] + phi.size, dtype=np.float64)
    return int(mink_lo[0]), phi + weight * (v - noisy) ** 2


def model1_objective(h: Hierarchy, x, noisy, level_weights=None) -> float:
    """Model 1's objective ``sum_v w_lev(v) sum_s (x_vs - noisy_vs)^2``."""
    w = _weights(h, level_weights)
    d = (np.asarray(x, dtype=np.float64) - np.asarray(noisy, dtype=np.float64)) ** 2
    return float(np.sum(w[h.level_of_nodes()] * d.sum(axis=1)))


# ---- M_H^dp ------------------------------------------------------------------------------
def _default_half_widths(h: Hierarchy, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Initial window half-widths per level from the residual spread: with level variances
    ``k / w_l``, a parent's residual ``y_p - sum_c y_c`` has variance
    ``k (1 / w_p + m / w_c)``; k is estimated by the mean, and the half-width is about
    4 noise standard deviations of the level (plus 2)."""
    est = []
    for level in range(1, h.n_levels):
        child = y[h.level_slice(level)]
        resid = y[h.level_slice(level - 1)] - np.add.reduceat(child, h.child_starts(level),
                                                              axis=0)
        m = np.diff(np.append(h.child_starts(level), h.level_size(level)))
        denom = 1.0 / w[level - 1] + m / w[level]
        est.append((resid ** 2 / denom[:, None]).ravel())
    k = float(np.mean(np.concatenate(est))) if est else 1.0
    return np.ceil(4.0 * np.sqrt(k / w)).astype(np.int64) + 2


class _MHSolver:
    """Model 1 with certified windows (see the module docstring). Internal levels
    ``0..L-1`` have windowed explicit tables, the leaf level L is closed-form.

    A batch of columns (sizes) ``cols`` holds level l as ``cols.size * n_l`` cells, column
    by column (so the children of a cell are one contiguous run of the next level)."""

    def __init__(self, h: Hierarchy, y: np.ndarray, G: int, w: np.ndarray, half):
        self.h, self.y, self.G, self.w = h, y, G, w
        self.half = np.asarray(half, dtype=np.int64)
        self.L = h.depth
        self.S = y.shape[1]
        self.n = [h.level_size(level) for level in range(h.n_levels)]
        self.x = [np.zeros((self.n[lv], self.S), np.int64) for lv in range(h.n_levels)]
        self.tabs: list[_Tables | None] = [None] * self.L
        self.stats = {"passes": 0, "solved_columns": 0, "widened_cells": 0,
                      "half_widths": self.half.tolist()}
        # leaves sorted descending within (column, parent): one permutation per column
        leaf = y[h.level_slice(self.L)].T
        by_value = np.argsort(-leaf, axis=1, kind="stable")
        if self.L > 0:
            parent = h.segment_of_level(self.L)
            by_parent = np.argsort(parent[by_value], axis=1, kind="stable")
            by_value = np.take_along_axis(by_value, by_parent, axis=1)
        self.leaf_rank = by_value
        self.own_lo: list[np.ndarray] = []
        self.own_hi: list[np.ndarray] = []
        if self.L > 0:
            for level, est in enumerate(self._estimates()):
                c = np.rint(est).astype(np.int64)
                self.own_lo.append(np.clip(c - self.half[level], 0, G))
                self.own_hi.append(np.clip(c + self.half[level], 0, G))

    # -- layout ---------------------------------------------------------------------------
    def _flat(self, a: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a[:, cols].T).ravel()

    def _put(self, a: np.ndarray, cols: np.ndarray, flat: np.ndarray) -> None:
        a[:, cols] = flat.reshape(cols.size, -1).T

    def _cells(self, level: int, pos: np.ndarray) -> np.ndarray:
        return (pos[:, None] * self.n[level] + np.arange(self.n[level])).ravel()

    def _starts(self, level: int, ncols: int) -> np.ndarray:
        """Segments of level ``level`` cells under the level - 1 cells of a batch."""
        cs = self.h.child_starts(level)
        return (np.arange(ncols)[:, None] * self.n[level] + cs[None, :]).ravel()

    def _leaves(self, cols: np.ndarray, *, one_segment: bool = False) -> _Leaves:
        y = self._flat(self.y[self.h.level_slice(self.L)], cols)
        if one_segment:  # the root is the only level: the top node's children
            order = np.argsort(-y, kind="stable")
            starts = np.array([0])
        else:
            nl = self.n[self.L]
            order = (np.arange(cols.size)[:, None] * nl + self.leaf_rank[cols]).ravel()
            starts = self._starts(self.L, cols.size)
        return _Leaves(y, float(self.w[self.L]), starts, segment_ids(starts, y.size), order)

    # -- window centres -------------------------------------------------------------------
    def _estimates(self) -> list[np.ndarray]:
        """A cheap estimate of the optimum of every internal cell, (n_l, S) per level.

        Leaf-parents: the continuous optimum of their own subtree (a water level), whose
        table is then approximated by a quadratic of half-curvature ``w_p + w / (active
        leaves)``; upper levels merge quadratics (tree least squares); the top node
        projects the roots onto ``sum = G, >= 0``; then the push is shared top-down in
        proportion to the inverse curvatures. Used only to centre the windows."""
        h, L, w, S = self.h, self.L, self.w, self.S
        lp = L - 1
        leaves = self._leaves(np.arange(S))
        y_par = self._flat(self.y[h.level_slice(lp)], np.arange(S))
        rho = leaves.w / w[lp]
        u = _water(leaves, y_par, rho)
        active = np.bincount(leaves.seg, weights=leaves.y + u[leaves.seg] > 0,
                             minlength=y_par.size)
        centre = [None] * L
        curv = [None] * L
        centre[lp] = np.maximum(y_par - rho * u, 0.0).reshape(S, -1).T
        curv[lp] = (w[lp] + w[L] / np.maximum(active, 1.0)).reshape(S, -1).T
        pooled = [None] * L
        for level in range(lp - 1, -1, -1):
            starts = h.child_starts(level + 1)
            inv = np.add.reduceat(1.0 / curv[level + 1], starts, axis=0)
            pooled[level] = np.add.reduceat(centre[level + 1], starts, axis=0)
            a = 1.0 / inv
            y_l = self.y[h.level_slice(level)]
            centre[level] = (w[level] * y_l + a * pooled[level]) / (w[level] + a)
            curv[level] = w[level] + a
        est = [None] * L
        est[0] = project_segments(centre[0][0], np.array([0]), np.array([float(self.G)]),
                                  curv[0][0])[None, :]
        for level in range(1, L):
            starts = h.child_starts(level)
            seg = h.segment_of_level(level)
            share = (1.0 / curv[level]) / np.add.reduceat(1.0 / curv[level], starts,
                                                          axis=0)[seg]
            push = est[level - 1] - np.add.reduceat(centre[level], starts, axis=0)
            est[level] = np.maximum(centre[level] + share * push[seg], 0.0)
        return est

    def _chunks(self, cols: np.ndarray, *, top_down: bool) -> list[np.ndarray]:
        """Split columns so that each batch handles about EVENT_BUDGET events."""
        cost = np.full(cols.size, 2.0 * self.n[self.L])
        if not top_down:
            for level in range(self.L):
                width = self.own_hi[level][:, cols] - self.own_lo[level][:, cols]
                cost += (2.0 if level < self.L - 1 else 1.0) * width.sum(axis=0)
        cut = np.searchsorted(np.cumsum(cost), np.arange(1, 1 + cost.sum() // EVENT_BUDGET)
                              * EVENT_BUDGET)
        return [c for c in np.split(cols, np.unique(cut[cut < cols.size])) if c.size]

    # -- bottom-up ------------------------------------------------------------------------
    def _bottom_up(self, cols: np.ndarray) -> list[_Tables]:
        """Tables of the internal levels for a batch of columns."""
        tabs: list[_Tables | None] = [None] * self.L
        h, lp = self.h, self.L - 1

        def args(level):
            return (self._flat(self.y[h.level_slice(level)], cols), self.w[level],
                    self._flat(self.own_lo[level], cols), self._flat(self.own_hi[level], cols))

        tabs[lp] = _leaf_parent_tables(self._leaves(cols), *args(lp))
        for level in range(lp - 1, -1, -1):
            tabs[level] = _explicit_parent_tables(tabs[level + 1],
                                                  self._starts(level + 1, cols.size),
                                                  *args(level))
        return tabs

    def _solve_tables(self, cols: np.ndarray) -> None:
        """(Re)compute the stored tables of columns ``cols`` (sorted)."""
        parts = [self._bottom_up(c) for c in self._chunks(cols, top_down=False)]
        new = [_Tables.concat([p[level] for p in parts]) for level in range(self.L)]
        self.stats["solved_columns"] += int(cols.size)
        if cols.size == self.S:
            self.tabs = new
            return
        keep = np.setdiff1d(np.arange(self.S), cols)
        where = np.argsort(np.concatenate([keep, cols]), kind="stable")
        for level in range(self.L):
            merged = _Tables.concat([self.tabs[level].take(self._cells(level, keep)),
                                     new[level]])
            self.tabs[level] = merged.take(self._cells(level, where))

    # -- top-down -------------------------------------------------------------------------
    def _top(self) -> np.ndarray:
        """The top node's allocation of G over the root cells (sizes)."""
        if self.L == 0:
            return _allocate_leaves(self._leaves(np.arange(self.S), one_segment=True),
                                    np.array([self.G]))
        return _allocate_tables(self.tabs[0], np.array([0]), np.array([self.G]))

    def _top_down(self, cols: np.ndarray, x_root: np.ndarray) -> None:
        for batch in self._chunks(cols, top_down=True):
            x_par = x_root[batch]
            self.x[0][:, batch] = x_par
            every = batch.size == self.S
            for level in range(1, self.L):
                parent = self.tabs[level - 1] if every else \
                    self.tabs[level - 1].take(self._cells(level - 1, batch))
                tab = self.tabs[level] if every else \
                    self.tabs[level].take(self._cells(level, batch))
                x_par = _allocate_by_threshold(parent, tab, self._starts(level, batch.size),
                                               x_par)
                self._put(self.x[level], batch, x_par)
            self._put(self.x[self.L], batch, _allocate_leaves(self._leaves(batch), x_par))

    def _widen(self, cols: np.ndarray) -> np.ndarray:
        """Widen the windows of cells whose value sits on an artificial window bound
        (any bound other than 0 and G); return the columns that must be solved again."""
        dirty = np.zeros(self.S, dtype=bool)
        for level in range(self.L):
            x = self.x[level][:, cols]
            lo, hi = self.own_lo[level][:, cols], self.own_hi[level][:, cols]
            high = (x >= hi) & (hi < self.G)
            low = (x <= lo) & (lo > 0)
            step = np.maximum(hi - lo, self.half[level])
            self.own_hi[level][:, cols] = np.where(
                high, np.minimum(self.G, np.maximum(hi, x) + step), hi)
            self.own_lo[level][:, cols] = np.where(
                low, np.maximum(0, np.minimum(lo, x) - step), lo)
            flagged = high | low
            self.stats["widened_cells"] += int(flagged.sum())
            dirty[cols] |= flagged.any(axis=0)
        return np.flatnonzero(dirty)

    def solve(self) -> np.ndarray:
        all_cols = np.arange(self.S)
        self.stats["passes"] = 1
        if self.L == 0:
            self.x[0][0] = self._top()
            return self.x[0]
        dirty = all_cols
        x_root = np.full(self.S, -1, dtype=np.int64)
        for _ in range(MAX_PASSES):
            self._solve_tables(dirty)
            new_root = self._top()
            redo = np.flatnonzero((new_root != x_root) | np.isin(all_cols, dirty))
            x_root = new_root
            self._top_down(redo, x_root)
            dirty = self._widen(redo)
            if dirty.size == 0:
                return np.concatenate(self.x, axis=0)
            self.stats["passes"] += 1
        raise RuntimeError(f"mh_dp: optimum not certified after {MAX_PASSES} passes")


def mh_dp(h: Hierarchy, noisy, total_groups, *, level_weights=None, delta=None,
          stats: dict | None = None) -> np.ndarray:
    """M_H^dp (spec sec. 2.3-2.4): the exact integer optimum of Model 1.

    Minimises ``sum_v w_lev(v) sum_s (x_vs - noisy_vs)^2`` subject to ``x_parent,s =
    sum_children x_child,s`` for every internal node and size, ``x >= 0`` integer and
    ``sum_s x_root,s = G``. The optimum is over **all** non-negative integers (stronger than
    the paper, whose result is optimal only within its domains D, sec. 3).

    Parameters
    ----------
    h: the hierarchy; ``noisy``: (n_nodes, N + 1) noisy values of every node of every level
        (float or int; any sign); ``total_groups``: G (public).
    level_weights: one positive weight per level (default 1), e.g. ``1 / variance`` for a
        non-uniform budget split.
    delta: initial half-width of the value windows of internal cells (an int, or one per
        level), centred on an estimate of the optimum. It changes the running time only,
        never the result: windows are widened until the optimum is certified. Default:
        about 4 noise standard deviations per level, estimated from the parent-vs-children
        residuals of ``noisy``. The paper's ``3 * ceil(2 lambda^2)`` (sec. 2.0 P3) also
        works but costs time and memory in proportion (about 60x wider at eps = 0.1).
    stats: if a dict, filled with diagnostics (passes, solved columns, widened cells,
        initial half-widths).

    Returns an int64 (n_nodes, N + 1) array: consistent, non-negative, root sums to G.
    Ties between equally good solutions are broken deterministically (for a given input and
    ``delta``; other windows may return another solution of the same cost).

    Paper errors fixed (sec. 0, sec. 2.4): the parent's own term is in its table (Alg. 1
    lines 8/12), steps are costed ``tau(v +- 1) - tau(v)`` (Alg. 1 line 2), the top node has
    no own term and domain {G}, Model 1's (H2) is per level (one root constraint here).
    """
    y = _values(h, noisy, "noisy")
    G = _total(total_groups)
    w = _weights(h, level_weights)
    if delta is None:
        half = _default_half_widths(h, y, w)
    else:
        half = np.broadcast_to(np.asarray(delta, dtype=np.int64), (h.n_levels,))
        if np.any(half < 0):
            raise InputError(f"delta must be non-negative, got {delta!r}")
        half = np.maximum(half, 1)
    if G == 0:
        return np.zeros(y.shape, dtype=np.int64)
    solver = _MHSolver(h, y, G, w, half)
    out = solver.solve()
    if stats is not None:
        stats.update(solver.stats)
    return out


# ---- M_c^dp ------------------------------------------------------------------------------
def isotonic_rows(values: np.ndarray) -> np.ndarray:
    """Row-wise least-squares isotonic (non-decreasing) regression, all rows in one PAVA call.

    Row r is shifted to start at an offset above every earlier row's largest value, so the
    concatenated problem never pools across rows; offsets stay at the scale of the sum of
    the row ranges, so integer data stay exact.
    """
    a = np.asarray(values, dtype=np.float64)
    lo = a.min(axis=1)
    span = a.max(axis=1) - lo
    off = np.concatenate([[0.0], np.cumsum(span + 1.0)[:-1]])
    shifted = (a - lo[:, None]) + off[:, None]
    x = isotonic_regression(shifted.ravel()).x.reshape(a.shape)
    return x - off[:, None] + lo[:, None]


def mc_dp(h: Hierarchy, noisy_cum, total_groups, *, level_weights=None, delta=None,
          stats: dict | None = None) -> np.ndarray:
    """M_c^dp (spec sec. 2.6, the CP'19 mechanism's post-processing).

    ``noisy_cum``: (n_nodes, N + 1) noisy per-region cumulative histograms
    (``c_s = #groups of size <= s`` plus noise). For every region: isotonic regression
    (exactly ``argmin ||c - noisy||^2`` with c non-decreasing and ``0 <= c <= G`` after the
    clip), rounding (monotone, so the decumulated histogram is >= 0), decumulation; then
    `mh_dp` on those histograms with ``level_weights`` and ``delta``. Consistent, valid and
    faithful; **not** the optimum of Model 2 (monotonicity is restored region by region).
    """
    c = _values(h, noisy_cum, "noisy_cum")
    G = _total(total_groups)
    monotone = np.rint(np.clip(isotonic_rows(c), 0, G))
    hist = np.diff(monotone, axis=1, prepend=0.0)
    return mh_dp(h, hist, G, level_weights=level_weights, delta=delta, stats=stats)


# ---- M_c^ch ------------------------------------------------------------------------------
class ChainOrder(NamedTuple):
    """The chain T^ch (spec sec. 1.3, 2.7): size-major post-order of the region tree.

    ``cells[i]``: the (node, size) of chain node i as the flat index ``node * n_sizes +
    size`` into a row-major (n_nodes, n_sizes) array, so a chain vector is
    ``values.ravel()[cells]``; ``level[i]``: its level; ``equal_next[i]``: True when Model 3
    ties chain nodes i and i + 1 (a last child followed by its parent), else ``<=`` (the last
    entry is False).
    """

    cells: np.ndarray
    level: np.ndarray
    equal_next: np.ndarray


def _post_order(h: Hierarchy) -> np.ndarray:
    """Post-order position of every node (children in node order before their parent)."""
    sizes = np.ones(h.n_nodes, dtype=np.int64)  # number of nodes in each subtree
    for level in range(h.depth, 0, -1):
        sizes[h.level_slice(level - 1)] += np.add.reduceat(sizes[h.level_slice(level)],
                                                           h.child_starts(level))
    first = np.zeros(h.n_nodes, dtype=np.int64)  # first post-order slot of each subtree
    for level in range(1, h.n_levels):
        sl = h.level_slice(level)
        starts = h.child_starts(level)
        before = segmented_cumsum(sizes[sl].astype(np.float64), starts) - sizes[sl]
        first[sl] = first[h.parent[sl]] + np.rint(before).astype(np.int64)
    return first + sizes - 1


def chain_order(h: Hierarchy, n_sizes: int) -> ChainOrder:
    """The chain of ``n_sizes`` copies of the region tree (sizes 0..n_sizes-1); see
    `ChainOrder`. The DFS child order is the hierarchy's node order (sorted codes)."""
    n_sizes = int(n_sizes)
    if n_sizes < 1:
        raise InputError(f"n_sizes must be >= 1, got {n_sizes}")
    post = np.empty(h.n_nodes, dtype=np.int64)
    post[_post_order(h)] = np.arange(h.n_nodes)
    cells = (post[None, :] * n_sizes + np.arange(n_sizes)[:, None]).ravel()
    level = np.tile(h.level_of_nodes()[post].astype(np.int64), n_sizes)
    equal_next = np.zeros(level.size, dtype=bool)
    equal_next[:-1] = level[:-1] > level[1:]
    return ChainOrder(cells, level, equal_next)


def chain_cumulative(h: Hierarchy, hist) -> np.ndarray:
    """Level-wide chain cumulative counts (spec sec. 1.3, 2.7 step 3) of histograms.

    Returns an array shaped like ``hist`` (n_nodes, N + 1) whose entry (v, s) is the chain
    value of chain node (s, v): the sum of ``hist`` over the nodes (r, t) of v's level with
    ``t < s``, or ``t = s`` and r at or before v in node order. The paper-literal M_c^ch adds
    noise to these values (NOT private for a level with more than one region, sec. 1.5)."""
    a = np.asarray(hist)
    out = np.empty(a.shape, dtype=np.result_type(a.dtype, np.int64))
    for level in range(h.n_levels):
        rows = a[h.level_slice(level)]
        out[h.level_slice(level)] = np.cumsum(rows.T.ravel()).reshape(rows.T.shape).T
    return out


def chain_from_region_cumulative(h: Hierarchy, noisy_cum) -> np.ndarray:
    """Chain values from per-region (noisy) cumulative histograms: the private variant S1
    (spec sec. 2.7). For level regions r_1..r_m in node order,
    ``c(s, r_j) = sum_{t <= j} c^{r_t}_s + sum_{t > j} c^{r_t}_{s-1}`` (``c_{-1} = 0``); equal
    to `chain_cumulative` of the histograms when ``noisy_cum`` is exact. Same layout as
    `chain_cumulative`."""
    c = _values(h, noisy_cum, "noisy_cum")
    out = np.empty_like(c)
    for level in range(h.n_levels):
        prefix = np.cumsum(c[h.level_slice(level)], axis=0)  # sum_{t <= j} c^{r_t}_s
        rest = prefix[-1][None, :] - prefix  # sum_{t > j} c^{r_t}_s
        shifted = np.zeros_like(rest)
        shifted[:, 1:] = rest[:, :-1]
        out[h.level_slice(level)] = prefix + shifted
    return out


def _round_blocks(y: np.ndarray, starts: np.ndarray, G: int) -> np.ndarray:
    """Integer isotonic regression of ``y`` on blocks (runs tied equal), bounds [0, G],
    the last block pinned to G: value per block."""
    counts = np.diff(np.append(starts, y.size))
    sums = np.add.reduceat(y, starts)
    out = np.full(starts.size, G, dtype=np.int64)
    if starts.size == 1:
        return out
    fit = isotonic_regression(sums[:-1] / counts[:-1], weights=counts[:-1].astype(float))
    if np.all(y == np.rint(y)) and np.abs(y).sum() < 2.0 ** 50:
        # exact rounding of each pool's mean S / W from integer sums
        pool = np.repeat(np.arange(fit.blocks.size - 1), np.diff(fit.blocks))
        s = np.rint(np.add.reduceat(sums[:-1], fit.blocks[:-1])).astype(np.int64)
        wt = np.add.reduceat(counts[:-1], fit.blocks[:-1]).astype(np.int64)
        value = np.floor_divide(2 * s + wt, 2 * wt)  # round half up, exact
        out[:-1] = np.clip(value, 0, G)[pool]
    else:
        out[:-1] = np.floor(np.clip(fit.x, 0, G) + 0.5).astype(np.int64)
    return out


def chain_dp(h: Hierarchy, chain_noisy, total_groups, *, delta=None) -> np.ndarray:
    """M_c^ch post-processing (spec sec. 2.7): the exact integer optimum of Model 3 (fixed).

    ``chain_noisy``: (n_nodes, N + 1), entry (v, s) the noisy chain value of chain node
    (s, v) (layout of `chain_cumulative`). Minimises ``sum_i (c_i - chain_noisy_i)^2`` over
    integer chains with ``c_last = G``, ``c_i = c_{i+1}`` when a last child precedes its
    parent and ``c_i <= c_{i+1}`` otherwise (the paper omits the case level_i < level_{i+1};
    recurrence (6b) imposes it and without it decumulation can go negative), ``c >= 0``.
    Solved exactly as integer isotonic regression with tied blocks (module docstring), then
    decumulated per level in chain order. Returns an int64 (n_nodes, N + 1) histogram:
    consistent, non-negative, root sums to G.

    ``delta`` is accepted for symmetry with the other mechanisms and ignored: the optimum is
    over all integers in [0, G], so no domain truncation is needed.
    """
    del delta
    c = _values(h, chain_noisy, "chain_noisy")
    G = _total(total_groups)
    chain = chain_order(h, c.shape[1])
    y = c.ravel()[chain.cells]
    starts = np.flatnonzero(np.concatenate([[True], ~chain.equal_next[:-1]]))
    values = _round_blocks(y, starts, G)
    fitted = np.repeat(values, np.diff(np.append(starts, y.size)))
    hist = np.empty(c.size, dtype=np.int64)
    for level in range(h.n_levels):
        at = chain.level == level
        hist[chain.cells[at]] = np.diff(fitted[at], prepend=0)
    return hist.reshape(c.shape)


def chain_cost_tables(values, equal_next, lo: int, hi: int) -> np.ndarray:
    """The literal chain recurrence (6a/6b) on the common domain lo..hi, for explanation
    and tests (a Python loop along the chain: small chains only).

    ``tau_1(v) = (v - c_1)^2``; ``tau_{i+1}(v) = (v - c_{i+1})^2 + tau_i(v)`` after an ``=``
    link, ``+ min_{x <= v} tau_i(x)`` after a ``<=`` link. Returns (M, hi - lo + 1).
    """
    c = np.asarray(values, dtype=np.float64)
    v = np.arange(lo, hi + 1, dtype=np.float64)
    tables = np.empty((c.size, v.size))
    tables[0] = (v - c[0]) ** 2
    for i in range(1, c.size):
        prev = tables[i - 1] if equal_next[i - 1] else np.minimum.accumulate(tables[i - 1])
        tables[i] = (v - c[i]) ** 2 + prev
    return tables
