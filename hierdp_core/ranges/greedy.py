"""DAWA Stage 2: weighted interval strategies over k buckets, and their least-squares estimate.

What it computes
----------------
A `Strategy` is a set of interval queries over the k buckets of a partition, query q covering
buckets ``lo[q] .. hi[q] - 1`` with weight ``c_q > 0``. It measures ``c_q * (bucket sum) +
Laplace(1/epsilon)`` per query and combines the answers by ordinary least squares,
``s = (Y^T D^2 Y)^-1 (D Y)^T y`` (``inverse`` is that k x k matrix, a pseudo-inverse when
collapsed nodes are used). The estimate is unbiased with covariance
``(2/epsilon^2) * inverse``, so the expected squared error of any linear query w is
``(2/epsilon^2) w^T inverse w``, known before any data is seen.

`greedy_strategy` is DAWA's Alg. 2 (Li, Hay, Miklau & Wang, PVLDB 7(5) 2014; spec section 2.3):
for the public workload over buckets W-hat, through its Gram matrix G = W-hat^T W-hat, every
internal tree node q, children first, gets a weight lambda_q in [0, 1) that minimises a decayed
local trace of the error, and all its descendants are scaled by 1 - lambda_q. The baselines
are `uniform_strategy` (the same weight on every tree level; H_t of Hay et al., DAWA's
"Partition+Uniform"), `geometric_strategy` (weights falling geometrically towards the root,
after Cormode et al.; "Partition+Geometric") and `laplace_strategy` (every bucket once).

The closed form. The paper's Eq. 17-20 are wrong (the Woodbury term lacks a (1-lambda)^-2
factor); this module uses the corrected form of spec section 2.3.3, checked against brute-force
inverses in the tests. With, for the children c of q, ``M_c = (Y_c^T D_c^2 Y_c)^-1``,
``v = concat(M_c 1)``, ``K = sum_c 1^T M_c 1``, ``S`` = the sum of the children's errors,
``m_full = v^T G_q v``, ``m_blk = sum_c v_c^T G_cc v_c`` and ``B = mu m_full + (1-mu) m_blk``::

    Obj_q(lambda) = (1-lambda)^-2 [S - B lambda^2 / ((1-lambda)^2 + lambda^2 K)]
    M_q           = (1-lambda)^-2 [blockdiag(M_c) - lambda^2 / ((1-lambda)^2 + lambda^2 K) v v^T]

with the decay ``mu = t^(-depth/2)`` (root depth 0); the error passed up is the exact trace
(the same formula with B = m_full). Lambda is the best of the grid {0, 1/grid, ...,
(grid-1)/grid}, evaluated at once for all nodes of a level; in 'paper' mode a vectorised
golden-section search refines it within one grid step, never above (grid-1)/grid, so lambda < 1.
A node whose buckets all have equal W-hat columns (``groups``) is asked once with weight 1 and
not split: its block of M is the pseudo-inverse 1 1^T / s^2, so least squares spreads its total
evenly (the minimum-norm fit). ``M`` of the root is ``inverse``; no k x k matrix is ever
inverted. The nodes of a level that have equal sizes are processed together with
numpy (one batch, plus the smaller last node), so time and memory are O(k^2), the size of the
dense root inverse (plus G @ G, O(k^3), in the ``reference`` objective).

`greedy_strategies` runs the recursion for r Gram matrices over the same k buckets at once
(every array gets a leading axis r; `StrategyBatch`), so that the many small partitions of
the units of one geographic level cost one pass of numpy work per tree level, not one per
unit.

Tree shape
----------
The paper's bottom-up tree: level 0 holds the k single buckets; level l+1 groups t consecutive
nodes of level l, the last group possibly smaller; the last level is the root (all leaves at
the same depth). When the last group of a level would hold a single node, no duplicate is made:
that node itself moves up a level and is asked once (a duplicate row would only split its
weight between two equal queries). Greedy gives such a node one lambda, chosen where it is
made; the fixed-weight baselines give it the sum of the weights of all the levels it spans.

Privacy
-------
Every bucket's weights sum to 1 (L1 column norm 1), so adding or removing one record, which
changes one bucket count by 1, moves the vector of weighted answers by at most 1 in L1:
Laplace(1/epsilon2) noise on every asked query is epsilon2-DP under add/remove one record. The
weights depend only on the public workload and on the partition, which Stage 1 already released
privately: choosing them is post-processing, and so is the least-squares estimate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.privacy.samplers import Laplace, NoiseSource

OBJECTIVES = ("paper", "reference")
_REFINE_POINTS = 41  # a local grid of 41 points around the best, ...
_REFINE_ROUNDS = 4   # ... shrunk 20-fold per round: spacing (2 grid steps) / 40 / 20^3


@dataclass(frozen=True, eq=False)
class _Intervals:
    """Weighted interval queries lo..hi-1 over k buckets and the least-squares inverse."""

    k: int
    lo: np.ndarray
    hi: np.ndarray
    weights: np.ndarray
    inverse: np.ndarray
    name: str


@dataclass(frozen=True, eq=False)
class Strategy(_Intervals):
    """Weighted interval queries over k buckets: tree node q covers buckets lo[q]..hi[q]-1
    (hi exclusive) with weight weights[q] > 0 (rows with weight 0 are dropped); every bucket's
    weights sum to 1 (L1 column norm 1 = sensitivity 1 under add/remove one record).
    ``inverse`` = (Y^T D^2 Y)^-1 (or the pseudo-inverse where collapsed nodes are used),
    shape (k, k)."""

    def matrix(self) -> sparse.csr_matrix:
        """The weighted query matrix D Y, sparse (q, k)."""
        return sparse.diags(self.weights) @ _interval_matrix(self.lo, self.hi, self.k)

    def column_sums(self) -> np.ndarray:
        """Every bucket's total weight (k,): 1.0 up to float error."""
        return np.asarray(self.matrix().sum(axis=0)).ravel()

    def measure(self, bucket_counts: np.ndarray, epsilon: float, source: NoiseSource, *,
                sensitivity: float) -> np.ndarray:
        """Noisy answers, (q,) for bucket counts (k,) or (r, q) for (r, k): weight times range
        sum plus independent Laplace(sensitivity/epsilon) per row and query (epsilon-DP per
        row). ``sensitivity``: the L1 sensitivity of the answers, from the mechanism's privacy
        plan (1 under add/remove one record, the column L1 norm)."""
        counts = _rows_of(bucket_counts, self.k, "bucket counts")
        exact = (self.matrix() @ counts.T).T
        noise = Laplace.for_epsilon(epsilon, l1_sensitivity=sensitivity)
        return noise.apply(exact, source, sensitivity=sensitivity, budget=epsilon,
                           label=f"ranges: {self.name} strategy answers")

    def estimate(self, answers: np.ndarray) -> np.ndarray:
        """Least squares s = inverse @ (D Y)^T y: (q,) -> (k,), batched (r, q) -> (r, k)."""
        answers = _rows_of(answers, self.lo.size, "answers")
        return (self.inverse @ (self.matrix().T @ answers.T)).T

    def release(self, bucket_counts: np.ndarray, epsilon: float, source: NoiseSource, *,
                sensitivity: float) -> np.ndarray:
        """Estimated bucket counts, same shape as ``bucket_counts``: estimate(measure(...))."""
        return self.estimate(self.measure(bucket_counts, epsilon, source,
                                          sensitivity=sensitivity))

    def expected_squared_errors(self, w_hat: np.ndarray, epsilon: float) -> np.ndarray:
        """Per query (rows of w_hat (m, k)): (2/epsilon^2) w^T inverse w (data-independent)."""
        if not epsilon > 0:
            raise BudgetError(f"epsilon must be positive, got {epsilon}")
        w_hat = np.atleast_2d(_rows_of(w_hat, self.k, "workload"))
        return 2.0 / epsilon**2 * np.einsum("mk,mk->m", w_hat @ self.inverse, w_hat)



