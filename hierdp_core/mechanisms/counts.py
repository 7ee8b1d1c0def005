"""Count-release mechanisms: raw noisy baselines, tree least squares, and TopDown.

Privacy (all of them): neighbouring datasets differ by adding or removing one person.
Each level's count vector (nodes x categories) has L1 = L2 sensitivity 1. Level l is
measured once with noise calibrated to its share of the budget (epsilon_l for Laplace /
geometric noise: epsilon-DP; rho_l for (discrete) Gaussian: rho-zCDP); the levels compose
sequentially, so the release is epsilon-DP with epsilon = sum epsilon_l (or rho-zCDP with
rho = sum rho_l). Everything after measuring is post-processing. An invariant root (off by
default) is published exactly and is NOT protected.

The claim is data: `CountMechanism.privacy_plan` (one stage, "levels"), from which the noise
is calibrated (`privacy.levels.derive_levels`), and which the manifest and the audit read.

Categories are processed independently column by column (`MechanismInfo` of these entries
says so), which the privacy audit uses to run many trials at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hierdp_core.consistency.least_squares import tree_least_squares
from hierdp_core.consistency.topdown import topdown
from hierdp_core.errors import BudgetError
from hierdp_core.invariants import exact_quantities
from hierdp_core.mechanisms.base import Capabilities, Mechanism, MechanismInfo, Parameter, register
from hierdp_core.mechanisms.measure import ledger_frame
from hierdp_core.mechanisms.streams import measure_in_blocks
from hierdp_core.privacy.budget import PURE_DP, ZCDP, PrivacyBudget, resolve_shares
from hierdp_core.privacy.levels import choose_noise, derive_levels, privacy_record
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, PrivacyPlan, Stage
from hierdp_core.privacy.samplers import NOISES, NoiseSource
from hierdp_core.queries.counts import CountData
from hierdp_core.releases import Release

#: the count vector of one level (nodes x categories) under add/remove one person
LEVEL_SENSITIVITY = 1.0
LEVELS_NOTE = ("per level L1 = L2 sensitivity 1 (one cell changes by 1); every measured level "
               "spends its share of the budget; the levels compose sequentially")
NEIGHBOURING = "add/remove one person; " + LEVELS_NOTE
HAY = ("Hay, Rastogi, Miklau & Suciu (2010), Boosting the accuracy of differentially private "
       "histograms through consistency, PVLDB 3(1)")
TOPDOWN_REF = ("Abowd et al. (2022), The 2020 Census Disclosure Avoidance System TopDown "
               "Algorithm, Harvard Data Science Review, Special Issue 2")
NOISE_CHOICES = ("auto", "laplace", "geometric", "gaussian", "discrete-gaussian")
NOISE_PARAM = Parameter("noise", "choice", "auto",
                        "noise distribution; auto = geometric for an epsilon budget, "
                        "discrete Gaussian for rho", choices=NOISE_CHOICES)
ROOT_PARAM = Parameter("root_invariant", "bool", False,
                       "publish the root exactly (NOT private; as the Census does): its "
                       "total, and with categories its count of every category")
#: the manifest's words for what ``root_invariant`` publishes exactly
#: (`invariants.exact_quantities`): the root's total, and with categories (more than one)
#: its count of every category (its cells are kept as they are)
ROOT_INVARIANT_NAMES = {"total": "root total",
                        "category-totals": "root count of every category"}


def root_invariants(p: dict, categories) -> tuple[str, ...]:
    """The invariants of a count release with parameters ``p`` and ``categories`` (None
    without), in the manifest's words."""
    several = categories is not None and len(categories) > 1
    return tuple(ROOT_INVARIANT_NAMES[q] for q in exact_quantities(None, "counts", p, several))


def count_capabilities(estimate: str, intervals: str) -> Capabilities:
    """A count mechanism's capabilities: its ``estimate`` shape runs block by block and the
    split optimiser models it."""
    return Capabilities(estimate=estimate, blockwise=True, split_optimiser=True,
                        intervals=intervals)


