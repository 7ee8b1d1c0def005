"""DAWA Stage 1: a private partition of an ordered histogram into near-uniform buckets.

The cost of a bucket b is ``bcost(b) = dev(x, b) + 1/epsilon2`` with ``dev`` the L1 deviation of
its cells from their mean (what uniform expansion loses) and ``1/epsilon2`` the expected noise
of measuring it in Stage 2. Laplace noise is added to the cost of every candidate bucket and the
partition with the least total noisy cost is found exactly by dynamic programming (Li, Hay,
Miklau & Wang, PVLDB 7(5) 2014, Alg. 1, 3, 4; spec ``range-queries-dawa.md`` section 2.2, with
the paper's typos fixed).

Candidates: every interval whose length is a power of two, at every start ("pow2", the paper's
default), or every interval ("all", for n <= `MAX_ALL_INTERVALS`).

Privacy (mode ``provable``): neighbours add or remove one record, so one cell changes by 1.
Every partition's cost then changes in one bucket only, by at most the bucket's sensitivity
``Delta_b = 2 (1 - 1/|b|)`` (tight; 0 for a single cell), and by at most ``Delta = 2 (1 -
1/L_max)`` in any bucket. Independent Laplace noise of scale ``(Delta + Delta_b) / epsilon1`` on
every candidate (single cells included), and only the arg-min released, is epsilon1-DP (the
paper's Theorem 2 with its Remark's scale). A constant ``penalty * scale_b`` may be added to
every noisy cost: it is data-independent, so the proof is unchanged.

Mode ``reference`` reproduces the authors' released code: half that noise, none on single cells,
and every noisy cost clamped from below at ``1/epsilon2``. The proof does not cover the clamp and
this project's audit shows the mode exceeding its stated epsilon1 (about 3 x on n = 8): its
privacy is NOT established; it exists only to reproduce published numbers.

Ties (probability 0 in provable mode) go to the longest last bucket, as the reference code does.

Buckets are returned as edges ``(0, e_1, ..., n)``: bucket i covers cells ``e_i .. e_{i+1} - 1``.

Example (spec section 2.0: the paper's running example, no noise)
-----------------------------------------------------------------
>>> x = np.array([2, 3, 8, 1, 0, 2, 0, 4, 2, 4])
>>> least_cost_edges(x, epsilon2=0.5, candidates="all").tolist()
[0, 2, 3, 7, 10]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, Stage
from hierdp_core.privacy.samplers import NOISES, NoiseSource

CANDIDATES = ("pow2", "all")
MODES = ("provable", "reference")
MAX_ALL_INTERVALS = 2048
#: the paper's bound on a bucket cost's L1 sensitivity, Delta_bcost <= 2
COST_SENSITIVITY = 2.0
#: the selection's calibration per mode: a noisy minimum needs twice a cost's sensitivity
#: (the Remark's ``Delta + Delta_b`` is 2 x their mean); the reference code uses half
SCALE_FACTORS = {"provable": 2.0, "reference": 1.0}


def selection_stage(mode: str = "provable", share: float = 1.0, **fields) -> Stage:
    """The least-cost partition as a stage of a privacy plan (share ``share``, other `Stage`
    fields in ``fields``): bucket-cost sensitivity at most 2, Laplace of ``scale_factor``
    times each candidate's calibration sensitivity (`calibration_sensitivities`)."""
    if mode not in SCALE_FACTORS:
        raise InputError(f"unknown Stage-1 mode {mode!r}; use one of {list(MODES)}")
    return Stage("partition", ADD_REMOVE_PERSON, COST_SENSITIVITY, "laplace", share,
                 output="partition", scale_factor=SCALE_FACTORS[mode], **fields)


@dataclass(frozen=True)
class Candidates:
    """The candidate bucket lengths; bucket (L, start) covers cells start .. start + L - 1."""

    n: int
    lengths: np.ndarray  # int64, descending (ties go to the longest last bucket)

    @classmethod
    def make(cls, n: int, kind: str = "pow2") -> Candidates:
        if kind == "pow2":
            lengths = 2 ** np.arange(int(np.log2(n)) + 1)
        elif kind == "all":
            if n > MAX_ALL_INTERVALS:
                raise InputError(f"candidates='all' needs O(n^2) bucket costs; n = {n} is above "
                                 f"{MAX_ALL_INTERVALS}: use 'pow2'")
            lengths = np.arange(1, n + 1)
        else:
            raise InputError(f"unknown candidate set {kind!r}; use one of {list(CANDIDATES)}")
        return cls(n, np.sort(lengths.astype(np.int64))[::-1])

    @property
    def max_sensitivity(self) -> float:
        """Delta: the largest change of one bucket's cost when one cell changes by 1."""
        return 2.0 * (1.0 - 1.0 / self.lengths.max())


