"""The relaxed QPs' data and solvers (`hierdp_core.groupsizes.relaxed`): the shifted QP, the
data-free part of its constraints (built once per hierarchy and model), and the two solvers
(Clarabel, interior point, the default; HiGHS, active set, an exact reference for small trees).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from hierdp_core.errors import InputError, MechanismError

SOLVERS = ("clarabel", "highs")
DEFAULT_SOLVER = "clarabel"


@dataclass(eq=False)
class Constraints:
    """The data-free part of a model's QP: the rows ``a_eq`` (``= b_eq``), the columns with
    a lower bound (``bounded``) and, if given, the rows ``a_in`` (``>= lb_in``). It depends on
    the tree's shape and N alone, so it is built once per hierarchy and model
    (`Hierarchy.derived`); a solver keeps the matrix it stacks from it (`stacked_for`)."""

    a_eq: sp.csr_matrix
    bounded: np.ndarray
    a_in: sp.csr_matrix | None = None
    _stacked: dict = field(default_factory=dict, repr=False)

    def stacked_for(self, solver: str, build: Callable[[Constraints], sp.spmatrix]):
        """``build(self)``, once per ``solver``."""
        if solver not in self._stacked:
            self._stacked[solver] = build(self)
        return self._stacked[solver]


@dataclass
class ShiftedQP:
    """``min 1/2 z'Pz + q'z`` with ``P = diag(p_diag)`` subject to ``a_eq z = b_eq``,
    ``z >= col_lb`` (entries may be ``-inf``; finite exactly at ``constraints.bounded``) and,
    if ``a_in`` is given, ``a_in z >= lb_in``. ``x = x0 + z`` recovers the model's
    variables; the objective equals the model's ``sum w (x - target)^2`` up to a constant."""

    p_diag: np.ndarray
    q: np.ndarray
    constraints: Constraints
    b_eq: np.ndarray
    col_lb: np.ndarray
    lb_in: np.ndarray | None
    x0: np.ndarray

    @property
    def a_eq(self) -> sp.csr_matrix:
        return self.constraints.a_eq

    @property
    def a_in(self) -> sp.csr_matrix | None:
        return self.constraints.a_in


@dataclass
class SolveResult:
    z: np.ndarray
    status: str
    ok: bool
    iterations: int
    seconds: float


def _inequality_rows(c: Constraints) -> sp.csr_matrix:
    """All ``>=`` constraints as rows: the column bounds, then ``a_in``."""
    n = c.a_eq.shape[1]
    sel = sp.csr_matrix((np.ones(c.bounded.size), (np.arange(c.bounded.size), c.bounded)),
                        shape=(c.bounded.size, n))
    return sp.vstack([sel] + ([c.a_in] if c.a_in is not None else []), format="csr")


def _inequality_bounds(qp: ShiftedQP) -> np.ndarray:
    """The right-hand sides of `_inequality_rows`."""
    lbs = [qp.col_lb[qp.constraints.bounded]]
    return np.concatenate(lbs + ([qp.lb_in] if qp.a_in is not None else []))


def _clarabel_rows(c: Constraints) -> sp.csc_matrix:
    """Clarabel's ``A``: the equality rows, then the negated ``>=`` rows."""
    return sp.vstack([c.a_eq, -_inequality_rows(c)], format="csc")


