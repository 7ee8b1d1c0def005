"""The release of a range mechanism on a dense domain, planned once and drawn many times
(`RangeMechanism.releaser`; the audit and the intervals' bootstrap draw it per trial).

Contract: `RangeReleaser` holds what does not depend on the noise (the levels' budgets,
each level's parameters, the privacy record, the a priori ledger rows); calling it with a
`NoiseSource` measures every unit of every measured level with the mechanism's 1-D
estimator, from the root down (DAWA's Stage 1 only on the units `partitioned_units`
chooses), makes the estimates consistent (`atom_topdown`) and returns the `RangeRelease`.
The ledger lists the stages that ran (`stages_that_ran`), one frame per set of Stage-1
units, built once. `RangeReleaser.trials` makes many releases at once (the audit's trials),
bit for bit the calls one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pandas as pd

from hierdp_core.mechanisms.measure import records_frame
from hierdp_core.mechanisms.range_release import RangeRelease
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.privacy.trial_draws import TrialDraws, record_calls
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


class RangeTrials(NamedTuple):
    """Many releases' values (T, n_nodes, n), estimates before consistency (``noisy``, NaN
    where a level is not measured) and, for each, its edges by node as its `RangeRelease`
    has them (``edges`` None when no release has any)."""

    values: np.ndarray
    noisy: np.ndarray
    edges: list[tuple | None] | None


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
    #: one release's Laplace calls (`record_calls`), recorded for `trials` when first asked
    calls: list | None = field(default=None, init=False, repr=False)

    def __post_init__(self):
        self.stages = self.mechanism.estimator_stages(**self.params)
        self.truth = self.data.node_counts()

    def __call__(self, source: NoiseSource) -> RangeRelease:
        data = self.data
        estimates, edges, stage1_units = self._measure(source)
        if (key := tuple(stage1_units)) not in self.ledgers:
            self.ledgers[key] = stages_that_ran(self.rows, stage1_units)
        return RangeRelease(
            hierarchy=data.hierarchy, values=self._consistent(estimates)[0],
            mechanism=self.mechanism.info.name, parameters=self.params, privacy=self.privacy,
            ledger=self.ledgers[key], randomness=source.as_dict(), categories=data.values,
            noisy=estimates[0], edges=edges, attribute=data.attribute,
            workload={"name": data.workload.name, "queries": data.workload.m},
        )

    def trials(self, sources: list[NoiseSource]) -> RangeTrials:
        """The releases from ``sources`` (release t from ``sources[t]``, the releases made
        in turn), bit for bit what calling this releaser on each in turn gives: with seeded
        sources and draws fixed in advance (`fixed_draws`), measured as one run over every
        trial's rows (`TrialDraws`: each trial's noise drawn as its release draws it); else
        measured one by one. Made consistent together (`atom_topdown`)."""
        if self.fixed_draws and not any(s.secure for s in sources):
            if self.calls is None:
                self.calls = record_calls(self._measure)
            draws = TrialDraws(self.calls, sources)
            estimates, edges, _ = self._measure(NoiseSource(generator=draws), len(sources))
            draws.finish()
            edges = None if edges is None else [edges] * len(sources)
        else:
            measured = [self._measure(source) for source in sources]
            estimates = np.concatenate([m[0] for m in measured])
            edges = [m[1] for m in measured]
            edges = None if all(e is None for e in edges) else edges
        return RangeTrials(self._consistent(estimates), estimates, edges)

    @property
    def fixed_draws(self) -> bool:
        """Whether a release draws the same Laplace calls whatever the data and noise: no
        Stage 1 at any measured level (its bisection and the buckets it makes decide what
        follows)."""
        return (all(s.noise == "laplace" for s in self.stages.values())
                and not any(part is not None and params.get("rho", 0.0) > 0
                            for part, params in zip(self.parts, self.level_params,
                                                    strict=True)))

    def _measure(self, source: NoiseSource, trials: int = 1):
        """Every measured level of ``trials`` releases from ``source`` (more than one: the
        rows of every unit repeated per trial, trials first, with draws fixed in advance):
        (the estimates (trials, n_nodes, n), NaN where unmeasured; each node's edges, of
        one release (many: without a Stage 1 the edges are public, Uniform's one bucket,
        the same in each), None without; per level how many units ran Stage 1)."""
        h = self.data.hierarchy
        estimates = np.full((trials, *self.truth.shape), np.nan)
        edges: list = [None] * h.n_nodes
        stage1_units = [0] * h.n_levels
        for level, part in enumerate(self.parts):
            if part is not None:
                stage1_units[level] = self._measure_level(level, part.value, source,
                                                          estimates, edges)
        return (estimates, tuple(edges) if any(e is not None for e in edges) else None,
                stage1_units)

    def _consistent(self, estimates: np.ndarray) -> np.ndarray:
        """The releases' values (T, n_nodes, n) from their estimates (`atom_topdown`)."""
        h = self.data.hierarchy
        root = estimates[:, h.level_slice(1)].sum(axis=1) if self.parts[0] is None \
            else estimates[:, 0]
        workload = self.data.workload
        return atom_topdown(h, np.nan_to_num(estimates), root, workload.atom_starts(),
                            cumulative=workload.spans_atoms())

    def _measure_level(self, level: int, epsilon: float, source: NoiseSource,
                       estimates: np.ndarray, edges: list) -> int:
        """Measure the units of ``level`` into ``estimates`` (trials, n_nodes, n) and
        ``edges`` (DAWA's Stage 1 on the units it partitions, Stage 2 alone on the others);
        how many ran Stage 1."""
        sl = self.data.hierarchy.level_slice(level)
        params = self.level_params[level]
        trials = estimates.shape[0]
        partitioned = partitioned_units(self.data, estimates[0], level, epsilon, params,
                                        self.stages)
        for units, rho in ((partitioned, None), (~partitioned, 0.0)):
            if not units.any():
                continue
            rho_param = {"rho": rho} if rho is not None and "rho" in params else {}
            x = self.truth[sl][units]
            est = self.mechanism.estimator(np.tile(x, (trials, 1)), self.data.workload,
                                           epsilon, source, **self.stages,
                                           **{**params, **rho_param}, releases=trials)
            rows = np.flatnonzero(units) + sl.start
            estimates[:, rows] = est.values.reshape(trials, rows.size, -1)
            if est.edges is not None:  # many trials: no Stage 1, the same edges in each
                for i, e in zip(rows, est.edges[:rows.size], strict=True):
                    edges[i] = e
        return int(partitioned.sum())
