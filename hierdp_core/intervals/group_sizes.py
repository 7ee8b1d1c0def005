"""Intervals on group-size releases: per region and size, a (lower, upper) at a confidence
level on the released number of groups of that size, from the release alone.

* ``gs-noisy`` (``exact``): every region's histogram plus the level's noise, rounded and
  clamped at 0, so value -/+ the noise's quantile (`counts.raw_half_widths`, as the raw
  count mechanisms; the ledger records each level's noise).
* every other mechanism (``parametric bootstrap``; matching, isotonic regression, exact
  programs and rounding are not linear): the released leaf histograms are the plug-in
  truth (their numbers of groups then are the released G_v; public under ``groups=exact``
  and by the model, and the total G). The mechanism's public release API is re-run on it
  with the release's budget, split and parameters and the public seed
  (`bootstrap.rerun_bootstrap`); per cell, value -/+ the level-quantile of
  |redraw - plug-in|, the lower end one higher where the cell's own redraws allow it and
  in a share of the other cells of its level, size and half-width, randomised from the
  public seed (``integer_step`` in the record; `bootstrap.rerun_bootstrap`; gs-mh-dp at
  epsilon 10 on 25 shapes: 55 levels over nominal 0.9 with the cells' own redraws alone,
  11 pooled). For the mechanisms whose levels are not consistent (gs-kuo-hc,
  gs-kuo-hg, the relaxed programs) a region's plug-in is the sum of its leaves' releases.
* ``gs-kuo-hierarchical`` and ``gs-mc-chain`` (``bias-widened bootstrap``): the same, each
  half-width grown by the cell's |mean(redraw - plug-in)| (`bootstrap.rerun_bootstrap`):
  the plain bootstrap covered 0.86 of the Oregon households' county cells at nominal 0.9
  (10 releases), the widened one 0.887 (0.900 with the widening rounded up, which
  over-covered elsewhere); gs-mc-chain's plain bootstrap 0.81 and 0.87 at
  middle levels of ragged trees, the widened one 0.85 and 0.92 (still flagged there:
  `mechanisms.group_sizes.CHAIN_UNCALIBRATED`).

Consistent mechanisms' sparse children (a parent's released count per child below half
the level's noise standard deviation, `parent_bounds`) get [0, max(their upper
end, their parent's)]: gs-topdown held 0.68 and 0.58 of the two finest levels of 274
areas of ~4 groups at epsilon 0.1 (30 releases) without it.

The bootstrap's record also holds the release's mean |error| per level estimated from the
same re-runs (``estimated_error``, `intervals.estimated_error`).

All intersected with [0, inf), and with [0, G_v] (or [0, G]) where the release keeps every
region's number of groups (or the total) exactly (consistent mechanisms): no region has
more groups of one size.

Example
-------
>>> import pandas as pd
>>> from hierdp_core.groupsizes.data import group_size_data_from_histograms
>>> from hierdp_core.privacy.budget import PrivacyBudget
>>> from hierdp_core.privacy.samplers import NoiseSource
>>> t = pd.DataFrame({"s": ["A", "A", "B"], "size": [1, 2, 1], "n": [30, 40, 50]})
>>> d = group_size_data_from_histograms(t, ["s"], "size", "n", max_size=3)
>>> r = get_mechanism("gs-topdown").release(d, PrivacyBudget.pure(1.0),
...                                         source=NoiseSource(seed=1))
>>> iv = group_size_intervals(r, 0.9, replicates=20)
>>> bool((iv.lower <= r.values).all() and (r.values <= iv.upper).all())
True
>>> iv.record["method"]["s"]
'parametric bootstrap, sparse children bounded by their parent'
"""

from __future__ import annotations

import numpy as np

from hierdp_core.groupsizes.data import SIZE_COLUMN, GroupSizeData
from hierdp_core.intervals.bootstrap import (
    BIAS_WIDENED,
    check_level,
    feasible,
    interval_record,
    released_leaves,
    step_record,
    table_bootstrap,
)
from hierdp_core.intervals.counts import per_node, raw_half_widths
from hierdp_core.intervals.estimated_error import estimated_error, tree_levels
from hierdp_core.mechanisms.base import capabilities, get_mechanism
from hierdp_core.mechanisms.group_sizes_base import G_PUBLIC, G_V_PUBLIC
from hierdp_core.releases import CellIntervals, Release

