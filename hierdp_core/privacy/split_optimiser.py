"""Budget-split optimiser (issue 17): the per-level split of a counts release that minimises
a stated error goal, chosen from public parameters only (the tree's shape, the mechanism
family, the privacy definition and total budget, and the goal's level weights or public
population bins). No data is read.

Noise model, per cell of level l (sensitivity 1 per level, as `mechanisms.counts` states):

* pure epsilon: Laplace, variance v_l = 2 / eps_l^2 and E|e| = 1 / eps_l. Geometric noise is
  modelled as Laplace; its variance 1 / (2 sinh^2(eps_l / 2)) is never larger.
* zCDP rho (or (epsilon, delta) with Gaussian noise, as its largest rho): Gaussian,
  v_l = 1 / (2 rho_l). The discrete Gaussian's variance is never larger than sigma^2.

Families, by the a priori error of level l's released values:

* ``raw``: each value is its level's measurement, error variance v_l.
* ``least-squares``: the variance P_v of every node's GLS estimate, exact for the tree (no
  regular-branching approximation; `gls_moments.GlsPasses`), one numpy segment operation per level.
* ``topdown``: the least-squares variance as its proxy (TopDown projects the least-squares
  estimates onto non-negative integers; rounding and clipping at 0 are not modelled).

E|e| of a node is that of its own measurement's term (variance P_v^2 / v_l, Laplace or
Gaussian) plus the rest taken as Gaussian: exact for raw and for Gaussian noise; for
least squares under Laplace noise an approximation (the rest is a sum of Laplace terms).

Goals: ``weighted`` minimises sum_l w_l err_l, err_l the mean over level l's cells of E[e^2]
("mse") or E|e| ("mae"); ``worst-relative`` minimises max_l mae_l / pop_l over the levels
given a public population bin pop_l (a typical unit's population, never read from data).

Raw has a closed form. With err_l = c b_l^(-p), b_l = total * share_l and p = 2 (pure, mse),
1 (pure, mae), 1 (zCDP, mse), 1/2 (zCDP, mae), Lagrange's condition gives
share_l proportional to w_l^(1 / (p + 1)) for ``weighted`` (eps_l ~ w_l^(1/3) and
rho_l ~ sqrt(w_l) for mse), and equal relative errors, share_l proportional to
pop_l^(-1 / p), for ``worst-relative``. It holds for any independently measured parts (levels
x queries). Least squares and TopDown are optimised numerically over a softmax of the shares,
started from the best of the presets and the raw closed form; the result is never worse
than any of them.

Example
-------
>>> closed_form_shares([1.0, 8.0], zcdp=False, metric="mse").round(3).tolist()
[0.333, 0.667]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.privacy.budget import SPLIT_PRESETS, PrivacyBudget, resolve_shares
from hierdp_core.privacy.gls_moments import GlsPasses
from hierdp_core.privacy.levels import PURE_NOISES, as_zcdp, choose_noise

FAMILIES = ("raw", "least-squares", "topdown")
METRICS = ("mse", "mae")
WEIGHTED = "weighted"
WORST_RELATIVE = "worst-relative"
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_MIN_SHARE = 1e-6  # numerical optima below this are 0 (the level is not measured)
_MIN_START = 1e-3  # zero shares start the numerical search from here (softmax gradients)


@dataclass(frozen=True)
class Goal:
    """What to minimise. ``weights``: w_l per level, root first (None: 1 on every level; 0
    leaves a level out). ``populations``: the public population bin of each level, root
    first (None or NaN leaves a level out). Build with `weighted` or `worst_relative`."""

    kind: str
    metric: str = "mse"
    weights: tuple[float, ...] | None = None
    populations: tuple[float, ...] | None = None

    @classmethod
    def weighted(cls, weights: Sequence[float] | None = None, metric: str = "mse") -> Goal:
        if metric not in METRICS:
            raise InputError(f"unknown error metric {metric!r}; use one of {METRICS}")
        if weights is not None:
            w = np.asarray(weights, dtype=float)
            if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
                raise InputError(f"goal weights must be non-negative numbers, not all zero, "
                                 f"got {w.tolist()}")
            weights = tuple(float(x) for x in w)
        return cls(WEIGHTED, metric, weights=weights)

    @classmethod
    def worst_relative(cls, populations: Sequence[float | None]) -> Goal:
        pop = np.array([np.nan if p is None else p for p in populations], dtype=float)
        given = ~np.isnan(pop)
        if pop.ndim != 1 or not given.any() or np.any(~np.isfinite(pop[given]))\
                or np.any(pop[given] <= 0):
            raise InputError("population bins must be positive numbers (None leaves a level "
                             f"out), at least one given; got {pop.tolist()}")
        return cls(WORST_RELATIVE, "mae", populations=tuple(float(p) for p in pop))

    def level_weights(self, n_levels: int) -> np.ndarray:
        """w_l (weighted) or 1 / pop_l (worst-relative, 0 where left out), root first."""
        if self.kind == WEIGHTED:
            values = np.ones(n_levels) if self.weights is None else np.array(self.weights)
        else:
            values = np.nan_to_num(1.0 / np.array(self.populations))  # left out: 0
        if values.shape != (n_levels,):
            raise InputError(f"the goal needs one value per level ({n_levels}, root first), "
                             f"got {values.size}")
        return values

    def objective(self, errors: np.ndarray) -> float:
        """The goal's value for per-level errors ``errors`` (of the goal's metric)."""
        scaled = self.level_weights(errors.size) * errors
        return float(scaled.sum() if self.kind == WEIGHTED else scaled.max())


# ---- the noise model and the a priori errors --------------------------------------------
@dataclass(frozen=True)
class NoiseModel:
    """The continuous noise a budget and a noise name stand for: ``zcdp`` (Gaussian) or pure
    (Laplace), and the total epsilon or rho to split."""

    zcdp: bool
    total: float

    @classmethod
    def of(cls, budget: PrivacyBudget, noise: str = "auto") -> NoiseModel:
        noise = choose_noise(noise, budget)
        if noise in PURE_NOISES:
            return cls(False, budget.value)  # an (epsilon, delta) budget spent as pure epsilon
        return cls(True, as_zcdp(budget).value)

    def variances(self, shares: np.ndarray) -> np.ndarray:
        """Per-cell noise variance of every level (inf where the share is 0)."""
        part = self.total * np.asarray(shares, dtype=float)
        with np.errstate(divide="ignore", over="ignore"):
            return 1.0 / (2.0 * part) if self.zcdp else 2.0 / part**2


def gls_variances(hierarchy: Hierarchy, level_variance: np.ndarray,
                  root_invariant: bool = False) -> list[np.ndarray]:
    """The variance of every node's tree least-squares estimate, one array per level (root
    first), for per-level measurement variances (inf: not measured; the leaves must be):
    `gls_moments.GlsPasses`' variances."""
    return GlsPasses.of(hierarchy, level_variance, root_invariant).variances


