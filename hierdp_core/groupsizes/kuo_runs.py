"""The shared vocabulary of Kuo et al.'s stages (`kuo_estimators`, `kuo_variance`,
`kuo_matching`, `kuo`): the ranked group sizes of a level, run-length encoded (`Runs`).

Spec ``shared/specs/group-sizes-kuo.md`` sec. 0: the ranked-group form ``Hg_v`` of a node is
its group sizes in ascending order (length G_v); Phases 2 and 3 of Algorithm 1 work on it,
with a variance per group. A `Runs` keeps it as runs of groups sharing a value and a
variance, so everything after the noise costs O(runs), not O(groups). Also here: the check
of the stages' option switches and the monotone rounding they share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hierdp_core.errors import MechanismError


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
        cells = np.flatnonzero(hist)  # 1-d: a third of the time of the 2-d np.nonzero
        node, size = np.divmod(cells, hist.shape[1])
        v = np.full(node.size, np.nan) if var is None else np.asarray(var, float)[node, size]
        return cls(node.astype(np.int64), size.astype(np.float64), v,
                   hist.reshape(-1)[cells].astype(np.int64), hist.shape[0])

    def with_var(self, var: np.ndarray) -> Runs:
        return Runs(self.node, self.value, np.asarray(var, dtype=float), self.count,
                    self.n_nodes)

    def groups(self) -> np.ndarray:
        """Number of groups of every node (n_nodes,) int64."""
        return np.bincount(self.node, weights=self.count,
                           minlength=self.n_nodes).astype(np.int64)

    def to_hist(self, max_size: int) -> np.ndarray:
        """The histograms (n_nodes, max_size + 1) int64 (values must be integers in range)."""
        out = np.zeros((self.n_nodes, max_size + 1), dtype=np.int64)
        add_counts(out, self.node, self.value.astype(np.int64), self.count)
        return out

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


def stack_runs(parts: Sequence[tuple[int, Runs]], n_nodes: int) -> Runs:
    """One level's runs of ``n_nodes`` nodes from those of consecutive ranges of its nodes,
    each given as (its first node, its runs)."""
    return Runs(*(np.concatenate(x) for x in zip(*(
        (first + r.node, r.value, r.var, r.count) for first, r in parts), strict=True)),
        n_nodes)


def _empty_runs(n_nodes: int) -> Runs:
    return Runs(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int64),
                n_nodes)


def _check_choice(name: str, value, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise MechanismError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return value


def _round_half_up(x: np.ndarray) -> np.ndarray:
    """Nearest integer, halves up (monotone, so a sorted vector stays sorted)."""
    return np.floor(np.asarray(x, dtype=float) + 0.5)


def add_counts(out: np.ndarray, node: np.ndarray, value: np.ndarray,
               count: np.ndarray) -> None:
    """``out[node, value] += count`` (int64 histograms (n_nodes, N + 1), repeated cells
    summed): O(runs) integer adds, the untouched zeros cost nothing."""
    np.add.at(out.reshape(-1), node * out.shape[1] + value, count)


def side_by_side(index: np.ndarray, size: int, trials: int) -> np.ndarray:
    """``index`` (into a level of ``size`` nodes) for each of ``trials`` copies of the
    level laid end to end (copy t's nodes ``t size .. (t + 1) size - 1``): the parents of a
    level of several independent releases side by side."""
    return (np.arange(trials)[:, None] * size + index).ravel()