#: `parent_bounds`: a parent's released value per child below this share of the child's
#: noise standard deviation makes its children sparse (0.5 measured on the shapes of
#: `benchmarks/bench_coverage.py`: 1 and 2 over-cover levels the bootstrap already held)
SPARSE_SHARE = 0.5
PARENT_BOUNDED = ", sparse children bounded by their parent"


def group_size_intervals(release: Release, level: float,
                         replicates: int | None = None) -> CellIntervals:
    """Per region and size, intervals at ``level`` (module doc); ``replicates``: the
    bootstrap's (default chosen by time)."""
    level = check_level(level, replicates)
    h = release.hierarchy
    how = capabilities(release.mechanism).intervals
    if how == "closed-form":
        below, above = (per_node(release, w) for w in raw_half_widths(
            release.level_noises(), level, rounded=True))
        method, draws, extra = "exact", None, {}
    else:
        plugin = GroupSizeData(h, released_leaves(release), release.categories,
                               (SIZE_COLUMN,), max_size=int(release.categories[-1]),
                               min_size=int(release.categories[0]))
        widen = how == BIAS_WIDENED
        boot = table_bootstrap(release, plugin, level, replicates, widen=widen)
        below, above, draws = boot.below, boot.above, boot.draws
        method = BIAS_WIDENED if widen else "parametric bootstrap"
        extra = {"estimated_error": estimated_error(tree_levels(h), boot.mean_abs),
                 **step_record(release.is_integer)}
    lower, upper = release.values - below, release.values + above
    bounded = np.zeros(h.n_levels, dtype=bool)
    if draws and get_mechanism(release.mechanism).info.consistent:
        variance = np.array([np.inf if n is None else n.variance
                             for n in release.level_noises()])
        bounded = parent_bounds(release, np.sqrt(variance[h.level_of_nodes()]), lower, upper)
    methods = {name: method + (PARENT_BOUNDED if b else "")
               for name, b in zip(h.level_names, bounded, strict=True)}
    record = interval_record(level, methods, draws, plug_in="the released leaf histograms"
                             if draws else None, **extra)
    return feasible(lower, upper, record, _cap(release), integer=release.is_integer)


def parent_bounds(release: Release, sd: np.ndarray, lower: np.ndarray,
                  upper: np.ndarray) -> np.ndarray:
    """Sparse children of a consistent group-size release, in place, level by level from
    the root: a child whose parent's released value per child is below `SPARSE_SHARE` of
    the child's noise standard deviation ``sd`` (per node, public) gets [0, max(its upper
    end, its parent's)]: there non-negativity piles the parent's total on a few children, the
    released values are sparser than the truth, and the bootstrap around them misses the
    small true counts (measured 0.60 at the leaves of 299 units of ~1 person at epsilon
    0.1). The bound holds whenever the parent's interval does (a child holds at most its
    parent's count). Returns per level whether any cell was bounded so."""
    h = release.hierarchy
    children = np.diff(h.child_ptr)
    bounded = np.zeros(h.n_levels, dtype=bool)
    for lv in range(1, h.n_levels):
        sl = h.level_slice(lv)
        parent = h.parent[sl]
        share = release.values[parent] / children[parent][:, None]
        sparse = share < SPARSE_SHARE * sd[sl, None]
        upper[sl] = np.where(sparse, np.maximum(upper[sl], upper[parent]), upper[sl])
        lower[sl] = np.where(sparse, 0, lower[sl])
        bounded[lv] = bool(sparse.any())
    return bounded


def _cap(release: Release) -> np.ndarray | None:
    """No region has more groups of one size than its public number of groups: G_v where
    a consistent mechanism keeps every region's exactly (its released rows sum to them),
    else G where it keeps the total; no cap for the others (rounding may move their sums)."""
    if not get_mechanism(release.mechanism).info.consistent:
        return None
    if G_V_PUBLIC in release.invariants:
        return release.values.sum(axis=1, keepdims=True)
    if G_PUBLIC in release.invariants:
        return np.asarray(release.values[0].sum())
    return None
