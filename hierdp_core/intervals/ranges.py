"""Intervals on range-query releases: per unit and attribute value, a (lower, upper) at a
confidence level on the released histogram cell, from the release alone.

Every range mechanism ends with TopDown (children projected onto their parent, clipped at
0 and rounded), so no released value is a linear estimate, not even Identity's or the
least-squares baselines' (H2, HB, Privelet): all get a ``parametric bootstrap``. The
released leaf histograms are the plug-in truth; the mechanism's public release API is
re-run on it with the release's budget, split, parameters and public workload and the
public seed (`bootstrap.rerun_bootstrap`), its private data-dependent stages (DAWA's
partition) included; per cell, value -/+ the level-quantile of |redraw - plug-in|,
intersected with [0, inf).

The workload is public but a release keeps only its name: give it (``workload=``), or it is
rebuilt from the name when it is one of the named kinds (prefix, identity, ...).
"""

from __future__ import annotations

from hierdp_core.errors import InputError
from hierdp_core.intervals.bootstrap import (
    check_level,
    feasible,
    interval_record,
    released_leaves,
    table_bootstrap,
)
from hierdp_core.queries.ranges import RangeData
from hierdp_core.ranges.workloads import Workload, named_workload
from hierdp_core.release import CellIntervals, Release


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
    below, above, draws = table_bootstrap(release, plugin, level, replicates)
    record = interval_record(level, dict.fromkeys(h.level_names, "parametric bootstrap"),
                             draws, plug_in="the released leaf histograms",
                             workload=workload.name)
    return feasible(release.values - below, release.values + above, record)


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
