"""Kuo, Chiu, Kifer, Hay & Machanavajjhala (2018), "Differentially private hierarchical
group size estimation": the per-node estimators Naive, Hg and Hc, the variance heuristics,
the optimal matching (Algorithm 2), the merge, and the top-down consistency of Algorithm 1,
as functions on whole levels of a `Hierarchy`.

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
  caller gives it (``sensitivity``): the registered mechanisms read it from their privacy
  plan (`hierdp_core.mechanisms.group_sizes`), and the noise is calibrated to it.
* The levels compose sequentially: a release with ``epsilon_per_level`` costs
  ``sum(epsilon_per_level)``. Everything after the noise (isotonic regression, rounding,
  variance estimates, matching, merging, back-substitution) is post-processing.
* ``NoiseSource(seed=...)`` is numpy's PRNG: fine for exploration, not production DP
  (spec pitfall 17); ``NoiseSource(secure=True)`` draws through OpenDP.

Arrays: histograms have shape (n_nodes_of_level, N + 1) over sizes 0..N (N = the public
top-code). Ranked group sizes are kept run-length encoded in `Runs` (one run = a number of
groups of one node sharing a value and a variance), so everything after the noise costs
O(runs), not O(groups).

Example
-------
>>> import pandas as pd
>>> from hierdp_core.hierarchy import build_hierarchy
>>> from hierdp_core.privacy.samplers import NoiseSource
>>> h, _ = build_hierarchy(pd.DataFrame({"state": ["A", "B"]}), ["state"])
>>> leaves = np.array([[0, 5, 3, 1], [2, 0, 4, 0]])
>>> hist = h.aggregate(leaves)
>>> out, phase1 = kuo_release(h, hist, hist.sum(1), [1e9, 1e9], ("hg", "hc"),
...                           NoiseSource(seed=0), sensitivity=1.0)
>>> out.tolist()  # no noise at this budget: the truth comes back
[[2, 5, 7, 1], [0, 5, 3, 1], [2, 0, 4, 0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hierdp_core.consistency.segments import project_segments, segment_ids
from hierdp_core.errors import InputError, MechanismError
from hierdp_core.groupsizes.data import cumulative, decumulate
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.privacy.samplers import Geometric, Laplace, Noise, NoiseSource

NOISES = ("geometric", "laplace")
METHODS = ("hc", "hg")
MERGES = ("weighted", "simple")
HG_COUNTS = ("equal", "blocks")
HC_DIVISORS = ("count", "count_squared")
TIE_SPLITS = ("proportional", "first_child")
NOISE_VARIANCES = ("laplace", "exact")
CHUNK = 1 << 24  # values per batch in Phase 1 (bounds the temporary memory)


# ---- run-length encoded ranked group sizes ---------------------------------------------
@dataclass(frozen=True, eq=False)
class Runs:
    """The ranked group sizes of every node of one level, run-length encoded.

    Run ``r`` stands for ``count[r] > 0`` groups of node ``node[r]`` (index within the
    level) that all have the size estimate ``value[r]`` and the variance estimate
    ``var[r]``. Runs are sorted by node, then by value (non-decreasing), so a node's groups
    in ranked order are its runs in order. Several runs of one node may share a value (with
    different variances).
    """

    node: np.ndarray  # int64
    value: np.ndarray  # float64, integral once rounded
    var: np.ndarray  # float64, >= 0 (nan where not estimated yet)
    count: np.ndarray  # int64, > 0
    n_nodes: int

    @classmethod
    def from_hist(cls, hist: np.ndarray, var: np.ndarray | None = None) -> Runs:
        """One run per non-zero cell of ``hist`` (n_nodes, N + 1); ``var`` (same shape,
        optional) gives each cell's variance (nan otherwise)."""
        hist = np.asarray(hist)
        node, size = np.nonzero(hist)
        v = np.full(node.size, np.nan) if var is None else np.asarray(var, float)[node, size]
        return cls(node.astype(np.int64), size.astype(np.float64), v,
                   hist[node, size].astype(np.int64), hist.shape[0])

    def with_var(self, var: np.ndarray) -> Runs:
        return Runs(self.node, self.value, np.asarray(var, dtype=float), self.count,
                    self.n_nodes)

    def groups(self) -> np.ndarray:
        """Number of groups of every node (n_nodes,) int64."""
        return np.bincount(self.node, weights=self.count,
                           minlength=self.n_nodes).astype(np.int64)

    def to_hist(self, max_size: int) -> np.ndarray:
        """The histograms (n_nodes, max_size + 1) int64 (values must be integers in range)."""
        width = max_size + 1
        cells = self.node * width + self.value.astype(np.int64)
        return np.bincount(cells, weights=self.count, minlength=self.n_nodes * width) \
            .astype(np.int64).reshape(self.n_nodes, width)

    def expand(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        """One node's groups in ranked order: (values, variances), one entry per group
        (for inspection and tests; O(groups))."""
        sel = self.node == node
        return (np.repeat(self.value[sel], self.count[sel]),
                np.repeat(self.var[sel], self.count[sel]))


def _coalesce(node, value, var, count, n_nodes) -> Runs:
    """Runs from sorted arrays, merging neighbours with equal (node, value, var)."""
    if node.size == 0:
        return _empty_runs(n_nodes)
    new = np.ones(node.size, dtype=bool)
    new[1:] = (node[1:] != node[:-1]) | (value[1:] != value[:-1]) | (var[1:] != var[:-1])
    starts = np.flatnonzero(new)
    return Runs(node[starts].astype(np.int64), value[starts].astype(np.float64),
                var[starts].astype(np.float64),
                np.add.reduceat(count, starts).astype(np.int64), n_nodes)


def _empty_runs(n_nodes: int) -> Runs:
    return Runs(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int64),
                n_nodes)


