"""PrivTree and Partition+Laplace on a huge declared domain, held sparsely (issue 32).

`privtree.privtree_partition` and `dawa.dawa` with ``stage2="laplace"`` hold every cell of
the declared domain (n values) of every unit. Their *output* does not grow with n: the
bisection visits a bucket only when its parent split, and the release is one noisy count
per bucket. Here the same mechanism runs on each unit's non-zero cells (`SparseRows`), in
memory O(non-zero cells x depth + buckets) instead of O(units x n): the domain kept sparse,
"k intervals released instead of n cells".

Privacy: the same mechanism, so PrivTree's proof (`privtree`) and DAWA's Stage 2 (`dawa`)
carry over unchanged.
* The output distribution is the dense one's. Each visited bucket gets the same score
  (`median_deviations`; the zeros that are not stored are counted, never read) and the same
  independent Laplace(lambda) draw against the same threshold; the buckets the dense loop
  scores although their decision cannot matter (their parent did not split, or they hold
  one cell: draws it discards) are not scored here, and discarding independent draws does
  not change the law of the others. The buckets' counts then get the same
  Laplace(1/epsilon2) draws. (Scores are sums of counts: exact for whole counts below
  2**53, so the same numbers; fractional counts could differ in the last bit.)
* With a seeded (exploration) source the draws are even the same numbers: the dense loop's
  stream position of every visited bucket is computed (`_dense_index`) and the stream is
  skipped (``bit_generator.advance``) over the draws the dense loop discards, so the edges,
  the counts and every later draw are bit for bit the dense ones (a test). A secure source
  draws only the visited buckets' tests (independent draws: same law), on the hierdp
  backend exactly as the dense loop does (`privtree_exact`).
* What is public: the declared domain (its size n fixes the bisection points and the
  depth), epsilon, rho and theta, never read from the data. Which cells are non-zero is
  used only inside the scores, as the dense mechanism uses them; the number of buckets
  released follows the data exactly as the dense PrivTree's does (its privacy covers it).

Example
-------
>>> from hierdp_core.mechanisms.base import get_mechanism
>>> from hierdp_core.privacy.samplers import NoiseSource
>>> stages = get_mechanism("partition-laplace", "ranges").estimator_stages()
>>> rows = SparseRows.from_triples([0, 0], [7, 90_000_000], [3, 5], rows=1, n=100_000_001)
>>> out = sparse_partition_laplace(rows, 1.0, NoiseSource(seed=1), **stages)
>>> int(out.edges[0][-1]), out.buckets < 200
(100000001, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.privacy.plan import Stage
from hierdp_core.privacy.samplers import Laplace, NoiseSource
from hierdp_core.queries.sparse_rows import SparseRows
from hierdp_core.ranges.privtree import FANOUT, STAGE1_LABEL
from hierdp_core.ranges.privtree_exact import secure_test, split_decisions, whole_counts
from hierdp_core.ranges.secure_measure import laplace_measure


@dataclass(frozen=True, eq=False)
class SparseRelease:
    """Per unit, the private bucket edges (k + 1,) over 0..n and the noisy bucket counts
    (k,): each bucket's count spread evenly over its cells, as `dawa.expand` does."""

    edges: list[np.ndarray]
    counts: list[np.ndarray]

    def answer(self, row: int, lo, hi) -> np.ndarray:
        """The estimates of the ranges of cells lo..hi (inclusive) of unit ``row``, by
        overlap with its buckets (a linear interpolation of the cumulative counts)."""
        edges = self.edges[row]
        cumulative = np.concatenate([[0.0], np.cumsum(self.counts[row])])
        at = np.interp(np.asarray(hi) + 1, edges, cumulative)
        return at - np.interp(np.asarray(lo), edges, cumulative)

    @property
    def buckets(self) -> int:
        return sum(c.size for c in self.counts)


