"""Origin/destination flow mechanisms (Boninsegna & Silvestri): InfTDA and its baselines.

Privacy. One trip per user. **Bounded DP** (default): neighbouring datasets substitute one
user's trip, so the number of trips n is public and released exactly (the root); every level
of the O/D tree is a histogram of the trips whose L2 sensitivity is sqrt(2) (one cell -1,
another +1). Level l gets discrete Gaussian noise with sigma_l^2 = 2 / (2 rho_l) = 1/rho_l
and the levels compose to rho = sum rho_l (zCDP, additive). With a uniform split over the
T = 2g levels this is the paper's sigma^2 = T / rho. **Unbounded DP** (add or remove one
trip): sensitivity 1 per level, and the root n is measured too (App. B, Alg. 3), so the
split runs over T + 1 levels. An (epsilon, delta) budget is turned into the largest rho
that implies it (`hierdp_core.privacy.budget.epsilon_delta_to_rho`); the release reports
rho and the (epsilon, delta) it implies. Everything after the noise (the per-parent
projections, pruning, aggregation) is post-processing.

Baselines (``vanilla-gauss``, ``stability-histogram``): `hierdp_core.mechanisms.flow_baselines`,
registered here after the top-down ones; what all share: `hierdp_core.mechanisms.flow_base`.

The claim is data: each mechanism's `privacy_plan` (one stage, with the sensitivity of
`SENSITIVITY` or the stability histogram's `STABILITY_SENSITIVITY`), from which the noise is
calibrated (`hierdp_core.privacy.levels.derive_levels`), and which the manifest and the
audit read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hierdp_core.errors import BudgetError
from hierdp_core.flows import projections
from hierdp_core.flows.data import FlowData
from hierdp_core.flows.level_split import split_shares_flows
from hierdp_core.flows.release import FlowRelease
from hierdp_core.flows.tree import topdown, topdown_trials
from hierdp_core.mechanisms.base import Capabilities, MechanismInfo, Parameter, register
from hierdp_core.mechanisms.flow_base import (
    NEIGHBOURING,
    QUERY,
    REFERENCE,
    RELATION,
    SENSITIVITY,
    FlowMechanism,
    check_flow_data,
)
from hierdp_core.mechanisms.flow_baselines import StabilityHistogram, VanillaGauss
from hierdp_core.mechanisms.measure import ledger_frame
from hierdp_core.privacy.budget import APPROX_DP, ZCDP, PrivacyBudget
from hierdp_core.privacy.levels import derive_levels, privacy_record
from hierdp_core.privacy.plan import PrivacyPlan, Stage
from hierdp_core.privacy.samplers import NoiseSource

NEIGHBOURING_PARAM = Parameter(
    "neighbouring", "choice", "bounded",
    "bounded: n public, one trip substituted; unbounded: one trip added or removed, the total "
    "is noised too", choices=("bounded", "unbounded"))
AUTHORS_BUDGET_PARAM = Parameter(
    "authors_budget", "bool", False,
    "spend half the budget, as the authors' code does (rho split into 2T shares over T "
    "levels), to reproduce their figures; the release still reports what was spent")


@dataclass
class TopDownFlows(FlowMechanism):
    """The top-down loop (`hierdp_core.flows.tree.topdown`) with a per-parent projection
    ``project(x, starts, c, **option)``; ``option`` is the projection's one tunable
    parameter, if any."""

    name: str
    description: str
    project: Callable
    option: Parameter | None = None
    #: whether the projection of one release's parents is the same when other releases'
    #: parents are projected with them (`topdown_trials`)
    jointly: bool = True
    info: MechanismInfo = field(init=False)

    def __post_init__(self):
        self.info = MechanismInfo(
            name=self.name, description=self.description, reference=REFERENCE,
            queries=(QUERY,), privacy=ZCDP, private=True, consistent=True,
            parameters=(*([self.option] if self.option else []), NEIGHBOURING_PARAM,
                        AUTHORS_BUDGET_PARAM),
            privacy_definitions=(ZCDP, APPROX_DP), neighbouring=NEIGHBOURING["bounded"],
            # one HiGHS call per parent and trial: 4,000 trials per side keep an audit
            # under 5 minutes on 2 cores
            audit_trials=4000 if self.project is projections.linf_milp else None,
            # the loop's pruning and false positives bias small cells: widened bootstrap
            capabilities=Capabilities(blockwise=True, intervals="bias-widened bootstrap",
                                      sparse_flows=True))

    def privacy_plan(self, **params) -> PrivacyPlan:
        """One stage: every level of the O/D tree below the root (the root too under
        unbounded DP) measured once with discrete Gaussian noise, L2 sensitivity sqrt(2)
        (bounded) or 1 (unbounded) per level, the levels composing (rho adds up). With
        ``authors_budget`` half the budget is spent."""
        p = self.params(**params)
        neighbouring = p["neighbouring"]
        stage = Stage("levels", RELATION[neighbouring], SENSITIVITY[neighbouring],
                      "discrete-gaussian", 0.5 if p["authors_budget"] else 1.0,
                      note=NEIGHBOURING[neighbouring])
        return PrivacyPlan(self.info.name, ZCDP, (stage,))

    def _plans(self, data: FlowData, budget: PrivacyBudget, split, p: dict):
        """(the privacy plan, one `LevelPlan` per tree level: its share of rho and its
        discrete Gaussian noise; with ``authors_budget`` the plan spends half of rho)."""
        plan = self.privacy_plan(**p)
        shares = split_shares_flows(data, split,
                                    measured_root=p["neighbouring"] == "unbounded")
        return plan, derive_levels(plan, budget, shares, data.level_names, QUERY)

    def projection(self, p: dict) -> Callable:
        if self.option is None:
            return self.project
        return functools.partial(self.project, **{self.option.name: p[self.option.name]})

    def ledger(self, data, budget: PrivacyBudget, split=None, **params):
        p = self.params(**params)
        return ledger_frame(self._plans(check_flow_data(self.info.name, data), budget, split,
                                        p)[1])

    def releaser(self, data, budget: PrivacyBudget, *, split=None, **params):
        """`Mechanism.releaser`: the data checked, the levels planned and the privacy
        record and ledger made once; every call measures and projects."""
        data, p, plan, plans = self._checked(data, budget, split, params)
        project = self.projection(p)
        invariants = self.root_invariants(p)
        record = self.release_record(plan, plans, budget, invariants)

        def release(source: NoiseSource) -> FlowRelease:
            root, _ = self.root_value(data.n, plans, p, source)
            levels, diagnostics = topdown(data, root, plans[1:], project, source)
            return self.make_release(data, levels, diagnostics, plan, plans, budget, p,
                                     invariants, source, record=record)

        return release

    def trees(self, data, budget: PrivacyBudget, *, split=None, **params):
        """`FlowMechanism.trees`: the top-down loops grown together (`topdown_trials`)."""
        data, p, plan, plans = self._checked(data, budget, split, params)
        project = self.projection(p)

        def root(source: NoiseSource) -> int:
            return self.root_value(data.n, plans, p, source)[0]

        return functools.partial(topdown_trials, data, root, plans[1:], project,
                                 jointly=self.jointly)

    def _checked(self, data, budget: PrivacyBudget, split, params: dict):
        """(the data checked, the parameters, the privacy plan, the plan of every level)."""
        data = check_flow_data(self.info.name, data)
        p = self.params(**params)
        return data, p, *self.measured_plans(data, budget, split, p)

    def measured_plans(self, data: FlowData, budget: PrivacyBudget, split, p: dict):
        """(the privacy plan, a plan per tree level) of a release over ``data``'s (public)
        shape; every level below the root measured, else a `BudgetError`."""
        plan, plans = self._plans(data, budget, split, p)
        if any(plan.noise is None for plan in plans[1:]):
            raise BudgetError(f"{self.info.name} measures every level below the root: give "
                              "each a share of the budget")
        return plan, plans

    @staticmethod
    def root_invariants(p: dict) -> tuple[str, ...]:
        """The invariants: the number of trips under bounded DP (public), else none."""
        bounded = p["neighbouring"] == "bounded"
        return ("number of trips n (public under bounded DP)",) if bounded else ()

    def root_value(self, n: int, plans, p: dict, source: NoiseSource):
        """(the root's released value, the invariants): ``n`` itself under bounded DP (public),
        measured under unbounded DP."""
        invariants = self.root_invariants(p)
        if invariants:
            return n, invariants
        return max(0, int(plans[0].apply(np.array([n]), source)[0])), ()

    def release_record(self, plan, plans, budget: PrivacyBudget, invariants):
        """(privacy record, ledger) of a release measured with ``plans``: what does not
        depend on the noise."""
        return (privacy_record(plan, plans, invariants=invariants, delta=budget.delta),
                ledger_frame(plans))

    def make_release(self, data: FlowData, levels, diagnostics, plan, plans,
                     budget: PrivacyBudget, p: dict, invariants, source,
                     record=None) -> FlowRelease:
        """The FlowRelease of the released ``levels``, as every engine makes it;
        ``record``: its `release_record` when made already."""
        privacy, ledger = record or self.release_record(plan, plans, budget, invariants)
        return FlowRelease.of(
            data, levels, mechanism=self.info.name, parameters=p, privacy=privacy,
            ledger=ledger, randomness=source.as_dict(), invariants=invariants,
            diagnostics=diagnostics)


INFTDA = TopDownFlows(
    "inftda",
    "InfTDA: top-down over the O/D tree; discrete Gaussian noise on all children of every "
    "released parent, then IntOpt, the exact integer Chebyshev projection (ascending order "
    "lowers small, likely spurious cells first: fewer false positives); zero children are "
    "pruned with their subtrees.",
    projections.intopt,
    Parameter("order", "choice", "ascending", "ascending: fewer false positives (the paper); "
              "descending: fewer false negatives", choices=projections.ORDERS))
TDA_L2 = TopDownFlows(
    "tda-l2",
    "TDA-l2: the same top-down loop with the Euclidean projection onto the scaled simplex "
    "(closed form), then integer rounding that keeps the sum.",
    projections.l2_rounded,
    Parameter("rounding", "choice", "authors",
              "authors: round half to even, add missing units to the largest values, remove "
              "excess from the smallest positive ones (the paper's code); largest-remainder: "
              "Census-style L1-closest rounding", choices=projections.ROUNDINGS))
TDA_LINF_MILP = TopDownFlows(
    "tda-linf-milp",
    "TDA-l-inf (black box): the same top-down loop, each parent's Chebyshev projection solved "
    "as an integer program by HiGHS (scipy.optimize.milp); optimal, but with the solver's "
    "choice among optima (no false-positive heuristic).",
    projections.linf_milp, jointly=False)


for _mechanism in (INFTDA, TDA_L2, TDA_LINF_MILP, VanillaGauss(), StabilityHistogram()):
    register(_mechanism)
