"""Phase 1 of Kuo et al.'s Algorithm 1, the only step that reads the data: the per-node
estimators Naive, Hg and Hc of paper sec. 4 (spec ``shared/specs/group-sizes-kuo.md`` sec.
2.1-2.3), each vectorised over the nodes of one level of a `Hierarchy`.

Contract: a level's true histograms (n_nodes_of_level, N + 1) over sizes 0..N (N = the public
top-code), whose rows sum to the public G_v, go in; noise of scale sensitivity / epsilon_l is
added to what the estimator measures (the cumulative histogram for Hc, the sorted group sizes
for Hg, the plain histogram for Naive), the result is made monotone (`isotonic`) and rounded,
and an integer estimate (n, N + 1) with rows summing to G_v comes out, plus a `Phase1Info`
telling `kuo_variance` how it was measured. Hc and Hg are each a measurement, in batches
(`hc_draws`, `hg_draws`), and a fit that never pools two nodes (`hc_fit`, `hg_fit`), so the
measurements of several releases can be fitted together (`kuo.kuo_release_trials`).

Reimplemented from the project's reading of the paper, ``shared/specs/group-sizes-kuo.md``
("the spec"; the paper's formulas were lost in conversion, so the spec tags them as stated,
reconstructed or guessed). Where a choice had to be made it is named in the docstring of
the function concerned.

Privacy (spec 1.3-1.5; the caller does the accounting):

* Neighbouring datasets differ by one person added to, or removed from, an *existing*
  group. The groups, their regions and so every ``G_v`` are public; no household-level
  protection is given. (A "move one person" neighbour doubles every sensitivity.)
* One person changes one node per level. Per level (parallel composition over its disjoint
  nodes) the L1 sensitivity is 1 for Hc (one cell of one cumulative histogram) and for Hg
  (one rank of one sorted size list), 2 for Naive (two cells of a plain histogram). The
  caller gives the measuring stage of the mechanism's privacy plan (``stage``,
  `hierdp_core.mechanisms.group_sizes`): its noise and sensitivity, and the noise at its
  exact scale (`Stage.noise_for`), so no scale is computed here.
* The levels compose sequentially: a release with ``epsilon_per_level`` costs
  ``sum(epsilon_per_level)``. Everything after the noise (isotonic regression, rounding,
  variance estimates, matching, merging, back-substitution) is post-processing.
* ``NoiseSource(seed=...)`` is numpy's PRNG: fine for exploration, not production DP
  (spec pitfall 17); ``NoiseSource(secure=True)`` draws through OpenDP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hierdp_core.consistency.segments import project_segments
from hierdp_core.errors import InputError, MechanismError
from hierdp_core.groupsizes.isotonic import isotonic_box_rows, isotonic_l1_segments, pava_blocks
from hierdp_core.groupsizes.kuo_runs import (
    Runs,
    _check_choice,
    _empty_runs,
    _round_half_up,
    stack_runs,
)
from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import Noise, NoiseSource

NOISES = ("geometric", "laplace")
METHODS = ("hc", "hg")
NOISE_VARIANCES = ("laplace", "exact")
CHUNK = 1 << 24  # values per batch in Phase 1 (bounds the temporary memory)


@dataclass(frozen=True, eq=False)
class Phase1Info:
    """What the variance estimation needs to know about a level's Phase-1 measurement.

    ``blocks`` (Hg only): the constant pieces of the isotonic fit before rounding (PAV
    blocks for p = 2), as runs: value = the rounded, clipped size of the block, count = the
    block's number of groups (``var`` is nan). ``cells`` (Hc, when fitted): the estimate's
    non-zero cells as `Runs.from_hist` gives them, made from the fit's blocks.
    """

    method: str  # "hc" or "hg"
    epsilon: float  # the level's budget epsilon_l
    stage: Stage  # the plan's measuring stage: noise, L1 sensitivity per level
    p: int  # isotonic loss
    blocks: Runs | None = None
    cells: Runs | None = None  # Hc: the estimate's non-zero cells (`Runs.from_hist`)

    def noise_variance(self, kind: str = "laplace") -> float:
        """Variance of one noise draw: ``"laplace"`` = 2 scale^2 (scale = sensitivity / eps,
        the stage's), the paper's approximation (spec 1.5, pitfall 14, the default);
        ``"exact"`` = the variance of the distribution actually used (smaller for the
        geometric at large eps)."""
        _check_choice("noise_variance", kind, NOISE_VARIANCES)
        if kind == "laplace":
            return 2.0 * self.stage.scale_for(self.epsilon) ** 2
        return _noise(self.stage, self.epsilon).variance


def _noise(stage: Stage, epsilon: float) -> Noise:
    """The plan stage's noise (double-geometric or Laplace) at its exact scale for
    ``epsilon`` (`Stage.noise_for`: sensitivity / epsilon)."""
    _check_choice("noise", stage.noise, NOISES)
    return stage.noise_for(epsilon)


def _check_level(hist_level, groups_level) -> tuple[np.ndarray, np.ndarray]:
    """Histograms (n, N + 1) of non-negative integers whose rows sum to the public G."""
    hist = np.asarray(hist_level)
    if hist.ndim != 2 or hist.shape[1] < 1:
        raise InputError(f"a level's histograms must have shape (n_nodes, N + 1), got "
                         f"{hist.shape}")
    if hist.size and (hist.dtype.kind not in "iu" and not np.all(hist == np.rint(hist))):
        raise InputError("histogram counts must be integers")
    hist = np.asarray(hist, dtype=np.int64)  # no copy of int64 counts (read only here)
    if hist.size and hist.min() < 0:
        raise InputError("histogram counts must be non-negative")
    groups = np.asarray(groups_level).astype(np.int64).reshape(-1)
    if groups.shape != (hist.shape[0],):
        raise InputError(f"expected {hist.shape[0]} group counts, got {groups.shape}")
    bad = np.flatnonzero(hist.sum(axis=1) != groups)
    if bad.size:
        raise InputError(f"histogram rows must sum to the public number of groups G_v; "
                         f"{bad.size} node(s) differ, e.g. index {int(bad[0])}")
    return hist, groups


def _chunks(weights: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Consecutive node ranges covering all nodes: the nodes of a range start (in the
    cumulative weight) within one window of ``limit``, so a range weighs less than
    ``limit`` plus its last node's weight (a node heavier than ``limit`` ends its range)."""
    n = weights.size
    if n == 0:
        return []
    start = np.cumsum(weights) - weights
    key = start // max(int(limit), 1)
    cuts = np.flatnonzero(np.diff(key)) + 1
    bounds = np.concatenate([[0], cuts, [n]])
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _isotonic_level(hist_level, groups_level, epsilon_level: float, *, p: int,
                    stage: Stage) -> tuple[np.ndarray, np.ndarray, Noise]:
    """The checked level (`_check_level`) and the noise of an isotonic estimator (Hc, Hg)."""
    hist, groups = _check_level(hist_level, groups_level)
    if p not in (1, 2):
        raise MechanismError(f"the isotonic loss p must be 1 or 2, got {p!r}")
    return hist, groups, _noise(stage, epsilon_level)


# ---- the estimators ---------------------------------------------------------------------
def hc_level(
    hist_level: np.ndarray,
    groups_level: np.ndarray,
    epsilon_level: float,
    source: NoiseSource,
    *,
    p: int = 2,
    stage: Stage,
) -> tuple[np.ndarray, Phase1Info]:
    """Hc (spec 2.3): every node's cumulative histogram, noised, made monotone, rounded.

    Per node v of the level: ``Hc = cumsum(H)`` over sizes 0..N; cells 0..N-1 get
    independent noise of the plan ``stage``'s scale sensitivity/eps_l (the L1 sensitivity
    per level is 1, Lemma 4, as the mechanism's privacy plan states); the last
    cell is the public G_v and is pinned, not noised (pitfall 4). Then the isotonic
    regression subject to 0 <= x_0 <= ... <= x_{N-1} <= G_v (p = 2: PAV then clip, exact;
    p = 1: the exact L1 fit of `isotonic_l1_segments`, which returns integers for integer
    input), round half up, and decumulate. The size cap is the public N of the input
    (groups above N were top-coded by the data model, pitfall 3).

    Returns ``(estimate, info)``: ``estimate`` (n, N + 1) int64, >= 0, rows summing to
    G_v; ``info`` for `estimate_variances`. All nodes in a few batched calls (no Python
    loop per node).
    """
    hist, groups, gen = _isotonic_level(hist_level, groups_level, epsilon_level, p=p,
                                        stage=stage)
    est = np.zeros(hist.shape, dtype=np.int64)
    return est, hc_estimate(est, hc_truth(hist), groups, gen, source, epsilon_level, p, stage)


def hc_truth(hist: np.ndarray) -> np.ndarray:
    """What Hc measures of a checked level, the same for all its releases: every row's
    cumulative cells 0..N-1 (the last, G_v, is public), C-contiguous (n, N)."""
    return np.cumsum(hist[:, :-1], axis=1)


def hc_estimate(est: np.ndarray, truth: np.ndarray, groups: np.ndarray, gen: Noise,
                source: NoiseSource, epsilon_level: float, p: int, stage: Stage) -> Phase1Info:
    """`hc_level` of a checked level measuring ``truth`` (`hc_truth`), into ``est`` (zeros
    of the level's shape): its `Phase1Info`."""
    est[:, -1] = groups
    cells = []
    for a, b, noisy in hc_draws(truth, gen, source, epsilon_level, stage):
        cells.append((a, hc_fit(est[a:b], noisy, groups[a:b], p)))
        del noisy
    return Phase1Info("hc", float(epsilon_level), stage, p, cells=stack_runs(cells, len(est))
                      if cells else None)


def hc_draws(truth: np.ndarray, gen: Noise, source: NoiseSource, epsilon_level: float,
             stage: Stage):
    """Hc's measurement of a checked level (its `hc_truth`), in batches of whole rows:
    ``(a, b, noisy)``, the noisy cumulative cells 0..N-1 of rows ``a..b-1``, drawn in that
    order (the last cell, G_v, is public: not drawn)."""
    n, size = truth.shape
    if size == 0:
        return
    for a, b in _chunks(np.full(n, size), CHUNK):
        yield a, b, gen.apply(truth[a:b], source, sensitivity=stage.sensitivity,
                              budget=epsilon_level, label="group sizes: Hc cumulative counts")


def hc_fit(est: np.ndarray, noisy: np.ndarray, groups: np.ndarray, p: int) -> Runs:
    """Hc's estimate of rows from their noisy cumulative cells (`hc_draws`), into ``est``
    (those rows, the last column their G_v): isotonic fit in [0, G_v], rounded half up,
    decumulated. Rows are fitted each on its own (`isotonic_box_rows`). Returns the
    estimate's non-zero cells as runs (`Runs.from_hist` of ``est``, from the fit's blocks)."""
    starts, fit = isotonic_box_rows(noisy, groups, p)
    return _decumulate_blocks(est, starts, _round_half_up(fit))


def _decumulate_blocks(est: np.ndarray, starts: np.ndarray, value: np.ndarray) -> Runs:
    """Into ``est`` (rows of zeros but the last column, the public G_v): the histograms of
    cumulative rows that are ``value[b]`` from flat cell ``starts[b]`` (of the rows without
    their last column; every row's first cell a start) up to the next start, G_v in the last
    column. A row's histogram is its steps: the first value, then each change, then G_v
    minus the last value (the same integers as decumulating the full rows, without them).
    Returns the cells written that are not 0, as `Runs.from_hist` gives them (row by row,
    by size: a row's steps, then its last column)."""
    size = est.shape[1] - 1
    row, column = np.divmod(starts, size)
    value = value.astype(np.int64)
    first = np.ones(starts.size + 1, dtype=bool)  # a row's first block (and one past)
    first[1:-1] = row[1:] != row[:-1]
    last = first[1:]  # a row's last block
    est[row, column] = steps = value - np.where(first[:-1], 0, np.roll(value, 1))
    est[row[last], size] = top = est[row[last], size] - value[last]
    at = np.arange(starts.size) + np.cumsum(last) - last  # each step, after earlier rows' tops
    node, cell, count = (np.empty(starts.size + top.size, dtype=np.int64) for _ in range(3))
    node[at], cell[at], count[at] = row, column, steps
    tops = at[last] + 1
    node[tops], cell[tops], count[tops] = row[last], size, top
    kept = np.flatnonzero(count)
    return Runs(node[kept], cell[kept].astype(np.float64), np.full(kept.size, np.nan),
                count[kept], len(est))


def hg_level(
    hist_level: np.ndarray,
    groups_level: np.ndarray,
    epsilon_level: float,
    source: NoiseSource,
    *,
    p: int = 2,
    chunk: int = CHUNK,
    stage: Stage,
) -> tuple[np.ndarray, Phase1Info]:
    """Hg (spec 2.2): every node's sorted list of group sizes, noised per group, made
    monotone, rounded, counted back into a histogram.

    Per node v: the ascending sizes of its G_v groups (size-0 groups included), the plan
    ``stage``'s noise of scale sensitivity/eps_l on each entry (L1 sensitivity 1 per
    level), the isotonic regression with
    0 <= x_0 <= ... (p = 2, the paper's choice: PAV via scipy, then clip; p = 1: exact L1
    fit, slower), round half up, bincount. **Output sizes are clipped at the public N**
    (the paper's Hg has no cap; clipping to the input's size domain is post-processing and
    only lowers the error, since no true size exceeds N) so the result has N + 1 columns.

    Memory: the noise is per group (G can be ~1e8), drawn ``chunk`` values at a time into
    an int32 (geometric) or float64 (Laplace) vector per batch of whole nodes; all nodes of
    a batch go through one PAVA call. After the fit only blocks (run-length encoding)
    are kept. Returns ``(estimate (n, N + 1) int64, info)``; ``info.blocks`` holds the
    blocks for the "blocks" variance switch.
    """
    hist, groups, gen = _isotonic_level(hist_level, groups_level, epsilon_level, p=p,
                                        stage=stage)
    est = np.zeros(hist.shape, dtype=np.int64)
    parts = [hg_fit(est, nodes, groups[nodes], y, p)
             for nodes, y in hg_draws(hist, groups, gen, source, epsilon_level, stage, chunk)]
    return est, Phase1Info("hg", float(epsilon_level), stage, p, hg_blocks(parts, len(est)))


def hg_draws(hist: np.ndarray, groups: np.ndarray, gen: Noise, source: NoiseSource,
             epsilon_level: float, stage: Stage, chunk: int = CHUNK):
    """Hg's measurement of a checked level, in batches of whole nodes: ``(nodes, y)``, the
    nodes with groups (indices in the level) and their ascending group sizes, concatenated,
    each with its noise, drawn in that order."""
    for a, b in _chunks(groups, chunk):
        nodes = a + np.flatnonzero(groups[a:b] > 0)
        if nodes.size:
            yield nodes, _noisy_sorted_sizes(hist[nodes], gen, source, chunk, epsilon_level,
                                             stage.sensitivity)


def hg_fit(est: np.ndarray, nodes: np.ndarray, g: np.ndarray, y: np.ndarray, p: int):
    """Hg's estimate of ``nodes`` (``g`` groups each) from their noisy sorted sizes ``y``
    (`hg_draws`), added to ``est`` (n, N + 1): every node's isotonic fit on its own, clipped
    to [0, N], rounded half up, counted. Returns the fit's blocks ``(node, value, size)``."""
    n, width = est.shape
    size = width - 1
    starts = np.concatenate([[0], np.cumsum(g[:-1])])
    if p == 2:
        bstart, bval = pava_blocks(y, starts)
    else:
        fit = isotonic_l1_segments(np.clip(y, 0, size), starts)
        change = np.ones(fit.size, dtype=bool)
        change[1:] = fit[1:] != fit[:-1]
        change[starts] = True
        bstart = np.flatnonzero(change)
        bval = fit[bstart]
    bsize = np.diff(np.append(bstart, int(g.sum())))
    bnode = nodes[np.searchsorted(starts, bstart, side="right") - 1]
    bval = _round_half_up(np.clip(bval, 0, size))
    est += np.bincount(bnode * width + bval.astype(np.int64), weights=bsize,
                       minlength=n * width).astype(np.int64).reshape(n, width)
    return bnode, bval, bsize


def hg_blocks(parts: list, n: int) -> Runs:
    """`Phase1Info.blocks` of a level of ``n`` nodes from the blocks of its `hg_fit`s."""
    if not parts:
        return _empty_runs(n)
    node, value, count = (np.concatenate(x) for x in zip(*parts, strict=True))
    return Runs(node.astype(np.int64), value, np.full(node.size, np.nan),
                count.astype(np.int64), n)


def _noisy_sorted_sizes(hist: np.ndarray, gen: Noise, source: NoiseSource,
                        chunk: int, epsilon_level: float, sensitivity: float) -> np.ndarray:
    """The nodes' ascending size lists, concatenated, plus one noise draw per entry.

    Integer noise is stored as int32 when the scale is small enough that a noisy value
    beyond +-2^30 has probability < 1e-27 per draw; such values are clamped to +-2^30
    (post-processing of the noisy value, so privacy is unaffected; the fit is clipped to
    [0, N] anyway). Other cases use int64 / float64."""
    width = hist.shape[1]
    sizes = np.repeat(np.tile(np.arange(width, dtype=np.int32), hist.shape[0]), hist.ravel())
    small = gen.integer and 64 * gen.scale + width < 2**30
    dtype = np.int32 if small else (np.int64 if gen.integer else np.float64)
    y = np.empty(sizes.size, dtype=dtype)
    step = max(int(chunk), 1)
    for i in range(0, y.size, step):
        j = min(i + step, y.size)
        noisy = gen.apply(sizes[i:j], source, sensitivity=sensitivity,
                          budget=epsilon_level, label="group sizes: Hg sorted sizes")
        if small:
            np.clip(noisy, -(2**30), 2**30, out=noisy)
        y[i:j] = noisy
    return y


def naive_level(
    hist_level: np.ndarray,
    groups_level: np.ndarray,
    epsilon_level: float,
    source: NoiseSource,
    *,
    stage: Stage,
) -> np.ndarray:
    """Naive (spec 2.1, the baseline that fails): the plain histogram over sizes 0..N with
    the plan ``stage``'s noise of scale sensitivity/eps_l on every cell (the L1
    sensitivity per level is 2, Lemma 3; pitfall 7),
    the Euclidean projection onto {x >= 0, sum x = G_v} (exact, by sorting), then
    largest-remainder rounding (ties to the smaller size). Returns (n, N + 1) int64, >= 0,
    rows summing to G_v. Noise on empty cells creates phantom groups at large sizes, so the
    emd grows with N (spec 4.3). No variance estimate: not used in the hierarchy."""
    hist, groups = _check_level(hist_level, groups_level)
    n, width = hist.shape
    gen = _noise(stage, epsilon_level)
    noisy = gen.apply(hist, source, sensitivity=stage.sensitivity, budget=epsilon_level,
                      label="group sizes: size histograms").astype(np.float64)
    starts = np.arange(n, dtype=np.int64) * width
    proj = project_segments(noisy.ravel(), starts, groups.astype(np.float64))
    return largest_remainder_rows(proj.reshape(n, width), groups)


def largest_remainder_rows(x: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Integers from non-negative reals ``x`` (n, k) whose rows sum to ``totals`` exactly:
    floors, plus one on the cells with the largest fractional parts (ties: lower index).
    Rows of ``x`` must sum to their total up to float error."""
    x = np.maximum(np.asarray(x, dtype=float), 0.0)
    totals = np.asarray(totals, dtype=np.int64)
    floors = np.floor(x)
    deficit = totals - floors.sum(axis=1).astype(np.int64)
    if np.any(deficit < 0) or np.any(deficit > x.shape[1]):
        raise MechanismError("largest-remainder rounding: rows do not sum to their totals")
    order = np.argsort(-(x - floors), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(x.shape[1])[None, :], axis=1)
    return floors.astype(np.int64) + (rank < deficit[:, None])
