"""What the per-kind adapters share: the adapter record and registry, the budget a claim
means, the per-level privacy-loss weights from a ledger, one release per trial, and the
path statistics (the privacy loss of a unit shift along the changed nodes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hierdp_core.audit.estimators import Statistics
from hierdp_core.mechanisms.base import Mechanism
from hierdp_core.privacy.budget import APPROX_DP, PrivacyBudget
from hierdp_core.privacy.levels import PURE_NOISES, ZCDP_NOISES
from hierdp_core.privacy.samplers import NoiseSource

DEFAULT_DELTA = 1e-6

Runner = Callable[[Any, int, NoiseSource], np.ndarray]


@dataclass
class AuditAdapter:
    """How to audit one mechanism: a neighbouring pair, a way to run ``n`` trials on one side
    (returning an array (n, d) of outputs, one row per trial), and the scalar statistics of
    outputs on which threshold events are tried (None: fitted on an independent pilot run).
    ``budget`` is the budget the mechanism runs with (None for custom callables)."""

    neighbours: tuple[Any, Any]
    run: Runner
    statistics: Statistics | None = None
    budget: PrivacyBudget | None = None
    description: str = ""
    batched: bool = False


AdapterFactory = Callable[..., AuditAdapter]
ADAPTERS: dict[str, AdapterFactory] = {}


def register_adapter(query_kind: str) -> Callable[[AdapterFactory], AdapterFactory]:
    """Register the adapter factory for one query kind. The factory is called as
    ``factory(mechanism, epsilon=..., delta=..., params=..., split=..., batch=...,
    relation=...)`` and returns an `AuditAdapter` (choosing the budget with
    `claimed_budget`)."""

    def deco(factory: AdapterFactory) -> AdapterFactory:
        ADAPTERS[query_kind] = factory
        return factory

    return deco


def claimed_budget(mechanism: Mechanism, epsilon: float, delta: float,
                   params: dict) -> PrivacyBudget:
    """The budget a claim of ``epsilon`` means for this mechanism and parameters, read from
    its privacy plan: ``PrivacyBudget.approx(epsilon, delta)`` when the plan is
    (epsilon, delta)-DP or a stage draws Gaussian noise (zCDP, which the mechanism converts
    to rho), else pure epsilon-DP."""
    plan = mechanism.privacy_plan(**params)
    if plan.definition == APPROX_DP or any(s.noise in ZCDP_NOISES for s in plan.stages):
        return PrivacyBudget.approx(epsilon, delta)
    return PrivacyBudget.pure(epsilon)


def level_weights(ledger, n_levels: int) -> np.ndarray:
    """Per-level weight of a unit shift in the privacy loss: 1/scale (= epsilon_l) for pure
    noises, 1/scale^2 for Gaussian ones, 0 for unmeasured levels."""
    w = np.zeros(n_levels)
    if "noise_scale" not in ledger or "noise" not in ledger:
        return np.ones(n_levels)
    for i, (noise, scale) in enumerate(zip(ledger["noise"], ledger["noise_scale"], strict=True)):
        if i >= n_levels or not np.isfinite(scale) or scale <= 0:
            continue
        w[i] = 1.0 / scale if noise in PURE_NOISES else 1.0 / scale**2
    return w if w.any() else np.ones(n_levels)


@dataclass
class Setup:
    """A registered mechanism ready to audit on a pair: its validated parameters, the budget
    a claim means, and the ledger's per-level weights."""

    mechanism: Mechanism
    params: dict
    split: Any
    budget: PrivacyBudget
    weights: np.ndarray

    @classmethod
    def make(cls, mechanism: Mechanism, d1, n_levels: int, *, epsilon: float, delta: float,
             params: dict | None, split) -> Setup:
        params = dict(params or {})
        budget = claimed_budget(mechanism, epsilon, delta, params)
        weights = level_weights(mechanism.ledger(d1, budget, split, **params), n_levels)
        return cls(mechanism, params, split, budget, weights)

    def release(self, data, source: NoiseSource):
        return self.mechanism.release(data, self.budget, split=self.split, source=source,
                                      **self.params)

    def per_side(self, make: Callable[..., Callable]) -> Callable[[Any], Callable]:
        """``f`` with ``f(data)`` what ``make(data, budget, split=..., **params)`` gives
        (e.g. `Mechanism.releaser`), made once per side."""
        made: dict[int, tuple[Any, Callable]] = {}  # by id: the data kept alive

        def of(data) -> Callable:
            if id(data) not in made:
                made[id(data)] = data, make(data, self.budget, split=self.split, **self.params)
            return made[id(data)][1]

        return of

    def per_trial(self, width: int, vector: Callable[[Any, Any], np.ndarray]) -> Runner:
        """A runner making one release per trial, each turned into a row of ``width``
        numbers by ``vector(data, release)``; the trials of one side share the
        mechanism's set-up (`Mechanism.releaser`, made once per side)."""
        releaser = self.per_side(self.mechanism.releaser)

        def run(data, n: int, source: NoiseSource) -> np.ndarray:
            release = releaser(data)
            out = np.empty((n, width))
            for i in range(n):
                out[i] = vector(data, release(source))
            return out

        return run


def path_statistics(shifts: list[np.ndarray], weights: np.ndarray) -> dict[str, np.ndarray]:
    """Each of ``shifts`` is (trials, levels): per level, the released change of one changed
    cell in the direction D' moves it (released minus true under D, sign-adjusted).
    ``path-weighted`` sums them with the per-level weights (the privacy loss of Gaussian
    noise); ``path-clipped`` clips each, centred at 1/2, to [-1, 1] first (the exact privacy
    loss of Laplace / geometric noise on the raw measurements)."""
    return {"path-weighted": sum(shifts) @ weights,
            "path-clipped": sum(np.clip(2 * s - 1, -1, 1) for s in shifts) @ weights}