def _import_solver(module: str, solver: str):
    """The solver's Python package, or a `MechanismError` saying which package to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MechanismError(f"solver {solver!r} needs the Python package {module!r} "
                             f"(pip install {module})") from exc


# 100x tighter than Clarabel's defaults (1e-8): one or two more iterations, and the rounded
# output then matches a 1e-12 solve on census-style inputs (the defaults flip a few .5 cases)
CLARABEL_DEFAULTS = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10,
                     "tol_ktratio": 1e-8}


def _solve_clarabel(qp: ShiftedQP, options: dict) -> SolveResult:
    """Clarabel (interior point): ``A x + s = b``, s in {0}^m_eq x R_+^m_in."""
    clarabel = _import_solver("clarabel", "clarabel")

    a = qp.constraints.stacked_for("clarabel", _clarabel_rows)
    lb = _inequality_bounds(qp)
    b = np.concatenate([qp.b_eq, -lb])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.presolve_enable = False  # it only drops infinite bounds, and there are none
    for key, value in {**CLARABEL_DEFAULTS, **options}.items():
        setattr(settings, key, value)
    cones = [clarabel.ZeroConeT(qp.a_eq.shape[0]), clarabel.NonnegativeConeT(lb.size)]
    start = time.perf_counter()
    n = qp.q.size
    p_matrix = sp.csc_matrix((qp.p_diag, np.arange(n), np.arange(n + 1)), shape=(n, n))
    solver = clarabel.DefaultSolver(p_matrix, qp.q, a, b, cones, settings)
    sol = solver.solve()
    status = str(sol.status)
    return SolveResult(np.asarray(sol.x), status, status in ("Solved", "AlmostSolved"),
                       int(sol.iterations), time.perf_counter() - start)


# HiGHS stops with a solve error once the null space of the active set exceeds 4,000
# (its default); its reduced Hessian is dense, so 20,000 (3.2 GB) is a sane ceiling
HIGHS_DEFAULTS = {"qp_nullspace_limit": 20_000}


def _highs_rows(c: Constraints) -> sp.csc_matrix:
    """HiGHS's row matrix: ``a_eq``, then ``a_in`` (column bounds are passed as bounds)."""
    return sp.vstack([c.a_eq] + ([c.a_in] if c.a_in is not None else []), format="csc")


def _solve_highs(qp: ShiftedQP, options: dict) -> SolveResult:
    """HiGHS QP (active set): column bounds from ``col_lb``, rows ``a_eq`` and ``a_in``."""
    highspy = _import_solver("highspy", "highs")

    a = qp.constraints.stacked_for("highs", _highs_rows)
    row_lo = np.concatenate([qp.b_eq] + ([qp.lb_in] if qp.a_in is not None else []))
    row_hi = np.concatenate([qp.b_eq]
                            + ([np.full(qp.lb_in.size, np.inf)] if qp.a_in is not None else []))
    n = qp.q.size
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, a.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = qp.q, qp.col_lb, np.full(n, np.inf)
    lp.row_lower_, lp.row_upper_ = row_lo, row_hi
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, a.shape[0]
    hess = highspy.HighsHessian()
    hess.dim_, hess.format_ = n, highspy.HessianFormat.kTriangular
    hess.start_, hess.index_, hess.value_ = np.arange(n + 1), np.arange(n), qp.p_diag
    model = highspy.HighsModel()
    model.lp_, model.hessian_ = lp, hess
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    for key, value in {**HIGHS_DEFAULTS, **options}.items():
        highs.setOptionValue(key, value)
    start = time.perf_counter()
    highs.passModel(model)
    highs.run()
    status = highs.modelStatusToString(highs.getModelStatus())
    z = np.asarray(highs.getSolution().col_value, dtype=np.float64)
    iterations = int(highs.getInfo().qp_iteration_count)
    return SolveResult(z if z.size == n else np.full(n, np.nan), status, status == "Optimal",
                       iterations, time.perf_counter() - start)


_SOLVE = {"clarabel": _solve_clarabel, "highs": _solve_highs}


def solve_qp(qp: ShiftedQP, solver: str,
             options: dict | None) -> tuple[np.ndarray, SolveResult]:
    """Solve the shifted QP; returns ``x = x0 + z`` and the raw result."""
    if solver not in _SOLVE:
        raise InputError(f"solver must be one of {SOLVERS}, got {solver!r}")
    result = _SOLVE[solver](qp, dict(options or {}))
    if not result.ok or not np.isfinite(result.z).all():
        raise MechanismError(f"the {solver} QP solver stopped without an optimum (status "
                             f"{result.status!r} after {result.iterations} iterations, "
                             f"{result.seconds:.1f} s); nothing was rounded")
    return qp.x0 + result.z, result
