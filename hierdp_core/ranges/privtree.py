"""A provably private, data-adaptive Stage 1 for DAWA: PrivTree-style bisection.

Starting from the whole domain, a bucket is halved (at the middle cell, a public rule) when its
noisy, depth-biased non-uniformity exceeds a threshold, and kept as a bucket otherwise (Zhang,
Xiao & Xie, PrivTree, SIGMOD 2016, with the median deviation as the score). Unlike the DAWA
paper's least-cost partition it adds one noise draw per *visited* bucket and decides locally, so
noise cannot be exploited by a minimum over exponentially many partitions: flat regions stay
merged whatever the noise, and the number of buckets follows the data.

Score of a bucket b: ``s(b) = min_c sum_{j in b} |x_j - c|`` (deviation from the median).
* Sensitivity 1: adding or removing one record changes one cell by 1, and a minimum of
  1-Lipschitz functions is 1-Lipschitz.
* Monotone: a child's score is at most its parent's (``s(child) <= sum_{j in child} |x_j -
  med(parent)|``, and the children's sums add up to ``s(parent)``).

Decision at depth d (root 0): ``b = max(s - d * delta, theta - delta)``; split when ``b +
Laplace(lambda) > theta``; buckets of one cell are never split. With ``lambda = 3 / epsilon1``
(PrivTree's ``(2 beta - 1) / (beta - 1)`` for fan-out beta = 2 and sensitivity 1) and ``delta =
lambda ln 2``, the whole partition is epsilon1-DP: only the buckets containing the changed cell
(one path) change score, each by at most 1; along that path the biased scores fall by at least
delta per level on either dataset (monotone score, growing bias), so at most one decision on it
is near the threshold and the privacy losses of the others form a geometric series of ratio
1/2 (PrivTree's Theorem 3.1, whose proof uses only sensitivity and monotonicity, not that the
score is a count; the changes may have either sign since each decision's loss is bounded in
absolute value). ``theta`` is public; the default, ``1/epsilon2`` (the expected noise of one
extra bucket in Stage 2), is fixed, not tuned on data.

Secure noise on the hierdp backend draws each test exactly, with no float on the path: a
fair coin and an exact Bernoulli(exp(-rational)) of the test's own closed-form probability,
lambda and delta rounded up on a 2^-20 grid (`hierdp_core.ranges.privtree_exact`).

Example
-------
>>> from hierdp_core.privacy.samplers import NoiseSource
>>> x = np.r_[np.zeros(64), np.full(64, 500.0)]
>>> edges = privtree_partition(x[None], 5.0, 1.0, NoiseSource(seed=1),
...                            stage=selection_stage())[0]
>>> bool(64 in edges.tolist()), len(edges) - 1 < 16
(True, True)
"""

from __future__ import annotations

import math

import numpy as np

from hierdp_core.errors import BudgetError
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, Stage
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.ranges.partition import edge_lists
from hierdp_core.ranges.privtree_exact import (
    integer_median_deviations,
    secure_test,
    split_decisions,
    whole_counts,
)

FANOUT = 2
#: the score's L1 sensitivity under add/remove one record
SENSITIVITY = 1.0
#: PrivTree's calibration for fan-out beta: lambda = (2 beta - 1)/(beta - 1) * sensitivity
#: / epsilon1 (3 for beta = 2)
SCALE_FACTOR = (2 * FANOUT - 1) / (FANOUT - 1)
STAGE1_LABEL = "ranges: DAWA Stage 1 scores"


def selection_stage(share: float = 1.0, **fields) -> Stage:
    """The bisection as a stage of a privacy plan (share ``share`` of the budget, other
    `Stage` fields in ``fields``): score sensitivity 1, Laplace(3 / epsilon1)."""
    return Stage("partition", ADD_REMOVE_PERSON, SENSITIVITY, "laplace", share,
                 output="partition", scale_factor=SCALE_FACTOR, **fields)