def _interval_matrix(lo: np.ndarray, hi: np.ndarray, k: int) -> sparse.csr_matrix:
    """Y: row q is 1 on buckets lo[q]..hi[q]-1, sparse (q, k)."""
    lengths = hi - lo
    rows = np.repeat(np.arange(lo.size), lengths)
    cols = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    cols += np.repeat(lo, lengths)
    return sparse.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(lo.size, k))


def _rows_of(values, size: int, what: str) -> np.ndarray:
    """``values`` as floats of shape (size,) or (r, size)."""
    values = np.asarray(values, dtype=float)
    if values.ndim not in (1, 2) or values.shape[-1] != size:
        raise InputError(f"{what} must have shape ({size},) or (r, {size}), got {values.shape}")
    return values


# --- the closed form (spec 2.3.3) --------------------------------------------------------

def _objective(lam, error_sum, quad, kappa, nu=1.0):
    """(1-lam)^-2 [S - quad nu lam^2 / ((1-lam)^2 + nu lam^2 K)], broadcast over all arguments.

    With quad = B and nu = 1 it is the paper's Obj_q; with quad = m_full and nu = 1 the exact
    error tr(G_q M_q); with nu = mu the authors' code objective (decay applied twice)."""
    lam2 = nu * lam**2
    return (error_sum - quad * lam2 / ((1 - lam) ** 2 + lam2 * kappa)) / (1 - lam) ** 2


