"""PrivTree's exact split test (`hierdp_core.ranges.privtree_exact`): its decisions follow
the Laplace test's probability, and the partitions it makes are epsilon1-private: every
partition's probability computed on tiny domains for every neighbouring pair, with the
rounded-up lambda and delta of the grid."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from exact_helpers import SeededWords

from hierdp_core.errors import MechanismError
from hierdp_core.ranges.privtree import median_deviations
from hierdp_core.ranges.privtree_exact import (
    GRID,
    ExactSplitTest,
    integer_median_deviations,
    whole_counts,
)


def split_probability(test: ExactSplitTest, score: int, depth: int) -> float:
    """P(b + Laplace(lambda) > theta), b the biased score, in closed form."""
    biased = max(score * GRID - depth * test.delta, test.theta - test.delta)
    x = (test.theta - biased) / test.lam
    return 0.5 * math.exp(-x) if x >= 0 else 1 - 0.5 * math.exp(x)


def test_the_grid_rounds_lambda_and_delta_up():
    test = ExactSplitTest.make(3 / 0.7, 1 / 0.3)
    assert test.scale >= 3 / 0.7 and test.delta / GRID >= test.scale * math.log(2)
    assert abs(test.theta / GRID - 1 / 0.3) <= 0.5 / GRID


@pytest.mark.parametrize("depth", [0, 3])
def test_decisions_follow_the_laplace_tests_probability(depth):
    test = ExactSplitTest.make(3.0, 2.0)
    scores = np.array([0, 1, 2, 3, 5, 8, 12, 20])  # below, at and above the threshold
    draws = 40_000
    split = test.split(np.repeat(scores, draws).reshape(scores.size, draws), depth,
                       SeededWords(7 + depth))
    for score, row in zip(scores, split, strict=True):
        p = split_probability(test, int(score), depth)
        sd = math.sqrt(p * (1 - p) / draws)
        assert abs(row.mean() - p) <= 4.5 * sd, (score, row.mean(), p)


def _partitions(x, test, lo, hi, depth) -> dict:
    """{partition of cells lo..hi-1 (a tuple of buckets): probability}, PrivTree's
    bisection with the median deviation as the score, computed independently of the code."""
    if hi - lo == 1:
        return {((lo, hi),): 1.0}
    cells = sorted(x[lo:hi])
    score = sum(abs(v - cells[len(cells) // 2]) for v in cells)
    p = split_probability(test, score, depth)
    out = {((lo, hi),): 1 - p}
    mid = (lo + hi) // 2
    right = _partitions(x, test, mid, hi, depth + 1)
    for left_part, p_left in _partitions(x, test, lo, mid, depth + 1).items():
        for right_part, p_right in right.items():
            out[left_part + right_part] = p * p_left * p_right
    return out


def worst_loss(n: int, top: int, test: ExactSplitTest) -> float:
    """The largest |ln P(partition | x) / P(partition | x')| over every histogram x of n
    cells with counts 0..top and x' = x with one more person in one cell."""
    cache = {}

    def law(x):
        if x not in cache:
            cache[x] = _partitions(x, test, 0, n, 0)
        return cache[x]

    worst = 0.0
    for x in itertools.product(range(top + 1), repeat=n):
        for i in range(n):
            y = x[:i] + (x[i] + 1,) + x[i + 1:]
            a, b = law(x), law(y)
            worst = max(worst, max(abs(math.log(a[k] / b[k])) for k in a))
    return worst


@pytest.mark.parametrize(("n", "top"), [(4, 3), (8, 1)])
@pytest.mark.parametrize(("epsilon1", "theta"), [(1.0, 1.0), (0.5, 4.0), (2.0, 0.5), (4.0, 2.0)])
def test_partitions_are_epsilon1_private_on_tiny_domains(n, top, epsilon1, theta):
    assert worst_loss(n, top, ExactSplitTest.make(3 / epsilon1, theta)) <= epsilon1 + 1e-12
    # the calibration matters: without PrivTree's factor 3 the bound breaks on these pairs
    if theta <= 1:
        assert worst_loss(n, top, ExactSplitTest.make(1 / epsilon1, theta)) > epsilon1


def test_integer_scores_are_the_median_deviations_and_move_by_one_at_most():
    x = np.random.default_rng(4).integers(0, 60, size=(5, 24))
    lo, hi = np.array([0, 3, 4, 12]), np.array([3, 4, 12, 24])
    assert np.array_equal(integer_median_deviations(whole_counts(x.astype(float)), lo, hi),
                          median_deviations(x.astype(float), lo, hi))
    # a huge cell beside small ones: float sums lose the low bits (a neighbour's score moved
    # by 2 there, against a sensitivity of 1); the integer sums do not
    n = 1 << 16
    big = np.zeros((1, n), dtype=np.int64)
    big[0, 0], big[0, -1] = 1 << 38, 5
    more = big.copy()
    more[0, -1] += 1
    pairs = (np.arange(0, n, 2), np.arange(2, n + 1, 2))  # a depth of buckets of two cells
    moved = integer_median_deviations(more, *pairs) - integer_median_deviations(big, *pairs)
    assert np.abs(moved).max() == 1
    floats = median_deviations(more.astype(float), *pairs) - median_deviations(
        big.astype(float), *pairs)
    assert np.abs(floats).max() == 2  # what the exact test must not read
    with pytest.raises(MechanismError, match="whole-number"):
        whole_counts(np.array([[1.5, 2.0]]))