def median_deviations(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``min_c sum |x_j - c|`` over cells lo..hi-1 of every row, for disjoint intervals that
    cover the domain in order: (r, n) -> (r, intervals)."""
    r, n = x.shape
    lengths = hi - lo
    segment = np.repeat(np.arange(lengths.size), lengths)
    ordered = np.sort(x + segment[None, :] * (np.abs(x).max() * 2 + 1), axis=1)
    ordered -= segment[None, :] * (np.abs(x).max() * 2 + 1)
    cum = np.concatenate([np.zeros((r, 1)), np.cumsum(ordered, axis=1)], axis=1)
    low_end = lo + lengths // 2          # the lower half: lo .. low_end - 1
    high_start = hi - lengths // 2       # the upper half: high_start .. hi - 1
    return (cum[:, hi] - cum[:, high_start]) - (cum[:, low_end] - cum[:, lo])


def privtree_partition(x: np.ndarray, epsilon1: float, epsilon2: float, source: NoiseSource, *,
                       stage: Stage, threshold: float | None = None) -> list[np.ndarray]:
    """Bucket edges for every row of x (r, n) (`privtree_marks` as lists)."""
    return edge_lists(privtree_marks(x, epsilon1, epsilon2, source, stage=stage,
                                     threshold=threshold))


def privtree_marks(x: np.ndarray, epsilon1: float, epsilon2: float, source: NoiseSource, *,
                   stage: Stage, threshold: float | None = None) -> np.ndarray:
    """The partition of every row of x (r, n) as marks (r, n + 1), an edge at e where set;
    epsilon1-DP per row (see the module). ``stage``: the partition stage of the mechanism's
    privacy plan (`selection_stage`), whose noise at its exact scale (`Stage.noise_for`,
    lambda) every score gets."""
    if epsilon1 <= 0 or epsilon2 <= 0:
        raise BudgetError("both DAWA stages need a positive epsilon")
    x = np.asarray(x, dtype=float)
    r, n = x.shape
    noise = stage.noise_for(epsilon1)
    lam = noise.scale
    bias_step = lam * math.log(FANOUT)
    theta = 1.0 / epsilon2 if threshold is None else float(threshold)
    lo, hi = np.array([0]), np.array([n])
    active = np.ones((r, 1), dtype=bool)
    leaves = np.zeros((r, n + 1), dtype=bool)  # leaves[row, e]: an edge at e
    leaves[:, [0, n]] = True
    depth = 0
    exact = secure_test(source, lam, theta)
    counts = x if exact is None else whole_counts(x)  # the exact test sums in int64
    while active.any():
        score = (median_deviations if exact is None else integer_median_deviations)(
            counts, lo, hi)
        split = active & _decisions(score, depth, noise, bias_step, theta, exact, source) \
            & ((hi - lo) > 1)[None, :]
        mid = (lo + hi) // 2
        rows, nodes = np.nonzero(split)
        leaves[rows, mid[nodes]] = True
        lo, hi, active = _children(lo, hi, mid, split)
        depth += 1
    return leaves


def _decisions(score, depth, noise, bias_step, theta, exact, source) -> np.ndarray:
    """Split or not, per bucket: ``b + Laplace(lambda) > theta`` with Laplace noise
    (exploration, OpenDP's backend), or the same test drawn exactly (``exact``: the hierdp
    backend, `privtree_exact`)."""
    if exact is not None:
        return split_decisions(exact, score, depth, source, noise, STAGE1_LABEL)
    biased = np.maximum(score - depth * bias_step, theta - bias_step)
    return noise.apply(biased, source, label=STAGE1_LABEL) > theta


def _children(lo, hi, mid, split):
    """The next level's intervals (every interval of more than one cell halved; the one-cell
    ones carried as they are) and which of them are active (their parent was split)."""
    wide = (hi - lo) > 1
    new_lo = np.concatenate([lo[wide], mid[wide], lo[~wide]])
    new_hi = np.concatenate([mid[wide], hi[wide], hi[~wide]])
    new_active = np.concatenate([split[:, wide], split[:, wide],
                                 np.zeros((split.shape[0], int((~wide).sum())), dtype=bool)],
                                axis=1)
    order = np.argsort(new_lo, kind="stable")
    return new_lo[order], new_hi[order], new_active[:, order]