@dataclass
class CountMechanism(Mechanism):
    """Shared machinery: plan, measure, estimate. Subclasses implement `estimate` and set
    ``info`` (with their `Capabilities`); a new count mechanism is such a subclass and one
    `register` line."""

    info: MechanismInfo = field(init=False)
    fixed_noise: str | None = None

    def privacy_plan(self, **params) -> PrivacyPlan:
        """One stage: every level measured once with sensitivity 1 (L1 = L2, so whatever the
        noise), the levels composing sequentially; an invariant root is not measured."""
        p = self.params(**params)
        noise = self.fixed_noise or p.get("noise", "auto")
        note = LEVELS_NOTE
        if p.get("root_invariant"):
            note += ("; the root is published exactly (NOT protected): its total, and with "
                     "categories its count of every category")
        stage = Stage("levels", ADD_REMOVE_PERSON, LEVEL_SENSITIVITY, noise, 1.0, note=note)
        return PrivacyPlan(self.info.name, self.info.privacy, (stage,))

    def level_plans(self, hierarchy, budget: PrivacyBudget, split, p: dict):
        """(the noise's name, one `LevelPlan` per level) for ``hierarchy``."""
        noise = choose_noise(self.fixed_noise or p.get("noise", "auto"), budget)
        shares = resolve_shares(hierarchy.n_levels, split,
                                skip_root=p.get("root_invariant", False))
        return noise, derive_levels(self.privacy_plan(**p), budget, shares,
                                    hierarchy.level_names, "counts", noise=noise)

    def ledger(self, data: CountData, budget: PrivacyBudget, split=None, **params):
        p = self.params(**params)
        return ledger_frame(self.level_plans(data.hierarchy, budget, split, p)[1])

    def release(self, data: CountData, budget: PrivacyBudget, *, split=None,
                source: NoiseSource | None = None, **params) -> Release:
        p = self.params(**params)
        source = source or NoiseSource(secure=True)
        noise, plans = self.level_plans(data.hierarchy, budget, split, p)
        truth = data.node_counts()
        noisy, variance = measure_in_blocks(truth, data.hierarchy, plans, source)
        root = truth[0] if p.get("root_invariant") else None
        values = self.estimate(data, noisy, variance, root, p)
        return self.make_release(data.hierarchy, data.categories if data.has_categories
                                 else None, budget, noise, plans, p, values, noisy, source)

    def make_release(self, hierarchy, categories, budget: PrivacyBudget, noise: str, plans,
                     p: dict, values: np.ndarray, noisy: np.ndarray,
                     source: NoiseSource) -> Release:
        """The Release of ``values`` (and the ``noisy`` measurements) made with ``plans``
        from ``source``; the root's cells are invariants with ``root_invariant``
        (`root_invariants`)."""
        invariants = root_invariants(p, categories)
        return Release(
            hierarchy=hierarchy,
            values=values,
            mechanism=self.info.name,
            parameters=p,
            privacy=privacy_record(self.privacy_plan(**p), plans, noise=noise,
                                   invariants=invariants, delta=budget.delta),
            ledger=ledger_frame(plans),
            randomness=source.as_dict(),
            categories=categories,
            invariants=invariants,
            noisy=noisy,
        )

    def estimate(self, data, noisy, variance, root, p) -> np.ndarray:
        raise NotImplementedError


