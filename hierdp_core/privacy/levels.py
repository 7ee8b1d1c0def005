"""Per-level budgets and noise, derived from a privacy plan and a split.

A hierarchical release measures every level of its tree once; the levels compose
sequentially. `derive_levels` is the one place that turns a mechanism's `PrivacyPlan` (its
measuring stage: noise, sensitivity and share of the budget) and the split over levels into
one `LevelPlan` per level: the level's share of the whole budget, the budget it spends
(checked by an `Accountant`, which refuses to overspend) and its noise with the exact scale.
Mechanisms, ledgers and the manifest read these plans; none computes a level's budget
itself.

Example
-------
>>> import numpy as np
>>> from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, PrivacyPlan, Stage
>>> plan = PrivacyPlan("toy", "pure-dp", (Stage("levels", ADD_REMOVE_PERSON, 1.0, "laplace", 1.0),))
>>> levels = derive_levels(plan, PrivacyBudget.pure(1.0), np.array([0.25, 0.75]),
...                        ("total", "region"), "counts")
>>> [(lv.share, lv.budget.value, lv.noise.scale) for lv in levels]
[(0.25, 0.25, 4.0), (0.75, 0.75, 1.3333333333333333)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hierdp_core.errors import BudgetError
from hierdp_core.privacy.budget import (
    APPROX_DP,
    ZCDP,
    Accountant,
    PrivacyBudget,
    epsilon_delta_to_rho,
)
from hierdp_core.privacy.plan import RELATIONS, PrivacyPlan
from hierdp_core.privacy.samplers import NOISES, Noise, NoiseSource

PURE_NOISES = ("laplace", "geometric")
ZCDP_NOISES = ("gaussian", "discrete-gaussian")


@dataclass(frozen=True)
class LevelPlan:
    """How one level is measured: its share of the whole budget, the budget it spends and
    its noise (both None: not measured; noise None alone: the stages of a composite plan
    calibrate their own noise from the level's budget)."""

    level: int
    level_name: str
    query: str
    share: float
    budget: PrivacyBudget | None
    noise: Noise | None
    sensitivity: float | None = None  # of the level's vector, in the noise's norm

    def apply(self, values: np.ndarray, source: NoiseSource,
              cells: int | None = None) -> np.ndarray:
        """The level's noise applied to (some of) its true values; in secure mode its
        privacy loss is logged and checked against the level's share. ``cells``: the level's
        public number of cells when ``values`` are a data-dependent subset (`Noise.apply`)."""
        return self.noise.apply(values, source, sensitivity=self.sensitivity,
                                budget=self.budget.value, cells=cells,
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


def delta_unused(plan: PrivacyPlan, budget: PrivacyBudget) -> str | None:
    """The noise of ``plan`` when it spends the (epsilon, delta) ``budget`` as pure epsilon
    (`spent_by`: Laplace or geometric noise, the plan itself not (epsilon, delta)), its
    delta unused; None when the delta is spent or the budget has no delta."""
    if budget.definition != APPROX_DP or plan.definition == APPROX_DP:
        return None
    noises = {choose_noise(stage.noise or "auto", budget) for stage in plan.stages}
    return None if noises & set(ZCDP_NOISES) else " and ".join(sorted(noises))


def as_zcdp(budget: PrivacyBudget) -> PrivacyBudget:
    """A zCDP budget: rho as given, or the largest rho implying the given (epsilon, delta)."""
    if budget.definition == ZCDP:
        return budget
    if budget.definition == APPROX_DP or budget.delta is not None:
        return PrivacyBudget.zcdp(epsilon_delta_to_rho(budget.value, budget.delta), budget.delta)
    raise BudgetError("Gaussian noise gives zCDP: give rho, or epsilon together with delta")


def spent_by(noise: str, budget: PrivacyBudget, definition: str) -> PrivacyBudget:
    """The budget in the currency ``noise`` is accounted in: rho for Gaussian noises, pure
    epsilon for Laplace or geometric noise under an (epsilon, delta) budget (pure DP implies
    it) unless the plan's ``definition`` is itself (epsilon, delta)."""
    if noise in ZCDP_NOISES:
        return as_zcdp(budget)
    if budget.definition == APPROX_DP and definition != APPROX_DP:
        return PrivacyBudget.pure(budget.value)
    return budget


def calibrate(noise: str, budget: PrivacyBudget, sensitivity: float) -> Noise:
    """``noise`` at the exact scale for ``budget`` (epsilon or rho) and ``sensitivity`` (L1
    for Laplace / geometric noise, L2 for Gaussian ones)."""
    if noise in PURE_NOISES:
        return NOISES[noise].for_epsilon(budget.value, sensitivity)
    return NOISES[noise].for_zcdp(budget.value, sensitivity)


def derive_levels(plan: PrivacyPlan, budget: PrivacyBudget, shares: Sequence[float],
                  level_names: Sequence[str], query: str, *,
                  noise: str | None = None) -> list[LevelPlan]:
    """One `LevelPlan` per level, root first: level l spends ``shares[l]`` (the split) of
    the plan's share of ``budget`` (the sum of its stages' shares), in the currency of the
    measuring stage's noise (``noise``: that noise, resolved from ``auto``, when the plan
    leaves it to the budget). A one-stage plan measured once with a sensitivity gets the
    level's noise at its exact scale; a composite plan's levels, and those of a stage in parts
    (`Stage.single_measurement`), carry their budget only (the stages divide it).
    The accountant refuses a split that would overspend."""
    stage = plan.stages[-1]
    noise = noise or stage.noise
    total = spent_by(noise, budget, plan.definition)
    fraction = plan.spent_share
    accountant = Accountant(total)
    levels = []
    for level, (share, name) in enumerate(zip(shares, level_names, strict=True)):
        share = float(share) * fraction
        if share <= 0:
            levels.append(LevelPlan(level, name, query, 0.0, None, None))
            continue
        part = accountant.spend(total.value * share, level=level, query=query)
        if plan.composite or stage.sensitivity is None or not stage.single_measurement:
            levels.append(LevelPlan(level, name, query, share, part, None))
            continue
        levels.append(LevelPlan(level, name, query, share, part,
                                calibrate(noise, part, stage.sensitivity), stage.sensitivity))
    return levels


def privacy_record(plan: PrivacyPlan, levels: Sequence[LevelPlan], *,
                   noise: str | None = None, invariants: Sequence[str] = (),
                   delta: float | None = None, **extra) -> dict:
    """The release's privacy record (what its manifest states under ``privacy``), read from
    the ``plan`` and the ``levels`` that ran: the definition the levels spent in (the plan's
    if none did), the total they spent (with ``delta``), the plan's relation, the noise
    (``noise``: the stage's, resolved from ``auto``), the exact ``invariants`` and any
    ``extra`` public facts."""
    spent = [lv.budget for lv in levels if lv.budget is not None]
    definition = spent[0].definition if spent else plan.definition
    relation = plan.stages[0].relation
    record = {"definition": definition, "relation": relation,
              "neighbouring": RELATIONS[relation], "noise": noise or plan.stages[-1].noise,
              "invariants": list(invariants), **extra}
    total = math.fsum(b.value for b in spent)
    record.update(PrivacyBudget(definition, total, delta).as_dict())
    return record
