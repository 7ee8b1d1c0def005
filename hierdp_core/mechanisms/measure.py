"""Level-wise measurement: split the budget over levels, calibrate noise per level, apply it.

The caller gives the per-level sensitivity of what is measured, read from its mechanism's
privacy plan (`hierdp_core.privacy.plan`; e.g. 1 for the count vector of a level under
add/remove-one-person), so level l gets noise calibrated to its share of the budget, and the
shares compose sequentially to the total. An `Accountant` checks the total.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from hierdp_core.errors import BudgetError
from hierdp_core.hierarchy import Hierarchy
from hierdp_core.privacy.budget import (
    APPROX_DP,
    ZCDP,
    Accountant,
    PrivacyBudget,
    epsilon_delta_to_rho,
    split_shares,
)
from hierdp_core.privacy.samplers import NOISES, Noise, NoiseSource

PURE_NOISES = ("laplace", "geometric")
ZCDP_NOISES = ("gaussian", "discrete-gaussian")
Split = str | Sequence[float] | None


@dataclass(frozen=True)
class LevelPlan:
    """How one level is measured: its share of the budget and its noise (None: not measured)."""

    level: int
    level_name: str
    query: str
    share: float
    budget: PrivacyBudget | None
    noise: Noise | None
    sensitivity: float | None = None  # of the level's vector, in the noise's norm

    def apply(self, values: np.ndarray, source: NoiseSource) -> np.ndarray:
        """The level's noise applied to (some of) its true values; in secure mode its
        privacy loss is logged and checked against the level's share."""
        return self.noise.apply(values, source, sensitivity=self.sensitivity,
                                budget=self.budget.value,
                                label=f"{self.query}: level {self.level} ({self.level_name})")


def choose_noise(noise: str, budget: PrivacyBudget) -> str:
    """Resolve ``auto`` (geometric for an epsilon or (epsilon, delta) budget, discrete
    Gaussian for rho) and check the noise fits the budget's definition."""
    if noise == "auto":
        return "discrete-gaussian" if budget.definition == ZCDP else "geometric"
    if noise not in NOISES:
        raise BudgetError(f"unknown noise {noise!r}; use one of {sorted(NOISES)}")
    if noise in PURE_NOISES and budget.definition == ZCDP:
        raise BudgetError(f"{noise} noise gives pure epsilon-DP: give an epsilon budget, "
                          "not rho")
    return noise


def as_zcdp(budget: PrivacyBudget) -> PrivacyBudget:
    """A zCDP budget: rho as given, or the largest rho implying the given (epsilon, delta)."""
    if budget.definition == ZCDP:
        return budget
    if budget.definition == APPROX_DP or budget.delta is not None:
        return PrivacyBudget.zcdp(epsilon_delta_to_rho(budget.value, budget.delta), budget.delta)
    raise BudgetError("Gaussian noise gives zCDP: give rho, or epsilon together with delta")


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


def plan_levels(
    hierarchy: Hierarchy,
    budget: PrivacyBudget,
    noise: str,
    split: Split = None,
    *,
    query: str = "counts",
    root_invariant: bool = False,
    sensitivity: float,
) -> list[LevelPlan]:
    """One plan per level, noise calibrated to ``sensitivity``, the per-level sensitivity of
    the query in the noise's norm (L1 for Laplace / geometric noise, L2 for Gaussian ones) as
    the mechanism's privacy plan states it; the accountant refuses any split that would
    overspend."""
    noise = choose_noise(noise, budget)
    if noise in ZCDP_NOISES:
        budget = as_zcdp(budget)
    elif budget.definition == APPROX_DP:
        budget = PrivacyBudget.pure(budget.value)  # pure epsilon-DP implies (epsilon, delta)
    shares = resolve_shares(hierarchy.n_levels, split, skip_root=root_invariant)
    accountant = Accountant(budget)
    plans = []
    for level, share in enumerate(shares):
        name = hierarchy.level_names[level]
        if share <= 0:
            plans.append(LevelPlan(level, name, query, 0.0, None, None))
            continue
        part = accountant.spend(budget.value * share, level=level, query=query)
        if noise in PURE_NOISES:
            n = NOISES[noise].for_epsilon(part.value, sensitivity)
        else:
            n = NOISES[noise].for_zcdp(part.value, sensitivity)
        plans.append(LevelPlan(level, name, query, float(share), part, n, sensitivity))
    return plans


def ledger_frame(plans: Sequence[LevelPlan]) -> pd.DataFrame:
    """The ledger: level, query, share, budget, noise, scale, expected |error| and the 95%
    half-width of one cell's noise (a-priori, needs no data). A fresh copy every call: equal
    plans (frozen, compared by value) share one built frame, so a sweep or an audit that
    releases many times with the same plans builds its ledger once."""
    return _ledger_of(tuple(plans)).copy()


@lru_cache(maxsize=256)
def _ledger_of(plans: tuple[LevelPlan, ...]) -> pd.DataFrame:
    rows = []
    for p in plans:
        row = {"level": p.level, "level_name": p.level_name, "query": p.query,
               "share": p.share}
        if p.noise is None:
            row.update(definition=None, budget=0.0, noise="not measured", noise_scale=np.nan,
                       noise_sd=np.nan, expected_abs_error=np.nan, ci95_abs_error=np.nan)
        else:
            row.update(
                definition=p.budget.definition, budget=p.budget.value, noise=p.noise.name,
                noise_scale=p.noise.scale, noise_sd=float(np.sqrt(p.noise.variance)),
                expected_abs_error=p.noise.expected_abs,
                ci95_abs_error=float(p.noise.abs_quantile(0.95)),
            )
        rows.append(row)
    return pd.DataFrame(rows)


def records_frame(rows: Sequence[dict]) -> pd.DataFrame:
    """``pd.DataFrame(rows)`` for rows of scalars (a ledger), a fresh copy every call: equal
    rows (same keys, types and values) share one built frame (as `ledger_frame`)."""
    return _frame_of(tuple(tuple((k, type(v), v) for k, v in row.items()) for row in rows)).copy()


@lru_cache(maxsize=256)
def _frame_of(rows: tuple) -> pd.DataFrame:
    return pd.DataFrame([{k: v for k, _, v in row} for row in rows])


def measure(true_node_counts: np.ndarray, hierarchy: Hierarchy, plans: list[LevelPlan],
            source: NoiseSource) -> tuple[np.ndarray, np.ndarray]:
    """Noisy counts (n_nodes, k), NaN on unmeasured levels, and each level's noise variance
    (inf where unmeasured)."""
    noisy = np.empty(true_node_counts.shape)  # every level written once, below
    variance = np.full(hierarchy.n_levels, np.inf)
    for p in plans:
        if p.noise is None:
            continue
        sl = hierarchy.level_slice(p.level)
        noisy[sl] = p.apply(true_node_counts[sl], source)
        variance[p.level] = p.noise.variance
    for level in np.flatnonzero(np.isinf(variance)):
        noisy[hierarchy.level_slice(level)] = np.nan
    return noisy, variance
