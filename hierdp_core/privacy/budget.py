"""Privacy budgets, conversions between definitions, splits over levels x queries, and an
accountant that refuses to overspend.

Two definitions are supported:

* ``pure-dp``: epsilon-DP; budgets compose by addition of epsilon (sequential composition).
* ``zcdp``: rho-zero-concentrated DP; budgets compose by addition of rho. A rho can be
  reported as (epsilon, delta)-DP with `rho_to_epsilon`.

Example
-------
>>> b = PrivacyBudget.zcdp(0.5, delta=1e-6)
>>> round(b.epsilon_at_delta(), 3) < round(0.5 + 2 * math.sqrt(0.5 * math.log(1e6)), 3)
True
>>> shares = split_shares(3, "uniform")
>>> [round(float(s), 3) for s in shares]
[0.333, 0.333, 0.333]
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hierdp_core.errors import BudgetError

if TYPE_CHECKING:
    import numpy as np

PURE_DP = "pure-dp"
ZCDP = "zcdp"
APPROX_DP = "approx-dp"
DEFINITIONS = (PURE_DP, ZCDP, APPROX_DP)
_REL_TOL = 1e-9


def _as_number(name: str, value) -> float:
    """``value`` as a float; strings and booleans are refused rather than parsed."""
    numpy = sys.modules.get("numpy")  # a numpy boolean needs numpy loaded: never import it
    if isinstance(value, (str, bytes, bool)) or (numpy and isinstance(value, numpy.bool_)):
        raise BudgetError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise BudgetError(f"{name} must be a number, got {value!r}") from None


def _check_positive(name: str, value: float) -> float:
    value = _as_number(name, value)
    if not math.isfinite(value) or value <= 0:
        raise BudgetError(f"{name} must be a positive finite number, got {value}")
    return value


#: the budgets a release accepts (`check_total`), the same for every mechanism, query kind
#: and noise mode: below the least, the noise (a scale of a million at sensitivity 1) buries
#: any count and a share of it nears the int64 range of the counts; above the most, the
#: noise is below a billionth of a count and the exact samplers' rationals leave int64. The
#: least rho gives the Gaussian the noise of the least epsilon; no delta below the least has
#: a meaning (it is far below 1/n for any population), and the conversions stay exact down
#: to it
#: the public ceiling on a publishable release's epsilon (CLI ``--max-epsilon``, dashboard)
DEFAULT_MAX_EPSILON = 10.0
#: the public ceiling on a publishable release's delta (CLI ``--max-delta``): the largest
#: delta the dashboard offers, well below 1/n for any population worth a hierarchy; the
#: ledger holds a dataset's summed deltas to it too
DEFAULT_MAX_DELTA = 1e-5
EPSILON_RANGE = (1e-6, 1e9)
RHO_RANGE = (1e-12, 1e9)
DELTA_MIN = 1e-100


def total_budget(definition: str, value, delta=None) -> PrivacyBudget:
    """A release's total budget: ``value`` (epsilon, or rho under zCDP) within
    `EPSILON_RANGE` or `RHO_RANGE` and ``delta`` (if any) from `DELTA_MIN` to below 1,
    else a `BudgetError` naming the parameter, its range and the value given (0, negative,
    inf and nan included). Parts of a total (`PrivacyBudget.scaled`) may be smaller."""
    unit = "rho" if definition == ZCDP else "epsilon"
    least, most = RHO_RANGE if definition == ZCDP else EPSILON_RANGE
    if not least <= _as_number(unit, value) <= most:
        raise BudgetError(f"{unit} must lie between {least:g} and {most:g}, got {value:g}")
    if delta is not None and not DELTA_MIN <= _as_number("delta", delta) < 1:
        raise BudgetError(f"delta must lie between {DELTA_MIN:g} and 1 (exclusive), got "
                          f"{delta:g}")
    return PrivacyBudget(definition, value, delta)


def check_total(budget: PrivacyBudget) -> PrivacyBudget:
    """``budget`` when it is within the ranges of a release's total (`total_budget`)."""
    total_budget(budget.definition, budget.value, budget.delta)
    return budget


def _check_delta(delta: float | None) -> float | None:
    if delta is None:
        return None
    delta = _as_number("delta", delta)
    if not 0 < delta < 1:
        raise BudgetError(f"delta must lie strictly between 0 and 1, got {delta}")
    return delta