def expected_abs(total_var: np.ndarray, own_var: np.ndarray, zcdp: bool) -> np.ndarray:
    """E|e| for e = (own measurement's term, variance ``own_var``, Laplace unless ``zcdp``)
    + (an independent Gaussian rest): s sqrt(2/pi) + b erfcx(s / (b sqrt 2)), b the Laplace
    scale and s the rest's standard deviation (E|L + c| = |c| + b exp(-|c|/b))."""
    total_var = np.asarray(total_var, dtype=float)
    if zcdp:
        return _SQRT_2_OVER_PI * np.sqrt(total_var)
    b = np.sqrt(np.asarray(own_var, dtype=float) / 2)
    s = np.sqrt(np.maximum(total_var - 2 * b**2, 0.0))
    from scipy.special import erfcx  # on first use: not on a release's path

    with np.errstate(divide="ignore", invalid="ignore"):
        laplace_part = np.where(b > 0, b * erfcx(s / (math.sqrt(2) * b)), 0.0)
    return _SQRT_2_OVER_PI * s + laplace_part


def level_errors(hierarchy: Hierarchy, family: str, model: NoiseModel,
                 shares: Sequence[float], metric: str, root_invariant: bool = False
                 ) -> np.ndarray:
    """A priori error per level of a split (no data), root first: the mean over the level's
    cells of E[e^2] (``metric`` "mse") or of E|e| ("mae")."""
    v = model.variances(shares)
    if family == "raw":
        if np.isinf(v).any():
            raise BudgetError("the raw mechanism publishes every level: give every level a share")
        nodes = [np.full(1, x) for x in v]
    elif family in FAMILIES:
        nodes = gls_variances(hierarchy, v, root_invariant)
    else:
        raise InputError(f"unknown mechanism family {family!r}; use one of {FAMILIES}")
    if metric == "mse":
        return np.array([p.mean() for p in nodes])
    own = [p * (p / x) for p, x in zip(nodes, v, strict=True)]  # P^2 / v, P <= v
    return np.array([expected_abs(p, o, model.zcdp).mean()
                     for p, o in zip(nodes, own, strict=True)])