def _woodbury_factors(lam, kappa):
    """(1-lam)^-2 and lam^2 / ((1-lam)^2 + lam^2 K): M_q = first * (blockdiag - second v v^T)."""
    lam, kappa = np.asarray(lam, dtype=float), np.asarray(kappa, dtype=float)
    return (1 - lam) ** -2.0, lam**2 / ((1 - lam) ** 2 + lam**2 * kappa)


def _woodbury_regular(children: np.ndarray, v: np.ndarray, lam, kappa) -> np.ndarray:
    """M_q of parents with t equal children each: children (..., t, s, s), v (..., t*s),
    lam and kappa (...), for any leading batch shape."""
    t, s = children.shape[-3], children.shape[-1]
    scale, coef = _woodbury_factors(lam, kappa)
    out = (-coef)[..., None, None] * v[..., :, None] * v[..., None, :]
    blocks = out.reshape(*out.shape[:-2], t, s, t, s)
    for i in range(t):
        blocks[..., i, :, i, :] += children[..., i, :, :]
    out *= scale[..., None, None]
    return out


def _woodbury_single(children: list[np.ndarray], v: np.ndarray, lam, kappa) -> np.ndarray:
    """M_q of a parent whose children (square blocks (..., s_i, s_i)) may differ in size:
    v (..., sum of sizes), lam and kappa (...)."""
    scale, coef = _woodbury_factors(lam, kappa)
    out = -coef[..., None, None] * v[..., :, None] * v[..., None, :]
    start = 0
    for block in children:
        stop = start + block.shape[-1]
        out[..., start:stop, start:stop] += block
        start = stop
    out *= scale[..., None, None]
    return out


# --- the tree ------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Tree:
    """The bottom-up tree: ``edges[l]`` bounds the nodes of level l (level 0: the buckets; the
    last level: the root); ``made[l]`` marks the nodes made at level l (leaves, and groups of
    two or more nodes) as opposed to a single node moved up; ``top[l]`` is the highest level
    at which each node still appears."""

    branching: int
    edges: tuple[np.ndarray, ...]
    made: tuple[np.ndarray, ...]
    top: tuple[np.ndarray, ...]

    @property
    def height(self) -> int:
        return len(self.edges) - 1

    def decay(self, level: int) -> float:
        """mu = t^(-depth/2), root depth 0."""
        return float(self.branching) ** (-(self.height - level) / 2)


