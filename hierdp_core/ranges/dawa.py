"""DAWA (Li, Hay, Miklau & Wang, PVLDB 7(5) 2014) for many histograms at once.

``dawa(x, workload, epsilon, source, stage=...)`` runs, for every row of x (r, n): Stage 1, a
private partition into near-uniform buckets with ``epsilon1 = rho * epsilon``; Stage 2,
the bucket counts measured through a workload-adapted strategy with ``epsilon2 = (1 - rho) *
epsilon`` and combined by least squares (`greedy`); Stage 3, each bucket spread evenly over its
cells. Stage 2 is numpy batched: the rows with the same number of buckets are
released together, their distinct partitions' strategies solved as one batch (`greedy`).

Stage 1 (``partition``): ``privtree`` (default; provably private bisection that follows the
data, `privtree`), ``least-cost`` (the paper's Alg. 1 with the noise its proof needs, provably
private but close to data-independent in practice, `partition`) or ``least-cost-reference``
(the authors' code: privacy NOT established).

Privacy, per row (one record changes one cell of one row by 1): Stage 1 is epsilon1-DP (except
``least-cost-reference``); Stage 2 asks weighted range queries whose weights sum to 1 in
every bucket (L1 sensitivity 1) with Laplace(1/epsilon2) noise, epsilon2-DP, the weights chosen
from the public workload and the private partition only; the rest is post-processing. Total
``epsilon1 + epsilon2 = epsilon`` by sequential composition. Rows hold disjoint populations
(units of one geographic level), so the whole batch is epsilon-DP (parallel composition).
``rho = 0`` skips Stage 1 (all of epsilon to Stage 2: the paper's "GreedyH").

``stage2``: ``greedy`` (DAWA), ``uniform`` (equal weight per tree level, "Partition+Uniform"),
``geometric`` ("Partition+Geometric") or ``laplace`` (each bucket measured once,
"Partition+Laplace"). Above ``max_tree_buckets`` buckets the dense k x k least-squares inverse
of the tree strategies is too big, and Stage 2 falls back to ``laplace`` (recorded in
``RangeEstimate.stage2``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from hierdp_core.errors import BudgetError, InputError, MechanismError
from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.greedy_strategy import geometric_batch, greedy_strategies, uniform_batch
from hierdp_core.ranges.interval_strategy import StrategyBatch
from hierdp_core.ranges.partition import (
    checked_partition_input,
    edge_lists,
    private_partition_marks,
)
from hierdp_core.ranges.partition import selection_stage as least_cost_stage
from hierdp_core.ranges.partition_exact import exact_partition_marks
from hierdp_core.ranges.privtree import privtree_marks
from hierdp_core.ranges.privtree import selection_stage as privtree_stage
from hierdp_core.ranges.secure_measure import exact_backend, laplace_measure
from hierdp_core.ranges.strategy_cache import StrategyCache
from hierdp_core.ranges.strategy_inference import least_squares_batch
from hierdp_core.ranges.strategy_measurement import measure_batch
from hierdp_core.ranges.workloads import Workload

STAGE2 = ("greedy", "uniform", "geometric", "laplace")
PARTITIONS = ("privtree", "least-cost", "least-cost-reference")
PARTITION_IF = ("it-can-pay", "always")
MAX_TREE_BUCKETS = 4096
CACHED_BUCKETS = 256
BATCH_CELLS = 1 << 22


@dataclass(frozen=True, eq=False)
class RangeEstimate:
    """Real-valued estimates (r, n) with the private bucket edges of every row (None for
    methods without a partition) and the Stage-2 strategy actually used per row."""

    values: np.ndarray
    edges: list[np.ndarray] | None = None
    stage2: tuple[str, ...] = ()


def bucket_sums(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """True bucket counts B(x): (r, n) with edges (k + 1,) shared or (r, k + 1) per row ->
    (r, k)."""
    cum = np.concatenate([np.zeros((x.shape[0], 1)), np.cumsum(x, axis=1)], axis=1)
    bounds = np.broadcast_to(edges, (x.shape[0], np.shape(edges)[-1]))
    return np.diff(np.take_along_axis(cum, bounds, axis=1), axis=1)


def expand(bucket_values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Uniform expansion: each bucket's value spread evenly over its cells, (r, k) with
    edges (k + 1,) shared or (r, k + 1) per row -> (r, n)."""
    bounds = np.broadcast_to(edges, (bucket_values.shape[0], np.shape(edges)[-1]))
    n = int(bounds[0, -1])
    starts = np.zeros((bounds.shape[0], n), dtype=np.int64)
    np.put_along_axis(starts, bounds[:, 1:-1], 1, axis=1)
    bucket_of_cell = np.cumsum(starts, axis=1)
    per_cell = bucket_values / np.diff(bounds, axis=1)
    return np.take_along_axis(per_cell, bucket_of_cell, axis=1)


