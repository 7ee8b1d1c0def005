"""Intervals on every released value (issue 17, item 1): per released cell a (lower, upper)
at a confidence level, computed from the release alone (its released values and public
parameters: the mechanism and its parameters, the tree or geography, the budget, split and
noise the ledger records, the public workload). No true value and no noisy measurement
enters, so this is post-processing: the seeded numpy noise drawn here (public seed
`SEED`) costs no privacy. The manifest's ``intervals`` record says how, per level.

One module per query kind: `counts` (closed form for raw and least squares, a stacked
bootstrap for TopDown), `group_sizes`, `flows` and `ranges` (closed form for the raw
baselines, otherwise a parametric bootstrap re-running the mechanism on the released table
as plug-in truth, `bootstrap`). `with_intervals` picks the right one; `calibration` adds
to the record, per level, whether the intervals are known to hold their level (the levels
where measurement says they do not, and why: `uncalibrated_warning`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from hierdp_core.flows.release import FlowRelease
from hierdp_core.intervals import bootstrap
from hierdp_core.intervals.bootstrap import (
    DEFAULT_LEVEL,
    INPUTS,
    MIN_REPLICATES,
    RERUN_REPLICATES,
    RERUN_SECONDS,
    SEED,
)
from hierdp_core.intervals.calibration import calibration, level_names_of, uncalibrated_warning
from hierdp_core.intervals.counts import (
    BOOTSTRAP_CELL_DRAWS,
    bootstrap_replicates,
    count_intervals,
)
from hierdp_core.intervals.flows import flow_intervals
from hierdp_core.intervals.group_sizes import group_size_intervals
from hierdp_core.mechanisms.base import capabilities, get_mechanism
from hierdp_core.releases import CellIntervals, Release, ReleaseRecord

if TYPE_CHECKING:  # the range intervals' modules (scipy.sparse) are imported for a range
    from hierdp_core.ranges.workloads import Workload  # release only

__all__ = ["DEFAULT_LEVEL", "INPUTS", "SEED", "bootstrap_replicates", "closed_form",
           "count_intervals", "expected_seconds", "flow_intervals", "group_size_intervals",
           "intervals_for", "uncalibrated_warning", "with_intervals"]


def intervals_for(release: ReleaseRecord, level: float = DEFAULT_LEVEL,
                  replicates: int | None = None, *,
                  workload: Workload | None = None) -> CellIntervals:
    """The intervals of any release, by its query kind (``workload``: a range release's
    public workload, see `range_intervals`), their record saying per level whether they
    are calibrated (`calibration`, by the mechanism)."""
    if isinstance(release, FlowRelease):
        iv = flow_intervals(release, level, replicates)
    else:
        queries = get_mechanism(release.mechanism).info.queries
        if "ranges" in queries:
            from hierdp_core.intervals.ranges import range_intervals

            iv = range_intervals(release, level, replicates, workload=workload)
        elif "group-sizes" in queries:
            iv = group_size_intervals(release, level, replicates)
        else:
            iv = count_intervals(release, level, replicates)
    return dataclasses.replace(iv, record={**iv.record, "calibration": calibration(
        release.mechanism, level_names_of(release), iv.record["method"])})


def closed_form(release: ReleaseRecord) -> bool:
    """Whether `intervals_for` makes ``release``'s intervals without re-running its mechanism
    (its `Capabilities` say ``closed-form``: raw and least-squares counts, ``gs-noisy``,
    ``vanilla-gauss``): a fraction of a second, where a bootstrap takes seconds."""
    return capabilities(release.mechanism).intervals == "closed-form"


def expected_seconds(release: ReleaseRecord, release_seconds: float) -> float:
    """About how long `intervals_for` takes on ``release``, whose mechanism took
    ``release_seconds``: 0 in closed form; TopDown's stacked bootstrap about a second per
    `BOOTSTRAP_CELL_DRAWS` cell draws (1.0 s of CPU for the 12,772 US county cells x 200);
    a re-run bootstrap re-runs the mechanism as often as fits in `RERUN_SECONDS`, at least
    `MIN_REPLICATES` times (`bootstrap.rerun_bootstrap`): the first run alone, and a run's
    time for the plug-in and the quantiles, the others shared by `bootstrap.RERUN_THREADS`
    threads when the runs do (`bootstrap.threaded`; as if the threads kept every core busy:
    a machine busy with other work takes longer)."""
    if closed_form(release):
        return 0.0
    if capabilities(release.mechanism).intervals == "stacked bootstrap":
        cells = release.values.size
        return bootstrap_replicates(cells) * cells / BOOTSTRAP_CELL_DRAWS
    runs = np.clip(RERUN_SECONDS / max(release_seconds, 1e-6), MIN_REPLICATES,
                   RERUN_REPLICATES)
    threads = (bootstrap.RERUN_THREADS if bootstrap.threaded(release_seconds, _cells(release))
               else 1)
    return float((2 + (runs - 1) / threads) * release_seconds)


def _cells(release: ReleaseRecord) -> int:
    """The values of a release: a table's cells, a flow release's nodes."""
    if isinstance(release, Release):
        return release.values.size
    return sum(level.size for level in release.levels)


def with_intervals(release: ReleaseRecord, level: float = DEFAULT_LEVEL, replicates: int | None = None, *,
                   workload: Workload | None = None):
    """The release carrying `intervals_for` (its table gains ``lower`` and ``upper``)."""
    return dataclasses.replace(release, intervals=intervals_for(
        release, level, replicates, workload=workload))
