"""PrivTree's split decisions drawn exactly in secure mode: the law of the Laplace test,
with no float on the path.

A decision splits a bucket at depth d when ``b + L > theta``, ``L ~ Laplace(lambda)``, ``b =
max(s - d delta, theta - delta)`` its biased score (`hierdp_core.ranges.privtree`). Its
probability is a closed form of ``x = theta - b``: ``exp(-x / lambda) / 2`` for ``x >= 0``,
``1 - exp(x / lambda) / 2`` for ``x < 0``. With lambda rounded up and delta rounded up to
multiples of ``1 / GRID`` (delta at least lambda ln(fan-out); more noise and more bias
than asked, both public) and theta rounded to the same grid (a public parameter), and the
score an integer (a median deviation of integer counts), ``x / lambda`` is a rational
``X / Lam`` of integers; a decision is then the AND of a fair coin and an exact
Bernoulli(exp(-|X| / Lam)) (Canonne, Kamath & Steinke 2020, Algorithm 1:
`hierdp_core.privacy.exact.bernoulli`), negated where ``x < 0``. Every step is an integer
comparison on the keystream's words.

Privacy: the decisions have exactly the law of the Laplace test at these parameters, so
PrivTree's Theorem 3.1 (Zhang, Xiao & Xie 2016) applies unchanged: epsilon1 = (2 beta - 1)
/ ((beta - 1) lambda) for fan-out beta when delta >= lambda ln beta. The theorem sums the
losses of the decisions along the changed cell's path, a geometric series of ratio
exp(-delta / lambda) <= 1 / beta; a larger delta only lowers it. `tests/test_privtree_exact.py`
checks that bound by computing every partition's probability on tiny domains and
neighbouring pairs, with delta rounded up as here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from hierdp_core.errors import MechanismError
from hierdp_core.privacy.exact.bernoulli import bernoulli_exp
from hierdp_core.privacy.exact.keystream import secure_words
from hierdp_core.privacy.exact.uniform import bernoulli_ratio
from hierdp_core.privacy.noise_source import NoiseSource
from hierdp_core.privacy.samplers import Noise

#: lambda, delta and theta are multiples of 1 / GRID
GRID = 1 << 20
#: an upper bound of ln 2 (0.69314718055994530942...), so that delta >= lambda ln 2
LN2_UP = Fraction(6931471805599454, 10**16)
#: scores beyond this (in grid units) would leave int64 once the bias is subtracted
_MAX_GRID_SCORE = 1 << 60
#: a row's total count beyond this is refused (its partial sums must stay exact in int64)
_MAX_ROW_TOTAL = 1 << 62


@dataclass(frozen=True)
class ExactSplitTest:
    """PrivTree's test for fan-out 2 on the grid: ``lam``, ``delta`` and ``theta`` in
    units of 1 / `GRID`."""

    lam: int
    delta: int
    theta: int

    @classmethod
    def make(cls, lam: float, theta: float) -> ExactSplitTest:
        """lambda rounded up, delta = lambda ln 2 rounded up, theta rounded, on the grid."""
        lam_grid = math.ceil(Fraction(lam) * GRID)
        delta_grid = math.ceil(Fraction(lam_grid) * LN2_UP)
        if lam_grid < 1:
            raise MechanismError(f"PrivTree's noise scale must be positive, got {lam}")
        return cls(lam_grid, delta_grid, round(Fraction(theta) * GRID))

    @property
    def scale(self) -> float:
        """The lambda drawn (at least the one asked)."""
        return self.lam / GRID

    def split(self, scores: np.ndarray, depth: int, words) -> np.ndarray:
        """Whether each bucket at ``depth`` with integer score ``scores`` is split: one
        independent decision each, with the Laplace test's probability (module doc)."""
        grid_scores = np.asarray(scores)
        if grid_scores.dtype.kind != "i":
            raise MechanismError("PrivTree's exact test takes integer scores")
        if grid_scores.size and (grid_scores.max() >= _MAX_GRID_SCORE // GRID
                                 or grid_scores.min() <= -(_MAX_GRID_SCORE // GRID)):
            raise MechanismError("a PrivTree score is too large for the exact test")
        grid_scores = grid_scores.astype(np.int64)
        biased = np.maximum(grid_scores * GRID - depth * self.delta, self.theta - self.delta)
        x = self.theta - biased
        n = x.size
        below = bernoulli_ratio(1, 2, words, n) & bernoulli_exp(np.abs(x).ravel(), self.lam,
                                                                words)
        return np.where(x.ravel() >= 0, below, ~below).reshape(x.shape)

    def describe(self) -> str:
        """The parameters drawn, for the ledger."""
        return (f"Laplace test as exact Bernoulli draws: lambda = {self.lam}/{GRID}, "
                f"delta = {self.delta}/{GRID}, theta = {self.theta}/{GRID}")


def whole_counts(x: np.ndarray) -> np.ndarray:
    """``x`` as int64, refused unless every value is a whole number and every row's total
    fits int64 with room (the scores are differences of partial sums)."""
    x = np.asarray(x)
    if x.dtype.kind == "f" and not (np.isfinite(x).all() and np.array_equal(x, np.rint(x))):
        raise MechanismError("PrivTree's exact test needs whole-number counts")
    # the totals in floats: no int64 sum that could itself wrap, nor a cast of a huge float
    if x.size and np.abs(x.astype(np.float64)).sum(axis=-1).max() >= _MAX_ROW_TOTAL:
        raise MechanismError("counts too large for PrivTree's exact test")
    return x.astype(np.int64)


def integer_median_deviations(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """`privtree.median_deviations` in int64, exact for any whole counts (`whole_counts`):
    each interval's cells sorted (by value, then stably by interval), the upper half's sum
    minus the lower half's."""
    r = x.shape[0]
    lengths = hi - lo
    segment = np.repeat(np.arange(lengths.size), lengths)
    order = np.argsort(x, axis=1, kind="stable")
    order = np.take_along_axis(order, np.argsort(segment[order], axis=1, kind="stable"), axis=1)
    ordered = np.take_along_axis(x, order, axis=1)
    cum = np.concatenate([np.zeros((r, 1), dtype=np.int64), np.cumsum(ordered, axis=1)],
                         axis=1)
    low_end = lo + lengths // 2
    high_start = hi - lengths // 2
    return (cum[:, hi] - cum[:, high_start]) - (cum[:, low_end] - cum[:, lo])


def secure_test(source: NoiseSource, lam: float, theta: float) -> ExactSplitTest | None:
    """The exact test for a secure source on the hierdp backend; None for seeded
    exploration and OpenDP's backend, which draw the Laplace noise itself."""
    return ExactSplitTest.make(lam, theta) if source.secure and source.backend == "hierdp" \
        else None


def split_decisions(test: ExactSplitTest, scores: np.ndarray, depth: int, source: NoiseSource,
                    noise: Noise, label: str) -> np.ndarray:
    """`ExactSplitTest.split` of int64 ``scores`` (median deviations of true counts, summed
    in integers: `integer_median_deviations`) from the keystream, logged on ``source`` as the stage's draws (``noise``: the
    plan's Laplace, whose scale the test rounds up)."""
    if scores.dtype.kind != "i":
        raise MechanismError("PrivTree's exact test takes int64 scores (integer sums)")
    decided = test.split(scores, depth, secure_words())
    source.record(label, noise, decided.size, None, None, None,
                  {"sampler": "hierdp-exact", "sampled": test.describe()})
    return decided
