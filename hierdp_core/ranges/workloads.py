"""Workloads: public linear queries over a histogram of ``n`` ordered cells.

A workload is either a list of ranges ``[lo, hi]`` (0-based, inclusive) or, for 2-D data
(rectangles on a Hilbert-ordered grid), a sparse matrix. Workloads must be chosen without
looking at the data: DAWA's Stage 2 adapts its strategy to them, which is private only because
they are public.

Generators follow the DAWA paper's experiments (spec section 1.2): random ranges from two
uniform end points (sorted), clustered ranges (centres uniform, half-widths ``round(|N(0,
sigma^2)|)``, clipped to the domain); plus prefixes, all ranges (sampled when there are more
than ``max_queries``), the identity, and user bands such as age groups.

Example
-------
>>> w = prefix_ranges(4)
>>> w.answer(np.array([1, 2, 3, 4])).tolist()
[1.0, 3.0, 6.0, 10.0]
>>> bucket = w.bucket_matrix(np.array([0, 2, 4]))  # buckets [0, 1] and [2, 3]
>>> bucket.tolist()
[[0.5, 0.0], [1.0, 0.0], [1.0, 0.5], [1.0, 1.0]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from hierdp_core.errors import InputError

MAX_ALL_RANGES = 100_000  # "all ranges" beyond this many queries is sampled


@dataclass(frozen=True, eq=False)
class Workload:
    """``m`` public linear queries over ``n`` cells: ranges ``lo..hi`` (inclusive) or, when
    ``matrix`` is given, the rows of that (m, n) sparse matrix."""

    n: int
    name: str
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    matrix: sparse.csr_matrix | None = None

    def __post_init__(self):
        if self.n < 1:
            raise InputError("a workload needs a domain of at least one cell")
        if self.matrix is None:
            lo, hi = np.asarray(self.lo, dtype=np.int64), np.asarray(self.hi, dtype=np.int64)
            if lo.shape != hi.shape or lo.ndim != 1 or lo.size == 0:
                raise InputError(f"workload {self.name!r}: give one or more ranges lo..hi")
            bad = (lo < 0) | (hi >= self.n) | (lo > hi)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"workload {self.name!r}: range {i} = [{lo[i]}, {hi[i]}] is "
                                 f"not inside 0..{self.n - 1} with lo <= hi")
            object.__setattr__(self, "lo", lo)
            object.__setattr__(self, "hi", hi)
        elif self.matrix.shape[1] != self.n or self.matrix.shape[0] == 0:
            raise InputError(f"workload {self.name!r}: matrix shape {self.matrix.shape} does "
                             f"not match {self.n} cells")

    @property
    def is_ranges(self) -> bool:
        return self.matrix is None

    @property
    def m(self) -> int:
        return int(self.lo.size) if self.is_ranges else int(self.matrix.shape[0])

    def atom_starts(self) -> np.ndarray:
        """First cell of every atom, the runs of adjacent cells no query tells apart (sorted,
        from 0): a new atom starts at every range's first cell and after its last; for a
        matrix workload, wherever two adjacent columns differ. Age bands 0-17, 18-64, 65-100
        over ages 0..100 have three atoms; prefixes one per cell."""
        if self.is_ranges:
            cuts = np.concatenate([[0], self.lo, self.hi + 1])
            return np.unique(cuts[cuts < self.n])
        w = self.matrix.tocsc()
        differs = np.asarray((abs(w[:, 1:] - w[:, :-1]) > 0).sum(axis=0)).ravel() > 0
        return np.concatenate([[0], np.flatnonzero(differs) + 1])

    def spans_atoms(self) -> bool:
        """Whether some query sums more than one atom (prefixes, ranges: its answer is a
        difference of cumulative atom totals), not only single atoms (cells, bands)."""
        starts = self.atom_starts()
        if self.is_ranges:
            first, last = (np.searchsorted(starts, ends, side="right") - 1
                           for ends in (self.lo, self.hi))
            return bool((last > first).any())
        atom = np.searchsorted(starts, np.arange(self.n), side="right") - 1
        spread = sparse.csr_matrix((np.ones(self.n), (np.arange(self.n), atom)))
        return bool(((abs(self.to_matrix()) @ spread) > 0).sum(axis=1).max() > 1)

    def to_matrix(self) -> sparse.csr_matrix:
        """The (m, n) query matrix."""
        if not self.is_ranges:
            return self.matrix
        lengths = self.hi - self.lo + 1
        rows = np.repeat(np.arange(self.m), lengths)
        cols = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        cols += np.repeat(self.lo, lengths)
        return sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(self.m, self.n))

    def answer(self, x: np.ndarray) -> np.ndarray:
        """Query answers for histograms ``x`` of shape (n,) or (r, n): shape (m,) or (r, m)."""
        x = np.asarray(x, dtype=float)
        if x.shape[-1] != self.n:
            raise InputError(f"workload over {self.n} cells cannot answer a histogram of "
                             f"{x.shape[-1]} cells")
        if not self.is_ranges:
            return (self.matrix @ x.T).T
        cum = np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x, axis=-1)], axis=-1)
        return cum[..., self.hi + 1] - cum[..., self.lo]

    def bucket_matrix(self, bounds: np.ndarray) -> np.ndarray:
        """The workload over buckets (DAWA's W-hat, dense (m, k)): entry (q, j) is the sum of
        query q's weights over bucket j divided by the bucket's length, so that
        ``W @ expand(s) == W-hat @ s``. ``bounds`` are the k + 1 bucket edges (0, ..., n)."""
        bounds = np.asarray(bounds, dtype=np.int64)
        if self.is_ranges:
            return self.bucket_matrices(bounds[None])[0]
        lengths = np.diff(bounds).astype(float)
        bucket_of_cell = np.repeat(np.arange(lengths.size), np.diff(bounds))
        spread = sparse.csr_matrix((1.0 / lengths[bucket_of_cell],
                                    (np.arange(self.n), bucket_of_cell)),
                                   shape=(self.n, lengths.size))
        return (self.matrix @ spread).toarray()

    def bucket_matrices(self, bounds: np.ndarray) -> np.ndarray:
        """`bucket_matrix` of r partitions into k buckets at once: bounds (r, k + 1) ->
        (r, m, k); numpy batched for ranges."""
        bounds = np.asarray(bounds, dtype=np.int64)
        if not self.is_ranges:
            return np.stack([self.bucket_matrix(b) for b in bounds])
        lengths = np.diff(bounds, axis=1).astype(float)[:, None, :]
        start, end = bounds[:, None, :-1], bounds[:, None, 1:] - 1
        overlap = (np.minimum(self.hi[None, :, None], end)
                   - np.maximum(self.lo[None, :, None], start) + 1)
        return np.clip(overlap, 0, None) / lengths

    def bucket_gram(self, bounds: np.ndarray) -> np.ndarray:
        """G = W-hat^T W-hat (k, k): all that DAWA's Stage 2 needs of the workload."""
        w_hat = self.bucket_matrix(bounds)
        return w_hat.T @ w_hat


def ranges(n: int, lo, hi, name: str = "ranges") -> Workload:
    return Workload(n=n, name=name, lo=np.asarray(lo), hi=np.asarray(hi))


def identity(n: int) -> Workload:
    """Every single cell."""
    cells = np.arange(n)
    return ranges(n, cells, cells, "identity")


def prefix_ranges(n: int) -> Workload:
    """[0, j] for every j (cumulative counts: "aged at most j")."""
    return ranges(n, np.zeros(n, dtype=np.int64), np.arange(n), "prefix")


def all_ranges(n: int, max_queries: int = MAX_ALL_RANGES, seed: int = 0) -> Workload:
    """All n(n+1)/2 ranges, or ``max_queries`` of them drawn uniformly without replacement
    when there are more."""
    total = n * (n + 1) // 2
    if total <= max_queries:
        lo, hi = np.triu_indices(n)
        return ranges(n, lo, hi, "all")
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(total, size=max_queries, replace=False))
    # index t of the upper triangle (row-major): row lo has n - lo entries
    row_starts = np.concatenate([[0], np.cumsum(np.arange(n, 0, -1))])
    lo = np.searchsorted(row_starts, pick, side="right") - 1
    hi = lo + (pick - row_starts[lo])
    return ranges(n, lo, hi, f"all (sample of {max_queries:,})")