@dataclass(frozen=True)
class PrivacyBudget:
    """A total budget: ``epsilon`` under pure DP, or ``rho`` under zCDP (``delta`` optional,
    used to report the equivalent (epsilon, delta) and by approximate-DP mechanisms)."""

    definition: str
    value: float
    delta: float | None = None

    def __post_init__(self):
        if self.definition not in DEFINITIONS:
            raise BudgetError(f"unknown privacy definition {self.definition!r}; use {DEFINITIONS}")
        name = "rho" if self.definition == ZCDP else "epsilon"
        object.__setattr__(self, "value", _check_positive(name, self.value))
        object.__setattr__(self, "delta", _check_delta(self.delta))
        if self.definition == APPROX_DP and self.delta is None:
            raise BudgetError("approximate DP needs a delta")

    @classmethod
    def pure(cls, epsilon: float) -> PrivacyBudget:
        return cls(PURE_DP, epsilon)

    @classmethod
    def zcdp(cls, rho: float, delta: float | None = None) -> PrivacyBudget:
        return cls(ZCDP, rho, delta)

    @classmethod
    def approx(cls, epsilon: float, delta: float) -> PrivacyBudget:
        return cls(APPROX_DP, epsilon, delta)

    @property
    def unit(self) -> str:
        return "rho" if self.definition == ZCDP else "epsilon"

    def epsilon_at_delta(self, tight: bool = True) -> float:
        """The epsilon this budget guarantees at its delta (itself for pure/approx DP)."""
        if self.definition != ZCDP:
            return self.value
        if self.delta is None:
            raise BudgetError("a delta is needed to express rho as (epsilon, delta)")
        return rho_to_epsilon(self.value, self.delta, tight=tight)

    def scaled(self, share: float) -> PrivacyBudget:
        """The budget of one part of a split: ``value * share``, same definition. Under
        approximate DP deltas compose by addition too, so the part gets ``delta * share``;
        otherwise the delta (only used to report rho as epsilon) is kept."""
        return PrivacyBudget(self.definition, self.value * share, self._part_delta(share))

    def _part_delta(self, share: float) -> float | None:
        if self.definition == APPROX_DP:
            return self.delta * share
        return self.delta

    def as_dict(self) -> dict:
        out = {"definition": self.definition, self.unit: self.value}
        if self.delta is not None:
            out["delta"] = self.delta
            if self.definition == ZCDP:
                out["epsilon_tight"] = rho_to_epsilon(self.value, self.delta, tight=True)
                out["epsilon_simple"] = rho_to_epsilon(self.value, self.delta, tight=False)
        return out


