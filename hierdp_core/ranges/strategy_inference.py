"""DAWA Stage 2's inference: the ordinary least-squares estimate of the bucket counts from a
strategy's noisy answers, ``s = (Y^T D^2 Y)^-1 (D Y)^T y``, with the strategy's ``inverse``
(computed when the strategy was chosen: `hierdp_core.ranges.greedy_closed_form`). The
estimate is unbiased with covariance ``(2/epsilon^2) * inverse`` under Laplace(1/epsilon)
answers. Post-processing of the measurement (`hierdp_core.ranges.strategy_measurement`).
"""

from __future__ import annotations

import numpy as np

from hierdp_core.ranges.interval_strategy import (
    Strategy,
    StrategyBatch,
    covering,
    rows_of,
)


def least_squares(strategy: Strategy, answers: np.ndarray) -> np.ndarray:
    """s = inverse @ (D Y)^T y: answers (q,) -> bucket counts (k,), batched (r, q) -> (r, k)."""
    answers = rows_of(answers, strategy.lo.size, "answers")
    return (strategy.inverse @ (strategy.matrix().T @ answers.T)).T


def least_squares_batch(batch: StrategyBatch, answers: np.ndarray, which: np.ndarray,
                        max_cells: int = 1 << 22, releases: int = 1) -> np.ndarray:
    """Estimated bucket counts (R, k) from answers (R, q) (`measure_batch`), row j with the
    weights and inverse of strategy ``which[j]``; at most about ``max_cells`` inverse entries
    gathered at once. ``releases``: the rows are that many releases' rows in turn, each
    release's solved by one product as it alone is (BLAS sums a row in an order that
    follows the number of rows of the product)."""
    weights = batch.weights[which]
    # (D Y)^T y: every bucket collects the weighted answers of the intervals covering it
    normal = (covering(batch.lo, batch.hi, batch.k) @ (weights * answers).T).T
    if batch.inverse.shape[0] == 1:
        return (normal.reshape(releases, -1, batch.k) @ batch.inverse[0].T).reshape(normal.shape)
    out = np.empty_like(normal)
    step = max(1, max_cells // batch.k**2)
    for start in range(0, out.shape[0], step):
        rows = slice(start, start + step)
        out[rows] = np.einsum("rkl,rl->rk", batch.inverse[which[rows]], normal[rows])
    return out
