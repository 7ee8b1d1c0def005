"""The release of a range mechanism on a dense domain, planned once and drawn many times
(`RangeMechanism.releaser`; the audit and the intervals' bootstrap draw it per trial).

Contract: `RangeReleaser` holds what does not depend on the noise (the levels' budgets,
each level's parameters, the privacy record, the a priori ledger rows); calling it with a
`NoiseSource` measures every unit of every measured level with the mechanism's 1-D
estimator, from the root down (DAWA's Stage 1 only on the units `partitioned_units`
chooses), makes the estimates consistent (`atom_topdown`) and returns the `RangeRelease`.
The ledger lists the stages that ran (`stages_that_ran`), one frame per set of Stage-1
units, built once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from hierdp_core.mechanisms.measure import records_frame
from hierdp_core.mechanisms.range_release import RangeRelease
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.ranges import RangeData
from hierdp_core.ranges.consistency import atom_topdown
from hierdp_core.ranges.plugin import partition_pays_below

if TYPE_CHECKING:
    from hierdp_core.mechanisms.ranges import RangeMechanism


def partitioned_units(data: RangeData, estimates: np.ndarray, level: int, epsilon: float,
                      level_params: dict, stages: dict) -> np.ndarray:
    """Which units of ``level`` DAWA partitions (bool per unit): all of them where the
    level has a partition, except, with ``partition_if="it-can-pay"``, the children of
    parents whose released estimates say it does not pay (`partition_pays_below`)."""
    h = data.hierarchy
    units = np.full(h.level_size(level), level_params.get("rho", 0.0) > 0)
    above = estimates[h.level_slice(level - 1)] if level > 0 else None
    if (not units.any() or level_params.get("partition_if") != "it-can-pay"
            or above is None or np.isnan(above).any()):
        return units
    children = np.diff(np.append(h.child_starts(level), h.level_size(level)))
    pays = partition_pays_below(above, children, data.workload, epsilon, level_params,
                                **stages)
    return pays[h.segment_of_level(level)]


def stages_that_ran(rows: list[dict], partitioned: list[int]) -> pd.DataFrame:
    """The a priori ledger (its ``rows``) with the units each level partitioned
    (``partitioned``, per level: how many ran Stage 1) as ``stage1_units``, and no Stage-1
    share at a level where none did (the plug-in test of ``partition_if`` skipped them
    all)."""
    ran = []
    for row, units in zip(rows, partitioned, strict=True):
        row = {**row, "stage1_units": units}
        if units == 0:
            row.update(epsilon_stage1=0.0, epsilon_stage2=row["budget"])
        ran.append(row)
    return records_frame(ran)


@dataclass
class RangeReleaser:
    """One mechanism's release of ``data`` with its budget and parameters fixed (see the
    module docstring); a call draws one release."""

    mechanism: RangeMechanism
    data: RangeData
    parts: list  # each level's budget (`PrivacyBudget`), None where it is not measured
    params: dict  # the mechanism's parameters, resolved
    level_params: list[dict]
    privacy: dict
    rows: list[dict]  # the a priori ledger
    stages: dict = field(init=False)
    truth: np.ndarray = field(init=False, repr=False)
    ledgers: dict[tuple, pd.DataFrame] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        self.stages = self.mechanism.estimator_stages(**self.params)
        self.truth = self.data.node_counts()

    def __call__(self, source: NoiseSource) -> RangeRelease:
        h, data = self.data.hierarchy, self.data
        estimates = np.full(self.truth.shape, np.nan)
        edges: list = [None] * h.n_nodes
        stage1_units = [0] * h.n_levels
        for level, part in enumerate(self.parts):
            if part is not None:
                stage1_units[level] = self._measure_level(level, part.value, source,
                                                          estimates, edges)
        root = estimates[h.level_slice(1)].sum(axis=0) if self.parts[0] is None \
            else estimates[0]
        values = atom_topdown(h, np.nan_to_num(estimates), root, data.workload.atom_starts())
        if (key := tuple(stage1_units)) not in self.ledgers:
            self.ledgers[key] = stages_that_ran(self.rows, stage1_units)
        return RangeRelease(
            hierarchy=h, values=values, mechanism=self.mechanism.info.name,
            parameters=self.params, privacy=self.privacy, ledger=self.ledgers[key],
            randomness=source.as_dict(), categories=data.values, noisy=estimates,
            edges=tuple(edges) if any(e is not None for e in edges) else None,
            attribute=data.attribute,
            workload={"name": data.workload.name, "queries": data.workload.m},
        )

    def _measure_level(self, level: int, epsilon: float, source: NoiseSource,
                       estimates: np.ndarray, edges: list) -> int:
        """Measure the units of ``level`` into ``estimates`` and ``edges`` (DAWA's Stage 1
        on the units it partitions, Stage 2 alone on the others); how many ran Stage 1."""
        sl = self.data.hierarchy.level_slice(level)
        params = self.level_params[level]
        partitioned = partitioned_units(self.data, estimates, level, epsilon, params,
                                        self.stages)
        for units, rho in ((partitioned, None), (~partitioned, 0.0)):
            if not units.any():
                continue
            rho_param = {"rho": rho} if rho is not None and "rho" in params else {}
            est = self.mechanism.estimator(self.truth[sl][units], self.data.workload,
                                           epsilon, source, **self.stages,
                                           **{**params, **rho_param})
            rows = np.flatnonzero(units) + sl.start
            estimates[rows] = est.values
            if est.edges is not None:
                for i, e in zip(rows, est.edges, strict=True):
                    edges[i] = e
        return int(partitioned.sum())