def column_groups(w_hat: np.ndarray) -> np.ndarray:
    """Labels of runs of adjacent, exactly equal columns of W-hat, (..., m, k) -> (..., k). A
    tree node covers adjacent buckets, so it may collapse exactly when all its buckets carry
    one label."""
    changes = (w_hat[..., 1:] != w_hat[..., :-1]).any(axis=-2)
    zeros = np.zeros(changes.shape[:-1] + (1,), dtype=np.int64)
    return np.concatenate([zeros, np.cumsum(changes, axis=-1)], axis=-1)


def stage2_strategies(workload: Workload, bounds: np.ndarray, kind: str,
                      branching: int) -> StrategyBatch | None:
    """Stage-2 strategies for the distinct partitions ``bounds`` (U, k + 1), all into k
    buckets: a batch of U (greedy) or one shared strategy (uniform, geometric); None means
    Laplace per bucket. Greedy strategies over at most `CACHED_BUCKETS` buckets are kept per
    partition (`GREEDY`: every audit trial, bootstrap re-run and many small units ask for
    the same ones), the shared ones per number of buckets."""
    k = bounds.shape[1] - 1
    if kind == "laplace" or k > MAX_TREE_BUCKETS:
        return None
    if kind != "greedy":
        return _shared_strategies(k, kind, branching)
    if k <= CACHED_BUCKETS:
        return GREEDY.batch(workload, bounds, branching)
    return _greedy(workload, bounds, branching)


@lru_cache(maxsize=256)
def _shared_strategies(k: int, kind: str, branching: int):
    return uniform_batch(k, branching) if kind == "uniform" else geometric_batch(k, branching)


def _greedy(workload: Workload, bounds: np.ndarray, branching: int) -> StrategyBatch:
    """DAWA's greedy strategies of the partitions ``bounds`` (U, k + 1), as one batch."""
    w_hat = workload.bucket_matrices(bounds)
    grams = np.matmul(w_hat.transpose(0, 2, 1), w_hat)
    return greedy_strategies(grams, branching, groups=column_groups(w_hat))


GREEDY = StrategyCache(_greedy)


def partition_mode(partition: str) -> str:
    """The least-cost partition's mode (`partition.MODES`) of a Stage-1 choice."""
    return "reference" if partition == "least-cost-reference" else "provable"


def partition_stage(partition: str, share: float = 1.0, **fields) -> Stage:
    """The privacy-plan stage of the chosen Stage 1 (`privtree.selection_stage` or
    `partition.selection_stage`): its sensitivity and calibration."""
    if partition == "privtree":
        return privtree_stage(share, **fields)
    return least_cost_stage(partition_mode(partition), share, **fields)


def stage1_partition(x, epsilon1, epsilon2, source, partition, candidates, penalty, *,
                     stage: Stage) -> np.ndarray:
    """The partition of every row by the chosen Stage 1, as marks (r, n + 1) (an edge at e
    where set), its noise from the plan's partition ``stage`` (`partition_stage`)."""
    if partition == "privtree":
        return privtree_marks(x, epsilon1, epsilon2, source, stage=stage)
    mode = partition_mode(partition)
    if mode == "provable" and exact_backend(source):  # integer costs, exact noise
        x, cands = checked_partition_input(x, epsilon1, epsilon2, candidates, penalty)
        return exact_partition_marks(x, epsilon1, epsilon2, source, stage=stage, cands=cands,
                                     penalty=penalty)
    return private_partition_marks(x, epsilon1, epsilon2, source, stage=stage,
                                   candidates=candidates, mode=mode, penalty=penalty)


