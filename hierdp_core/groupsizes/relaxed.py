"""Relaxed quadratic-program baselines M_H^r and M_c^r (Fioretto, Van Hentenryck & Zhu 2021).

Both solve a least-squares post-processing of noisy histograms over the real numbers, then
round every entry to the nearest integer. Rounding is exactly what breaks consistency (the
paper's #CV column of Table 7) and faithfulness; it is deliberately **not** repaired here.

* `mh_relaxed` -- Model 1 relaxed (the paper's M_H^r): variables are the plain histograms
  of every node, minimise ``sum_v sum_s w_v (x_vs - n~_vs)^2`` subject to parent = sum of
  children for every internal node and size, ``sum_s x_root,s = G`` and ``x >= 0``.
* `mc_relaxed` -- Model 2 relaxed (M_c^r): variables are the per-region cumulative
  histograms ``c^_vs``, minimise ``sum_v sum_s w_v (c^_vs - c~_vs)^2`` subject to parent =
  sum of children, ``c^_root,N = G``, ``c^_v`` non-decreasing in s and ``c^ >= 0``; the
  rounded ``c^`` is decumulated per region.

Formulation (both models). One variable per (node, size), flattened row-major as
``v * (N + 1) + s``; the objective Hessian is diagonal; the consistency constraints are the
sparse matrix ``kron(B, I_{N+1})`` with ``B`` the (internal node x node) incidence
``+1`` at the parent, ``-1`` at each child. Eliminating the internal nodes instead would give
a dense Hessian block per parent (every pair of its descendants), so the internal nodes stay
as variables. Sign constraints are put on the leaves only: internal nodes are sums of leaves,
so their ``x >= 0`` (Model 1), or their monotonicity and ``c^ >= 0`` (Model 2), is implied.

Numerics. Census counts reach ~1e8 at the root, so the QP is solved in shifted variables
``z = x - x0`` with ``x0`` a consistent, feasible-signed point computed from the noisy
leaves (Model 1: negative leaves clipped to 0 and summed up; Model 2: a monotone envelope of
each noisy leaf row, summed up). This is a translation of the same QP, not a different one:
it only keeps the solver's relative tolerances meaningful (all data are then of the size of
the noise instead of the size of the counts).

Solvers (``solver=``, options passed through ``solver_options``):
* ``"clarabel"`` (default): interior point with a sparse LDL factorisation of the KKT system,
  40-70 iterations whatever the size; tolerances of 1e-10 give the same rounded release as a
  1e-12 solve. Model 1 factors with little fill-in (a tree per size, one root row), so time
  grows about linearly in N (census, N = 1000: ~2.5 min). Model 2's monotonicity chains
  along s couple all sizes of a node, which leaves a dense (N+1)^2 block per internal node
  in the factor, so it grows faster (census, N = 1000: ~23 min) -- the paper's "M_c^r is
  slower than M_H^r".
* ``"highs"``: HiGHS's active-set QP, an independent exact reference for small trees. Each
  iteration changes one active bound and the solver keeps a dense reduced Hessian on the
  null space, so it needs ``qp_nullspace_limit`` raised and is impractical beyond a few
  thousand variables (a census input has millions).
OSQP (ADMM) was measured too and left out: at the accuracy rounding needs it takes ~10^4-10^5
iterations (40-100x slower than Clarabel at N = 50), and at its default tolerances it is off
by whole units.

Paper errors handled (see ``shared/specs/group-sizes-fioretto.md``):
* Model 1 (H2) is per **level** (``sum over the regions of a level = G``), not per region as
  one text version prints; with consistency it is the single root constraint used here.
* The bins are sizes ``0..N`` (the data model's size-0 bin), the sensitivities assume a fixed
  public set of groups; nothing here reads the truth.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from hierdp_core.errors import InputError
from hierdp_core.groupsizes.data import decumulate
from hierdp_core.groupsizes.relaxed_solvers import (
    DEFAULT_SOLVER,
    SOLVERS,
    Constraints,
    ShiftedQP,
    SolveResult,
    solve_qp,
)
from hierdp_core.hierarchy import Hierarchy

__all__ = ["DEFAULT_SOLVER", "SOLVERS", "mc_relaxed", "mh_relaxed"]


# ---- input checks and weights ----------------------------------------------------------
def _check_inputs(h: Hierarchy, values, total_groups,
                  level_weights) -> tuple[np.ndarray, float, np.ndarray]:
    """Validated (n_nodes, N + 1) float array, G and one weight per node."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != h.n_nodes or arr.shape[1] < 2:
        raise InputError(f"noisy histograms must have shape (n_nodes={h.n_nodes}, N + 1) with "
                         f"N >= 1, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError("noisy histograms must be finite")
    g = float(total_groups)
    if not np.isfinite(g) or g < 0 or g != np.round(g):
        raise InputError(f"total_groups (G) must be a non-negative integer, got {total_groups!r}")
    return arr, g, _node_weights(h, level_weights)


def _node_weights(h: Hierarchy, level_weights: Sequence[float] | None) -> np.ndarray:
    """Objective weight of every node: ``level_weights[level]`` (default 1 everywhere).
    With per-level noise scales, 1 / variance gives the least-squares (ML) estimator."""
    if level_weights is None:
        return np.ones(h.n_nodes)
    w = np.asarray(level_weights, dtype=np.float64)
    if w.shape != (h.n_levels,) or not np.isfinite(w).all() or (w <= 0).any():
        raise InputError(f"level_weights must be {h.n_levels} positive numbers (one per level, "
                         f"root first), got {w.tolist()}")
    return w[h.level_of_nodes()]


# ---- constraint matrices ---------------------------------------------------------------
def _incidence(h: Hierarchy) -> sp.csr_matrix:
    """(internal nodes x nodes): +1 at the parent, -1 at each of its children."""
    n_internal = int(h.level_offsets[h.depth])
    child = np.arange(1, h.n_nodes)
    rows = np.concatenate([np.arange(n_internal), h.parent[child]])
    cols = np.concatenate([np.arange(n_internal), child])
    vals = np.concatenate([np.ones(n_internal), -np.ones(child.size)])
    return sp.csr_matrix((vals, (rows, cols)), shape=(n_internal, h.n_nodes))


def _equalities(h: Hierarchy, n_cols: int, root_cols: np.ndarray) -> sp.csr_matrix:
    """Consistency rows ``kron(B, I)`` (one per internal node and size), then one row summing
    the root's variables in ``root_cols`` (the faithfulness constraint)."""
    consistency = sp.kron(_incidence(h), sp.identity(n_cols, format="csr"), format="csr")
    root = sp.csr_matrix((np.ones(root_cols.size), (np.zeros(root_cols.size, dtype=np.int64),
                                                    root_cols)),
                         shape=(1, h.n_nodes * n_cols))
    return sp.vstack([consistency, root], format="csr")


def _leaf_differences(h: Hierarchy, n_cols: int) -> sp.csr_matrix:
    """Rows ``c_v0`` and ``c_vs - c_v,s-1`` (s >= 1) for every leaf v: ``>= 0`` is Model 2's
    (C3) monotonicity plus ``c >= 0`` at the leaves."""
    first = int(h.level_offsets[h.depth]) * n_cols
    diff = sp.identity(n_cols, format="csr") - sp.eye(n_cols, k=-1, format="csr")
    block = sp.kron(sp.identity(h.n_leaves, format="csr"), diff, format="csr")
    pad = sp.csr_matrix((block.shape[0], first))
    return sp.hstack([pad, block], format="csr")


def _model1_constraints(h: Hierarchy, n_cols: int) -> Constraints:
    """Model 1: consistency, the root's sizes summing to G, a lower bound on every leaf cell."""
    def build() -> Constraints:
        leaves = np.arange(int(h.level_offsets[h.depth]) * n_cols, h.n_nodes * n_cols)
        return Constraints(_equalities(h, n_cols, np.arange(n_cols)), leaves)

    return h.derived(("relaxed-model1", n_cols), build)


def _model2_constraints(h: Hierarchy, n_cols: int) -> Constraints:
    """Model 2: consistency, the root's last cumulative cell equal to G, the leaves' rows
    monotone and non-negative (`_leaf_differences`); no column bounds."""
    def build() -> Constraints:
        return Constraints(_equalities(h, n_cols, np.array([n_cols - 1])),
                           np.array([], dtype=np.int64), _leaf_differences(h, n_cols))

    return h.derived(("relaxed-model2", n_cols), build)


# ---- the two models --------------------------------------------------------------------
def _shifted_qp(target: np.ndarray, weights: np.ndarray, x0: np.ndarray,
                constraints: Constraints, b_eq: np.ndarray, col_lb: np.ndarray,
                lb_in: np.ndarray | None = None) -> ShiftedQP:
    """``sum w (x - target)^2`` over ``x = x0 + z``, i.e. ``P = 2w``, ``q = -2w (target -
    x0)``; constraints are given for x and translated by ``x0``. ``x0`` is consistent (built
    by `Hierarchy.aggregate`), so only the last equality row (the root's) changes."""
    w = np.repeat(weights, target.shape[1])
    x0f = x0.ravel()
    resid = target.ravel() - x0f
    b = b_eq.copy()
    b[-1] -= float((constraints.a_eq[-1] @ x0f)[0])
    a_in = constraints.a_in
    shifted_in = None if a_in is None else lb_in - a_in @ x0f
    return ShiftedQP(2.0 * w, -2.0 * w * resid, constraints, b, col_lb - x0f, shifted_in, x0f)


def _model1(h: Hierarchy, noisy: np.ndarray, weights: np.ndarray, g: float) -> ShiftedQP:
    """Model 1 relaxed: (H1) objective, (H3) consistency for every internal node and size,
    (H2) as the root sum (per level, implied by consistency), (H4) relaxed to ``x >= 0``
    imposed on the leaves."""
    n_cols = noisy.shape[1]
    leaves = h.level_slice(h.depth)
    x0 = h.aggregate(np.maximum(noisy[leaves], 0.0))
    constraints = _model1_constraints(h, n_cols)
    b_eq = np.zeros(constraints.a_eq.shape[0])
    b_eq[-1] = g
    col_lb = np.full(noisy.size, -np.inf)
    col_lb[constraints.bounded] = 0.0
    return _shifted_qp(noisy, weights, x0, constraints, b_eq, col_lb)


def _monotone_envelope(rows: np.ndarray) -> np.ndarray:
    """A non-negative, non-decreasing row-wise approximation of ``rows``: the mean of the
    running max from the left and the running min from the right, clipped at 0."""
    upper = np.maximum.accumulate(rows, axis=1)
    lower = np.minimum.accumulate(rows[:, ::-1], axis=1)[:, ::-1]
    return np.maximum(0.5 * (upper + lower), 0.0)


def _model2(h: Hierarchy, noisy_cum: np.ndarray, weights: np.ndarray, g: float) -> ShiftedQP:
    """Model 2 relaxed: (C1) objective over cumulative histograms, (C2) ``c_root,N = G``,
    (C3) monotone in s and (C5) relaxed to ``c >= 0`` -- both imposed on the leaves (implied
    for internal nodes) -- and (C4) consistency for every internal node and size."""
    n_cols = noisy_cum.shape[1]
    leaves = h.level_slice(h.depth)
    x0 = h.aggregate(_monotone_envelope(noisy_cum[leaves]))
    constraints = _model2_constraints(h, n_cols)
    b_eq = np.zeros(constraints.a_eq.shape[0])
    b_eq[-1] = g
    return _shifted_qp(noisy_cum, weights, x0, constraints, b_eq,
                       np.full(noisy_cum.size, -np.inf), np.zeros(constraints.a_in.shape[0]))


# ---- rounding and reporting ------------------------------------------------------------
def _level_gaps(h: Hierarchy, hist: np.ndarray, g: float) -> list[float]:
    """``|sum over the regions of a level and all sizes - G|`` for every level."""
    return [float(abs(hist[h.level_slice(level)].sum() - g)) for level in range(h.n_levels)]


def _info(h: Hierarchy, rounded: np.ndarray, continuous: np.ndarray, objective: float,
          g: float, solver: str, result: SolveResult, build_seconds: float) -> dict:
    gaps = _level_gaps(h, rounded, g)
    return {
        "solver": solver, "status": result.status, "optimal": result.ok,
        "objective": objective, "iterations": result.iterations,
        "seconds": result.seconds, "build_seconds": build_seconds,
        "consistency_violations": h.consistency_violations(rounded),
        "faithfulness_gap": max(gaps), "faithfulness_gap_per_level": gaps,
        "continuous": continuous,
    }


def _objective(x: np.ndarray, target: np.ndarray, weights: np.ndarray) -> float:
    return float((weights[:, None] * (x - target) ** 2).sum())


def mh_relaxed(h: Hierarchy, noisy, total_groups, *,
               level_weights: Sequence[float] | None = None, solver: str = DEFAULT_SOLVER,
               solver_options: dict | None = None) -> tuple[np.ndarray, dict]:
    """M_H^r: Model 1 (plain histograms) relaxed to real ``x >= 0``, solved, then rounded.

    ``noisy``: (n_nodes, N + 1) noisy plain histograms of every node (sizes 0..N);
    ``total_groups``: the public G. Minimises ``sum_v w_v ||x_v - noisy_v||^2`` subject to
    parent = sum of children (every internal node and size), ``sum_s x_root,s = G`` (Model 1's
    (H2), which is per *level*, not per region as one paper version prints) and ``x >= 0``.

    Returns the rounded (nearest-integer, int64) histograms -- consistency and faithfulness
    are *not* repaired after rounding, as in the paper -- and ``info`` with ``solver``,
    ``status``, ``optimal``, ``objective`` (of the continuous optimum), ``iterations``,
    ``seconds`` (solver), ``build_seconds``, ``consistency_violations`` (#CV: (parent, size)
    cells where the rounded parent differs from the sum of its rounded children),
    ``faithfulness_gap`` (max over levels of ``|level sum - G|``), ``faithfulness_gap_per_level``
    and ``continuous`` (the unrounded optimum, same shape). Rounding is ``np.rint`` (exact
    .5 ties to even) after clearing solver-tolerance negatives (~-1e-9).

    ``level_weights`` (one positive number per level, root first) weights the squared errors,
    e.g. 1 / noise variance for a non-uniform budget split. ``solver`` is one of `SOLVERS`;
    ``solver_options`` go to the solver as is (Clarabel settings or HiGHS options). Raises
    ``MechanismError`` if the solver stops without an optimum (nothing is rounded then).
    """
    noisy, g, weights = _check_inputs(h, noisy, total_groups, level_weights)
    start = time.perf_counter()
    qp = _model1(h, noisy, weights, g)
    build = time.perf_counter() - start
    x, result = solve_qp(qp, solver, solver_options)
    cont = x.reshape(noisy.shape)
    # the exact optimum is >= 0; clear solver-tolerance negatives (-1e-9) before rounding
    rounded = np.rint(np.maximum(cont, 0.0)).astype(np.int64)
    info = _info(h, rounded, cont, _objective(cont, noisy, weights), g, solver, result, build)
    return rounded, info


def mc_relaxed(h: Hierarchy, noisy_cum, total_groups, *,
               level_weights: Sequence[float] | None = None, solver: str = DEFAULT_SOLVER,
               solver_options: dict | None = None) -> tuple[np.ndarray, dict]:
    """M_c^r: Model 2 (per-region cumulative histograms) relaxed to real ``c >= 0``, solved,
    rounded, then decumulated per region.

    ``noisy_cum``: (n_nodes, N + 1) noisy cumulative histograms ``c~_vs`` (noisy number of
    groups of size <= s). Minimises ``sum_v w_v ||c_v - c~_v||^2`` subject to (C2)
    ``c_root,N = G``, (C3) ``c_v`` non-decreasing in s, (C4) parent = sum of children and
    ``c >= 0``. The rounded ``c`` is decumulated region by region (`decumulate`), so the
    released plain histograms are ``>= 0`` integers; their consistency is not repaired.

    ``info`` and the keyword arguments are as for `mh_relaxed`; ``objective`` and
    ``continuous`` are in the cumulative space of Model 2 (compare mechanisms on L1, EMD and
    #CV, never on their objectives). Before rounding, solver-tolerance wiggles (~1e-9) are
    cleared by a running max, so the rounded rows stay monotone (no negative counts).
    """
    noisy_cum, g, weights = _check_inputs(h, noisy_cum, total_groups, level_weights)
    start = time.perf_counter()
    qp = _model2(h, noisy_cum, weights, g)
    build = time.perf_counter() - start
    x, result = solve_qp(qp, solver, solver_options)
    cont = x.reshape(noisy_cum.shape)
    # the exact optimum is monotone and >= 0; clear solver-tolerance wiggles (~1e-9) first so
    # that a pooled value like k + 0.5 cannot round to k + 1 and then k (a negative count)
    clean = np.maximum.accumulate(np.maximum(cont, 0.0), axis=1)
    rounded = decumulate(np.rint(clean).astype(np.int64))
    info = _info(h, rounded, cont, _objective(cont, noisy_cum, weights), g, solver, result,
                 build)
    return rounded, info
