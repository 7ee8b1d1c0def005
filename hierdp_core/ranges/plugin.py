"""Whether DAWA's partition pays below each parent, judged on the parent's release.

A partition saves Stage-2 noise by merging cells that hold about the same number of people
and costs Stage 2 the share rho of epsilon; whether that pays depends on how many people a
cell holds against the noise, which the public workload alone cannot tell (US tracts: 18
age groups of about 200 people each, where at epsilon 1 the partition costs more than it
saves). The level above is already released when a level is measured, so its estimates
(private, post-processing) give a plug-in truth for the children of each parent: the
parent's non-negative histogram divided by its (public) number of children. On ``runs``
copies of that average child, DAWA and its Stage 2 alone (`dawa` with rho = 0) are drawn
with public seeds; the children of a parent are partitioned only where DAWA's mean error
per workload query is the lower.

Privacy: the choice reads released values and public parameters only, and each unit then
runs an epsilon_l-DP method (DAWA or its Stage 2 with the whole epsilon_l), so the level is
epsilon_l-DP and the levels compose sequentially (adaptively) as before.
"""

from __future__ import annotations

import numpy as np

from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.dawa import dawa
from hierdp_core.ranges.workloads import Workload

RUNS = 8
SEED = 0  # public: the simulation draws on released values only


def partition_pays_below(parents: np.ndarray, children: np.ndarray, workload: Workload,
                         epsilon: float, params: dict, *, stage: Stage,
                         partition_stage: Stage, runs: int = RUNS) -> np.ndarray:
    """Per parent (rows of ``parents`` (p, n), released estimates; ``children`` (p,) their
    numbers of children): True where DAWA beats its Stage 2 alone on the average child
    (``stage``, ``partition_stage``: the plan's, as for the release)."""
    child = np.maximum(parents, 0) / np.maximum(children, 1)[:, None]
    plug_in = np.repeat(child, runs, axis=0)
    truth = workload.answer(plug_in)
    errors = []
    for rho in (params.get("rho", 0.25), 0.0):
        est = dawa(plug_in, workload, epsilon, NoiseSource(seed=SEED), stage=stage,
                   partition_stage=partition_stage,
                   **{**params, "rho": rho, "partition_if": "always"}).values
        per_row = np.abs(workload.answer(est) - truth).mean(axis=1)
        errors.append(per_row.reshape(-1, runs).mean(axis=1))
    return errors[0] < errors[1]