def atom_edges(workload: Workload) -> np.ndarray:
    """The workload's atoms as bucket edges (k + 1,): without a partition Stage 2 runs over
    them, since no query tells the cells of an atom apart (one bucket per cell for
    prefixes; three for the age bands 0-17, 18-64, 65-100, each then measurable by itself)."""
    return np.append(workload.atom_starts(), workload.n)


@lru_cache(maxsize=256)
def partition_can_pay(workload: Workload, rho: float, branching: int = 2) -> bool:
    """The a priori test of Stage 1, from public quantities only (the workload, rho, the
    branching; epsilon cancels): a partition can only lower Stage 2's noise by merging the
    workload's atoms, and it costs Stage 2 the share rho of epsilon. If the data-independent
    Stage 2 over the atoms (`greedy`, the whole epsilon) already answers a query with at most
    the variance of one Laplace draw at (1 - rho) epsilon, ``mean_q w_q^T (A^T A)^-1 w_q <=
    1 / (1 - rho)^2`` in units of 2/epsilon^2, nothing is left to gain and the partition is
    skipped (e.g. disjoint age bands: 1; prefixes over 101 ages: about 27)."""
    bounds = atom_edges(workload)
    strategy = stage2_strategies(workload, bounds[None], "greedy", branching)
    if strategy is None:
        return True
    w_hat = workload.bucket_matrix(bounds)
    variance = strategy.unit(0).expected_squared_errors(w_hat, 1.0).mean() / 2.0
    return bool(variance > 1.0 / (1.0 - rho) ** 2)


def check_stage_arguments(epsilon: float, rho: float, stage2: str, partition: str,
                          partition_if: str = "always") -> None:
    if not epsilon > 0:
        raise BudgetError(f"epsilon must be > 0, got {epsilon}")
    if not 0 <= rho < 1:
        raise BudgetError(f"rho (the Stage-1 share of epsilon) must be in [0, 1), got {rho}")
    if partition not in PARTITIONS:
        raise InputError(f"unknown Stage-1 partition {partition!r}; use one of "
                         f"{list(PARTITIONS)}")
    if partition_if not in PARTITION_IF:
        raise InputError(f"unknown partition_if {partition_if!r}; use one of "
                         f"{list(PARTITION_IF)}")
    if stage2 not in STAGE2:
        raise InputError(f"unknown Stage-2 strategy {stage2!r}; use one of {list(STAGE2)}")


