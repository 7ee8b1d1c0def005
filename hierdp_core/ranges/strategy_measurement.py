"""DAWA Stage 2's measurement: every asked query of a strategy answered with Laplace noise.

Contract: the answers are ``c_q * (bucket sum over lo[q]..hi[q]-1)`` plus independent
Laplace(sensitivity/epsilon) per row and asked query: the noise of ``stage``, the measuring
stage of the mechanism's privacy plan (`hierdp_core.mechanisms.ranges.RangeMechanism.
measurement_stage`), at its exact scale for epsilon (`Stage.noise_for`).

Privacy: every bucket's weights sum to 1 (L1 column norm 1), so adding or removing one record,
which changes one bucket count by 1, moves the vector of weighted answers by at most 1 in L1:
Laplace(1/epsilon2) noise on every asked query is epsilon2-DP under add/remove one record. The
weights depend only on the public workload and on the partition, which Stage 1 already
released privately: choosing them is post-processing, and so is the least-squares estimate
(`hierdp_core.ranges.strategy_inference`).
"""

from __future__ import annotations

import numpy as np

from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.interval_strategy import Strategy, StrategyBatch, rows_of


def measure(strategy: Strategy, bucket_counts: np.ndarray, epsilon: float,
            source: NoiseSource, *, stage: Stage) -> np.ndarray:
    """Noisy answers, (q,) for bucket counts (k,) or (r, q) for (r, k): weight times range
    sum plus independent Laplace(sensitivity/epsilon) per row and query (epsilon-DP per
    row)."""
    counts = rows_of(bucket_counts, strategy.k, "bucket counts")
    exact = (strategy.matrix() @ counts.T).T
    return stage.noise_for(epsilon).apply(exact, source, sensitivity=stage.sensitivity,
                                          budget=epsilon,
                                          label=f"ranges: {strategy.name} strategy answers")


def measure_batch(batch: StrategyBatch, bucket_counts: np.ndarray, which: np.ndarray,
                  epsilon: float, source: NoiseSource, *, stage: Stage) -> np.ndarray:
    """Noisy answers (R, q) of histograms (R, k), row j asked with strategy ``which[j]``:
    weight times range sum plus Laplace(sensitivity/epsilon) per asked query (epsilon-DP per
    row, as `measure`); 0 where strategy ``which[j]`` does not ask query q."""
    counts = rows_of(bucket_counts, batch.k, "bucket counts")
    cum = np.concatenate([np.zeros((counts.shape[0], 1)), np.cumsum(counts, axis=1)], axis=1)
    weights = batch.weights[which]
    asked = weights > 0
    answers = weights * (cum[:, batch.hi] - cum[:, batch.lo])
    answers[asked] = stage.noise_for(epsilon).apply(
        answers[asked], source, sensitivity=stage.sensitivity, budget=epsilon,
        label="ranges: workload-aware strategy answers")
    return answers
