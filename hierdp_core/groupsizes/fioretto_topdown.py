"""The top-down pass of Fioretto, Van Hentenryck & Zhu's dynamic program (paper Algorithm 1,
spec ``shared/specs/group-sizes-fioretto.md`` sec. 2.4, with the fixed step costs): once
the tables of `fioretto_tables` are built, every parent's chosen value is split among its
children by taking the parent's cheapest merged child steps.

Contract: given the children's tables (or the leaves' closed form) grouped in segments, one
per parent, and the parents' chosen integer values, return the children's values; they sum
to their parent's value and minimise the children's total cost for it.
"""

from __future__ import annotations

import numpy as np

from hierdp_core.consistency.segments import segment_ids
from hierdp_core.groupsizes.fioretto_tables import (
    _leaf_steps,
    _Leaves,
    _merge_children,
    _rank_in_runs,
    _starts_of,
    _Tables,
)


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