@dataclass
class RawCounts(CountMechanism):
    """Noisy values as measured at every level (inconsistent across levels).

    With ``round_clamp`` the noisy values are rounded and clamped at 0 (post-processing)."""

    def __post_init__(self):
        noise = self.fixed_noise
        definition = PURE_DP if noise in ("laplace", "geometric") else ZCDP
        self.info = MechanismInfo(
            name=f"raw-{noise}",
            description=f"{noise.replace('-', ' ').capitalize()} noise on every node of every "
                        "level; no consistency (the baseline).",
            reference="Dwork, McSherry, Nissim & Smith (2006); "
                      + ("Canonne, Kamath & Steinke (2020)" if noise == "discrete-gaussian"
                         else "Ghosh, Roughgarden & Sundararajan (2009)" if noise == "geometric"
                         else "Dwork et al. (2006)"),
            queries=("counts",),
            privacy=definition,
            private=True,
            consistent=False,
            parameters=(Parameter("round_clamp", "bool", False,
                                  "round noisy values and clamp them at 0"),),
            neighbouring=NEIGHBOURING,
            independent_columns=True,
            capabilities=count_capabilities("raw", intervals="closed-form"),
        )

    def estimate(self, data, noisy, variance, root, p):
        if np.isinf(variance).any():
            raise BudgetError("the raw mechanism publishes every level: give every level a share")
        if p["round_clamp"]:
            return np.maximum(np.rint(noisy), 0).astype(np.int64)
        return noisy.astype(np.int64) if NOISES[self.fixed_noise].integer else noisy


@dataclass
class LeastSquares(CountMechanism):
    """Generalised least squares over the tree: exactly consistent, real-valued (may be
    negative or fractional)."""

    def __post_init__(self):
        self.info = MechanismInfo(
            name="least-squares",
            description="Noise on every level, then the weighted least-squares estimate that "
                        "makes every parent equal the sum of its children (real-valued).",
            reference=HAY,
            queries=("counts",),
            privacy=PURE_DP,
            private=True,
            consistent=False,  # exactly consistent, but real-valued and possibly negative
            parameters=(NOISE_PARAM, ROOT_PARAM),
            privacy_definitions=(PURE_DP, ZCDP),
            neighbouring=NEIGHBOURING,
            independent_columns=True,
            capabilities=count_capabilities("least-squares", intervals="closed-form"),
        )

    def estimate(self, data, noisy, variance, root, p):
        return tree_least_squares(data.hierarchy, noisy, variance, root)


@dataclass
class TopDown(CountMechanism):
    """Census-style TopDown: consistent, non-negative integer counts.

    ``estimate="least-squares"`` (default) first combines all levels' measurements by tree
    least squares, so finer levels inform coarser ones; ``"noisy"`` uses each level's own
    noisy values as the Census TopDown does (every level below the root must be measured).
    """

    def __post_init__(self):
        self.info = MechanismInfo(
            name="topdown",
            description="Noise on every level, then level by level from the root: project "
                        "children onto non-negative values summing to their parent and round "
                        "keeping the sum. Consistent non-negative integers.",
            reference=TOPDOWN_REF + "; " + HAY,
            queries=("counts",),
            privacy=PURE_DP,
            private=True,
            consistent=True,
            parameters=(
                NOISE_PARAM, ROOT_PARAM,
                Parameter("estimate", "choice", "least-squares",
                          "what is projected: tree least-squares estimates (uses all levels) "
                          "or each level's own noisy values",
                          choices=("least-squares", "noisy")),
            ),
            privacy_definitions=(PURE_DP, ZCDP),
            neighbouring=NEIGHBOURING,
            independent_columns=True,
            capabilities=count_capabilities("topdown", intervals="stacked bootstrap"),
        )

    def estimate(self, data, noisy, variance, root, p):
        h = data.hierarchy
        if p["estimate"] == "least-squares":
            est = tree_least_squares(h, noisy, variance, root)
        else:
            if np.isinf(variance[1:]).any():
                raise BudgetError("topdown with estimate='noisy' needs every level below the "
                                  "root measured; give them a share or use least-squares")
            est = noisy
        if root is not None:
            root_values = root
        else:
            # an unmeasured root (zero share, estimate="noisy") is estimated by its children
            root_est = est[0] if np.isfinite(est[0]).all() else est[h.level_slice(1)].sum(axis=0)
            root_values = np.maximum(np.rint(root_est), 0)
        return topdown(h, est, root_values)


for _noise in ("laplace", "geometric", "discrete-gaussian"):
    register(RawCounts(fixed_noise=_noise))
register(LeastSquares())
register(TopDown())
