"""DAWA's least-cost partition (Stage 1, provable mode) on hierdp's exact sampler: integer
costs, exact discrete Laplace on them, an exact least-cost partition.

Contract: `exact_partition_marks` is `partition.private_partition_marks` in provable mode
for a secure source on the hierdp backend (integer histograms): the partitions as marks,
and one ledger entry whose loss is computed from the rationals sampled, checked against
epsilon1 before any draw.

Costs on a lattice. With the public ``U`` = `LATTICE` units per unit of cost, the cost of a
candidate bucket b of L cells is the integer ``floor(U dev(x, b)) + E + P_b``: ``L dev(x, b)
= 2 (L * sum of its cells >= the mean - their number * its sum)`` is an integer, computed
exactly (`partition.windows`, in row chunks small enough for the float comparisons with
the mean to be exact: `_chunk_rows`); ``E = round(U / epsilon2)`` and ``P_b = round(U
penalty lambda_b)`` are public constants, as in the float version. Each candidate's noise is
discrete Laplace of scale ``t_L / s_L >= c_L / epsilon1`` with ``c_L = (Delta + Delta_b) U +
2`` (``Delta = 2 (1 - 1 / L_max)``, ``Delta_b = 2 (1 - 1 / L)``: the plan's scale factor 2
times their mean, in units). The least-cost partition of the integer noisy costs is exact
(`partition.least_cost_marks` in int64), ties going to the longest last bucket, then the
longest one before, ...: a fixed order of partitions.

Privacy (the spec's section 3 argument on the integers). Fix neighbours (one cell j changes
by 1) and an output B; b its bucket holding j. Condition on the noise of every other
candidate. The partitions holding b share b's noisy cost, so whether B beats them does not
depend on b's noise nor on the neighbour. B beats every partition P without b, in the fixed
tie order, iff ``Z_b <= m = min_P (cost(P) - cost(B without b) - cost(b) - [P wins ties])``
(cost(b) noise-free, every other noise fixed). Between the neighbours cost(P) moves by at
most ``Delta U + 1`` (its one bucket holding j; the floor adds 1) and cost(b) by at most
``Delta_b U + 1``, so m moves by at most ``c_L``. The discrete Laplace of scale t/s has
``P(Z <= m) <= exp(k s / t) P(Z <= m - k)`` (each step down costs at most ``s / t``), so the
probability of B changes by at most ``exp(c_L s_L / t_L)``: the loss is the largest of
``c_L s_L / t_L`` over the candidate lengths, at most epsilon1 by the rounding up.
Refused (MechanismError), data-dependently like any integer overflow: rows whose sums or
noisy costs could leave int64 (`_check_range`).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.privacy.exact import exact_noise
from hierdp_core.privacy.exact.apply import apply_exact
from hierdp_core.privacy.exact.rational import round_up
from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import Geometric, NoiseSource
from hierdp_core.ranges.partition import Candidates, _SortedBlocks, least_cost_marks, windows
from hierdp_core.ranges.secure_measure import integer_values

#: units of the integer costs per unit of cost (public): 2^20, so the lattice adds 2 / 2^20
#: of a unit to each candidate's calibration
LATTICE = 1 << 20
#: the float comparisons of integer cells with a window's mean are exact while the largest
#: key of the sorted blocks times the longest window stays below this
_EXACT_KEYS = 1 << 51
#: a noisy cost stays within this many noise scales of its cost unless refused
_NOISE_REACH = 1024
_INT_ROOM = 1 << 62


def calibrations(cands: Candidates, stage: Stage) -> list[Fraction]:
    """c_L per candidate length (in lattice units): the plan's scale factor times the mean
    of Delta and Delta_b, times U, plus 2 (exact rationals)."""
    big = 2 * (1 - Fraction(1, int(cands.lengths.max())))
    return [Fraction(stage.scale_factor) * (big + 2 * (1 - Fraction(1, int(length)))) / 2
            * LATTICE + 2 for length in cands.lengths]


def stage1_noises(cands: Candidates, stage: Stage, epsilon1: float):
    """Each candidate length's exact noise (scale c_L / epsilon1, rounded up) and the
    loss of the selection, the largest c_L s / t (a Fraction)."""
    c = calibrations(cands, stage)
    noises = [exact_noise("discrete-laplace", round_up(c_l / Fraction(epsilon1))) for c_l in c]
    return noises, max(c_l * n.den / n.num for c_l, n in zip(c, noises, strict=True))


def _chunk_rows(x: np.ndarray, cands: Candidates) -> int:
    """Rows per chunk for which the sorted blocks' keys (row offsets times the span of the
    values) times the longest window stay below `_EXACT_KEYS`."""
    size = 1 << max(int(x.shape[1] - 1).bit_length(), 0)
    per_row = (float(x.max(initial=0)) + 1.0) * size * float(cands.lengths.max())
    rows = int(_EXACT_KEYS // per_row) - 1
    if rows < 1:
        raise MechanismError("the exact Stage 1 cannot hold counts this large: use "
                             "--noise-backend opendp or PrivTree's Stage 1")
    return rows


def scaled_costs(x: np.ndarray, cands: Candidates, epsilon2: float, extra: np.ndarray):
    """The integer costs (r, n_lengths, n) by bucket end (0 where a bucket does not fit):
    floor(U dev) + E + ``extra`` (per length)."""
    r, n = x.shape
    costs = np.zeros((r, cands.lengths.size, n), dtype=np.int64)
    step = _chunk_rows(x, cands)
    for first in range(0, r, step):
        rows = x[first:first + step]
        blocks = _SortedBlocks(rows)
        for i, length in enumerate(cands.lengths):
            if length == 1:
                continue
            total, _, above_sum, above_count = windows(rows, int(length), blocks)
            scaled = 2 * (int(length) * integer_values(above_sum)
                          - integer_values(above_count) * integer_values(total))
            costs[first:first + step, i, length - 1:] = scaled * LATTICE // int(length)
    costs += round(LATTICE / epsilon2) + extra[None, :, None]
    return costs


def _check_range(x: np.ndarray, epsilon2: float, penalty: float,
                 scales: list[Fraction]) -> None:
    """Refuse rows whose costs (at most twice the row's sum, plus the constants) plus noise
    within `_NOISE_REACH` scales, summed over n buckets, could leave int64."""
    n = x.shape[1]
    worst = (2 * float(x.sum(axis=1).max(initial=0)) + 1 / epsilon2 + 1) * LATTICE \
        + (_NOISE_REACH + penalty + 1) * float(max(scales))
    if n * worst >= _INT_ROOM:
        raise MechanismError("the exact Stage 1's integer costs would overflow: use "
                             "--noise-backend opendp or PrivTree's Stage 1")


def exact_partition_marks(x: np.ndarray, epsilon1: float, epsilon2: float,
                          source: NoiseSource, *, stage: Stage, cands: Candidates,
                          penalty: float = 0.0) -> np.ndarray:
    """The least-cost partition of every row of x (r, n), provable mode, with exact
    discrete Laplace on integer costs (see the module): marks (r, n + 1)."""
    x = integer_values(x, "the histograms").astype(float)
    noises, loss = stage1_noises(cands, stage, epsilon1)
    if loss > Fraction(epsilon1):
        raise BudgetError(f"DAWA Stage 1: the privacy loss is {float(loss):.6g}, more than "
                          f"its share of the budget {epsilon1:.6g}")
    scales = [Fraction(noise.num, noise.den) for noise in noises]
    _check_range(x, epsilon2, penalty, scales)
    extra = np.array([round(penalty * float(scale)) for scale in scales], dtype=np.int64)
    costs = scaled_costs(x, cands, epsilon2, extra)
    reach = [int(_NOISE_REACH * scale) for scale in scales]
    for i, (length, noise) in enumerate(zip(cands.lengths, noises, strict=True)):
        fit = costs[:, i, length - 1:]
        noisy = apply_exact(fit, noise)
        if (np.abs(noisy - fit) > reach[i]).any():
            raise MechanismError("a Stage-1 noise draw beyond its reach (probability below "
                                 "exp(-1000))")
        costs[:, i, length - 1:] = noisy
    sampled = "; ".join(f"length {int(length)}: scale {n.num}/{n.den}"
                        for length, n in zip(cands.lengths, noises, strict=True))
    source.record("ranges: DAWA Stage 1 bucket costs",
                  Geometric(float(max(scales) / LATTICE)),  # the scale in units of cost
                  int(sum(x.shape[0] * (x.shape[1] - length + 1) for length in cands.lengths)),
                  None, round_up(loss), epsilon1,
                  {"sampler": "hierdp-exact",
                   "sampled": f"in units of 1/{LATTICE} of a cost: {sampled}"})
    return least_cost_marks(costs, cands)
