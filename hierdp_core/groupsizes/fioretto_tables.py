"""TableMerge of Fioretto, Van Hentenryck & Zhu (AIJ 2021), the bottom-up pass of their dynamic
program (paper Algorithm 1, spec ``shared/specs/group-sizes-fioretto.md`` sec. 2.3-2.4): the
convex cost table of every (node, size) cell of a batch, from its children's tables and its
own noisy value. `fioretto_topdown` reads the tables back down; `fioretto_dp` drives both.

Contract: a table is convex on an integer range ``[lo, hi]`` and is stored by its step costs
(`_Tables`); the parents of leaves get theirs from the leaves' closed form (`_Leaves`,
`_leaf_parent_tables`), the other parents by merging their children's
(`_explicit_parent_tables`), each on a window of values the caller chooses.

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

`leaf_cost_table` and `merge_cost_tables` compute the same tables as absolute costs, for
explainers and tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.consistency.segments import (
    segment_ids,
    segmented_argsort_desc,
    segmented_cumsum,
)


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