class _SortedBlocks:
    """A merge-sort tree of every row of x (r, n): for block sizes 2^d, each aligned block's
    cells sorted, with prefix sums; answers "sum and number of cells >= t in [lo, hi)" for
    many windows at once in O(log^2 n) each."""

    def __init__(self, x: np.ndarray):
        self.r, self.n = x.shape
        size = 1 << max(int(self.n - 1).bit_length(), 0)
        padded = np.zeros((self.r, size))
        padded[:, :self.n] = x
        self.span = float(padded.max()) + 1.0  # key offset separating blocks
        self.levels = []
        block = 1
        while block <= size:
            n_blocks = size // block
            ordered = np.sort(padded.reshape(self.r, n_blocks, block), axis=2)
            prefix = np.concatenate([np.zeros((self.r, n_blocks, 1)),
                                     np.cumsum(ordered, axis=2)], axis=2)
            offsets = self.span * np.arange(self.r * n_blocks).reshape(self.r, n_blocks, 1)
            self.levels.append((block, n_blocks, (ordered + offsets).ravel(), prefix))
            block *= 2

    def sum_count_at_least(self, lo: np.ndarray, hi: np.ndarray, threshold: np.ndarray):
        """Sum and count of the cells >= threshold[row, w] in window [lo[w], hi[w])."""
        total_sum = np.zeros(threshold.shape)
        total_count = np.zeros(threshold.shape)
        left = np.broadcast_to(lo, threshold.shape).copy()
        right = np.broadcast_to(hi, threshold.shape).copy()
        rows = np.broadcast_to(np.arange(self.r)[:, None], threshold.shape)
        for block, n_blocks, keys, prefix in self.levels:
            active = left < right
            if not active.any():
                break
            take_left = active & (left & 1 == 1)
            take_right = active & (right & 1 == 1)
            for take, node in ((take_left, left), (take_right, right - 1)):
                node, row = node[take], rows[take]
                flat_block = row * n_blocks + node
                first = np.searchsorted(keys, self.span * flat_block + threshold[take])
                first -= flat_block * block
                total_count[take] += block - first
                total_sum[take] += prefix[row, node, block] - prefix[row, node, first]
            left = (left + take_left) >> 1
            right = (right - take_right) >> 1
        return total_sum, total_count


def windows(x: np.ndarray, length: int, blocks: _SortedBlocks):
    """Every bucket of ``length`` cells of the rows of x (r, n), by start: its sum, its mean,
    and the sum and number of its cells >= the mean, each (r, n - length + 1)."""
    r, n = x.shape
    starts = np.arange(n - length + 1)
    cum = np.concatenate([np.zeros((r, 1)), np.cumsum(x, axis=1)], axis=1)
    total = cum[:, starts + length] - cum[:, starts]
    mean = total / length
    above_sum, above_count = blocks.sum_count_at_least(starts, starts + length, mean)
    return total, mean, above_sum, above_count


def deviations(x: np.ndarray, length: int, blocks: _SortedBlocks | None = None) -> np.ndarray:
    """dev(x, b) of every bucket of ``length`` cells, by start: (r, n) -> (r, n - length + 1),
    from ``dev = 2 (sum of the cells >= mean - their number * mean)``."""
    x = np.asarray(x, dtype=float)
    r, n = x.shape
    if length == 1:
        return np.zeros((r, n))
    _, mean, above_sum, above_count = windows(x, length, blocks or _SortedBlocks(x))
    return np.maximum(2.0 * (above_sum - above_count * mean), 0.0)


def bucket_costs(x: np.ndarray, cands: Candidates, epsilon2: float) -> np.ndarray:
    """bcost of every candidate, indexed by its END: (r, n_lengths, n); entry (row, i, j) is the
    cost of the bucket of ``cands.lengths[i]`` cells ending at cell j (inf if it does not fit)."""
    r, n = x.shape
    costs = np.full((r, cands.lengths.size, n), np.inf)
    blocks = _SortedBlocks(x)
    for i, length in enumerate(cands.lengths):
        costs[:, i, length - 1:] = deviations(x, int(length), blocks) + 1.0 / epsilon2
    return costs


def calibration_sensitivities(cands: Candidates, mode: str) -> np.ndarray:
    """Per candidate length, the sensitivity its noise is calibrated with (at most
    `COST_SENSITIVITY`; times the stage's ``scale_factor`` over epsilon1, its scale):
    provable, the mean of ``Delta`` and the bucket's own ``Delta_b`` (the Remark's scale
    ``(Delta + Delta_b)/epsilon1`` with factor 2); reference, ``2 - 1/|b| - 1/n`` (half the
    Remark's with ``Delta = 2 - 2/n``, factor 1) and 0 (no noise) on single cells."""
    lengths = cands.lengths.astype(float)
    if mode == "provable":
        return (cands.max_sensitivity + 2.0 * (1.0 - 1.0 / lengths)) / 2.0
    if mode == "reference":
        return np.where(lengths > 1, 2.0 - 1.0 / lengths - 1.0 / cands.n, 0.0)
    raise InputError(f"unknown Stage-1 mode {mode!r}; use one of {list(MODES)}")


def noise_scales(cands: Candidates, epsilon1: float, mode: str, stage: Stage) -> np.ndarray:
    """Laplace scale per candidate length: the plan's ``stage`` (`selection_stage`) at each
    candidate's calibration sensitivity (`Stage.scale_for`; see the module docstring)."""
    return stage.scale_for(epsilon1, sensitivity=calibration_sensitivities(cands, mode))


