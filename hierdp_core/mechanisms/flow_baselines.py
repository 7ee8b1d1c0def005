"""The O/D flow baselines of Boninsegna & Silvestri: ``vanilla-gauss`` spends all of rho on
the leaf cells (every possible pair, zeros included) and aggregates; ``stability-histogram``
adds Laplace(2/epsilon) to the positive leaf cells only and suppresses those below
1 + 2 ln(2/delta)/epsilon: (epsilon, delta)-DP under bounded DP (Bun, Nissim & Stemmer
2019). Registered with the top-down mechanisms by `hierdp_core.mechanisms.flows`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.flows.data import FlowData
from hierdp_core.flows.release import FlowRelease
from hierdp_core.flows.tree import Forest, from_leaves, leaves_forest
from hierdp_core.mechanisms.base import Capabilities, MechanismInfo
from hierdp_core.mechanisms.flow_base import (
    QUERY,
    REFERENCE,
    SENSITIVITY,
    FlowMechanism,
    check_flow_data,
)
from hierdp_core.mechanisms.measure import ledger_frame
from hierdp_core.privacy.budget import APPROX_DP, ZCDP, PrivacyBudget
from hierdp_core.privacy.exact import exact_noise
from hierdp_core.privacy.levels import LevelPlan, derive_levels, privacy_record
from hierdp_core.privacy.plan import SUBSTITUTE_TRIP, PrivacyPlan, Stage
from hierdp_core.privacy.samplers import NoiseSource

#: L1 sensitivity of the leaf histogram under bounded DP (one cell -1, another +1)
STABILITY_SENSITIVITY = 2.0
MAX_VANILLA_CELLS = 200_000_000
VANILLA_CHUNK_CELLS = 4_000_000


@dataclass
class LeafBaseline(FlowMechanism):
    """A baseline that spends the whole budget on the leaf cells and sums them up the tree.
    Subclasses give the leaf noise in their privacy plan, the budgets they refuse
    (`check_budget`) and the released leaf cells (`noisy_leaves`)."""

    info: MechanismInfo = field(init=False)
    noise_name = ""

    def leaf_sensitivity(self) -> float:
        """Of the leaf histogram, in the leaf noise's norm (read through the plan)."""
        raise NotImplementedError

    def privacy_plan(self, **params) -> PrivacyPlan:
        """One stage: the leaf histogram measured once with the whole budget, under bounded
        DP (one trip substituted)."""
        self.params(**params)
        stage = Stage("leaves", SUBSTITUTE_TRIP, self.leaf_sensitivity(), self.noise_name,
                      1.0, note=self.info.neighbouring)
        return PrivacyPlan(self.info.name, self.info.privacy, (stage,))

    def check_budget(self, budget: PrivacyBudget) -> None:
        """Refuse a budget of a definition the baseline cannot spend (none by default)."""

    def record_note(self, plan: PrivacyPlan) -> dict:
        """Extra facts of the privacy record (none by default)."""
        return {}

    def noisy_leaves(self, data: FlowData, budget: PrivacyBudget, plan: LevelPlan,
                     source: NoiseSource) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The released leaf cells (origin, destination, value), measured with ``plan``."""
        raise NotImplementedError

    def _plans(self, data: FlowData, budget: PrivacyBudget,
               plan: PrivacyPlan) -> list[LevelPlan]:
        self.check_budget(budget)
        leaves_only = np.zeros(data.depth + 1)
        leaves_only[-1] = 1.0
        return derive_levels(plan, budget, leaves_only, data.level_names, QUERY)

    def ledger(self, data, budget: PrivacyBudget, split=None, **params):
        plan = self.privacy_plan(**params)
        return ledger_frame(self._plans(check_flow_data(self.info.name, data), budget, plan))

    def releaser(self, data, budget: PrivacyBudget, *, split=None, **params):
        """`Mechanism.releaser`: the data checked, the leaves planned and the privacy
        record and ledger made once; every call measures the leaves and sums them up."""
        data, p, plan, plans = self._checked(data, budget, params)
        privacy = privacy_record(plan, plans, delta=budget.delta, **self.record_note(plan))
        ledger = ledger_frame(plans)

        def release(source: NoiseSource) -> FlowRelease:
            levels = from_leaves(data, *self.noisy_leaves(data, budget, plans[-1], source))
            return FlowRelease.of(data, levels, mechanism=self.info.name, parameters=p,
                                  privacy=privacy, ledger=ledger,
                                  randomness=source.as_dict())

        return release

    def trees(self, data, budget: PrivacyBudget, *, split=None, **params):
        """`FlowMechanism.trees`: every release's leaves measured in turn, then all summed
        up together (`leaves_forest`)."""
        data, p, plan, plans = self._checked(data, budget, params)

        def grow(sources: list[NoiseSource]) -> Forest:
            cells = [self.noisy_leaves(data, budget, plans[-1], s) for s in sources]
            trial = np.repeat(np.arange(len(sources)), [c[2].size for c in cells])
            return leaves_forest(data, *(np.concatenate(c) for c in zip(*cells, strict=True)),
                                 trial, len(sources))

        return grow

    def _checked(self, data, budget: PrivacyBudget, params: dict):
        """(the data checked, the parameters, the privacy plan, the plan of every level)."""
        data = check_flow_data(self.info.name, data)
        p = self.params(**params)
        plan = self.privacy_plan(**p)
        return data, p, plan, self._plans(data, budget, plan)


@dataclass
class VanillaGauss(LeafBaseline):
    """All of rho on the leaf cells, every possible (origin, destination) pair; coarser
    levels are sums, negatives kept."""

    noise_name = "discrete-gaussian"

    def leaf_sensitivity(self) -> float:
        return SENSITIVITY["bounded"]  # L2

    def __post_init__(self):
        self.info = MechanismInfo(
            name="vanilla-gauss",
            description="Discrete Gaussian noise on every leaf O/D cell (all possible pairs, "
                        "zeros included), then summed up the tree; negatives kept, so tables "
                        "add up but are not non-negative (baseline).",
            reference=REFERENCE + " (baseline)", queries=(QUERY,), privacy=ZCDP,
            private=True, consistent=False, privacy_definitions=(ZCDP, APPROX_DP),
            neighbouring="bounded DP: one trip substituted; leaf histogram L2 sensitivity "
                         "sqrt(2), all of rho on it",
            capabilities=Capabilities(intervals="closed-form"))

    def noisy_leaves(self, data, budget, plan, source):
        leaves = data.level_width(data.geo_levels)
        if leaves * leaves > MAX_VANILLA_CELLS:
            raise MechanismError(f"vanilla-gauss noises every one of the {leaves}^2 leaf cells; "
                                 f"more than {MAX_VANILLA_CELLS:,} is refused (use InfTDA)")
        rows = max(1, VANILLA_CHUNK_CELLS // leaves)
        keys, true_counts = data.level_table(data.depth)
        parts = []
        for first in range(0, leaves, rows):  # a block of origin rows at a time
            o = np.repeat(np.arange(first, min(first + rows, leaves)), leaves)
            d = np.tile(np.arange(leaves), o.size // leaves)
            true_block = np.zeros(o.size, dtype=np.int64)
            lo, hi = np.searchsorted(keys, [first * leaves, (first + rows) * leaves])
            true_block[keys[lo:hi] - first * leaves] = true_counts[lo:hi]
            v = plan.apply(true_block, source)
            nz = v != 0
            parts.append((o[nz], d[nz], v[nz]))
        return tuple(np.concatenate(column) for column in zip(*parts, strict=True))


@dataclass
class StabilityHistogram(LeafBaseline):
    """Laplace noise on the positive leaf cells only, suppressed below a threshold."""

    noise_name = "laplace"

    def leaf_sensitivity(self) -> float:
        return STABILITY_SENSITIVITY  # L1

    def __post_init__(self):
        self.info = MechanismInfo(
            name="stability-histogram",
            description="Stability-based histogram: Laplace(2/epsilon) on the non-zero leaf "
                        "cells only, cells below 1 + 2 ln(2/delta)/epsilon suppressed, the rest "
                        "rounded; coarser levels are sums. No false positives, large errors at "
                        "coarse levels (baseline; (epsilon, delta)-DP).",
            reference="Bun, Nissim & Stemmer (2019); as the baseline of " + REFERENCE,
            queries=(QUERY,), privacy=APPROX_DP, private=True, consistent=True,
            neighbouring="bounded DP: one trip substituted; leaf histogram L1 sensitivity 2; "
                         "a cell absent from one dataset passes the threshold with "
                         "probability <= delta/4 (Laplace), <= delta/(2 (1 + e^(-epsilon/2))) "
                         "(secure: exact discrete Laplace)",
            capabilities=Capabilities(sparse_flows=True))

    @staticmethod
    def threshold(epsilon: float, delta: float) -> float:
        return 1 + 2 * math.log(2 / delta) / epsilon

    def drawn_threshold(self, budget, plan, source) -> float:
        """The threshold for the noise actually drawn: secure noise on the hierdp backend is
        discrete Laplace of the scale rounded up to a rational b' (`secure_apply`), whose
        tail P(Z >= b' ln(2/delta)) <= (delta/2) / (1 + alpha) needs the threshold at
        1 + b' ln(2/delta) (from b = 2/epsilon it could pass by a hair); else `threshold`."""
        if not (source.secure and source.backend == "hierdp"):
            return self.threshold(budget.value, budget.delta)
        drawn = exact_noise("discrete-laplace", plan.noise.scale)
        return math.nextafter(1 + drawn.num / drawn.den * math.log(2 / budget.delta), math.inf)

    def check_budget(self, budget):
        if budget.definition != APPROX_DP:
            raise BudgetError("stability-histogram is (epsilon, delta)-DP: give epsilon and "
                              "delta")

    def ledger(self, data, budget: PrivacyBudget, split=None, **params):
        frame = super().ledger(data, budget, split, **params)
        frame["threshold"] = np.nan
        frame.loc[frame.index[-1], "threshold"] = self.threshold(budget.value, budget.delta)
        return frame

    def noisy_leaves(self, data, budget, plan, source):
        # the noise is drawn on the non-zero pairs only: how many there are is confidential
        noisy = plan.apply(data.counts, source, cells=data.level_cells(data.depth))
        kept = np.where(noisy >= self.drawn_threshold(budget, plan, source), np.rint(noisy), 0)
        return data.origin, data.destination, kept.astype(np.int64)

    def record_note(self, plan):
        """The record states the threshold's argument (the stage's note)."""
        return {"note": plan.stages[0].note}
