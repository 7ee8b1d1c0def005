"""M_H^dp's dynamic program (Fioretto, Van Hentenryck & Zhu, AIJ 2021; spec
``shared/specs/group-sizes-fioretto.md`` sec. 2.3-2.4 and the sec. 3 optimality caveat),
solved on certified windows: the solver behind `fioretto.mh_dp`.

Contract: the noisy values (n_nodes, N + 1) of one or more independent problems side by side
(columns ``k (N + 1) .. (k + 1) (N + 1) - 1`` are problem k), the public G of each, level
weights and every problem's initial window half-widths go in (`_MHSolver`); the exact
integer optimum of Model 1 of each comes out, consistent, non-negative and summing to its G
at the root. A problem's columns never meet another's (every table, window and top-node
allocation is per column or per problem), so each result is bit for bit the one it gets
alone. Each pass builds the tables bottom-up
(`fioretto_tables`), lets the top node choose, allocates top-down (`fioretto_topdown`) and
widens the windows that bind.

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

Cost: time and memory grow with the window widths: with ``delta`` and with how far the
optimum lies from the estimate (a few noise standard deviations on noisy data). Sizes are
processed in batches of about `EVENT_BUDGET` leaf steps.
"""

from __future__ import annotations

import numpy as np

from hierdp_core.consistency.segments import project_segments, segment_ids
from hierdp_core.groupsizes.fioretto_tables import (
    _explicit_parent_tables,
    _leaf_parent_tables,
    _Leaves,
    _Tables,
    _water,
)
from hierdp_core.groupsizes.fioretto_topdown import (
    _allocate_by_threshold,
    _allocate_leaves,
    _allocate_tables,
)
from hierdp_core.hierarchy import Hierarchy

# Target number of leaf step events (and table entries) handled at once; bounds memory.
EVENT_BUDGET = 1 << 22
MAX_PASSES = 1000  # a guard only: windows grow every pass, so passes are finite


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

    ``y`` (n_nodes, K (N + 1)) holds K problems side by side, ``G`` (K,) their totals and
    ``half`` (n_levels, K) their initial half-widths (one problem: G and ``half``
    (n_levels,) will do). A batch of columns ``cols`` holds level
    l as ``cols.size * n_l`` cells, column by column (so the children of a cell are one
    contiguous run of the next level)."""

    def __init__(self, h: Hierarchy, y: np.ndarray, G: np.ndarray, w: np.ndarray, half):
        self.h, self.y, self.w = h, y, w
        self.L = h.depth
        self.S = y.shape[1]
        self.G = np.atleast_1d(np.asarray(G, dtype=np.int64))
        self.width = self.S // self.G.size  # N + 1: the columns of one problem
        self.tops = np.arange(self.G.size) * self.width  # where each problem's columns start
        self.g = np.repeat(self.G, self.width)  # every column's G
        half = np.asarray(half, dtype=np.int64)
        self.half = np.repeat(half.reshape(h.n_levels, -1), self.width, axis=1)
        self.n = [h.level_size(level) for level in range(h.n_levels)]
        self.x = [np.zeros((self.n[lv], self.S), np.int64) for lv in range(h.n_levels)]
        self.tabs: list[_Tables | None] = [None] * self.L
        self.stats = {"passes": 0, "solved_columns": 0, "widened_cells": 0,
                      "half_widths": half.tolist()}
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
                self.own_lo.append(np.clip(c - self.half[level], 0, self.g))
                self.own_hi.append(np.clip(c + self.half[level], 0, self.g))

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
        if one_segment:  # the root is the only level: each top node's children (all columns)
            by_problem = -y.reshape(self.G.size, self.width)
            order = (np.argsort(by_problem, axis=1, kind="stable") + self.tops[:, None]).ravel()
            starts = self.tops
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
        est[0] = project_segments(centre[0][0], self.tops, self.G.astype(np.float64),
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
        """Every top node's allocation of its G over its root cells (sizes)."""
        if self.L == 0:
            return _allocate_leaves(self._leaves(np.arange(self.S), one_segment=True), self.G)
        return _allocate_tables(self.tabs[0], self.tops, self.G)

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
            g = self.g[cols]
            high = (x >= hi) & (hi < g)
            low = (x <= lo) & (lo > 0)
            step = np.maximum(hi - lo, self.half[level, cols])
            self.own_hi[level][:, cols] = np.where(
                high, np.minimum(g, np.maximum(hi, x) + step), hi)
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
