"""DAWA Stage 2's strategies as data: weighted interval queries over k buckets and their
least-squares inverse.

A `Strategy` is a set of interval queries over the k buckets of a partition, query q covering
buckets ``lo[q] .. hi[q] - 1`` with weight ``c_q > 0``; ``inverse`` is the k x k matrix
``(Y^T D^2 Y)^-1`` of its least squares (a pseudo-inverse when collapsed nodes are used). A
`StrategyBatch` holds r strategies over the same buckets and tree of intervals. They are
chosen by `hierdp_core.ranges.greedy_strategy` (select), answered with noise by
`hierdp_core.ranges.strategy_measurement` (measure) and combined by
`hierdp_core.ranges.strategy_inference` (infer). Since the estimate is unbiased with
covariance ``(2/epsilon^2) * inverse``, the expected squared error of any linear query w,
``(2/epsilon^2) w^T inverse w``, is known before any data is seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import sparse

from hierdp_core.errors import BudgetError, InputError


@dataclass(frozen=True, eq=False)
class _Intervals:
    """Weighted interval queries lo..hi-1 over k buckets and the least-squares inverse."""

    k: int
    lo: np.ndarray
    hi: np.ndarray
    weights: np.ndarray
    inverse: np.ndarray
    name: str


@dataclass(frozen=True, eq=False)
class Strategy(_Intervals):
    """Weighted interval queries over k buckets: tree node q covers buckets lo[q]..hi[q]-1
    (hi exclusive) with weight weights[q] > 0 (rows with weight 0 are dropped); every bucket's
    weights sum to 1 (L1 column norm 1 = sensitivity 1 under add/remove one record).
    ``inverse`` = (Y^T D^2 Y)^-1 (or the pseudo-inverse where collapsed nodes are used),
    shape (k, k)."""

    def matrix(self) -> sparse.csr_matrix:
        """The weighted query matrix D Y, sparse (q, k)."""
        return sparse.diags(self.weights) @ interval_matrix(self.lo, self.hi, self.k)

    def column_sums(self) -> np.ndarray:
        """Every bucket's total weight (k,): 1.0 up to float error."""
        return np.asarray(self.matrix().sum(axis=0)).ravel()

    def expected_squared_errors(self, w_hat: np.ndarray, epsilon: float) -> np.ndarray:
        """Per query (rows of w_hat (m, k)): (2/epsilon^2) w^T inverse w (data-independent)."""
        if not epsilon > 0:
            raise BudgetError(f"epsilon must be positive, got {epsilon}")
        w_hat = np.atleast_2d(rows_of(w_hat, self.k, "workload"))
        return 2.0 / epsilon**2 * np.einsum("mk,mk->m", w_hat @ self.inverse, w_hat)


@dataclass(frozen=True, eq=False)
class StrategyBatch(_Intervals):
    """r strategies over the same k buckets and the same tree of intervals lo..hi (q,), with
    their own weights (r, q) (zero = not asked) and least-squares inverses (r, k, k)."""

    def unit(self, i: int) -> Strategy:
        """Strategy i, its zero-weight rows dropped."""
        keep = self.weights[i] > 0
        return Strategy(self.k, self.lo[keep], self.hi[keep], self.weights[i, keep],
                        self.inverse[i], self.name)


def interval_matrix(lo: np.ndarray, hi: np.ndarray, k: int) -> sparse.csr_matrix:
    """Y: row q is 1 on buckets lo[q]..hi[q]-1, sparse (q, k)."""
    lengths = hi - lo
    rows = np.repeat(np.arange(lo.size), lengths)
    cols = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    cols += np.repeat(lo, lengths)
    return sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(lo.size, k))


def covering(lo: np.ndarray, hi: np.ndarray, k: int) -> sparse.csc_matrix:
    """Y^T (`interval_matrix` transposed: bucket j's row marks the intervals covering it),
    made once per distinct intervals (the last 256): a strategy's intervals recur in every
    batch assembled from kept strategies (`strategy_cache`), e.g. every audit trial. Shared:
    read it, never change it."""
    return _covering(np.asarray(lo, dtype=np.int64).tobytes(),
                     np.asarray(hi, dtype=np.int64).tobytes(), int(k))


@lru_cache(maxsize=256)
def _covering(lo: bytes, hi: bytes, k: int) -> sparse.csc_matrix:
    return interval_matrix(np.frombuffer(lo, dtype=np.int64),
                           np.frombuffer(hi, dtype=np.int64), k).T


def rows_of(values, size: int, what: str) -> np.ndarray:
    """``values`` as floats of shape (size,) or (r, size); InputError otherwise."""
    values = np.asarray(values, dtype=float)
    if values.ndim not in (1, 2) or values.shape[-1] != size:
        raise InputError(f"{what} must have shape ({size},) or (r, {size}), got {values.shape}")
    return values
