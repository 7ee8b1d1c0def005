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
  histograms, clip to [0, G_v], round, decumulate, `mh_dp` on the result, then the levels
  reconciled top down from the root's own fit (fixing the paper's size-0 bias).
* `fioretto_chain.chain_dp` -- M_c^ch post-processing (sec. 2.7): the exact integer
  optimum of Model 3 with the "<= otherwise" fix, with the chain and its values
  (`hierdp_core.groupsizes.fioretto_chain`).

This module holds the entry points of M_H^dp and M_c^dp (one release, or many trials of one
release at once: `mh_dp_trials`, `mc_dp_trials`) and the input checks all of them share;
each step of the paper has its own module: `fioretto_tables` (TableMerge, the bottom-up
pass of sec. 2.4), `fioretto_topdown` (the top-down allocation of sec. 2.4),
`fioretto_dp` (the program running both on certified windows, behind `mh_dp`; its cost)
and `fioretto_chain` (M_c^ch, sec. 2.7).

Exactness: with integer noisy values and integer level weights every step cost is an exact
integer in float64 (below 2**53), so ties and comparisons are exact. Otherwise costs are
rounded to float64, and a solution may differ from the optimum only where two allocations
differ in cost by about 1e-12 relative. `chain_dp` rounds each pooled block mean exactly
from integer sums when the input is integral.

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
>>> from hierdp_core.groupsizes.fioretto_chain import chain_cumulative, chain_dp
>>> chain_cumulative(h, truth)[1:].tolist()  # GA, NY: chain 2, 3, 3, 4, 5, 6, 6, ...
[[0, 2, 3, 5, 6, 6], [0, 3, 4, 6, 6, 6]]
>>> chain_dp(h, chain_cumulative(h, truth), 6).tolist() == truth.tolist()
True
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from hierdp_core.errors import InputError
from hierdp_core.groupsizes.fioretto_dp import _default_half_widths, _MHSolver
from hierdp_core.groupsizes.group_counts import keep_group_counts_trials
from hierdp_core.hierarchy import Hierarchy


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
                         f"per level), got {w.tolist()}")
    return w


def model1_objective(h: Hierarchy, x, noisy, level_weights=None) -> float:
    """Model 1's objective ``sum_v w_lev(v) sum_s (x_vs - noisy_vs)^2``."""
    w = _weights(h, level_weights)
    d = (np.asarray(x, dtype=np.float64) - np.asarray(noisy, dtype=np.float64)) ** 2
    return float(np.sum(w[h.level_of_nodes()] * d.sum(axis=1)))


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


def mh_dp_trials(h: Hierarchy, noisy, total_groups, *, level_weights=None) -> np.ndarray:
    """`mh_dp` of K independent inputs at once (trials of one release, as an audit makes
    them): ``noisy`` (K, n_nodes, N + 1), ``total_groups`` (K,). Returns (K, n_nodes, N + 1)
    int64 whose ``[k]`` is bit for bit ``mh_dp(h, noisy[k], total_groups[k],
    level_weights=level_weights)`` (its default windows): the K problems sit side by side in
    one solver and never meet (`fioretto_dp._MHSolver`), so a small tree costs one call's
    overhead for all of them."""
    y = np.asarray(noisy, dtype=np.float64)
    if y.ndim != 3:
        raise InputError(f"noisy must have shape (trials, n_nodes, N + 1), got {y.shape}")
    for k in range(y.shape[0]):
        _values(h, y[k], "noisy")
    G = np.array([_total(g) for g in np.asarray(total_groups).reshape(-1)], dtype=np.int64)
    if G.shape != y.shape[:1]:
        raise InputError(f"give one total_groups per trial ({y.shape[0]}), got {G.size}")
    w = _weights(h, level_weights)
    out = np.zeros(y.shape, dtype=np.int64)
    live = np.flatnonzero(G > 0)  # G = 0: all zeros, as mh_dp
    if live.size:
        half = np.stack([_default_half_widths(h, y[k], w) for k in live], axis=1)
        solved = y if live.size == len(y) else y[live]  # one release: no copy
        side_by_side = solved.transpose(1, 0, 2).reshape(h.n_nodes, -1)
        x = _MHSolver(h, side_by_side, G[live], w, half).solve()
        out[live] = x.reshape(h.n_nodes, live.size, -1).transpose(1, 0, 2)
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