# ---- conversions ------------------------------------------------------------------------
def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest delta such that rho-zCDP implies (epsilon, delta)-DP.

    Canonne, Kamath & Steinke (2020), Prop. 12:
    delta = inf_{a>1} exp((a-1)(a*rho - eps)) / (a-1) * (1 - 1/a)^a.
    The log of the objective is strictly convex in a, with derivative
    2*a*rho - rho - eps + ln(1 - 1/a); the infimum is at the root of that derivative.
    """
    rho = _check_positive("rho", rho)

    def log_delta(a: float) -> float:
        return (a - 1) * (a * rho - epsilon) - math.log(a - 1) + a * math.log1p(-1 / a)

    def slope(a: float) -> float:
        return 2 * a * rho - rho - epsilon + math.log1p(-1 / a)

    lo = hi = (epsilon + rho) / (2 * rho) + 1  # near the root; bracket it, then solve
    while slope(hi) < 0:
        hi *= 2
    while lo > 1 + 1e-12 and slope(lo) > 0:
        lo = 1 + (lo - 1) / 2
    a_best = _brentq(slope, lo, hi, f"rho {rho:g} at epsilon {epsilon:g} to a delta",
                     xtol=1e-12, rtol=1e-14) if slope(lo) < 0 else lo
    return float(min(1.0, math.exp(min(log_delta(a_best), 0.0))))


def rho_to_epsilon(rho: float, delta: float, tight: bool = True) -> float:
    """Epsilon such that rho-zCDP implies (epsilon, delta)-DP.

    ``tight=False`` gives the simple bound ``rho + 2*sqrt(rho*ln(1/delta))`` (Bun & Steinke
    2016); ``tight=True`` inverts `zcdp_delta` numerically and is never larger.
    """
    return _rho_to_epsilon(_check_positive("rho", rho), _check_delta(delta), tight)


def _brentq(f, lo: float, hi: float, converting: str, **tolerances) -> float:
    """SciPy's ``brentq`` root of ``f`` in [lo, hi], imported on first use (importing
    ``scipy.optimize`` takes about 0.4 s of every command's start-up). A root it cannot
    bracket (a budget far outside `check_total`'s ranges, where floats lose the conversion)
    is a `BudgetError` naming what was ``converting`` and the ranges."""
    from scipy.optimize import brentq

    try:
        return brentq(f, lo, hi, **tolerances)
    except ValueError:
        raise BudgetError(
            f"cannot convert {converting} exactly: a budget must have epsilon between "
            f"{EPSILON_RANGE[0]:g} and {EPSILON_RANGE[1]:g}, rho between {RHO_RANGE[0]:g} "
            f"and {RHO_RANGE[1]:g} and delta at least {DELTA_MIN:g}") from None


@functools.lru_cache(maxsize=4096)
def _rho_to_epsilon(rho: float, delta: float, tight: bool) -> float:
    simple = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    if not tight:
        return simple
    if zcdp_delta(rho, 0.0) <= delta:
        return 0.0
    return float(_brentq(lambda e: zcdp_delta(rho, e) - delta, 0.0, simple,
                         f"rho {rho:g} at delta {delta:g} to an epsilon",
                         xtol=1e-15, rtol=1e-13))


def epsilon_delta_to_rho(epsilon: float, delta: float) -> float:
    """Largest rho whose rho-zCDP guarantee implies (epsilon, delta)-DP (tight conversion)."""
    return _epsilon_delta_to_rho(_check_positive("epsilon", epsilon), _check_delta(delta))


@functools.lru_cache(maxsize=4096)
def _epsilon_delta_to_rho(epsilon: float, delta: float) -> float:
    lo = hi = epsilon
    while rho_to_epsilon(hi, delta) < epsilon:
        hi *= 2
    while rho_to_epsilon(lo, delta) > epsilon:
        lo /= 2
    if lo == hi:
        return float(lo)
    return float(_brentq(lambda r: rho_to_epsilon(r, delta) - epsilon, lo, hi,
                         f"epsilon {epsilon:g} at delta {delta:g} to a rho",
                         xtol=1e-300, rtol=1e-13))


# ---- splits -----------------------------------------------------------------------------
SPLIT_PRESETS = ("uniform", "finer", "coarser", "leaves-only")


def split_shares(n_parts: int, preset: str = "uniform",
                 weights: Sequence[float] | None = None) -> np.ndarray:
    """Shares (summing to 1) of a budget over ``n_parts`` levels, root first.

    Presets: ``uniform``; ``finer`` (weight l+1 on level l: more to finer levels, where units
    are small and relative error matters most); ``coarser`` (the reverse); ``leaves-only``
    (all on the finest level). ``weights`` (non-negative, not all zero) overrides the preset.
    """
    import numpy as np  # here, not at the top: the command line reads budgets before numpy

    if isinstance(n_parts, bool) or not isinstance(n_parts, (int, np.integer)) or n_parts < 1:
        raise BudgetError(f"a split needs a whole number of parts >= 1, got {n_parts!r}")
    if weights is not None:
        if isinstance(weights, (str, bytes)):
            raise BudgetError(f"split weights must be numbers, got {weights!r}")
        try:
            w = np.asarray(weights, dtype=float)
        except (TypeError, ValueError):
            raise BudgetError(f"split weights must be numbers, got {weights!r}") from None
        if w.shape != (n_parts,):
            raise BudgetError(f"the split needs {n_parts} weights (one per level, root first), "
                              f"got {w.size if w.ndim == 1 else weights!r}")
        bad = w[~np.isfinite(w) | (w < 0)]
        if bad.size:
            raise BudgetError(f"split weights must be non-negative numbers, got {bad[0]:g}")
        if w.sum() <= 0:
            raise BudgetError("split weights must not all be zero")
    elif preset == "uniform":
        w = np.ones(n_parts)
    elif preset == "finer":
        w = np.arange(1, n_parts + 1, dtype=float)
    elif preset == "coarser":
        w = np.arange(n_parts, 0, -1, dtype=float)
    elif preset == "leaves-only":
        w = np.zeros(n_parts)
        w[-1] = 1.0
    else:
        raise BudgetError(f"unknown split preset {preset!r}; use one of {SPLIT_PRESETS}")
    return w / w.sum()


Split = str | Sequence[float] | None


def resolve_shares(n_levels: int, split: Split, skip_root: bool = False) -> np.ndarray:
    """Shares per level, root first, from a preset name or weights (None = uniform).
    With ``skip_root`` the root gets nothing and the rest is renormalised."""
    if split is None or isinstance(split, str):
        shares = split_shares(n_levels, split or "uniform")
    else:
        shares = split_shares(n_levels, weights=split)
    if skip_root:
        shares = shares.copy()
        shares[0] = 0.0
        if shares.sum() <= 0:
            raise BudgetError("with an invariant root, some level below it needs a share")
        shares /= shares.sum()
    return shares


# ---- accounting -------------------------------------------------------------------------
@dataclass
class Accountant:
    """Tracks spending against a total budget under sequential composition.

    ``spend`` raises `BudgetError` (and records nothing) when the charge would take the total
    spent above the budget; a relative slack of 1e-9 absorbs floating-point error in shares
    that sum to 1.
    """

    budget: PrivacyBudget
    entries: list[dict] = field(default_factory=list)

    @property
    def spent(self) -> float:
        return math.fsum(e["amount"] for e in self.entries)

    @property
    def remaining(self) -> float:
        return max(0.0, self.budget.value - self.spent)

    def spend(self, amount: float, **details) -> PrivacyBudget:
        """Record a charge of ``amount`` (epsilon or rho) and return its budget, the same part
        of the total as `PrivacyBudget.scaled` gives."""
        amount = _check_positive(self.budget.unit, amount)
        if self.spent + amount > self.budget.value * (1 + _REL_TOL):
            raise BudgetError(
                f"overspending: {self.budget.unit} {amount:.6g} requested but only "
                f"{self.remaining:.6g} of {self.budget.value:.6g} remains"
            )
        self.entries.append({"amount": amount, **details})
        return PrivacyBudget(self.budget.definition, amount,
                             self.budget._part_delta(amount / self.budget.value))
