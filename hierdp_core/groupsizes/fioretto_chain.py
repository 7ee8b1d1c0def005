"""M_c^ch of Fioretto, Van Hentenryck & Zhu (AIJ 2021; spec
``shared/specs/group-sizes-fioretto.md`` sec. 1.3 and 2.7): the chain T^ch of the region
tree (`chain_order`), the chain values it measures (`chain_cumulative`, the paper-literal
input, NOT private; `chain_from_region_cumulative`, the private variant S1), and the exact
post-processing of Model 3 with the "<= otherwise" fix (`chain_dp`).

Contract: chain values are laid out like histograms, (n_nodes, N + 1), entry (v, s) the value
of chain node (s, v); `chain_dp` returns an int64 (n_nodes, N + 1) histogram that is
consistent, non-negative and sums to G at the root.

* **The chain program**: with the fix, every consecutive pair of the chain is ``<=`` and some
  are ``=``, so Model 3 is integer isotonic regression along the chain with tied blocks,
  bounds [0, G] and the last block pinned to G. For squared costs the integer optimum is
  the rounded continuous optimum (a step ``x - 1 -> x`` costs ``f'(x - 1/2)``, so the
  threshold sets of the integer and continuous problems coincide), and the bounded optimum
  is the clipped unbounded one. One PAVA call (`scipy.optimize.isotonic_regression`) replaces
  the sequential prefix-min recurrence; `chain_cost_tables` keeps the literal recurrence for
  explanation and for tests.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import isotonic_regression

from hierdp_core.consistency.segments import segmented_cumsum
from hierdp_core.errors import InputError
from hierdp_core.groupsizes.fioretto import _total, _values
from hierdp_core.hierarchy import Hierarchy


class ChainOrder(NamedTuple):
    """The chain T^ch (spec sec. 1.3, 2.7): size-major post-order of the region tree.

    ``cells[i]``: the (node, size) of chain node i as the flat index ``node * n_sizes +
    size`` into a row-major (n_nodes, n_sizes) array, so a chain vector is
    ``values.ravel()[cells]``; ``level[i]``: its level; ``equal_next[i]``: True when Model 3
    ties chain nodes i and i + 1 (a last child followed by its parent), else ``<=`` (the last
    entry is False).
    """

    cells: np.ndarray
    level: np.ndarray
    equal_next: np.ndarray


def _post_order(h: Hierarchy) -> np.ndarray:
    """Post-order position of every node (children in node order before their parent)."""
    sizes = np.ones(h.n_nodes, dtype=np.int64)  # number of nodes in each subtree
    for level in range(h.depth, 0, -1):
        sizes[h.level_slice(level - 1)] += np.add.reduceat(sizes[h.level_slice(level)],
                                                           h.child_starts(level))
    first = np.zeros(h.n_nodes, dtype=np.int64)  # first post-order slot of each subtree
    for level in range(1, h.n_levels):
        sl = h.level_slice(level)
        starts = h.child_starts(level)
        before = segmented_cumsum(sizes[sl].astype(np.float64), starts) - sizes[sl]
        first[sl] = first[h.parent[sl]] + np.rint(before).astype(np.int64)
    return first + sizes - 1


def chain_order(h: Hierarchy, n_sizes: int) -> ChainOrder:
    """The chain of ``n_sizes`` copies of the region tree (sizes 0..n_sizes-1); see
    `ChainOrder`. The DFS child order is the hierarchy's node order (sorted codes). Made
    once per hierarchy and ``n_sizes`` (`Hierarchy.derived`); its arrays are read-only."""
    n_sizes = int(n_sizes)
    if n_sizes < 1:
        raise InputError(f"n_sizes must be >= 1, got {n_sizes}")
    return h.derived(("chain_order", n_sizes), lambda: _read_only(_chain_order(h, n_sizes)))


def _read_only(chain: ChainOrder) -> ChainOrder:
    for a in chain:
        a.flags.writeable = False
    return chain


def _chain_order(h: Hierarchy, n_sizes: int) -> ChainOrder:
    post = np.empty(h.n_nodes, dtype=np.int64)
    post[_post_order(h)] = np.arange(h.n_nodes)
    cells = (post[None, :] * n_sizes + np.arange(n_sizes)[:, None]).ravel()
    level = np.tile(h.level_of_nodes()[post].astype(np.int64), n_sizes)
    equal_next = np.zeros(level.size, dtype=bool)
    equal_next[:-1] = level[:-1] > level[1:]
    return ChainOrder(cells, level, equal_next)


def chain_cumulative(h: Hierarchy, hist) -> np.ndarray:
    """Level-wide chain cumulative counts (spec sec. 1.3, 2.7 step 3) of histograms.

    Returns an array shaped like ``hist`` (n_nodes, N + 1) whose entry (v, s) is the chain
    value of chain node (s, v): the sum of ``hist`` over the nodes (r, t) of v's level with
    ``t < s``, or ``t = s`` and r at or before v in node order. The paper-literal M_c^ch adds
    noise to these values (NOT private for a level with more than one region, sec. 1.5)."""
    a = np.asarray(hist)
    out = np.empty(a.shape, dtype=np.result_type(a.dtype, np.int64))
    for level in range(h.n_levels):
        rows = a[h.level_slice(level)]
        out[h.level_slice(level)] = np.cumsum(rows.T.ravel()).reshape(rows.T.shape).T
    return out


def chain_from_region_cumulative(h: Hierarchy, noisy_cum) -> np.ndarray:
    """Chain values from per-region (noisy) cumulative histograms: the private variant S1
    (spec sec. 2.7). For level regions r_1..r_m in node order,
    ``c(s, r_j) = sum_{t <= j} c^{r_t}_s + sum_{t > j} c^{r_t}_{s-1}`` (``c_{-1} = 0``); equal
    to `chain_cumulative` of the histograms when ``noisy_cum`` is exact. Same layout as
    `chain_cumulative`."""
    c = _values(h, noisy_cum, "noisy_cum")
    out = np.empty_like(c)
    for level in range(h.n_levels):
        prefix = np.cumsum(c[h.level_slice(level)], axis=0)  # sum_{t <= j} c^{r_t}_s
        rest = prefix[-1][None, :] - prefix  # sum_{t > j} c^{r_t}_s
        shifted = np.zeros_like(rest)
        shifted[:, 1:] = rest[:, :-1]
        out[h.level_slice(level)] = prefix + shifted
    return out


def _round_blocks(y: np.ndarray, starts: np.ndarray, G: int) -> np.ndarray:
    """Integer isotonic regression of ``y`` on blocks (runs tied equal), bounds [0, G],
    the last block pinned to G: value per block."""
    counts = np.diff(np.append(starts, y.size))
    sums = np.add.reduceat(y, starts)
    out = np.full(starts.size, G, dtype=np.int64)
    if starts.size == 1:
        return out
    fit = isotonic_regression(sums[:-1] / counts[:-1], weights=counts[:-1].astype(float))
    if np.all(y == np.rint(y)) and np.abs(y).sum() < 2.0 ** 50:
        # exact rounding of each pool's mean S / W from integer sums
        pool = np.repeat(np.arange(fit.blocks.size - 1), np.diff(fit.blocks))
        s = np.rint(np.add.reduceat(sums[:-1], fit.blocks[:-1])).astype(np.int64)
        wt = np.add.reduceat(counts[:-1], fit.blocks[:-1]).astype(np.int64)
        value = np.floor_divide(2 * s + wt, 2 * wt)  # round half up, exact
        out[:-1] = np.clip(value, 0, G)[pool]
    else:
        out[:-1] = np.floor(np.clip(fit.x, 0, G) + 0.5).astype(np.int64)
    return out


def chain_dp(h: Hierarchy, chain_noisy, total_groups, *, delta=None) -> np.ndarray:
    """M_c^ch post-processing (spec sec. 2.7): the exact integer optimum of Model 3 (fixed).

    ``chain_noisy``: (n_nodes, N + 1), entry (v, s) the noisy chain value of chain node
    (s, v) (layout of `chain_cumulative`). Minimises ``sum_i (c_i - chain_noisy_i)^2`` over
    integer chains with ``c_last = G``, ``c_i = c_{i+1}`` when a last child precedes its
    parent and ``c_i <= c_{i+1}`` otherwise (the paper omits the case level_i < level_{i+1};
    recurrence (6b) imposes it and without it decumulation can go negative), ``c >= 0``.
    Solved exactly as integer isotonic regression with tied blocks (module docstring), then
    decumulated per level in chain order. Returns an int64 (n_nodes, N + 1) histogram:
    consistent, non-negative, root sums to G.

    ``delta`` is accepted for symmetry with the other mechanisms and ignored: the optimum is
    over all integers in [0, G], so no domain truncation is needed.
    """
    del delta
    return chain_dp_trials(h, _values(h, chain_noisy, "chain_noisy")[None], total_groups)[0]


def chain_dp_trials(h: Hierarchy, chain_noisy, total_groups) -> np.ndarray:
    """`chain_dp` of K noisy chains (K, n_nodes, N + 1) with one public G: (K, n_nodes,
    N + 1), ``[k]`` bit for bit ``chain_dp(h, chain_noisy[k], total_groups)``. Integral
    chains share every step but their isotonic regression (one call each, on the same
    values as alone; their block sums are exact integers in any order); the others are
    fitted one by one as `_round_blocks` does."""
    c = np.asarray(chain_noisy, dtype=np.float64)
    if c.ndim != 3:
        raise InputError(f"chain_noisy must have shape (trials, n_nodes, N + 1), got "
                         f"{c.shape}")
    for ck in c:
        _values(h, ck, "chain_noisy")
    G = _total(total_groups)
    chain, starts, by_level = _chain_blocks(h, c.shape[2])
    y = c.reshape(len(c), -1)[:, chain.cells]
    counts = np.diff(np.append(starts, y.shape[1]))
    integral = np.all(y == np.rint(y), axis=1) & (np.abs(y).sum(axis=1) < 2.0 ** 50)
    values = np.full((len(c), starts.size), G, dtype=np.int64)
    if starts.size > 1 and integral.any():
        values[integral, :-1] = _round_integral(np.add.reduceat(y[integral], starts, axis=1),
                                                counts, G)
    for k in np.flatnonzero(~integral):
        values[k] = _round_blocks(y[k], starts, G)
    fitted = np.repeat(values, counts, axis=1)
    hist = np.empty(c.shape, dtype=np.int64).reshape(len(c), -1)
    for at in by_level:
        hist[:, chain.cells[at]] = np.diff(fitted[:, at], axis=1, prepend=0)
    return hist.reshape(c.shape)


def _round_integral(sums: np.ndarray, counts: np.ndarray, G: int) -> np.ndarray:
    """`_round_blocks`' values of the free blocks (all but the last) of integral chains
    from their block sums (K, blocks): each chain's isotonic regression of its block means,
    then every pool's mean rounded half up exactly from integer sums, clipped to [0, G]."""
    free = counts[:-1]
    sums = np.rint(sums[:, :-1]).astype(np.int64)
    pools = [isotonic_regression(row / free, weights=free.astype(float)).blocks[:-1]
             for row in sums]
    first = np.concatenate([b + k * free.size for k, b in enumerate(pools)])
    s = np.add.reduceat(sums.ravel(), first)
    wt = np.add.reduceat(np.tile(free, len(sums)), first)
    value = np.clip(np.floor_divide(2 * s + wt, 2 * wt), 0, G)
    return np.repeat(value, np.diff(np.append(first, sums.size))).reshape(sums.shape)