def _build_tree(k: int, branching: int) -> _Tree:
    edges, made = [np.arange(k + 1)], [np.ones(k, dtype=bool)]
    while edges[-1].size > 2:
        n_below = edges[-1].size - 1
        bounds = np.append(np.arange(0, n_below, branching), n_below)
        edges.append(edges[-1][bounds])
        made.append(np.diff(bounds) >= 2)
    top = [np.full(e.size - 1, level) for level, e in enumerate(edges)]
    for level in range(len(edges) - 2, -1, -1):
        if not made[level + 1][-1]:
            top[level][-1] = top[level + 1][-1]
    return _Tree(branching, tuple(edges), tuple(made), tuple(top))


def _collapsed_nodes(tree: _Tree, groups: np.ndarray | None, r: int) -> list[np.ndarray]:
    """Per level, (r, nodes): the nodes all of whose buckets share one group label."""
    if groups is None:
        return [np.zeros((r, e.size - 1), dtype=bool) for e in tree.edges]
    k = tree.edges[0][-1]
    # run_end[u, i]: the first j > i where a new label starts (k if none)
    starts = np.where(groups[:, 1:] != groups[:, :-1], np.arange(1, k), k)
    run_end = np.minimum.accumulate(np.concatenate([starts, np.full((r, 1), k)], axis=1)[:, ::-1],
                                    axis=1)[:, ::-1]
    return [run_end[:, e[:-1]] >= e[1:] for e in tree.edges]


# --- one level of the recursion, for r strategies at once -------------------------------------

@dataclass
class _Level:
    """The nodes of one level, for every strategy of the batch (leading axis r): their M
    blocks (the nodes of full size ``size`` stacked, (r, n, size, size); the smaller last node
    apart in ``tail``), v = M 1 (all nodes concatenated, (r, k)), and per node (r, n) K = 1^T M
    1, the error passed up, m = v^T G v, and the node's own weight fraction (lambda; 1 for
    leaves and collapsed nodes; 0 for a node moved up unchanged)."""

    size: int
    blocks: np.ndarray
    tail: np.ndarray | None
    v: np.ndarray
    kappa: np.ndarray
    error: np.ndarray
    quad: np.ndarray
    own: np.ndarray


@dataclass
class _Parents:
    """What the closed form needs of a batch of parents (arrays (r, parents))."""

    error_sum: np.ndarray
    kappa: np.ndarray
    m_full: np.ndarray
    m_blk: np.ndarray