def random_ranges(n: int, m: int = 2000, seed: int = 0) -> Workload:
    """``m`` ranges with two end points drawn uniformly and sorted (the DAWA paper's "uniform
    intervals")."""
    ends = np.sort(np.random.default_rng(seed).integers(0, n, size=(m, 2)), axis=1)
    return ranges(n, ends[:, 0], ends[:, 1], "random")


def clustered_ranges(n: int, m: int = 2000, centres: int = 5, sigma: float = 256.0,
                     seed: int = 0) -> Workload:
    """The paper's clustered intervals: ``centres`` uniform centres, ``m / centres`` ranges each,
    ``[c - round|X_l|, c + round|X_r|]`` with X ~ N(0, sigma^2), clipped to the domain."""
    rng = np.random.default_rng(seed)
    c = np.repeat(rng.integers(0, n, size=centres), -(-m // centres))[:m]
    half = np.rint(np.abs(rng.normal(0.0, sigma, size=(m, 2)))).astype(np.int64)
    return ranges(n, np.clip(c - half[:, 0], 0, n - 1), np.clip(c + half[:, 1], 0, n - 1),
                  "clustered")


def bands(values, text: str) -> Workload:
    """User ranges over the attribute's values, e.g. ``"0-17,18-64,65-100"`` over ages 0..100
    (a single value is a one-cell range). Values must be among ``values`` (public domain)."""
    pairs = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        a, _, b = part.partition("-") if not part.startswith("-") else (part, "", "")
        pairs.append((a.strip(), (b or a).strip()))
    return _from_value_pairs(values, pairs, "bands")


def read_workload_file(values, path) -> Workload:
    """Ranges from a CSV file with columns ``lo`` and ``hi`` (attribute values, inclusive)."""
    try:
        table = pd.read_csv(path, dtype=str)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"workload file {path}: cannot be read as CSV ({exc})") from None
    missing = {"lo", "hi"} - set(table.columns)
    if missing:
        raise InputError(f"workload file {path}: needs columns lo and hi; missing "
                         f"{sorted(missing)} (it has {list(table.columns)})")
    pairs = list(zip(table["lo"], table["hi"], strict=True))
    return _from_value_pairs(values, pairs, f"file {path}")


def _from_value_pairs(values, pairs, name: str) -> Workload:
    index = {str(v): i for i, v in enumerate(values)}
    if not pairs:
        raise InputError(f"workload {name}: no ranges given")
    lo, hi = [], []
    for a, b in pairs:
        for v in (a, b):
            if str(v).strip() not in index:
                raise InputError(f"workload {name}: {v!r} is not a value of the attribute "
                                 f"(values run {values[0]}..{values[-1]})")
        lo.append(index[str(a).strip()])
        hi.append(index[str(b).strip()])
    lo, hi = np.array(lo), np.array(hi)
    if (lo > hi).any():
        i = int(np.flatnonzero(lo > hi)[0])
        raise InputError(f"workload {name}: range {pairs[i]} runs backwards")
    return ranges(len(values), lo, hi, name)


WORKLOAD_KINDS = ("prefix", "all", "random", "identity")


def named_workload(kind: str, n: int, seed: int = 0, m: int = 2000) -> Workload:
    """One of `WORKLOAD_KINDS` over n cells."""
    if kind == "prefix":
        return prefix_ranges(n)
    if kind == "all":
        return all_ranges(n, seed=seed)
    if kind == "random":
        return random_ranges(n, m, seed)
    if kind == "identity":
        return identity(n)
    raise InputError(f"unknown workload {kind!r}; use one of {list(WORKLOAD_KINDS)}, "
                     "or a CSV file with columns lo,hi")
