"""Intervals on range-query releases: per unit and attribute value, a (lower, upper) at a
confidence level on the released histogram cell, from the release alone.

Every range mechanism ends with TopDown (children projected onto their parent, clipped at
0 and rounded), so no released value is a linear estimate, not even Identity's or the
least-squares baselines' (H2, HB, Privelet): all get a ``parametric bootstrap``. The
released leaf histograms are the plug-in truth; the mechanism's public release API is
re-run on it with the release's budget, split, parameters and public workload and the
public seed (`bootstrap.rerun_bootstrap`), its private data-dependent stages (DAWA's
partition) included; per cell, value -/+ the level-quantile of |redraw - plug-in| (the
lower end one higher where the cell's own redraws allow it, or pooled with the other cells
of its level, value and half-width: `bootstrap.rerun_bootstrap`), intersected with
[0, inf).

That bootstrap sees the mechanism's spread, not its bias, and a cell that is a share of a
released aggregate is biased: with user bands the consistency runs over the workload's
atoms and a cell gets its band's total spread within the band; a partition (DAWA's
buckets, released with the values: a DP output of Stage 1) spreads a bucket's total
uniformly. The plug-in is already smooth, so its redraws are too (measured: 0.00-0.38 of
cells covered by nominal 0.9 intervals with bands, 0.48-0.77 under partitions). Such a
cell (``share-of-band bound``, ``share-of-bucket bound``) gets [0, the upper end of its
group's interval], the group being the smallest run of cells that is a union of atoms and
a union of buckets of the unit and of its ancestors (TopDown spreads a parent's cells to
its children), its interval from the same redraws: a
cell's truth lies between 0 and its group's, so the cell's interval holds at least as
often as the group's. Single-cell groups keep the bootstrap's own interval, inverted near 0
as TopDown's counts are (`intervals.counts.near_zero_inversion`): TopDown clips the cells it
releases at 0, so a cell released near 0 sees clipped, narrow redraws while its truth may
sit higher (chain-top's leaves of 32 ages at epsilon 0.1: H2 covered 0.58, identity 0.84);
a cell released below the level-quantile u of its re-runs' error before that clipping (their
``noisy`` estimates) gets [0, value + max(its half-width, u)] (method ``parametric
bootstrap, inverted near 0``).

The record also holds the release's mean |error| per level estimated from the same
re-runs (``estimated_error``, `intervals.estimated_error`), except at levels with cells
that are shares of a band or bucket (their bias does not show in the re-runs).

The workload is public but a release keeps only its name: give it (``workload=``), or it is
rebuilt from the name when it is one of the named kinds (prefix, identity, ...).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from hierdp_core.errors import InputError
from hierdp_core.intervals.bootstrap import (
    check_level,
    feasible,
    interval_record,
    released_leaves,
    step_record,
    table_bootstrap,
)
from hierdp_core.intervals.counts import NEAR_ZERO_INVERTED, near_zero_inversion
from hierdp_core.intervals.estimated_error import estimated_error, tree_levels
from hierdp_core.queries.ranges import RangeData
from hierdp_core.ranges.workloads import Workload, named_workload
from hierdp_core.releases import CellIntervals, Release

SHARE_BOUND = ("a cell in a band or bucket of several cells (a run that is a union of the "
               "workload's atoms and of the released partition's buckets) gets [0, the "
               "upper end of that run's bootstrap interval]")

UNSEEN_SHARE_BIAS = ("a level with a cell that is a share of a band or bucket: how unevenly "
                     "the truth fills it does not show in re-runs on the even plug-in (they "
                     "estimated 0 to 0.8 of the measured error under DAWA, Uniform and "
                     "partition-laplace)")


def range_intervals(release: Release, level: float, replicates: int | None = None, *,
                    workload: Workload | None = None) -> CellIntervals:
    """Per unit and value, intervals at ``level`` (module doc) of a `RangeRelease`;
    ``replicates``: the bootstrap's (default chosen by time); ``workload``: the public one
    the release answered (default rebuilt from its name)."""
    level = check_level(level, replicates)
    h = release.hierarchy
    workload = workload or _named(release)
    plugin = RangeData(h, released_leaves(release), release.categories, release.attribute,
                       workload)
    group, size = share_groups(release, workload)
    sums = sparse.csr_matrix((np.ones(group.size), (group, np.arange(group.size))))
    boot = table_bootstrap(release, plugin, level, replicates, sums, unclipped=True)
    lower, upper, near = near_zero_inversion(release.values, boot.below, boot.above,
                                             boot.unclipped_above)
    shared = (size[group] > 1).reshape(release.values.shape)
    lower[shared] = 0
    upper[shared] = ((sums @ release.values.ravel()) + boot.sums_above)[group][shared.ravel()]
    share = "share-of-band bound" if workload.atom_starts().size < workload.n \
        else "share-of-bucket bound"
    inverted = near & ~shared
    methods = [share if shared[h.level_slice(lv)].any() else "parametric bootstrap"
               + (NEAR_ZERO_INVERTED if inverted[h.level_slice(lv)].any() else "")
               for lv in range(h.n_levels)]
    draws = boot.draws
    estimate = estimated_error(tree_levels(h), boot.mean_abs, shared, UNSEEN_SHARE_BIAS)
    record = interval_record(level, dict(zip(h.level_names, methods, strict=True)), draws,
                             plug_in="the released leaf histograms", workload=workload.name,
                             share_bound=SHARE_BOUND, estimated_error=estimate,
                             **step_record(release.is_integer))
    return feasible(lower, upper, record, integer=release.is_integer)


def share_groups(release: Release, workload: Workload) -> tuple[np.ndarray, np.ndarray]:
    """Every flat cell's group (module doc) and each group's number of cells: a group
    starts where an atom and a bucket of the unit and of every ancestor start (TopDown
    makes a unit's cells shares of its parent's; a unit without a partition: its atoms)."""
    n, k = release.values.shape
    starts = np.zeros((n, k), dtype=bool)
    starts[:, workload.atom_starts()] = True
    if release.edges is not None:
        rows = [i for i, e in enumerate(release.edges) if e is not None]
        bucket = np.zeros((len(rows), k), dtype=bool)
        cuts = [release.edges[i][:-1] for i in rows]
        bucket[np.repeat(np.arange(len(rows)), [c.size for c in cuts]),
               np.concatenate(cuts).astype(np.int64)] = True
        starts[rows] &= bucket
    h = release.hierarchy
    for level in range(1, h.n_levels):  # TopDown spreads a parent's buckets to its children
        sl = h.level_slice(level)
        starts[sl] &= starts[h.parent[sl]]
    starts[:, 0] = True
    group = np.cumsum(starts.ravel()) - 1
    return group, np.bincount(group)


def _named(release: Release) -> Workload:
    name = release.workload.get("name", "")
    try:
        workload = named_workload(name, len(release.categories))
    except InputError:
        raise InputError(f"intervals on a range release need its public workload "
                         f"({name!r} is not a named kind): pass workload=") from None
    if workload.m != release.workload.get("queries"):
        raise InputError(f"the workload {name!r} rebuilt has {workload.m} queries, the "
                         f"release answered {release.workload.get('queries')}: pass workload=")
    return workload