def sparse_median_deviations(data: SparseRows, row, lo, hi, integer: bool = False) -> np.ndarray:
    """`privtree.median_deviations` of the buckets lo..hi-1 of rows ``row``, from the
    non-zero cells: the upper half's sum minus the lower half's, the unstored zeros lying
    at the bottom of the order; with ``integer`` summed in int64 (the exact test's scores;
    the counts checked once by `privtree_exact.whole_counts`), else in floats as the dense
    loop sums."""
    a, b = data.bounds(row, lo), data.bounds(row, hi)
    stored = b - a
    half = (hi - lo) // 2
    zeros = (hi - lo) - stored
    segment = np.repeat(np.arange(row.size), stored)
    first = np.cumsum(stored) - stored
    take = a[segment] + np.arange(segment.size) - first[segment]
    values = data.counts[take].astype(np.int64) if integer else data.counts[take]
    ordered = values[np.lexsort((values, segment))]
    cum = np.concatenate([np.zeros(1, dtype=ordered.dtype), np.cumsum(ordered)])
    end = first + stored
    top = cum[end] - cum[end - np.minimum(half, stored)]
    bottom = cum[first + np.maximum(half - zeros, 0)] - cum[first]
    return top - bottom


def _dense_index(depth: int, n: int, path: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Where the dense loop keeps a bucket among the buckets of its ``depth``, in order of
    their first cell: while 2**depth <= n every bucket of the level above was halved, so
    the level is the 2**depth dyadic buckets and a bucket's place is its path of halves read
    in binary (``path``); below, the level holds one or two cells per bucket and then one
    bucket per cell, so its place is its first cell (``lo``)."""
    return path if (1 << depth) <= n else lo


def _seeded_laplace_at(noise: Laplace, source: NoiseSource, positions: np.ndarray,
                       block: int) -> np.ndarray:
    """The draws at ``positions`` (increasing) of the next ``block`` Laplace draws of the
    seeded ``source``, and the stream moved past the block: one draw per 64-bit output
    (numpy's Laplace, bar a zero output at probability 2**-53), so the skipped draws are
    stepped over with ``advance``; one call per run of adjacent positions (the two halves
    of a split bucket are adjacent)."""
    bit_generator = source.rng.bit_generator
    if not hasattr(bit_generator, "advance"):
        raise MechanismError("the sparse path skips the dense stream's unused draws: seed a "
                             "generator that can advance (numpy's default PCG64)")
    out = np.empty(positions.size)
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    at = 0
    runs = zip(np.r_[0, breaks], np.r_[breaks, positions.size], strict=True) \
        if positions.size else ()
    for start, stop in runs:
        bit_generator.advance(int(positions[start]) - at)
        out[start:stop] = noise.sample(stop - start, source)
        at = int(positions[stop - 1]) + 1
    bit_generator.advance(block - at)
    return out


def _noisy(noise, values, source, positions, block, label):
    """``values`` plus the noise the dense loop gives them (`_seeded_laplace_at`), or,
    from a secure source, fresh independent noise on these values only."""
    if source.secure:
        return noise.apply(values, source, label=label) if values.size else values
    if not isinstance(noise, Laplace):
        raise MechanismError("the sparse PrivTree follows the dense stream of Laplace draws")
    draws = _seeded_laplace_at(noise, source, positions, block)
    draws += values
    return draws


def sparse_privtree_partition(data: SparseRows, epsilon1: float, epsilon2: float,
                              source: NoiseSource, *, stage: Stage,
                              threshold: float | None = None) -> list[np.ndarray]:
    """`privtree.privtree_partition` of the rows of ``data`` (same arguments, same edges;
    the module says why), visiting only the buckets whose parent split."""
    if epsilon1 <= 0 or epsilon2 <= 0:
        raise BudgetError("both DAWA stages need a positive epsilon")
    n, r = data.n, data.rows
    noise = stage.noise_for(epsilon1)
    bias_step = noise.scale * math.log(FANOUT)
    theta = 1.0 / epsilon2 if threshold is None else float(threshold)
    row = np.arange(r, dtype=np.int64)
    lo, hi = np.zeros(r, dtype=np.int64), np.full(r, n, dtype=np.int64)
    path = np.zeros(r, dtype=np.int64)
    cuts_row, cuts = [], []
    depth = 0
    exact = secure_test(source, noise.scale, theta)
    if exact is not None:
        whole_counts(data.counts)  # whole numbers whose total fits int64: every score does
    while row.size:
        wide = (hi - lo) > 1
        row, lo, hi, path = row[wide], lo[wide], hi[wide], path[wide]
        level = min(1 << depth, n)  # the dense loop's buckets at this depth
        score = sparse_median_deviations(data, row, lo, hi, integer=exact is not None)
        if exact is not None:  # the test drawn exactly (`privtree_exact`)
            split = split_decisions(exact, score, depth, source, noise, STAGE1_LABEL)
        else:
            biased = np.maximum(score - depth * bias_step, theta - bias_step)
            positions = row * level + _dense_index(depth, n, path, lo)
            split = _noisy(noise, biased, source, positions, r * level, STAGE1_LABEL) > theta
        row, lo, hi, path = row[split], lo[split], hi[split], path[split]
        mid = (lo + hi) // 2
        cuts_row.append(row)
        cuts.append(mid)
        row = np.repeat(row, 2)
        lo, hi = np.column_stack([lo, mid]).ravel(), np.column_stack([mid, hi]).ravel()
        path = (np.repeat(path, 2) << 1) | np.tile([0, 1], path.size)
        depth += 1
    return _edges_per_row(r, n, np.concatenate([np.zeros(0, np.int64), *cuts_row]),
                          np.concatenate([np.zeros(0, np.int64), *cuts]))


def _edges_per_row(r: int, n: int, row: np.ndarray, cut: np.ndarray) -> list[np.ndarray]:
    """Each row's edges: 0, its cuts in order, n."""
    order = np.lexsort((cut, row))
    row, cut = row[order], cut[order]
    split_at = np.searchsorted(row, np.arange(1, r))
    return [np.concatenate([[0], c, [n]]).astype(np.int64) for c in np.split(cut, split_at)]


def sparse_bucket_sums(data: SparseRows, edges: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`dawa.bucket_sums` of ``rows`` (R,) with edges (R, k + 1), from the non-zero cells."""
    cumulative = np.concatenate([[0.0], np.cumsum(data.counts)])
    at = cumulative[data.bounds(rows[:, None], edges)]
    return np.diff(at, axis=1)


def sparse_partition_laplace(data: SparseRows, epsilon: float, source: NoiseSource, *,
                             stage: Stage, partition_stage: Stage,
                             rho: float = 0.25) -> SparseRelease:
    """`dawa.dawa` with ``stage2="laplace"`` (Partition+Laplace, PrivTree's Stage 1 with
    share ``rho`` of ``epsilon``, then Laplace(1/epsilon2) on each bucket's count) on the
    rows of ``data``, held sparsely: the same buckets and noisy counts (the same draws in
    the same order: rows grouped by their number of buckets, as `dawa` batches them)."""
    if not epsilon > 0 or not 0 < rho < 1:
        raise BudgetError(f"Partition+Laplace wants epsilon > 0 and rho in (0, 1), got "
                          f"{epsilon} and {rho}")
    epsilon1, epsilon2 = rho * epsilon, (1.0 - rho) * epsilon
    edges = sparse_privtree_partition(data, epsilon1, epsilon2, source,
                                      stage=partition_stage)
    counts: list = [None] * data.rows
    sizes = np.array([e.size - 1 for e in edges], dtype=np.int64)
    noise = stage.noise_for(epsilon2)
    for k in np.unique(sizes):
        rows = np.flatnonzero(sizes == k)
        bounds = np.stack([edges[i] for i in rows])
        noisy = laplace_measure(sparse_bucket_sums(data, bounds, rows), noise, source,
                                sensitivity=stage.sensitivity, budget=epsilon2,
                                label="ranges: DAWA bucket counts")
        for i, values in zip(rows, noisy, strict=True):
            counts[i] = values
    return SparseRelease(edges, counts)
