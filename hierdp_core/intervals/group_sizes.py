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
* ``gs-mc-chain`` and, until 2026-12-01, ``gs-kuo-hierarchical`` (``bias-widened
  bootstrap``): the same, each half-width grown by the cell's |mean(redraw - plug-in)|
  (`bootstrap.rerun_bootstrap`): the plain bootstrap covered 0.86 of the Oregon households' county cells at nominal 0.9
  (10 releases), the widened one 0.887 (0.900 with the widening rounded up, which
  over-covered elsewhere); gs-mc-chain's plain bootstrap 0.81 and 0.87 at
  middle levels of ragged trees, the widened one 0.85 and 0.92 (still flagged there:
  `mechanisms.group_sizes.CHAIN_UNCALIBRATED`).
* ``gs-kuo-hierarchical`` since 2026-12-01 (``bias-sided bootstrap``): only the half-width
  on the side the bias puts the truth grows (below the value where the re-runs overshoot
  their plug-in): on the 25 shapes of `benchmarks/bench_coverage.py` (30 releases) 139 of
  285 levels within 0.03 of nominal 0.9 and 79 over (both sides: 93 and 99), 215 and 40
  at 0.95 (195 and 56), none under, intervals 3-5% narrower (median). Tried for the other
  widened mechanisms and not taken: InfTDA's and TDA-L2's sparse leaves fell to 0.27
  (their bias at the plug-in points the other way from the one at the truth);
  gs-mc-chain's levels within 90 -> 130 and over 109 -> 66 at 0.9, but its flagged
  levels lower (5 under nominal, from 3; skewed-4's second level 0.825 -> 0.800).

Consistent mechanisms' sparse children (a parent's released count per child below half
the level's noise standard deviation, `sparse_children`) are inverted near 0, as counts'
TopDown cells are (`counts.near_zero_inversion`; `invert_sparse_children`):
[max(0, v - w), v + max(d, u)], u the level's quantile of the size of the noise on one
region's count of one size before the consistency step and w its one-sided quantile
(`size_noise_quantiles`), the upper end at most the larger of the bootstrap's and the
parent's (a child holds at most its parent's count). There non-negativity piles a parent's
total on a few children, the released values are sparser than the truth and the bootstrap
around them misses the small true counts: gs-topdown held 0.68 and 0.58 of the two finest
levels of 274 areas of ~4 groups at epsilon 0.1 (30 releases) with the bootstrap alone.
Until 2026-12-01 they got that parent bound alone, [0, max(their upper end, their
parent's)]; with the inversion no level of the 25 shapes of `benchmarks/bench_coverage.py`
went under nominal 0.9 and intervals got up to 55 times narrower (gs-topdown, epsilon 0.1:
flat-wide's leaves 5,547 -> 100 wide on average, 1.000 -> 0.970 covered).

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
'parametric bootstrap, sparse children inverted near 0'
"""

from __future__ import annotations

import numpy as np

from hierdp_core.groupsizes.data import SIZE_COLUMN, GroupSizeData
from hierdp_core.intervals.bootstrap import (
    SEED,
    WIDENINGS,
    check_level,
    feasible,
    interval_record,
    released_leaves,
    step_record,
    table_bootstrap,
)
from hierdp_core.intervals.counts import noise_quantiles, per_node, raw_half_widths
from hierdp_core.intervals.estimated_error import estimated_error, tree_levels
from hierdp_core.intervals.quantiles import one_sided
from hierdp_core.mechanisms.base import capabilities, get_mechanism
from hierdp_core.mechanisms.group_sizes_base import G_PUBLIC, G_V_PUBLIC
from hierdp_core.privacy.noise_source import NoiseSource
from hierdp_core.releases import CellIntervals, Release

#: `sparse_children`: a parent's released value per child below this share of the child's
#: noise standard deviation makes its children sparse (0.5 measured on the shapes of
#: `benchmarks/bench_coverage.py`: 1 and 2 over-cover levels the bootstrap already held)
SPARSE_SHARE = 0.5
SPARSE_INVERTED = ", sparse children inverted near 0"
#: `size_noise_quantiles`: draws of the difference of two noises (cumulative mechanisms)
DIFFERENCE_DRAWS = 1 << 17
DIFFERENCE_STREAM = 3  # their stream of the public `SEED`


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
        widen = how if how in WIDENINGS else None
        boot = table_bootstrap(release, plugin, level, replicates, widen=widen)
        below, above, draws = boot.below, boot.above, boot.draws
        method = widen or "parametric bootstrap"
        extra = {"estimated_error": estimated_error(tree_levels(h), boot.mean_abs),
                 **step_record(release.is_integer)}
    lower, upper = release.values - below, release.values + above
    sparse = np.zeros(release.values.shape, dtype=bool)
    if draws and get_mechanism(release.mechanism).info.consistent:
        sparse = invert_sparse_children(release, lower, upper, above, level)
    methods = {name: method + (SPARSE_INVERTED if sparse[h.level_slice(lv)].any() else "")
               for lv, name in enumerate(h.level_names)}
    record = interval_record(level, methods, draws, plug_in="the released leaf histograms"
                             if draws else None, **extra)
    return feasible(lower, upper, record, _cap(release), integer=release.is_integer)


def invert_sparse_children(release: Release, lower: np.ndarray, upper: np.ndarray,
                           above: np.ndarray, level: float) -> np.ndarray:
    """The bootstrap's ``lower`` and ``upper`` of the sparse children (`sparse_children`)
    inverted near 0, in place, level by level from the root: [max(0, v - w), v + max(d, u)]
    (module doc, ``above`` the bootstrap's half-width d), the upper end never above the
    larger of the bootstrap's and the parent's (a child holds at most its parent's count,
    the bound before 2026-12-01). Returns where a cell was so inverted."""
    h, values = release.hierarchy, release.values
    sparse = sparse_children(release)
    if not sparse.any():
        return sparse
    two_sided, one_sided = size_noise_quantiles(release, level)
    for lv in range(1, h.n_levels):
        at, on = h.level_slice(lv), sparse[h.level_slice(lv)]
        bound = np.maximum(upper[at], upper[h.parent[at]])
        inverted = np.minimum(values[at] + np.maximum(above[at], two_sided[at]), bound)
        upper[at] = np.where(on, inverted, upper[at])
        lower[at] = np.where(on, np.maximum(values[at] - one_sided[at], 0), lower[at])
    return sparse


def sparse_children(release: Release) -> np.ndarray:
    """Per cell, whether it is a sparse child of a consistent release: its parent's
    released value per child is below `SPARSE_SHARE` of its level's noise standard
    deviation (public: the ledger's noise and the tree). There non-negativity piles the
    parent's total on a few children and the released values are sparser than the truth
    (module doc). A level not measured has no such children (its bootstrap stands)."""
    h = release.hierarchy
    noises = release.level_noises()
    children = np.diff(h.child_ptr)
    out = np.zeros(release.values.shape, dtype=bool)
    for lv in (lv for lv in range(1, h.n_levels) if noises[lv] is not None):
        sd = np.sqrt(noises[lv].variance)
        at = h.level_slice(lv)
        parent = h.parent[at]
        out[at] = release.values[parent] / children[parent][:, None] < SPARSE_SHARE * sd
    return out


def size_noise_quantiles(release: Release, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Per node (a column), the quantile at ``level`` of the size of the noise on one
    region's count of one size before the consistency step, and its one-sided quantile
    (P(error <= it) >= level: the size's quantile at 2 level - 1). That noise is the
    level's, or for the cumulative mechanisms the difference of two independent draws of
    it, whose quantiles are read from `DIFFERENCE_DRAWS` draws of the public `SEED`."""
    noises = release.level_noises()
    mechanism = get_mechanism(release.mechanism)
    if getattr(mechanism, "representation", "plain") != "cumulative":
        return noise_quantiles(release, noises, level)
    source = NoiseSource(generator=np.random.default_rng([SEED, DIFFERENCE_STREAM]))
    qs = (level, one_sided(level))
    out = np.zeros((len(qs), release.hierarchy.n_levels))
    for lv, noise in enumerate(noises):
        if noise is not None:
            draws = noise.sample((2, DIFFERENCE_DRAWS), source)
            out[:, lv] = np.quantile(np.abs(draws[0] - draws[1]), qs, method="higher")
    return per_node(release, out[0]), per_node(release, out[1])


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