def _chain_blocks(h: Hierarchy, n_sizes: int):
    """(`chain_order`, where each tied block of the chain starts, the chain positions of
    every level), made once per hierarchy and ``n_sizes``."""
    chain = chain_order(h, n_sizes)

    def build():
        starts = np.flatnonzero(np.concatenate([[True], ~chain.equal_next[:-1]]))
        return chain, starts, [np.flatnonzero(chain.level == lv) for lv in range(h.n_levels)]

    return h.derived(("chain_blocks", int(n_sizes)), build)


def chain_cost_tables(values, equal_next, lo: int, hi: int) -> np.ndarray:
    """The literal chain recurrence (6a/6b) on the common domain lo..hi, for explanation
    and tests (a Python loop along the chain: small chains only).

    ``tau_1(v) = (v - c_1)^2``; ``tau_{i+1}(v) = (v - c_{i+1})^2 + tau_i(v)`` after an ``=``
    link, ``+ min_{x <= v} tau_i(x)`` after a ``<=`` link. Returns (M, hi - lo + 1).
    """
    c = np.asarray(values, dtype=np.float64)
    v = np.arange(lo, hi + 1, dtype=np.float64)
    tables = np.empty((c.size, v.size))
    tables[0] = (v - c[0]) ** 2
    for i in range(1, c.size):
        prev = tables[i - 1] if equal_next[i - 1] else np.minimum.accumulate(tables[i - 1])
        tables[i] = (v - c[i]) ** 2 + prev
    return tables
