"""Stage-by-stage audits of composite mechanisms.

A mechanism's `privacy_plan` lists its stages (`hierdp_core.privacy.plan.Stage`); a stage
with ``run`` can be run on its own. Each such stage is audited against its own share of
epsilon, ``share * epsilon``, on the one-unit neighbours of its relation
(`neighbours.histogram_pairs` for ranges): a stage that spends more than its share fails
even when the mechanism as a whole, with its other stages adding noise, stays below the
whole epsilon (as the reference DAWA's Stage 1 does).

A partition stage returns, per unit, 0/1 indicators of its inner edges (n - 1 of them).
Stages run on many units at once (one row per trial), so stage audits are cheap and use
`STAGE_TRIAL_FACTOR` times the trials of a whole-mechanism audit. Statistics: for a partition stage
one indicator per partition (its whole output), and the unions of partitions a leak shows
in first: an edge at each position, each cell alone in its bucket, the number of buckets;
for a stage of values the fitted linear discriminant and most shifted coordinate
(`estimators.fit_statistics`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.audit.adapter import AuditAdapter
from hierdp_core.audit.estimators import Statistics, category_indicators
from hierdp_core.audit.neighbours import histogram_pairs
from hierdp_core.errors import MechanismError
from hierdp_core.mechanisms.base import Mechanism
from hierdp_core.privacy.plan import PrivacyPlan, Stage
from hierdp_core.privacy.samplers import NoiseSource

STAGE_TRIAL_FACTOR = 5


@dataclass(frozen=True)
class StageJob:
    """One stage audit: the adapter, the claimed epsilon (the stage's share) and a label
    naming the stage and the pair."""

    stage: Stage
    adapter: AuditAdapter
    claim: float
    label: str


def stage_audits(mechanism: Mechanism, plan: PrivacyPlan, kind: str, *, epsilon: float,
                 delta: float = 0.0, params: dict | None = None) -> list[StageJob]:
    """One job per runnable stage of ``plan`` and per neighbouring pair of its relation."""
    if kind != "ranges":
        raise MechanismError(f"stage-by-stage audits exist for range mechanisms only; "
                             f"{mechanism.info.name!r} answers {kind}")
    if plan.definition != "pure-dp":
        raise MechanismError("stage audits check pure epsilon-DP claims only")
    jobs = []
    for stage in plan.stages:
        if stage.run is None:
            continue
        pairs = histogram_pairs(stage.relation)
        for i, pair in enumerate(pairs):
            label = stage.name + (f" (pair {i + 1})" if len(pairs) > 1 else "")
            jobs.append(StageJob(stage, _range_stage_adapter(stage, pair, epsilon),
                                 stage.share * epsilon, label))
    return jobs


def _range_stage_adapter(stage: Stage, pair, epsilon: float) -> AuditAdapter:
    """A range stage on one histogram: ``n`` trials are one call on ``n`` identical rows."""
    from hierdp_core.ranges.workloads import prefix_ranges

    n = pair.details["n"]
    workload = prefix_ranges(n)

    bits = 2.0 ** np.arange(n - 1)

    def run(x, trials: int, source: NoiseSource) -> np.ndarray:
        out = np.asarray(stage.run(np.repeat(x, trials, axis=0), workload, epsilon, source),
                         dtype=float).reshape(trials, -1)
        # a partition stage gives its inner edges as 0/1 rows: one code per partition
        return out @ bits[:, None] if stage.output == "partition" else out

    statistics = partition_statistics(n) if stage.output == "partition" else None
    description = (f"stage {stage.name} alone (share {stage.share:g} of epsilon "
                   f"{epsilon:g}): {pair.description}")
    return AuditAdapter((pair.d1, pair.d2), run, statistics, None, description, batched=True)


def partition_statistics(n: int) -> Statistics:
    """Statistics of partitions of n cells given as codes (bit e - 1 set: an edge before cell
    e): one indicator per partition, per edge and per cell alone in its bucket, and the
    number of buckets."""
    per_code = category_indicators(range(2 ** (n - 1)), column=0, name="partition")

    def statistics(out: np.ndarray) -> dict[str, np.ndarray]:
        code = out[:, 0].astype(np.int64)
        edges = (code[:, None] >> np.arange(n - 1)) & 1
        bounded = np.pad(edges, ((0, 0), (1, 1)), constant_values=1)  # the outer edges
        stats = per_code(out)
        stats.update({f"edge before cell {e + 1}": edges[:, e].astype(float)
                      for e in range(n - 1)})
        stats.update({f"cell {j} alone": (bounded[:, j] & bounded[:, j + 1]).astype(float)
                      for j in range(n)})
        stats["buckets"] = edges.sum(axis=1) + 1.0
        return stats

    return statistics