def expected_errors(hierarchy: Hierarchy, family: str, model: NoiseModel,
                    shares: Sequence[float], root_invariant: bool = False) -> pd.DataFrame:
    """`level_errors` of a split as a table: level, level_name, share, mse, rmse, mae."""
    shares = np.asarray(shares, dtype=float)
    mse, mae = (level_errors(hierarchy, family, model, shares, m, root_invariant)
                for m in METRICS)
    return pd.DataFrame({"level": np.arange(hierarchy.n_levels),
                         "level_name": list(hierarchy.level_names), "share": shares,
                         "mse": mse, "rmse": np.sqrt(mse), "mae": mae})


# ---- the optimiser ----------------------------------------------------------------------
def closed_form_shares(level_weights: Sequence[float], zcdp: bool, metric: str,
                       goal: str = WEIGHTED) -> np.ndarray:
    """The raw mechanism's optimal shares: proportional to w_l^(1/(p+1)) (``weighted``) or
    to (1/pop_l)^(1/p) (``worst-relative``, ``level_weights`` = 1/pop_l), p the exponent of
    the budget in the error (see the module's docstring)."""
    p = {(False, "mse"): 2.0, (False, "mae"): 1.0, (True, "mse"): 1.0, (True, "mae"): 0.5}
    exponent = p[(zcdp, metric)]
    w = np.asarray(level_weights, dtype=float)
    if not w.max() > 0:
        raise InputError("the goal leaves out every level that can get a share")
    w = w / w.max()  # scale-free; avoids overflow of tiny weights' powers
    shares = w ** (1.0 / (exponent + 1.0) if goal == WEIGHTED else 1.0 / exponent)
    return shares / shares.sum()


def geometric_shares(hierarchy: Hierarchy) -> np.ndarray:
    """The flows' ``geometric`` preset on this tree: weight b^(-(2/3)(T - l)), b the mean
    branching."""
    h = hierarchy
    b = (h.n_nodes - 1) / h.level_offsets[-2]
    w = b ** (-(2 / 3) * (h.depth - np.arange(h.n_levels)))
    return w / w.sum()


@dataclass(frozen=True)
class SplitChoice:
    """The optimised split and its a priori errors beside the uniform split's."""

    family: str
    goal: Goal
    shares: np.ndarray  # root first, summing to 1: usable as ``--split``
    errors: pd.DataFrame  # `expected_errors` of ``shares``
    uniform_errors: pd.DataFrame
    objective: float
    uniform_objective: float
    method: str  # "closed form", "numerical" or the preset kept

    @property
    def split_argument(self) -> str:
        """The shares as the command line's ``--split`` value."""
        return ",".join(f"{s:.6g}" for s in self.shares)


#: the least log-ratio of two softmax coordinates: a line search's far step leaves the
#: leaves a tiny share, whose variance (1 / share^2) is huge but finite, never none (an error)
_LEAST_LOG_SHARE = -300.0


class _Objective:
    """The goal's value of a split, as a function of free softmax coordinates."""

    def __init__(self, hierarchy, family, model, goal, root_invariant):
        self.args = (hierarchy, family, model)
        self.goal = goal
        self.root_invariant = root_invariant
        self.free = np.arange(int(root_invariant), hierarchy.n_levels)

    def shares(self, theta: np.ndarray) -> np.ndarray:
        """Softmax over the free levels, the leaves' coordinate fixed at 0 (so the leaves,
        which least squares needs, never lose their whole share)."""
        z = np.append(theta, 0.0)
        e = np.exp(np.maximum(z - z.max(), _LEAST_LOG_SHARE))  # no share underflows to 0
        shares = np.zeros(self.args[0].n_levels)
        shares[self.free] = e / e.sum()
        return shares

    def theta(self, shares: np.ndarray) -> np.ndarray:
        z = np.log(np.maximum(shares[self.free], 1e-300))
        return z[:-1] - z[-1]

    def errors(self, shares: np.ndarray) -> pd.DataFrame:
        return expected_errors(*self.args, shares, self.root_invariant)

    def level_errors(self, shares: np.ndarray) -> np.ndarray:
        return level_errors(*self.args, shares, self.goal.metric, self.root_invariant)

    def __call__(self, shares: np.ndarray) -> float:
        return self.goal.objective(self.level_errors(shares))