_Chooser = Callable[[_Parents, int, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _leaves(diag: np.ndarray | None, r: int, k: int) -> _Level:
    ones = np.ones((r, k))
    values = np.zeros((r, k)) if diag is None else diag
    return _Level(1, np.ones((r, k, 1, 1)), None, ones.copy(), ones.copy(), values.copy(),
                  values.copy(), ones)


def _block_quads(gram: np.ndarray | None, v: np.ndarray, start: int) -> np.ndarray:
    """v_i^T G_ii v_i for the n consecutive diagonal blocks of G from ``start`` on: gram
    (r, k, k), v (r, n, S) -> (r, n)."""
    r, n, size = v.shape
    if gram is None or n == 0:
        return np.zeros((r, n))
    stop = start + n * size
    blocks = gram[:, start:stop, start:stop].reshape(r, n, size, n, size)
    diagonal = np.einsum("riaib->riab", blocks)  # a view: the (S, S) blocks on the diagonal
    return np.einsum("ria,ria->ri", np.einsum("riab,rib->ria", diagonal, v), v)


def _parents(below: _Level, first: int, stop: int, per_parent: int, m_full) -> _Parents:
    """Statistics of the parents of nodes first..stop-1 of ``below``, ``per_parent`` each."""
    def summed(values):
        return values[:, first:stop].reshape(values.shape[0], -1, per_parent).sum(axis=2)
    return _Parents(summed(below.error), summed(below.kappa), m_full, summed(below.quad))


def _made(parents: _Parents, lam: np.ndarray, error: np.ndarray, v: np.ndarray):
    """v, K, error, m and own fraction of new parents (v (r, n, S) of their children): with
    d = (1-lam)^2 + lam^2 K, M_q 1 = v / d, 1^T M_q 1 = K / d and v_q^T G v_q = m_full / d^2."""
    d = (1 - lam) ** 2 + lam**2 * parents.kappa
    return ((v / d[..., None]).reshape(v.shape[0], -1), parents.kappa / d, error,
            parents.m_full / d**2, lam)


def _next_level(below: _Level, gram, tree: _Tree, level: int, choose: _Chooser) -> _Level:
    """The nodes of ``level`` (>= 1) from those of the level below."""
    t, s = tree.branching, below.size
    r, n_blocks = below.blocks.shape[:2]
    n_regular = n_blocks // t
    cut, width = n_regular * t, n_regular * t * s
    # parents of t full-size children, all at once
    v_regular = below.v[:, :width].reshape(r, n_regular, t * s)
    parents = _parents(below, 0, cut, t, _block_quads(gram, v_regular, 0))
    lam, error = choose(parents, level, tree.top[level][:n_regular])
    blocks = _woodbury_regular(below.blocks[:, :cut].reshape(r, n_regular, t, s, s), v_regular,
                               lam, parents.kappa)
    columns = [_made(parents, lam, error, v_regular)]
    # the last parent, of the remaining (fewer or smaller) children
    rest = [below.blocks[:, i] for i in range(cut, n_blocks)]
    rest += [] if below.tail is None else [below.tail]
    tail = rest[0] if len(rest) == 1 else None
    if len(rest) == 1:  # a single node moves up unchanged, not asked again
        columns.append((below.v[:, width:], below.kappa[:, -1:], below.error[:, -1:],
                        below.quad[:, -1:], np.zeros((r, 1))))
    elif rest:
        v_last = below.v[:, None, width:]
        parents = _parents(below, cut, below.kappa.shape[1], len(rest),
                           _block_quads(gram, v_last, width))
        lam, error = choose(parents, level, tree.top[level][-1:])
        tail = _woodbury_single(rest, v_last[:, 0], lam[:, 0], parents.kappa[:, 0])
        columns.append(_made(parents, lam, error, v_last))
    v, kappa, errors, quads, own = (np.concatenate(c, axis=1)
                                    for c in zip(*columns, strict=True))
    return _Level(t * s, blocks, tail, v, kappa, errors, quads, own)


def _collapse(nodes: _Level, edges: np.ndarray, collapsed: np.ndarray, diag) -> None:
    """Turn the collapsed nodes ((r, n) mask) into single queries of weight 1: M = 1 1^T / s^2
    (the pseudo-inverse), v = 1/s, K = 1, error = m = G_ii (their W-hat columns are equal)."""
    if not collapsed.any():
        return
    lo, sizes = edges[:-1], np.diff(edges)
    nodes.blocks[collapsed[:, : nodes.blocks.shape[1]]] = 1.0 / nodes.size**2
    if nodes.tail is not None:
        nodes.tail[collapsed[:, -1]] = 1.0 / sizes[-1] ** 2
    spread = np.repeat(collapsed, sizes, axis=1)
    nodes.v[spread] = np.broadcast_to(np.repeat(1.0 / sizes, sizes), spread.shape)[spread]
    nodes.kappa[collapsed] = 1.0
    value = np.zeros(collapsed.shape) if diag is None else diag[:, lo]
    nodes.error[collapsed] = value[collapsed]
    nodes.quad[collapsed] = value[collapsed]
    nodes.own[collapsed] = 1.0


def _solve_tree(tree: _Tree, gram, choose: _Chooser, groups, r: int):
    """Run the recursion for r strategies: each level's own weight fractions (r, n), and M
    of the root (r, k, k)."""
    collapsed = _collapsed_nodes(tree, groups, r)
    diag = None if gram is None else np.einsum("rii->ri", gram)
    nodes = _leaves(diag, r, tree.edges[0][-1])
    own = [nodes.own]
    for level in range(1, tree.height + 1):
        nodes = _next_level(nodes, gram, tree, level, choose)
        _collapse(nodes, tree.edges[level], collapsed[level] & tree.made[level], diag)
        own.append(nodes.own)
    root = nodes.blocks[:, 0] if nodes.blocks.shape[1] else nodes.tail
    return own, root


def _row_weights(tree: _Tree, own: list[np.ndarray]):
    """Final weights c_q = own_q * prod over the ancestors a of (1 - own_a), (r, q), for the
    tree nodes lo..hi (q,) from the root down; zero rows kept."""
    remaining = np.ones((own[0].shape[0], tree.edges[0][-1]))
    rows = []
    for edges, fraction in zip(reversed(tree.edges), reversed(own), strict=True):
        rows.append((edges[:-1], edges[1:], fraction * remaining[:, edges[:-1]]))
        remaining *= np.repeat(1.0 - fraction, np.diff(edges), axis=1)
    lo, hi, weights = zip(*rows, strict=True)
    return (np.concatenate(lo).astype(np.int64), np.concatenate(hi).astype(np.int64),
            np.concatenate(weights, axis=1))


@dataclass(frozen=True, eq=False)
class StrategyBatch(_Intervals):
    """r strategies over the same k buckets and the same tree of intervals lo..hi (q,), with
    their own weights (r, q) (zero = not asked) and least-squares inverses (r, k, k)."""

    def unit(self, i: int) -> Strategy:
        """Strategy i, its zero-weight rows dropped."""
        keep = self.weights[i] > 0
        return Strategy(self.k, self.lo[keep], self.hi[keep], self.weights[i, keep],
                        self.inverse[i], self.name)

    def release(self, bucket_counts: np.ndarray, which: np.ndarray, epsilon: float,
                source: NoiseSource, max_cells: int = 1 << 22, *,
                sensitivity: float) -> np.ndarray:
        """Estimated bucket counts (R, k) of histograms (R, k), row j measured and estimated
        with strategy ``which[j]``: weight times range sum plus Laplace(sensitivity/epsilon)
        per asked query (epsilon-DP per row, as `Strategy.measure`), then least squares."""
        counts = _rows_of(bucket_counts, self.k, "bucket counts")
        cum = np.concatenate([np.zeros((counts.shape[0], 1)), np.cumsum(counts, axis=1)], axis=1)
        weights = self.weights[which]
        asked = weights > 0
        answers = weights * (cum[:, self.hi] - cum[:, self.lo])
        noise = Laplace.for_epsilon(epsilon, l1_sensitivity=sensitivity)
        answers[asked] = noise.apply(answers[asked], source, sensitivity=sensitivity,
                                     budget=epsilon,
                                     label="ranges: workload-aware strategy answers")
        # (D Y)^T y: every bucket collects the weighted answers of the intervals covering it
        normal = (_interval_matrix(self.lo, self.hi, self.k).T @ (weights * answers).T).T
        if self.inverse.shape[0] == 1:
            return normal @ self.inverse[0].T
        out = np.empty_like(normal)
        step = max(1, max_cells // self.k**2)
        for start in range(0, out.shape[0], step):
            rows = slice(start, start + step)
            out[rows] = np.einsum("rkl,rl->rk", self.inverse[which[rows]], normal[rows])
        return out


def _strategies(tree: _Tree, gram, choose: _Chooser, name: str, groups=None,
                r: int = 1) -> StrategyBatch:
    own, inverse = _solve_tree(tree, gram, choose, groups, r)
    lo, hi, weights = _row_weights(tree, own)
    return StrategyBatch(int(tree.edges[0][-1]), lo, hi, weights, inverse, name)


# --- choosing lambda -------------------------------------------------------------------------

def _refine(objective, lam: np.ndarray, step: float, upper: float) -> np.ndarray:
    """Search of ``objective`` (called with candidates of shape (..., c)) on [lam - step,
    lam + step] within [0, upper] by ever finer local grids, all nodes at once; a node keeps
    lam unless the search finds a lower value."""
    best = lam
    offsets = np.linspace(-1.0, 1.0, _REFINE_POINTS)
    for _ in range(_REFINE_ROUNDS):
        candidates = np.clip(best[..., None] + step * offsets, 0.0, upper)
        pick = np.argmin(objective(candidates), axis=-1)[..., None]
        best = np.take_along_axis(candidates, pick, axis=-1)[..., 0]
        step *= 2.0 / (_REFINE_POINTS - 1)
    return np.where(objective(best[..., None])[..., 0] < objective(lam[..., None])[..., 0],
                    best, lam)


def _greedy_chooser(tree: _Tree, grid: int, objective: str) -> _Chooser:
    """Lambda per parent: the best of the grid {0, 1/grid, ..., (grid-1)/grid}, all evaluated
    at once; in 'paper' mode refined around it (never above (grid-1)/grid, never 1). Passes up
    the exact error ('paper') or the decayed objective value ('reference')."""
    candidates = np.arange(grid) / grid
    reference = objective == "reference"

    def choose(parents: _Parents, level: int, top: np.ndarray):
        mu = tree.decay(level)
        blend = mu * parents.m_full + (1 - mu) * parents.m_blk
        nu = mu if reference else 1.0

        def value(lam):
            """The objective at lam of shape (r, n, c)."""
            return _objective(lam, parents.error_sum[..., None], blend[..., None],
                              parents.kappa[..., None], nu)

        lam = candidates[np.argmin(value(candidates), axis=-1)]
        if reference:
            return lam, value(lam[..., None])[..., 0]
        lam = _refine(value, lam, 1.0 / grid, candidates[-1])
        return lam, _objective(lam, parents.error_sum, parents.m_full, parents.kappa)

    return choose


def _fixed_chooser(level_weights: np.ndarray) -> _Chooser:
    """Lambda of a node made at level l that is last seen at level `top`: the weight of levels
    l..top over the weight of levels 0..top (the share of what its ancestors left to it)."""
    cumulative = np.concatenate([[0.0], np.cumsum(level_weights)])

    def choose(parents: _Parents, level: int, top: np.ndarray):
        lam = (cumulative[top + 1] - cumulative[level]) / cumulative[top + 1]
        lam = np.broadcast_to(lam, parents.kappa.shape).copy()
        return lam, np.zeros_like(lam)

    return choose


# --- public constructors -------------------------------------------------------------------

def _check_shape(k: int, branching: int) -> None:
    if k < 1:
        raise InputError(f"a strategy needs at least one bucket, got k = {k}")
    if int(branching) != branching or branching < 2:
        raise InputError(f"branching must be an integer >= 2, got {branching}")


def _check_greedy_arguments(grams, groups, grid, objective):
    grams = np.ascontiguousarray(grams, dtype=float)
    if grams.ndim != 3 or grams.shape[1] != grams.shape[2] or grams.shape[1] < 1:
        raise InputError("the workload Gram matrix must be square (k, k), got "
                         f"{grams.shape[1:]}")
    if not np.isfinite(grams).all():
        raise InputError("the workload Gram matrix has non-finite entries")
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != grams.shape[:2]:
            raise InputError(f"groups must have shape {grams.shape[:2]}, got {groups.shape}")
    if int(grid) != grid or grid < 1:
        raise InputError(f"grid must be a positive integer, got {grid}")
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; use one of {list(OBJECTIVES)}")
    return grams, groups


def greedy_strategies(grams: np.ndarray, branching: int = 2, *,
                      groups: np.ndarray | None = None, grid: int = 100,
                      objective: str = "paper") -> StrategyBatch:
    """`greedy_strategy` for r workload Gram matrices over the same number of buckets at
    once, grams (r, k, k) and groups (r, k): the same tree, numpy batched over r."""
    grams, groups = _check_greedy_arguments(grams, groups, grid, objective)
    r, k = grams.shape[:2]
    _check_shape(k, branching)
    tree = _build_tree(k, int(branching))
    effective = grams @ grams if objective == "reference" else grams
    choose = _greedy_chooser(tree, int(grid), objective)
    return _strategies(tree, effective, choose, f"greedy-{objective}", groups, r)


def greedy_strategy(gram: np.ndarray, branching: int = 2, *, groups: np.ndarray | None = None,
                    grid: int = 100, objective: str = "paper") -> Strategy:
    """DAWA Alg. 2 (greedy scaling) for the workload Gram matrix gram = W_hat^T W_hat (k, k).

    ``groups`` (k,) ints: buckets with equal labels have identical W_hat columns (the caller
    computes them exactly from W_hat); a tree node all of whose buckets share one label
    collapses to a single query of weight 1 (spec 2.3.4 item 4, pseudo-inverse 11^T/s^2);
    None = no collapsing. ``objective`` 'paper' = the corrected paper math (default; exact
    errors passed up, lambda refined between grid points); 'reference' = the authors' code
    objective (spec 2.3.4 items 1-3: G passed as W so it optimises for G^2, decay applied
    twice, decayed objectives passed up, grid only) for reproduction only."""
    gram = np.asarray(gram, dtype=float)
    if gram.ndim != 2:
        raise InputError(f"the workload Gram matrix must be square (k, k), got {gram.shape}")
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != gram.shape[:1]:
            raise InputError(f"groups must have shape ({gram.shape[0]},), got {groups.shape}")
        groups = groups[None]
    return greedy_strategies(gram[None], branching, groups=groups, grid=grid,
                             objective=objective).unit(0)


def uniform_batch(k: int, branching: int = 2) -> StrategyBatch:
    """Every tree level the same weight 1/h (h levels; a node spanning several levels gets
    their sum): Partition+Uniform, also H_t on single cells."""
    _check_shape(k, branching)
    tree = _build_tree(k, int(branching))
    return _strategies(tree, None, _fixed_chooser(np.ones(tree.height + 1)), "uniform")


def geometric_batch(k: int, branching: int = 2, ratio: float = 2 ** (1 / 3)) -> StrategyBatch:
    """Level weights falling by ``ratio`` per level from the leaves to the root, normalised so
    that every column sums to 1 (Partition+Geometric)."""
    _check_shape(k, branching)
    if not ratio > 0:
        raise InputError(f"the geometric ratio must be positive, got {ratio}")
    tree = _build_tree(k, int(branching))
    level_weights = float(ratio) ** -np.arange(tree.height + 1.0)
    return _strategies(tree, None, _fixed_chooser(level_weights), "geometric")


def uniform_strategy(k: int, branching: int = 2) -> Strategy:
    """`uniform_batch` as one `Strategy`."""
    return uniform_batch(k, branching).unit(0)


def geometric_strategy(k: int, branching: int = 2, ratio: float = 2 ** (1 / 3)) -> Strategy:
    """`geometric_batch` as one `Strategy`."""
    return geometric_batch(k, branching, ratio).unit(0)


def laplace_strategy(k: int) -> Strategy:
    """The k single buckets, weight 1 each (Partition+Laplace)."""
    _check_shape(k, 2)
    buckets = np.arange(k, dtype=np.int64)
    return Strategy(k, buckets, buckets + 1, np.ones(k), np.eye(k), "laplace")
