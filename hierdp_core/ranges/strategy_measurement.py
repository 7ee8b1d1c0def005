"""DAWA Stage 2's measurement: every asked query of a strategy answered with Laplace noise.

Contract: the answers are ``c_q * (bucket sum over lo[q]..hi[q]-1)`` plus independent
Laplace(sensitivity/epsilon) per row and asked query: the noise of ``stage``, the measuring
stage of the mechanism's privacy plan (`hierdp_core.mechanisms.ranges.RangeMechanism.
measurement_stage`), at its exact scale for epsilon (`Stage.noise_for`). On the hierdp
secure backend (`secure_measure.exact_backend`) an answer is ``c_q (bucket sum + Z_q)``
instead, Z_q exact discrete Laplace of scale T / s_q >= (sensitivity / epsilon) / c_q
(`hierdp_core.privacy.exact.weighted`): the weight applied after the noise.

Privacy: every bucket's weights sum to 1 (L1 column norm 1), so adding or removing one record,
which changes one bucket count by 1, moves the vector of weighted answers by at most 1 in L1:
Laplace(1/epsilon2) noise on every asked query is epsilon2-DP under add/remove one record. The
weights depend only on the public workload and on the partition, which Stage 1 already
released privately: choosing them is post-processing, and so is the least-squares estimate
(`hierdp_core.ranges.strategy_inference`). Exact noise: the same record moves by 1 every
integer bucket sum whose interval covers the changed bucket, so the loss is
``max over buckets of sum_{q covers it} s_q / T``, computed exactly in integers from the s_q
drawn (`exact_loss`) and checked against epsilon before any draw; with s_q / T <= c_q
epsilon / sensitivity it is at most epsilon times the column sums of the weights.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from hierdp_core.errors import BudgetError
from hierdp_core.privacy.exact import add_checked
from hierdp_core.privacy.exact.rational import round_up
from hierdp_core.privacy.exact.weighted import (
    WEIGHTED_T,
    describe,
    weighted_denominators,
    weighted_draws,
)
from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import Geometric, NoiseSource
from hierdp_core.ranges.interval_strategy import (
    Strategy,
    StrategyBatch,
    interval_matrix,
    rows_of,
)
from hierdp_core.ranges.secure_measure import exact_backend, integer_values


def measure(strategy: Strategy, bucket_counts: np.ndarray, epsilon: float,
            source: NoiseSource, *, stage: Stage) -> np.ndarray:
    """Noisy answers, (q,) for bucket counts (k,) or (r, q) for (r, k): weight times range
    sum plus independent Laplace(sensitivity/epsilon) per row and query (epsilon-DP per
    row)."""
    counts = rows_of(bucket_counts, strategy.k, "bucket counts")
    label = f"ranges: {strategy.name} strategy answers"
    if exact_backend(source):
        sums = (interval_matrix(strategy.lo, strategy.hi, strategy.k)
                @ np.atleast_2d(counts).T).T
        noisy = exact_answers(sums, strategy.weights[None], np.zeros(len(sums), dtype=np.int64),
                              strategy, epsilon, source, stage=stage, label=label)
        return noisy.reshape(counts.shape[:-1] + strategy.lo.shape)
    exact = (strategy.matrix() @ counts.T).T
    return stage.noise_for(epsilon).apply(exact, source, sensitivity=stage.sensitivity,
                                          budget=epsilon, label=label)


def measure_batch(batch: StrategyBatch, bucket_counts: np.ndarray, which: np.ndarray,
                  epsilon: float, source: NoiseSource, *, stage: Stage) -> np.ndarray:
    """Noisy answers (R, q) of histograms (R, k), row j asked with strategy ``which[j]``:
    weight times range sum plus Laplace(sensitivity/epsilon) per asked query (epsilon-DP per
    row, as `measure`); 0 where strategy ``which[j]`` does not ask query q."""
    counts = rows_of(bucket_counts, batch.k, "bucket counts")
    cum = np.concatenate([np.zeros((counts.shape[0], 1)), np.cumsum(counts, axis=1)], axis=1)
    sums = cum[:, batch.hi] - cum[:, batch.lo]
    label = "ranges: workload-aware strategy answers"
    if exact_backend(source):
        return exact_answers(sums, batch.weights, which, batch, epsilon, source, stage=stage,
                             label=label)
    weights = batch.weights[which]
    asked = weights > 0
    answers = weights * sums
    answers[asked] = stage.noise_for(epsilon).apply(
        answers[asked], source, sensitivity=stage.sensitivity, budget=epsilon, label=label)
    return answers


def exact_loss(s: np.ndarray, intervals) -> Fraction:
    """The privacy loss of integer interval sums with discrete Laplace of scales T / s
    (``s`` (U, q), one row per strategy, 0: not measured) when one bucket count changes by
    1: the largest, over strategies and buckets, of the s of the intervals covering the
    bucket, summed, over T (exact: int64 sums)."""
    cover = interval_matrix(intervals.lo, intervals.hi, intervals.k).astype(np.int64)
    per_bucket = np.asarray(cover.T @ s.T)
    return Fraction(int(per_bucket.max(initial=0)), WEIGHTED_T)


def exact_answers(sums: np.ndarray, weights: np.ndarray, which: np.ndarray, intervals,
                  epsilon: float, source: NoiseSource, *, stage: Stage,
                  label: str) -> np.ndarray:
    """``weights[which[j], q] * (sums[j, q] + Z)`` with Z exact discrete Laplace of scale
    T / s (`weighted_denominators`), 0 where not measured; the loss (`exact_loss`) checked
    against ``epsilon`` before drawing and recorded on ``source``."""
    s = weighted_denominators(weights, epsilon, stage.sensitivity)
    loss = exact_loss(s, intervals)
    if loss > Fraction(epsilon):
        raise BudgetError(f"{label}: the privacy loss is {float(loss):.6g}, more than its "
                          f"share of the budget {epsilon:.6g}")
    chosen = s[which]
    measured = np.flatnonzero(chosen > 0)
    values = integer_values(sums, "the bucket sums").ravel().take(measured)
    noisy = np.zeros(sums.shape)
    noisy.flat[measured] = weights[which].ravel().take(measured) * add_checked(
        values, weighted_draws(chosen.ravel().take(measured)))
    source.record(label, Geometric(stage.scale_for(epsilon)), measured.size,
                  stage.sensitivity, round_up(loss), epsilon,
                  {"sampler": "hierdp-exact", "sampled": describe(s[np.unique(which)])})
    return noisy