def dawa(x: np.ndarray, workload: Workload, epsilon: float, source: NoiseSource, *,
         stage: Stage, rho: float = 0.25, branching: int = 2, partition: str = "privtree",
         candidates: str = "pow2", penalty: float = 0.0,
         stage2: str = "greedy", partition_if: str = "always",
         partition_stage: Stage | None = None, releases: int = 1) -> RangeEstimate:
    """DAWA on every row of x (r, n) or (n,), answering ``workload`` (see the module).
    ``partition_if="it-can-pay"`` skips Stage 1 (the whole epsilon to Stage 2) when
    `partition_can_pay` says no, from the public workload alone.
    ``stage``: the Stage-2 measurement of the mechanism's privacy plan, whose noise at its
    exact scale (`Stage.noise_for`) every bucket or strategy answer gets (no default; L1
    sensitivity 1 under add/remove one record, the strategies' column L1 norm).
    ``partition_stage``: the plan's Stage 1, whose calibration the partition's noise
    follows (needed when rho > 0; MechanismError without it).
    ``candidates`` and ``penalty`` apply to the least-cost partitions only.
    ``releases``: the rows are that many releases' rows in turn (trials first, the same
    number each), each release's estimated as it alone is (`least_squares_batch`)."""
    check_stage_arguments(epsilon, rho, stage2, partition, partition_if)
    x = np.atleast_2d(np.asarray(x, dtype=float))
    r, n = x.shape
    if workload.n != n:
        raise InputError(f"the workload covers {workload.n} cells, the histograms {n}")
    if rho > 0 and partition_if == "it-can-pay" and not partition_can_pay(workload, rho,
                                                                            branching):
        rho = 0.0
    epsilon1, epsilon2 = rho * epsilon, (1.0 - rho) * epsilon
    if rho <= 0:  # every row over the workload's atoms: one batch
        bounds = atom_edges(workload)[None]
        estimate, used = _stage2(workload, bounds, bucket_sums(x, bounds), stage2, branching,
                                 epsilon2, source, stage, releases)
        return RangeEstimate(expand(estimate, bounds), None, (used,) * r)
    if partition_stage is None:
        raise MechanismError("DAWA's Stage 1 draws its noise from the plan's partition "
                             "stage: give partition_stage")
    if releases > 1:
        raise MechanismError("DAWA with a Stage 1 estimates one release at a time: its "
                             "partition's draws follow the noise")
    marks = stage1_partition(x, epsilon1, epsilon2, source, partition, candidates, penalty,
                             stage=partition_stage)
    values = np.empty_like(x)
    used = np.empty(r, dtype=object)
    sizes = marks.sum(axis=1) - 1
    for k in np.unique(sizes):  # one batch per number of buckets
        rows = np.flatnonzero(sizes == k)
        bounds = np.nonzero(marks[rows])[1].reshape(rows.size, k + 1)
        estimate, used[rows] = _stage2(workload, bounds, bucket_sums(x[rows], bounds), stage2,
                                       branching, epsilon2, source, stage)
        values[rows] = expand(estimate, bounds)
    return RangeEstimate(values, edge_lists(marks), tuple(used))


def _stage2(workload, bounds, counts, kind, branching, epsilon2, source, stage, releases=1):
    """Stage 2 for rows that all have k buckets (bounds (R, k + 1), or (1, k + 1) shared by
    every row; counts (R, k)): the estimated bucket counts and the strategy used. Distinct
    partitions are solved in batches of at most about ``BATCH_CELLS`` numbers per array."""
    k = bounds.shape[1] - 1
    if kind == "laplace" or k > MAX_TREE_BUCKETS:
        return laplace_measure(counts, stage.noise_for(epsilon2), source,
                               sensitivity=stage.sensitivity, budget=epsilon2,
                               label="ranges: DAWA bucket counts"), "laplace"
    if kind != "greedy":
        strategy = stage2_strategies(workload, bounds[:1], kind, branching)
        return _measure_and_fit(strategy, counts, np.zeros(len(counts), dtype=np.int64),
                                epsilon2, source, stage, releases), kind
    if bounds.shape[0] == 1:
        distinct, which = bounds, np.zeros(len(counts), dtype=np.int64)
    else:
        distinct, which = np.unique(bounds, axis=0, return_inverse=True)
        which = which.ravel()
    step = max(1, BATCH_CELLS // (k * max(k, workload.m)))
    estimate = np.empty_like(counts)
    for first in range(0, distinct.shape[0], step):
        batch = stage2_strategies(workload, distinct[first:first + step], kind, branching)
        rows = np.flatnonzero((which >= first) & (which < first + step))
        estimate[rows] = _measure_and_fit(batch, counts[rows], which[rows] - first, epsilon2,
                                          source, stage, releases)
    return estimate, kind


def _measure_and_fit(batch: StrategyBatch, counts, which, epsilon2, source, stage,
                     releases: int = 1):
    """Estimated bucket counts (R, k): row j measured with strategy ``which[j]`` of
    ``batch`` (`measure_batch`), then fitted by least squares (`least_squares_batch`)."""
    answers = measure_batch(batch, counts, which, epsilon2, source, stage=stage)
    return least_squares_batch(batch, answers, which, releases=releases)
