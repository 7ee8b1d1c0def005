"""DAWA (Li, Hay, Miklau & Wang, PVLDB 7(5) 2014) for many histograms at once.

``dawa(x, workload, epsilon, source)`` runs, for every row of x (r, n): Stage 1, a private
partition into near-uniform buckets with ``epsilon1 = rho * epsilon``; Stage 2,
the bucket counts measured through a workload-adapted strategy with ``epsilon2 = (1 - rho) *
epsilon`` and combined by least squares (`greedy`); Stage 3, each bucket spread evenly over its
cells. Rows whose partitions coincide share one Stage-2 strategy.

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

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.privacy.samplers import Laplace, NoiseSource
from hierdp_core.ranges.greedy import geometric_strategy, greedy_strategy, uniform_strategy
from hierdp_core.ranges.partition import private_partition
from hierdp_core.ranges.privtree import privtree_partition
from hierdp_core.ranges.workloads import Workload

STAGE2 = ("greedy", "uniform", "geometric", "laplace")
PARTITIONS = ("privtree", "least-cost", "least-cost-reference")
MAX_TREE_BUCKETS = 4096
CACHED_BUCKETS = 256


@dataclass(frozen=True, eq=False)
class RangeEstimate:
    """Real-valued estimates (r, n) with the private bucket edges of every row (None for
    methods without a partition) and the Stage-2 strategy actually used per row."""

    values: np.ndarray
    edges: list[np.ndarray] | None = None
    stage2: tuple[str, ...] = ()


def bucket_sums(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """True bucket counts B(x), (r, n) -> (r, k)."""
    cum = np.concatenate([np.zeros((x.shape[0], 1)), np.cumsum(x, axis=1)], axis=1)
    return np.diff(cum[:, edges], axis=1)


def expand(bucket_values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Uniform expansion: each bucket's value spread evenly over its cells, (r, k) -> (r, n)."""
    lengths = np.diff(edges)
    return np.repeat(bucket_values / lengths, lengths, axis=1)


def column_groups(w_hat: np.ndarray) -> np.ndarray:
    """Labels of runs of adjacent, exactly equal columns of W-hat. A tree node covers adjacent
    buckets, so it may collapse exactly when all its buckets carry one label."""
    changes = (w_hat[:, 1:] != w_hat[:, :-1]).any(axis=0)
    return np.concatenate([[0], np.cumsum(changes)])


def stage2_strategy(workload: Workload, edges: np.ndarray, kind: str, branching: int):
    """The Stage-2 strategy over the buckets of ``edges`` (None means: Laplace per bucket).
    Strategies over few buckets are cached (per workload object), since many units share
    partitions and every audit trial asks for the same ones."""
    k = edges.size - 1
    if kind == "laplace" or k > MAX_TREE_BUCKETS:
        return None
    if k <= CACHED_BUCKETS:
        return _cached_strategy(workload, edges.tobytes(), kind, branching)
    return _strategy(workload, edges, kind, branching)


@lru_cache(maxsize=4096)
def _cached_strategy(workload: Workload, edges: bytes, kind: str, branching: int):
    return _strategy(workload, np.frombuffer(edges, dtype=np.int64), kind, branching)


def _strategy(workload: Workload, edges: np.ndarray, kind: str, branching: int):
    k = edges.size - 1
    if kind == "uniform":
        return uniform_strategy(k, branching)
    if kind == "geometric":
        return geometric_strategy(k, branching)
    w_hat = workload.bucket_matrix(edges)
    return greedy_strategy(w_hat.T @ w_hat, branching, groups=column_groups(w_hat))


def stage1_partition(x, epsilon1, epsilon2, source, partition, candidates, penalty):
    """Bucket edges of every row by the chosen Stage 1."""
    if partition == "privtree":
        return privtree_partition(x, epsilon1, epsilon2, source)
    mode = "reference" if partition == "least-cost-reference" else "provable"
    return private_partition(x, epsilon1, epsilon2, source, candidates=candidates, mode=mode,
                             penalty=penalty)


def check_stage_arguments(epsilon: float, rho: float, stage2: str, partition: str) -> None:
    if not epsilon > 0:
        raise BudgetError(f"epsilon must be > 0, got {epsilon}")
    if not 0 <= rho < 1:
        raise BudgetError(f"rho (the Stage-1 share of epsilon) must be in [0, 1), got {rho}")
    if partition not in PARTITIONS:
        raise InputError(f"unknown Stage-1 partition {partition!r}; use one of "
                         f"{list(PARTITIONS)}")
    if stage2 not in STAGE2:
        raise InputError(f"unknown Stage-2 strategy {stage2!r}; use one of {list(STAGE2)}")


def dawa(x: np.ndarray, workload: Workload, epsilon: float, source: NoiseSource, *,
         rho: float = 0.25, branching: int = 2, partition: str = "privtree",
         candidates: str = "pow2", penalty: float = 0.0,
         stage2: str = "greedy") -> RangeEstimate:
    """DAWA on every row of x (r, n) or (n,), answering ``workload`` (see the module).
    ``candidates`` and ``penalty`` apply to the least-cost partitions only."""
    check_stage_arguments(epsilon, rho, stage2, partition)
    x = np.atleast_2d(np.asarray(x, dtype=float))
    r, n = x.shape
    if workload.n != n:
        raise InputError(f"the workload covers {workload.n} cells, the histograms {n}")
    epsilon1, epsilon2 = rho * epsilon, (1.0 - rho) * epsilon
    if rho > 0:
        edges = stage1_partition(x, epsilon1, epsilon2, source, partition, candidates, penalty)
    else:
        edges = [np.arange(n + 1)] * r
    values = np.empty_like(x)
    used = [""] * r
    for rows, row_edges in _group_rows(edges):
        strategy = stage2_strategy(workload, row_edges, stage2, branching)
        counts = bucket_sums(x[rows], row_edges)
        if strategy is None:
            noise = Laplace.for_epsilon(epsilon2, 1.0).sample(counts.shape, source)
            estimate = counts + noise
        else:
            estimate = strategy.release(counts, epsilon2, source)
        values[rows] = expand(estimate, row_edges)
        for row in rows:
            used[row] = stage2 if strategy is not None else "laplace"
    return RangeEstimate(values, edges if rho > 0 else None, tuple(used))


def _group_rows(edges: list[np.ndarray]):
    groups: dict[bytes, list[int]] = {}
    for row, e in enumerate(edges):
        groups.setdefault(e.tobytes(), []).append(row)
    for rows in groups.values():
        yield np.asarray(rows), edges[rows[0]]