# ---- Phase 1 bookkeeping ---------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Phase1Info:
    """What the variance estimation needs to know about a level's Phase-1 measurement.

    ``blocks`` (Hg only): the constant pieces of the isotonic fit before rounding (PAV
    blocks for p = 2), as runs: value = the rounded, clipped size of the block, count = the
    block's number of groups (``var`` is nan).
    """

    method: str  # "hc" or "hg"
    epsilon: float  # the level's budget epsilon_l
    noise: str  # "geometric" or "laplace"
    p: int  # isotonic loss
    sensitivity: float  # L1, per level: the noise's scale is sensitivity / epsilon
    blocks: Runs | None = None

    def noise_variance(self, kind: str = "laplace") -> float:
        """Variance of one noise draw: ``"laplace"`` = 2 (sensitivity / eps)^2, the paper's
        approximation (spec 1.5, pitfall 14, the default); ``"exact"`` = the variance of the
        distribution actually used (smaller for the geometric at large eps)."""
        _check_choice("noise_variance", kind, NOISE_VARIANCES)
        if kind == "laplace":
            return 2.0 * (self.sensitivity / self.epsilon) ** 2
        return _noise(self.noise, self.epsilon, self.sensitivity).variance


def _check_choice(name: str, value, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise MechanismError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def _noise(kind: str, epsilon: float, sensitivity: float) -> Noise:
    """Double-geometric (default) or Laplace noise with scale sensitivity / epsilon."""
    _check_choice("noise", kind, NOISES)
    if kind == "geometric":
        return Geometric.for_epsilon(epsilon, sensitivity)
    return Laplace.for_epsilon(epsilon, sensitivity)


def _check_level(hist_level, groups_level) -> tuple[np.ndarray, np.ndarray]:
    """Histograms (n, N + 1) of non-negative integers whose rows sum to the public G."""
    hist = np.asarray(hist_level)
    if hist.ndim != 2 or hist.shape[1] < 1:
        raise InputError(f"a level's histograms must have shape (n_nodes, N + 1), got "
                         f"{hist.shape}")
    if hist.size and (hist.dtype.kind not in "iu" and not np.all(hist == np.rint(hist))):
        raise InputError("histogram counts must be integers")
    hist = hist.astype(np.int64)
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


def _round_half_up(x: np.ndarray) -> np.ndarray:
    """Nearest integer, halves up (monotone, so a sorted vector stays sorted)."""
    return np.floor(np.asarray(x, dtype=float) + 0.5)


# ---- isotonic regression on many segments at once --------------------------------------
def _segment_starts(starts, size: int) -> np.ndarray:
    starts = np.asarray(starts, dtype=np.int64)
    if size and (starts.size == 0 or starts[0] != 0 or np.any(np.diff(starts) <= 0)
                 or starts[-1] >= size):
        raise InputError("segment starts must begin at 0 and increase strictly inside the "
                         "array (every segment non-empty)")
    return starts


def pava_blocks(y: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L2 isotonic regression (non-decreasing) of every segment of ``y``, as blocks.

    Segment ``s`` is ``y[starts[s]:starts[s + 1]]``. Returns ``(block_starts, means)``: the
    fit is constant ``means[b]`` on ``y[block_starts[b]:block_starts[b + 1]]``; every
    segment start is a block start. One call of `scipy.optimize.isotonic_regression` (O(n)
    PAVA) for all segments: each segment is shifted into its own value range, above the
    previous one, so no block can straddle two segments (the segments' problems are
    separable and each optimum lies within its segment's data range). The block means are
    then recomputed from the unshifted data (exact sums for integer data).
    """
    try:
        from scipy.optimize import isotonic_regression
    except ImportError as exc:  # pragma: no cover - scipy < 1.12
        raise MechanismError("Kuo et al.'s estimators need scipy >= 1.12 "
                             "(scipy.optimize.isotonic_regression)") from exc
    y = np.asarray(y)
    m = y.size
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    starts = _segment_starts(starts, m)
    if starts.size == 1:
        shifted = y
    else:
        lo = np.minimum.reduceat(y, starts).astype(np.float64)
        span = np.maximum.reduceat(y, starts) - lo + 1.0
        base = np.concatenate([[0.0], np.cumsum(span[:-1])])
        shifted = y + np.repeat(base - lo, np.diff(np.append(starts, m)))
    blocks = isotonic_regression(shifted).blocks[:-1].astype(np.int64)
    del shifted
    sums = np.add.reduceat(y, blocks, dtype=np.int64 if y.dtype.kind in "iu" else np.float64)
    return blocks, sums / np.diff(np.append(blocks, m))


def isotonic_l2_segments(y: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """argmin_x sum (x - y)^2 with x non-decreasing within every segment (full length)."""
    y = np.asarray(y)
    blocks, means = pava_blocks(y, starts)
    return np.repeat(means, np.diff(np.append(blocks, y.size)))


def isotonic_l1_segments(y: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """argmin_x sum |x - y| with x non-decreasing within every segment (exact; one of the
    optimal solutions, with values taken from the candidate set below).

    Divide and conquer on the value range (the threshold decomposition of L1 isotonic
    regression): for a sub-problem (a run of positions with candidate values D[lo..hi]),
    the binary problem at the threshold between D[mid] and D[mid + 1] is solved exactly by
    a prefix sum (the smallest split k minimising #{i < k: y_i > D[mid]} + #{i >= k: y_i
    <= D[mid]}); positions before k take values in D[lo..mid], the rest in D[mid+1..hi].
    All sub-problems of all segments advance together, one vectorised pass per halving,
    and settled sub-problems leave the working set: O(n log |D|). Candidates D: a
    segment's sorted distinct values (one sort), or, for integer data spanning few values
    (e.g. Hg sizes clipped to [0, N]), the whole integer range (no sort; an optimum with
    values in the data exists, so a superset of candidates changes nothing). For the
    threshold decomposition and partitioning see Stout, "Isotonic regression via
    partitioning" (Algorithmica 2013); the tests check the objective against an LP.
    """
    y = np.asarray(y)
    m = y.size
    if m == 0:
        return np.zeros(0)
    starts = _segment_starts(starts, m)
    rank, decode = _l1_ranks(y, starts)
    idx = rank.dtype
    out = np.empty(m, dtype=idx)
    active = np.arange(m, dtype=idx)  # positions still being split, grouped by sub-problem
    sub = starts.astype(idx)  # sub-problem starts within `active`
    lo = np.minimum.reduceat(rank, starts)
    hi = np.maximum.reduceat(rank, starts)
    while active.size:
        lengths = np.diff(np.append(sub, active.size)).astype(idx)
        sid = np.repeat(np.arange(sub.size, dtype=idx), lengths)
        done = lo == hi
        if done.any():  # settled: assign the value, drop from the working set
            el = done[sid]
            out[active[el]] = lo[sid[el]]
            active = active[~el]
            lengths, lo, hi = lengths[~done], lo[~done], hi[~done]
            sub = np.cumsum(lengths, dtype=idx) - lengths
            sid = np.repeat(np.arange(sub.size, dtype=idx), lengths)
            if active.size == 0:
                break
        mid = (lo + hi) // 2
        c = np.cumsum(np.where(rank[active] > mid[sid], 1, -1).astype(idx), dtype=idx)
        c -= np.concatenate([np.zeros(1, idx), c])[sub][sid]  # restart per sub-problem
        cmin = np.minimum.reduceat(c, sub)
        first = np.minimum.reduceat(np.where(c == cmin[sid], np.arange(active.size, dtype=idx),
                                             active.size), sub)
        del c, sid
        k = np.where(cmin < 0, first + 1 - sub, 0).astype(idx)  # smallest optimal split
        new_sub = np.stack([sub, sub + k], axis=1).ravel()
        new_lo = np.stack([lo, mid + 1], axis=1).ravel()
        new_hi = np.stack([mid, hi], axis=1).ravel()
        keep = np.stack([k, lengths - k], axis=1).ravel() > 0
        sub, lo, hi = new_sub[keep], new_lo[keep], new_hi[keep]
    del rank, active
    return decode(out)


def _l1_ranks(y: np.ndarray, starts: np.ndarray):
    """Order-preserving integer codes of ``y`` whose ranges are disjoint across segments
    (later segments higher), and the function mapping codes back to values."""
    m = y.size
    seg = segment_ids(starts, m)
    if y.dtype.kind in "iu":
        ymin = np.minimum.reduceat(y, starts).astype(np.int64)
        span = np.maximum.reduceat(y, starts).astype(np.int64) - ymin + 1
        offset = np.concatenate([[0], np.cumsum(span[:-1])]) - ymin
        n_codes = int(span.sum())
        idx = np.int32 if max(n_codes, m) < 2**31 - 1 else np.int64
        if n_codes <= 4 * m:  # few values: the integer range itself

            def decode(code):
                return (code - offset[segment_ids(starts, m)]).astype(np.float64)

            return (y + offset[seg]).astype(idx), decode
        keys, rank = np.unique(y.astype(np.int64) + offset[seg], return_inverse=True)
        distinct = (keys - offset[np.searchsorted(offset + ymin, keys, side="right") - 1])
        return rank.reshape(-1).astype(idx), lambda code: distinct[code].astype(np.float64)
    order = np.lexsort((y, seg))
    ys, ss = y[order], seg[order]
    new = np.ones(m, dtype=bool)
    new[1:] = (ys[1:] != ys[:-1]) | (ss[1:] != ss[:-1])
    distinct = ys[new].astype(np.float64)
    idx = np.int32 if m < 2**31 - 1 else np.int64
    rank = np.empty(m, dtype=idx)
    rank[order] = np.cumsum(new) - 1
    return rank, lambda code: distinct[code]


def isotonic_segments(y: np.ndarray, starts: np.ndarray, *, p: int = 2) -> np.ndarray:
    """Isotonic regression of every segment under the L``p`` loss, p in {1, 2}."""
    if p == 2:
        return isotonic_l2_segments(y, starts)
    if p == 1:
        return isotonic_l1_segments(y, starts)
    raise MechanismError(f"the isotonic loss p must be 1 or 2, got {p!r}")


def _isotonic_box(y: np.ndarray, starts: np.ndarray, upper: np.ndarray, p: int) -> np.ndarray:
    """Isotonic regression of every segment constrained to [0, upper[segment]], exact:
    L2: the unconstrained PAV fit clipped (exact for L2); L1: the data clipped first (for
    x in the box, |x - y| and |x - clip(y)| differ by a constant) then the exact L1 fit,
    whose values come from the clipped data."""
    seg_len = np.diff(np.append(starts, y.size))
    up = np.repeat(upper, seg_len)
    if p == 1:
        return isotonic_l1_segments(np.clip(y, 0, up), starts)
    return np.clip(isotonic_segments(y, starts, p=p), 0, up)


# ---- Phase 1: per-node estimators, vectorised over a level ------------------------------
def hc_level(
    hist_level: np.ndarray,
    groups_level: np.ndarray,
    epsilon_level: float,
    source: NoiseSource,
    *,
    p: int = 2,
    noise: str = "geometric",
    sensitivity: float,
) -> tuple[np.ndarray, Phase1Info]:
    """Hc (spec 2.3): every node's cumulative histogram, noised, made monotone, rounded.

    Per node v of the level: ``Hc = cumsum(H)`` over sizes 0..N; cells 0..N-1 get
    independent noise of scale sensitivity/eps_l (the L1 sensitivity per level is 1,
    Lemma 4, as the mechanism's privacy plan states); the last
    cell is the public G_v and is pinned, not noised (pitfall 4). Then the isotonic
    regression subject to 0 <= x_0 <= ... <= x_{N-1} <= G_v (p = 2: PAV then clip, exact;
    p = 1: the exact L1 fit of `isotonic_l1_segments`, which returns integers for integer
    input), round half up, and decumulate. The size cap is the public N of the input
    (groups above N were top-coded by the data model, pitfall 3).

    Returns ``(estimate, info)``: ``estimate`` (n, N + 1) int64, >= 0, rows summing to
    G_v; ``info`` for `estimate_variances`. All nodes in a few batched calls (no Python
    loop per node).
    """
    hist, groups = _check_level(hist_level, groups_level)
    if p not in (1, 2):
        raise MechanismError(f"the isotonic loss p must be 1 or 2, got {p!r}")
    n, width = hist.shape
    size = width - 1
    gen = _noise(noise, epsilon_level, sensitivity)
    est_cum = np.empty((n, width), dtype=np.int64)
    est_cum[:, -1] = groups
    if size:
        cum = cumulative(hist)
        for a, b in _chunks(np.full(n, size), CHUNK):
            noisy = gen.apply(cum[a:b, :size], source, sensitivity=sensitivity,
                              budget=epsilon_level, label="group sizes: Hc cumulative counts")
            starts = np.arange(b - a, dtype=np.int64) * size
            fit = _isotonic_box(noisy.ravel(), starts, groups[a:b], p)
            est_cum[a:b, :size] = _round_half_up(fit).reshape(b - a, size)
    return decumulate(est_cum), Phase1Info("hc", float(epsilon_level), noise, p,
                                           float(sensitivity))


def hg_level(
    hist_level: np.ndarray,
    groups_level: np.ndarray,
    epsilon_level: float,
    source: NoiseSource,
    *,
    noise: str = "geometric",
    p: int = 2,
    chunk: int = CHUNK,
    sensitivity: float,
) -> tuple[np.ndarray, Phase1Info]:
    """Hg (spec 2.2): every node's sorted list of group sizes, noised per group, made
    monotone, rounded, counted back into a histogram.

    Per node v: the ascending sizes of its G_v groups (size-0 groups included), noise of
    scale sensitivity/eps_l on each entry (L1 sensitivity 1 per level), the isotonic regression with
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
    hist, groups = _check_level(hist_level, groups_level)
    if p not in (1, 2):
        raise MechanismError(f"the isotonic loss p must be 1 or 2, got {p!r}")
    n, width = hist.shape
    size = width - 1
    gen = _noise(noise, epsilon_level, sensitivity)
    est = np.zeros((n, width), dtype=np.int64)
    parts = []
    for a, b in _chunks(groups, chunk):
        nodes = a + np.flatnonzero(groups[a:b] > 0)
        if nodes.size == 0:
            continue
        g = groups[nodes]
        y = _noisy_sorted_sizes(hist[nodes], gen, source, chunk, epsilon_level, sensitivity)
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
        del y
        bsize = np.diff(np.append(bstart, int(g.sum())))
        bnode = nodes[np.searchsorted(starts, bstart, side="right") - 1]
        bval = _round_half_up(np.clip(bval, 0, size))
        est += np.bincount(bnode * width + bval.astype(np.int64), weights=bsize,
                           minlength=n * width).astype(np.int64).reshape(n, width)
        parts.append((bnode, bval, bsize))
    if parts:
        node, value, count = (np.concatenate(x) for x in zip(*parts, strict=True))
        blocks = Runs(node.astype(np.int64), value, np.full(node.size, np.nan),
                      count.astype(np.int64), n)
    else:
        blocks = _empty_runs(n)
    return est, Phase1Info("hg", float(epsilon_level), noise, p, float(sensitivity), blocks)


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
    noise: str = "geometric",
    sensitivity: float,
) -> np.ndarray:
    """Naive (spec 2.1, the baseline that fails): the plain histogram over sizes 0..N with
    noise of scale sensitivity/eps_l on every cell (the L1 sensitivity per level is 2,
    Lemma 3; pitfall 7),
    the Euclidean projection onto {x >= 0, sum x = G_v} (exact, by sorting), then
    largest-remainder rounding (ties to the smaller size). Returns (n, N + 1) int64, >= 0,
    rows summing to G_v. Noise on empty cells creates phantom groups at large sizes, so the
    emd grows with N (spec 4.3). No variance estimate: not used in the hierarchy."""
    hist, groups = _check_level(hist_level, groups_level)
    n, width = hist.shape
    gen = _noise(noise, epsilon_level, sensitivity)
    noisy = gen.apply(hist, source, sensitivity=sensitivity, budget=epsilon_level,
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


# ---- Phase 2: variance estimates -------------------------------------------------------
def estimate_variances(
    estimate_hist: np.ndarray,
    info: Phase1Info,
    *,
    hg_count: str = "equal",
    hc_divisor: str = "count",
    noise_variance: str = "laplace",
) -> Runs:
    """EstVariance (spec 2.4.1): a variance for every group of every node of a level, in
    ranked order, run-length encoded. ``v`` = one noise draw's variance (``"laplace"``:
    2/eps_l^2, the paper's approximation, default; ``"exact"``: the true variance).

    * Hg node: sigma^2 = v / n_j with n_j the size of the group's piece of the fit.
      ``hg_count="equal"`` (default, the literal text): n_j = number of groups whose
      *rounded* estimate equals the group's, i.e. H_hat[s]; ``"blocks"``: n_j = the
      group's PAV block (before rounding/clipping; blocks that round to the same size
      stay separate runs). Partition-selection variance is ignored, as in the paper.
    * Hc node: Var(H_hat[s]) ~ 2v (two cumulative cells), divided by the number of groups
      estimated at that size: sigma^2 = 2v / H_hat[s] (``hc_divisor="count"``, default, the
      spec's reading) or 2v / H_hat[s]^2 (``"count_squared"``). H_hat[s] >= 1 for any
      group of size s, so there is no division by zero.

    Returns `Runs` whose values/counts are exactly ``estimate_hist``.
    """
    _check_choice("method", info.method, METHODS)
    _check_choice("hg_count", hg_count, HG_COUNTS)
    _check_choice("hc_divisor", hc_divisor, HC_DIVISORS)
    v = info.noise_variance(noise_variance)
    if info.method == "hg" and hg_count == "blocks":
        if info.blocks is None:
            raise MechanismError("the 'blocks' variance needs the Hg Phase-1 blocks")
        b = info.blocks
        return Runs(b.node, b.value, v / b.count.astype(float), b.count, b.n_nodes)
    runs = Runs.from_hist(estimate_hist)
    count = runs.count.astype(float)
    if info.method == "hg":
        return runs.with_var(v / count)
    return runs.with_var(2.0 * v / (count if hc_divisor == "count" else count**2))


# ---- Phase 3: matching (Algorithm 2) and merging ----------------------------------------
@dataclass(frozen=True, eq=False)
class Pairs:
    """A matching in run-length form: ``count[k]`` groups of parent run ``parent_run[k]``
    are paired with as many groups of child run ``child_run[k]`` (indices into the parent
    level's and the child level's `Runs`)."""

    parent_run: np.ndarray
    child_run: np.ndarray
    count: np.ndarray


def _intersect(a_len: np.ndarray, b_len: np.ndarray):
    """Common refinement of two partitions of one line into consecutive pieces of positive
    lengths (same total): (index in a, index in b, length) of every piece, in order."""
    ea, eb = np.cumsum(a_len), np.cumsum(b_len)
    if ea.size == 0 and eb.size == 0:
        z = np.zeros(0, np.int64)
        return z, z, z
    if ea.size == 0 or eb.size == 0 or ea[-1] != eb[-1]:
        raise InputError("matching: the two sides have different numbers of groups")
    ends = np.union1d(ea, eb)
    return (np.searchsorted(ea, ends), np.searchsorted(eb, ends),
            np.diff(ends, prepend=0).astype(np.int64))


def match_level(parent: Runs, children: Runs, child_parent: np.ndarray, *,
                tie_split: str = "proportional") -> Pairs:
    """Algorithm 2 (spec 2.5) for every parent of a level at once, on runs.

    ``child_parent[c]``: index (within the parent level) of child node c's parent; every
    parent's groups must equal the sum of its children's. The k-th smallest parent group
    is paired with the k-th smallest of the union of its children's groups (a monotone
    matching: optimal for the cost sum |x_parent - x_child|, Lemma 5). Which child gets a
    parent group when children tie on a value b follows the paper's proportional rule:
    going up the parent's ranked groups, each parent run A (groups of one value and one
    variance; runs of equal value are taken in stored order) is matched to the remaining
    tied set B; if |B| <= |A| all of B is matched, otherwise child c gets |A| n_c / |B| of
    them (n_c = its remaining tied groups), integerised by largest remainder with ties to
    the lower child index (footnote 8), and the leftovers go to the next parent run.
    Splitting A by variance is this implementation's deterministic instance of the
    paper's "arbitrary members of A" (no child is favoured for low-variance parent groups).
    Within one child, tied runs (same value, different variance) are used in stored order.
    ``tie_split="first_child"`` (a teaching toggle, pitfall 11) gives ties to the children
    in index order instead (a plain stable sort), which biases the allocation.

    Cost O(runs log runs) plus one vectorised pass per extra piece of the largest tied set
    (a set of tied child groups spanning k parent runs needs k - 1 proportional rounds).
    """
    _check_choice("tie_split", tie_split, TIE_SPLITS)
    child_parent = np.asarray(child_parent, dtype=np.int64)
    if child_parent.shape != (children.n_nodes,):
        raise InputError("child_parent needs one parent index per child node")
    pg = parent.groups()
    cg = np.bincount(child_parent, weights=children.groups(),
                     minlength=parent.n_nodes).astype(np.int64)
    if pg.shape != cg.shape or np.any(pg != cg):
        raise InputError("every parent must have as many groups as its children together "
                         "(G_v = sum of the children's G_c, pitfall 21)")
    run_parent = child_parent[children.node]
    co = np.lexsort((children.value, run_parent))  # stable: ties keep child order
    cp, cv, cn, cc = run_parent[co], children.value[co], children.node[co], children.count[co]
    nr = co.size
    tie_new = np.ones(nr, dtype=bool)
    tie_new[1:] = (cp[1:] != cp[:-1]) | (cv[1:] != cv[:-1])
    member_new = tie_new.copy()
    member_new[1:] |= cn[1:] != cn[:-1]
    tie_starts = np.flatnonzero(tie_new)
    member_starts = np.flatnonzero(member_new)
    tie_size = np.add.reduceat(cc, tie_starts) if nr else np.zeros(0, np.int64)
    member_size = np.add.reduceat(cc, member_starts) if nr else np.zeros(0, np.int64)
    member_tie = (np.cumsum(tie_new) - 1)[member_starts]
    # pieces: the parent's runs cut by the children's tied sets
    piece_run, piece_tie, piece_len = _intersect(parent.count, tie_size)
    if tie_split == "proportional":
        a_member, a_piece, a_count = _allocate(piece_tie, piece_len, member_tie, member_size,
                                               tie_size)
    else:  # both partition each tied set in order: children in index order meet pieces
        a_member, a_piece, a_count = _intersect(member_size, piece_len)
    order = np.lexsort((a_piece, a_member))
    a_member, a_piece, a_count = a_member[order], a_piece[order], a_count[order]
    ja, jc, length = _intersect(a_count, cc)
    return Pairs(piece_run[a_piece[ja]], co[jc], length)


def _allocate(piece_tie, piece_len, member_tie, member_size, tie_size):
    """Split every piece (a parent run's share of one tied set) among the tied set's
    children: proportional to each child's remaining tied groups with largest-remainder
    rounding, the tied set's last piece taking all that remains. Returns (member, piece,
    count) with count > 0."""
    n_pieces = np.bincount(piece_tie, minlength=tie_size.size)
    first_piece = np.cumsum(n_pieces) - n_pieces
    rem = member_size.copy()
    tie_rem = tie_size.copy()
    k_member = n_pieces[member_tie]
    by_k = np.argsort(-k_member, kind="stable")  # members of a tie stay together, in order
    k_sorted = k_member[by_k]
    out_m, out_p, out_c = [], [], []
    for r in range(int(n_pieces.max(initial=1)) - 1):
        act = by_k[:np.count_nonzero(k_sorted > r + 1)]
        t = member_tie[act]
        seg_start = np.flatnonzero(np.r_[True, t[1:] != t[:-1]])
        seg = np.repeat(np.arange(seg_start.size), np.diff(np.append(seg_start, act.size)))
        ties = t[seg_start]
        piece = first_piece[ties] + r
        m = piece_len[piece]
        q, rr = np.divmod(m[seg] * rem[act], tie_rem[ties][seg])
        deficit = m - np.add.reduceat(q, seg_start)
        o = np.lexsort((np.arange(act.size), -rr, seg))
        rank = np.empty(act.size, dtype=np.int64)
        rank[o] = np.arange(act.size) - seg_start[seg[o]]
        alloc = q + (rank < deficit[seg])
        rem[act] -= alloc
        tie_rem[ties] -= m
        keep = alloc > 0
        out_m.append(act[keep])
        out_p.append(piece[seg][keep])
        out_c.append(alloc[keep])
    last = np.flatnonzero(rem > 0)
    out_m.append(last)
    out_p.append((first_piece + n_pieces - 1)[member_tie[last]])
    out_c.append(rem[last])
    return (np.concatenate(out_m).astype(np.int64), np.concatenate(out_p).astype(np.int64),
            np.concatenate(out_c).astype(np.int64))


def match_groups(parent_sizes, children_sizes: Sequence, *,
                 tie_split: str = "proportional") -> list[np.ndarray]:
    """Algorithm 2 on explicit group lists of one parent (teaching, tests): for every child,
    the parent value matched to each of its groups, the child's groups in ascending order."""
    parent = np.sort(np.asarray(parent_sizes, dtype=float))
    kids = [np.sort(np.asarray(c, dtype=float)) for c in children_sizes]
    pv, pc = np.unique(parent, return_counts=True)
    p_runs = Runs(np.zeros(pv.size, np.int64), pv, np.ones(pv.size), pc.astype(np.int64), 1)
    parts = [np.unique(k, return_counts=True) for k in kids]
    node = np.concatenate([np.full(v.size, i, np.int64) for i, (v, _) in enumerate(parts)]
                          + [np.zeros(0, np.int64)])
    value = np.concatenate([v for v, _ in parts] + [np.zeros(0)])
    count = np.concatenate([c for _, c in parts] + [np.zeros(0, np.int64)]).astype(np.int64)
    c_runs = Runs(node, value, np.ones(node.size), count, len(kids))
    pairs = match_level(p_runs, c_runs, np.zeros(len(kids), np.int64), tie_split=tie_split)
    o = np.lexsort((pairs.parent_run, pairs.child_run))
    matched = np.repeat(pv[pairs.parent_run[o]], pairs.count[o])
    owner = np.repeat(node[pairs.child_run[o]], pairs.count[o])
    return [matched[owner == i] for i in range(len(kids))]


def merge_estimates(a, var_a, b, var_b, how: str = "weighted"):
    """Merge (spec 2.6) of a parent estimate ``a`` (variance ``var_a``) with a child's ``b``
    (``var_b``), elementwise; returns (value, variance), not rounded.

    ``"weighted"`` (default, Eq. 5-6): (var_b a + var_a b) / (var_a + var_b), variance
    var_a var_b / (var_a + var_b) (both 0: the plain average, variance 0). ``"simple"``: (a + b) / 2 with variance
    (var_a + var_b) / 4 (the paper gives no variance for it; this is the spec's guess).
    """
    _check_choice("merge", how, MERGES)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    va, vb = np.asarray(var_a, dtype=float), np.asarray(var_b, dtype=float)
    if how == "simple":
        return (a + b) / 2, (va + vb) / 4
    total = va + vb
    exact = total == 0  # both variances 0 (exact noise variance at a huge eps): average
    safe = np.where(exact, 1.0, total)
    value = np.where(exact, (a + b) / 2, (vb * a + va * b) / safe)
    return value, np.where(exact, 0.0, va * vb / safe)


def merge_level(parent: Runs, children: Runs, pairs: Pairs, *, merge: str = "weighted") -> Runs:
    """The children's updated runs: every matched pair merged (`merge_estimates`), the value
    rounded half up (pitfall 9: round after each merge), then re-sorted per child by
    (value, variance) carrying the variances (spec 2.4 step 5c)."""
    value, var = merge_estimates(parent.value[pairs.parent_run], parent.var[pairs.parent_run],
                                 children.value[pairs.child_run],
                                 children.var[pairs.child_run], merge)
    value = _round_half_up(value)
    node = children.node[pairs.child_run]
    order = np.lexsort((var, value, node))
    return _coalesce(node[order], value[order], var[order], pairs.count[order],
                     children.n_nodes)


# ---- Algorithm 1 -----------------------------------------------------------------------
def kuo_hierarchical(
    h: Hierarchy,
    level_estimates: Sequence[np.ndarray],
    level_variances: Sequence[Runs],
    groups: np.ndarray,
    *,
    merge: str = "weighted",
    tie_split: str = "proportional",
) -> np.ndarray:
    """Algorithm 1, phases 2-3 (spec 2.4): consistent release from Phase-1 estimates.

    ``level_estimates[l]``: the Phase-1 histograms of level l (n_l, N + 1);
    ``level_variances[l]``: their ranked groups with variances (`estimate_variances`), the
    same histograms run-length encoded; ``groups``: G_v of every node (public).

    Top-down, for each level l at once: match each parent's *current* (already merged)
    groups, ordered by (value, variance), with its children's *original* Phase-1 groups
    (`match_level`), merge each pair
    into the child (`merge_level`: weighted or simple, rounded after each merge, re-sorted
    with the variances); ``tie_split`` as in `match_level`. The leaves' final groups are counted (bincount) and every internal
    node is the sum of its leaves (back-substitution): the merged internal values are never
    output (pitfall 12). Post-processing only: no privacy cost.

    Returns (n_nodes, N + 1) int64: integers >= 0, rows summing to G_v, every parent equal
    to the sum of its children at every size.
    """
    _check_choice("merge", merge, MERGES)
    if len(level_estimates) != h.n_levels or len(level_variances) != h.n_levels:
        raise InputError(f"expected one estimate and one variance set per level "
                         f"({h.n_levels})")
    groups = np.asarray(groups).astype(np.int64).reshape(-1)
    if groups.shape != (h.n_nodes,):
        raise InputError(f"expected {h.n_nodes} group counts, got {groups.shape}")
    if np.any(h.aggregate(groups[h.level_slice(h.depth)]) != groups):
        raise InputError("G_v must equal the sum of the children's G_c at every node")
    max_size = np.asarray(level_estimates[0]).shape[1] - 1
    for level in range(h.n_levels):
        _check_phase1(h, level, level_estimates[level], level_variances[level],
                      groups, max_size)
    current = _canonical(level_variances[0])
    for level in range(1, h.n_levels):
        child = level_variances[level]
        pairs = match_level(current, child, h.segment_of_level(level), tie_split=tie_split)
        current = merge_level(current, child, pairs, merge=merge)
    return h.aggregate(current.to_hist(max_size))


def _canonical(runs: Runs) -> Runs:
    """Runs sorted by (node, value, variance), equal neighbours merged: the order in which
    a parent's tied groups are matched (the same order `merge_level` leaves children in)."""
    order = np.lexsort((runs.var, runs.value, runs.node))
    return _coalesce(runs.node[order], runs.value[order], runs.var[order], runs.count[order],
                     runs.n_nodes)


def _check_phase1(h, level, est, runs, groups, max_size):
    est = np.asarray(est)
    n = h.level_size(level)
    if est.shape != (n, max_size + 1) or runs.n_nodes != n:
        raise InputError(f"level {level}: expected estimates of shape {(n, max_size + 1)}")
    if np.any(runs.count <= 0) or np.any(~(runs.var >= 0)) or np.any(~np.isfinite(runs.var)):
        raise InputError(f"level {level}: runs need positive counts and finite variances "
                         f">= 0")
    if np.any(runs.to_hist(max_size) != est):
        raise InputError(f"level {level}: the variance runs do not match the estimates")
    if np.any(runs.groups() != groups[h.level_slice(level)]):
        raise InputError(f"level {level}: estimates must have G_v groups per node")


def kuo_release(
    h: Hierarchy,
    hist: np.ndarray,
    groups: np.ndarray,
    epsilon_per_level: Sequence[float],
    methods: Sequence[str],
    source: NoiseSource,
    *,
    p: int = 2,
    hg_p: int = 2,
    merge: str = "weighted",
    noise: str = "geometric",
    hg_count: str = "equal",
    hc_divisor: str = "count",
    noise_variance: str = "laplace",
    tie_split: str = "proportional",
    sensitivity: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 end to end: Phase 1 per level, variances, top-down match and merge.

    ``hist``: true histograms (n_nodes, N + 1) of every node (or of the leaves only);
    ``groups``: public G_v (n_nodes,); ``epsilon_per_level``: one budget per level, root
    first (the paper's uniform split is eps / L each); ``methods``: one of "hc"/"hg" per
    level, e.g. ("hg", "hc", "hc"); ``p``: isotonic loss of the Hc levels (1 or 2; the
    spec's guess is that the paper found p = 1 better for Hc), ``hg_p``: of the Hg levels
    (the paper used 2). The other switches are those of `hc_level`/`hg_level`,
    `estimate_variances` and `kuo_hierarchical`.

    Privacy: level l is eps_l-DP for the add/remove-one-person neighbour with public G_v
    (L1 sensitivity 1 for Hc and Hg, parallel within the level: ``sensitivity``, from the
    mechanism's privacy plan, calibrates the noise of both); the release is
    sum(epsilon_per_level)-DP by sequential composition. The caller accounts for it.

    Returns ``(released, phase1)``: the consistent release (see `kuo_hierarchical`), and
    the independent Phase-1 estimates of every node (the "no consistency" baseline), both
    (n_nodes, N + 1) int64.
    """
    hist = np.asarray(hist)
    if hist.ndim == 2 and hist.shape[0] == h.n_leaves and h.n_leaves != h.n_nodes:
        hist = h.aggregate(hist)
    if hist.ndim != 2 or hist.shape[0] != h.n_nodes:
        raise InputError(f"hist must have shape (n_nodes={h.n_nodes}, N + 1)")
    eps = [float(e) for e in epsilon_per_level]
    methods = [str(m).lower() for m in methods]
    if len(eps) != h.n_levels or len(methods) != h.n_levels:
        raise MechanismError(f"give one epsilon and one method per level ({h.n_levels})")
    for m in methods:
        _check_choice("method", m, METHODS)
    phase1 = np.empty(hist.shape, dtype=np.int64)
    estimates, variances = [], []
    for level in range(h.n_levels):
        sl = h.level_slice(level)
        if methods[level] == "hc":
            est, info = hc_level(hist[sl], np.asarray(groups)[sl], eps[level], source, p=p,
                                 noise=noise, sensitivity=sensitivity)
        else:
            est, info = hg_level(hist[sl], np.asarray(groups)[sl], eps[level], source,
                                 p=hg_p, noise=noise, sensitivity=sensitivity)
        phase1[sl] = est
        estimates.append(est)
        variances.append(estimate_variances(est, info, hg_count=hg_count,
                                            hc_divisor=hc_divisor,
                                            noise_variance=noise_variance))
    released = kuo_hierarchical(h, estimates, variances, groups, merge=merge,
                                tie_split=tie_split)
    return released, phase1