def region_fits(noisy_cum: np.ndarray, total_groups: int, groups=None) -> np.ndarray:
    """Every row's histogram from its noisy cumulative one (spec 2.6 steps 2-3): isotonic
    regression clipped to ``[0, G_v]`` (``groups``; ``[0, G]`` when None) and rounded, the
    last cell set to the public G_v (never pooled with a noisy cell), decumulated."""
    upper = total_groups if groups is None else np.asarray(groups, dtype=np.float64)[:, None]
    fit = np.rint(np.clip(isotonic_rows(noisy_cum), 0, upper))
    if groups is not None:
        fit[:, -1] = groups
    return np.diff(fit, axis=1, prepend=0.0)


def mc_dp(h: Hierarchy, noisy_cum, total_groups, *, groups=None, level_weights=None,
          delta=None, stats: dict | None = None) -> np.ndarray:
    """M_c^dp (spec sec. 2.6, the CP'19 mechanism's post-processing), anchored at the root.

    ``noisy_cum``: (n_nodes, N + 1) noisy per-region cumulative histograms
    (``c_s = #groups of size <= s`` plus noise). For every region: isotonic regression
    (exactly ``argmin ||c - noisy||^2`` with c non-decreasing and ``0 <= c <= G_v`` after the
    clip; ``G`` when ``groups`` is None), rounding (monotone, so the decumulated histogram is
    >= 0), decumulation; then `mh_dp` on those histograms with ``level_weights`` and
    ``delta``; then the levels are reconciled top down from **the root's own fit**
    (`group_counts.keep_group_counts`): every region gets its public number of groups
    ``groups`` (G_v, the last cumulative cell, kept exactly) or, with ``groups=None``, the
    number `mh_dp` gives it (noisy, consistent).

    Why the root's own fit: the spec's step 4 feeds per-region fits that are one-sided at
    zero cells (clipped at 0; the size-0 cell is 0 in most regions) to a least-squares
    program that adds only non-negative cells; summed over hundreds of leaves they outweigh
    the root, and the program invents groups of size 0 in the national histogram (about
    lambda * log(leaves), lambda = L / epsilon), while the root's own fit has the bias of
    one region (alpha / (1 - alpha^2), alpha = exp(-1 / lambda)). Consistent, valid and
    faithful; **not** the optimum of Model 2.
    """
    c = _values(h, noisy_cum, "noisy_cum")
    G = _total(total_groups)
    hist = region_fits(c, G, groups)
    program = mh_dp(h, hist, G, level_weights=level_weights, delta=delta, stats=stats)
    return _anchored(h, hist[None], program[None], groups)[0]


def mc_dp_trials(h: Hierarchy, noisy_cum, total_groups, *, groups=None,
                 level_weights=None) -> np.ndarray:
    """`mc_dp` of K noisy inputs (K, n_nodes, N + 1) of one release (one public G and
    ``groups``): (K, n_nodes, N + 1) int64, ``[k]`` bit for bit ``mc_dp(h, noisy_cum[k],
    ...)`` with the default windows: the K exact programs solved at once (`mh_dp_trials`)
    and reconciled at once (`group_counts.keep_group_counts_trials`), the fits trial by
    trial."""
    c = np.asarray(noisy_cum, dtype=np.float64)
    if c.ndim != 3:
        raise InputError(f"noisy_cum must have shape (trials, n_nodes, N + 1), got {c.shape}")
    G = _total(total_groups)
    hist = np.stack([region_fits(_values(h, ck, "noisy_cum"), G, groups) for ck in c])
    program = mh_dp_trials(h, hist, np.full(len(c), G), level_weights=level_weights)
    return _anchored(h, hist, program, groups)


def _anchored(h: Hierarchy, hist: np.ndarray, program: np.ndarray, groups) -> np.ndarray:
    """`mc_dp`'s last step for trials (K, n_nodes, N + 1): the levels of ``program``
    reconciled top down from the root's own fit (``hist[:, 0]``), every region keeping
    ``groups`` (None: ``program``'s)."""
    anchored = np.concatenate([hist[:, :1], program[:, 1:]], axis=1)
    return keep_group_counts_trials(h, anchored,
                                    program.sum(axis=2) if groups is None else groups)