def _minimise(obj: _Objective, start: np.ndarray) -> np.ndarray:
    """Local numerical optimum from ``start`` (shares): BFGS on log of the weighted sum, or
    SLSQP on the epigraph of the log relative errors (minimise t, t >= log r_l)."""
    from scipy.optimize import minimize  # about 0.4 s to import: only when optimising

    theta0 = obj.theta(np.maximum(start, _MIN_START))
    if theta0.size == 0:
        return start
    if obj.goal.kind == WEIGHTED:
        res = minimize(lambda t: math.log(obj(obj.shares(t))), theta0, method="BFGS")
        return _snap(obj.shares(res.x))
    weights = obj.goal.level_weights(obj.args[0].n_levels)
    counted = weights > 0
    counted[0] &= not obj.root_invariant  # an invariant root has no error

    def log_relative(t):
        return np.log(obj.level_errors(obj.shares(t))[counted] * weights[counted])

    x0 = np.append(theta0, log_relative(theta0).max())
    res = minimize(lambda x: x[-1], x0, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda x: x[-1] - log_relative(x[:-1])}],
                   options={"maxiter": 200, "ftol": 1e-12})
    return _snap(obj.shares(res.x[:-1]))


def _snap(shares: np.ndarray) -> np.ndarray:
    """Shares below `_MIN_SHARE` but the leaves' set to 0 (the level is not measured) and
    the rest renormalised: a share that small adds next to nothing and makes absurd noise
    scales."""
    shares = np.where(shares < _MIN_SHARE, 0.0, shares)
    shares[-1] = max(shares[-1], _MIN_SHARE)
    return shares / shares.sum()


def optimise_split(hierarchy: Hierarchy, family: str, budget: PrivacyBudget, goal: Goal, *,
                   noise: str = "auto", root_invariant: bool = False) -> SplitChoice:
    """The split of ``budget`` over the levels of a ``family`` counts release (``raw``,
    ``least-squares`` or ``topdown``) minimising ``goal``, from public parameters only.
    ``noise`` as the mechanism's parameter (it decides pure vs zCDP); ``root_invariant``:
    the root is published exactly and gets no share. Raw: closed form; the others:
    numerical, never worse than the closed form or the presets."""
    if family not in FAMILIES:
        raise InputError(f"unknown mechanism family {family!r}; use one of {FAMILIES}")
    model = NoiseModel.of(budget, noise)
    n = hierarchy.n_levels
    weights = goal.level_weights(n)
    obj = _Objective(hierarchy, family, model, goal, root_invariant)
    uniform = resolve_shares(n, "uniform", skip_root=root_invariant)
    closed = np.zeros(n)
    closed[obj.free] = closed_form_shares(weights[obj.free], model.zcdp, goal.metric, goal.kind)
    if family == "raw":
        if root_invariant:
            raise InputError("the raw mechanisms have no invariant root")
        if not np.all(closed > 0):
            raise BudgetError("the raw mechanism publishes every level: the goal must weight "
                              "every level (a level it leaves out would get no budget)")
        best, method = closed, "closed form"
    else:
        candidates = {f"preset {p}": resolve_shares(n, p, skip_root=root_invariant)
                      for p in SPLIT_PRESETS if p != "leaves-only"}
        candidates["preset geometric"] = resolve_shares(n, geometric_shares(hierarchy),
                                                        skip_root=root_invariant)
        candidates["raw closed form"] = closed
        candidates = {name: s for name, s in candidates.items() if s[-1] > 0}
        local = [_minimise(obj, s) for s in candidates.values()]
        candidates["numerical"] = min(local, key=obj)
        method = min(candidates, key=lambda name: obj(candidates[name]))
        best = candidates[method]
    return SplitChoice(family, goal, best, obj.errors(best), obj.errors(uniform),
                       obj(best), obj(uniform), method)
