"""The parameters the range mechanisms offer (`hierdp_core.mechanisms.ranges`): DAWA's
partition share, its Stage 1 and Stage 2 choices and where the partition runs. All are
public choices made without the data."""

from __future__ import annotations

from hierdp_core.mechanisms.base import Parameter

RHO = Parameter("rho", "float", 0.25, "share of each level's epsilon spent on the partition "
                "(Stage 1); the paper uses 0.25 and calls it rho (not the zCDP budget rho)",
                minimum=0.01, maximum=0.9, label="Partition share of ε (DAWA's rho)")
BRANCHING = Parameter("branching", "int", 2, "branching of the Stage-2 tree over buckets",
                      minimum=2, maximum=16)
PARTITION = Parameter("partition", "choice", "privtree",
                      "Stage 1: PrivTree-style bisection (provable, follows the data), or "
                      "the paper's least-cost partition with the noise its proof needs "
                      "(provable, many buckets whatever the data)",
                      choices=("privtree", "least-cost"))
CANDIDATES = Parameter("candidates", "choice", "pow2", "least-cost candidates: lengths that "
                       "are powers of two at every start (fast), or all intervals (O(n^2), "
                       "n <= 2048)", choices=("pow2", "all"))
PENALTY = Parameter("penalty", "float", 0.0, "least-cost only: extra cost per bucket, in units "
                    "of its Stage-1 noise scale (data-independent, so still private; fewer "
                    "buckets)", minimum=0.0, maximum=20.0)
PARTITION_FROM = Parameter("partition_from", "int", -1, "levels whose histograms get a "
                           "partition (Stage 1): -1 = the finest level only (default), 0 = "
                           "every level (the paper's DAWA per level), k = level k and below, "
                           "-k = the k finest. Coarser levels, where every value holds many "
                           "people and a partition merges little, give their whole epsilon to "
                           "the workload-aware queries. Public, chosen without the data",
                           minimum=-20, maximum=20)
PARTITION_IF = Parameter("partition_if", "choice", "it-can-pay", "it-can-pay: skip Stage 1 "
                         "at every level (the whole epsilon_l to Stage 2) when the public "
                         "workload leaves a partition nothing to gain (a priori, from the "
                         "workload and rho alone: e.g. disjoint age bands, each measured "
                         "once); always: the paper's DAWA", choices=("it-can-pay", "always"))
STAGE2_PARAM = Parameter("stage2", "choice", "greedy", "Stage-2 strategy over buckets: DAWA's "
                         "workload-aware greedy weights, equal weights per tree level, "
                         "geometric weights, or Laplace on each bucket",
                         choices=("greedy", "uniform", "geometric", "laplace"))
