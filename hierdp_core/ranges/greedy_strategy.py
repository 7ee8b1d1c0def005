"""DAWA Stage 2's strategy selection: the weights of the interval queries over k buckets.

`greedy_strategy` is DAWA's Alg. 2 (Li, Hay, Miklau & Wang, PVLDB 7(5) 2014; spec section 2.3):
for the public workload over buckets W-hat, through its Gram matrix G = W-hat^T W-hat, every
internal tree node q (`hierdp_core.ranges.strategy_tree`), children first, gets a weight
lambda_q in [0, 1) that minimises a decayed local trace of the error, and all its descendants
are scaled by 1 - lambda_q (the closed form: `hierdp_core.ranges.greedy_closed_form`). The
baselines are `uniform_strategy` (the same weight on every tree level; H_t of Hay et al.,
DAWA's "Partition+Uniform"), `geometric_strategy` (weights falling geometrically towards the
root, after Cormode et al.; "Partition+Geometric") and `laplace_strategy` (every bucket once).

Lambda is the best of the grid {0, 1/grid, ..., (grid-1)/grid}, evaluated at once for all
nodes of a level; in 'paper' mode a vectorised search refines it within one grid step, never
above (grid-1)/grid, so lambda < 1; the error passed up is the exact trace.
`greedy_strategies` runs the recursion for r Gram matrices over the same k buckets at once
(`StrategyBatch`), so that the many small partitions of the units of one geographic level
cost one pass of numpy work per tree level, not one per unit.

Contract: every returned strategy's bucket weights sum to 1 (L1 column norm 1, the
sensitivity the measurement is calibrated with: `hierdp_core.ranges.strategy_measurement`),
and its ``inverse`` is the least-squares inverse `hierdp_core.ranges.strategy_inference`
uses. The weights depend only on the public workload and on the partition: choosing them is
post-processing.
"""

from __future__ import annotations

import numpy as np

from hierdp_core.errors import InputError
from hierdp_core.ranges.greedy_closed_form import Chooser, Parents, lambda_objective, solve_tree
from hierdp_core.ranges.interval_strategy import Strategy, StrategyBatch
from hierdp_core.ranges.strategy_tree import Tree, build_tree, row_weights

OBJECTIVES = ("paper", "reference")
_REFINE_POINTS = 41  # a local grid of 41 points around the best, ...
_REFINE_ROUNDS = 4   # ... shrunk 20-fold per round: spacing (2 grid steps) / 40 / 20^3


def _strategies(tree: Tree, gram, choose: Chooser, name: str, groups=None,
                r: int = 1) -> StrategyBatch:
    own, inverse = solve_tree(tree, gram, choose, groups, r)
    lo, hi, weights = row_weights(tree, own)
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


def _greedy_chooser(tree: Tree, grid: int, objective: str) -> Chooser:
    """Lambda per parent: the best of the grid {0, 1/grid, ..., (grid-1)/grid}, all evaluated
    at once; in 'paper' mode refined around it (never above (grid-1)/grid, never 1). Passes up
    the exact error ('paper') or the decayed objective value ('reference')."""
    candidates = np.arange(grid) / grid
    reference = objective == "reference"

    def choose(parents: Parents, level: int, top: np.ndarray):
        mu = tree.decay(level)
        blend = mu * parents.m_full + (1 - mu) * parents.m_blk
        nu = mu if reference else 1.0

        def value(lam):
            """The objective at lam of shape (r, n, c)."""
            return lambda_objective(lam, parents.error_sum[..., None], blend[..., None],
                              parents.kappa[..., None], nu)

        lam = candidates[np.argmin(value(candidates), axis=-1)]
        if reference:
            return lam, value(lam[..., None])[..., 0]
        lam = _refine(value, lam, 1.0 / grid, candidates[-1])
        return lam, lambda_objective(lam, parents.error_sum, parents.m_full, parents.kappa)

    return choose


def _fixed_chooser(level_weights: np.ndarray) -> Chooser:
    """Lambda of a node made at level l that is last seen at level `top`: the weight of levels
    l..top over the weight of levels 0..top (the share of what its ancestors left to it)."""
    cumulative = np.concatenate([[0.0], np.cumsum(level_weights)])

    def choose(parents: Parents, level: int, top: np.ndarray):
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
    tree = build_tree(k, int(branching))
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
    tree = build_tree(k, int(branching))
    return _strategies(tree, None, _fixed_chooser(np.ones(tree.height + 1)), "uniform")


def geometric_batch(k: int, branching: int = 2, ratio: float = 2 ** (1 / 3)) -> StrategyBatch:
    """Level weights falling by ``ratio`` per level from the leaves to the root, normalised so
    that every column sums to 1 (Partition+Geometric)."""
    _check_shape(k, branching)
    if not ratio > 0:
        raise InputError(f"the geometric ratio must be positive, got {ratio}")
    tree = build_tree(k, int(branching))
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