def least_cost_edges_batch(costs: np.ndarray, cands: Candidates) -> list[np.ndarray]:
    """Exact least-cost partition for every row of ``costs`` (as from `bucket_costs`): its
    edges (`least_cost_marks` as lists)."""
    return edge_lists(least_cost_marks(costs, cands))


def least_cost_marks(costs: np.ndarray, cands: Candidates) -> np.ndarray:
    """Exact least-cost partition for every row of ``costs``, as marks (r, n + 1) (an edge
    at e where set), by dynamic programming over bucket ends (C[0] = 0; C[j] = min_L
    C[j - L] + cost[L, j - 1]); the loop runs over the n ends, every row and length at once,
    and back over the buckets, every row at once."""
    r, n_lengths, n = costs.shape
    best = np.zeros((r, n + 1), dtype=costs.dtype)  # exact sums for integer costs
    choice = np.zeros((r, n + 1), dtype=np.int64)
    lengths = cands.lengths
    for end in range(1, n + 1):
        fits = lengths <= end
        total = best[:, end - lengths[fits]] + costs[:, fits, end - 1]
        pick = np.argmin(total, axis=1)
        best[:, end] = total[np.arange(r), pick]
        choice[:, end] = lengths[fits][pick]
    marks = np.zeros((r, n + 1), dtype=bool)
    marks[:, n] = True
    rows, at = np.arange(r), np.full(r, n)
    while rows.size:  # each row's last bucket, then the one before, ...
        at = at - choice[rows, at]
        marks[rows, at] = True
        rows, at = rows[at > 0], at[at > 0]
    return marks


def edge_lists(marks: np.ndarray) -> list[np.ndarray]:
    """Partitions given as marks (r, n + 1) as one array of edges per row."""
    _, cells = np.nonzero(marks)
    return np.split(cells, np.cumsum(marks.sum(axis=1))[:-1]) if len(marks) else []


def least_cost_edges(x: np.ndarray, epsilon2: float, candidates: str = "pow2") -> np.ndarray:
    """The noiseless optimum of Problem 1 (NOT private: for tests and public data only)."""
    x = np.asarray(x, dtype=float)[None, :]
    cands = Candidates.make(x.shape[1], candidates)
    return least_cost_edges_batch(bucket_costs(x, cands, epsilon2), cands)[0]


def private_partition(x: np.ndarray, epsilon1: float, epsilon2: float, source: NoiseSource, *,
                      stage: Stage, candidates: str = "pow2", mode: str = "provable",
                      penalty: float = 0.0) -> list[np.ndarray]:
    """DAWA Alg. 1 for every row of ``x`` (r, n): bucket edges per row
    (`private_partition_marks` as lists)."""
    return edge_lists(private_partition_marks(x, epsilon1, epsilon2, source, stage=stage,
                                              candidates=candidates, mode=mode,
                                              penalty=penalty))


def checked_partition_input(x, epsilon1: float, epsilon2: float, candidates: str,
                            penalty: float) -> tuple[np.ndarray, Candidates]:
    """``x`` as floats (r, n) and its candidates, once the stages' epsilons and the penalty
    are checked (`BudgetError`, `InputError`)."""
    if epsilon1 <= 0 or epsilon2 <= 0:
        raise BudgetError("both DAWA stages need a positive epsilon")
    if penalty < 0:
        raise InputError("the Stage-1 penalty must be >= 0")
    x = np.asarray(x, dtype=float)
    return x, Candidates.make(x.shape[1], candidates)


def private_partition_marks(x: np.ndarray, epsilon1: float, epsilon2: float,
                            source: NoiseSource, *, stage: Stage, candidates: str = "pow2",
                            mode: str = "provable", penalty: float = 0.0) -> np.ndarray:
    """DAWA Alg. 1 for every row of ``x`` (r, n): the partitions as marks (r, n + 1), an
    edge at e where set. Only the partitions leave this function; the noisy costs never do.
    ``stage``: the partition stage of the mechanism's privacy plan (`selection_stage` of
    ``mode``), which gives the scales. The costs get the stage's Laplace noise (exploration,
    the OpenDP backend, the reference mode); on the hierdp backend `dawa.stage1_partition`
    takes the provable mode to `partition_exact` instead."""
    x, cands = checked_partition_input(x, epsilon1, epsilon2, candidates, penalty)
    costs = bucket_costs(x, cands, epsilon2)
    scales = noise_scales(cands, epsilon1, mode, stage)
    noisy = costs.copy()
    for scale in np.unique(scales[scales > 0]):  # one measurement per candidate noise scale
        cols = scales == scale
        noisy[:, cols] = NOISES[stage.noise](float(scale)).apply(
            costs[:, cols], source, label="ranges: DAWA Stage 1 bucket costs")
    noisy += penalty * scales[None, :, None]
    if mode == "reference":
        noisy = np.maximum(noisy, 1.0 / epsilon2)
    return least_cost_marks(noisy, cands)
