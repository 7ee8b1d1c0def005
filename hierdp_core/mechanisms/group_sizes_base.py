"""The group-size mechanisms' shared base (`GroupSizeMechanism`; the mechanisms are in
`hierdp_core.mechanisms.group_sizes`): how many groups (households) of each size 0..N in
every region, consistent over the hierarchy.

Privacy (all entries): neighbouring datasets differ by one person added to or removed from
an existing group; the groups, their regions, hence the number of groups of every region
``G_v`` and the total ``G``, are public (`hierdp_core.groupsizes.data`). Sizes are top-coded
at the public N. Per level, the plain size histograms of all regions have L1 sensitivity 2
(one group moves from size k to k +- 1) and the per-region cumulative histograms L1
sensitivity 1. Every level is measured once with geometric (or Laplace) noise calibrated to
its share epsilon_l of the budget; levels compose sequentially to epsilon = sum epsilon_l;
everything after measuring is post-processing. Numbers of groups published exactly (public
by the model, not protected) are the release's invariants (`kept_invariants`): the total G,
or every region's G_v (kept by `group_counts.keep_group_counts` with ``groups="exact"``;
``"noisy"``: estimated, consistent); none for gs-noisy. The CLI has them declared
(``--invariant total`` / ``groups``).

The claim is data: `GroupSizeMechanism.privacy_plan` (one stage, "levels", its sensitivity
from `LEVEL_SENSITIVITY`), from which the noise is calibrated (`privacy.levels.derive_levels`, Kuo's
`kuo_release`), and which the manifest and the audit read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.groupsizes.data import GroupSizeData, cumulative, decumulate
from hierdp_core.mechanisms.base import Capabilities, Mechanism, MechanismInfo, Parameter
from hierdp_core.mechanisms.measure import ledger_frame
from hierdp_core.mechanisms.streams import measure_in_blocks
from hierdp_core.privacy.budget import PURE_DP, PrivacyBudget, resolve_shares
from hierdp_core.privacy.levels import choose_noise, derive_levels, privacy_record
from hierdp_core.privacy.plan import PERSON_IN_GROUP, PrivacyPlan, Stage
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.releases import Release

QUERY = "group-sizes"
#: L1 sensitivity per level of what a level measures, by representation, under one person
#: added to or removed from an existing group: the plain size histograms of all regions 2
#: (one group moves from size k to k +- 1), the per-region cumulative histograms 1 (one
#: cell of one region); Kuo's Hg (sorted sizes of every region) is 1 too (one rank)
LEVEL_SENSITIVITY = {"plain": 2.0, "cumulative": 1.0}
LEVELS_NOTE = ("every level measured once; the levels compose sequentially")
NEIGHBOURING = ("add/remove one person in an existing group (groups and their regions "
                "public); per level L1 sensitivity 2 (plain histograms) or 1 (cumulative); "
                "sequential composition over levels")
FIORETTO = ("Fioretto, Van Hentenryck & Zhu (2021), Differential privacy of hierarchical "
            "census data: an optimization approach, Artificial Intelligence 296")
KUO = ("Kuo, Chiu, Kifer, Hay & Machanavajjhala (2018), Differentially private hierarchical "
       "count-of-counts histograms, PVLDB 11(11)")
TOPDOWN_REF = ("Abowd et al. (2022), The 2020 Census Disclosure Avoidance System TopDown "
               "Algorithm; as the group-size baseline of " + FIORETTO)
NOISE_PARAM = Parameter("noise", "choice", "geometric",
                        "noise distribution: two-sided geometric (exact, integer) or Laplace",
                        choices=("geometric", "laplace"))
G_PUBLIC = "number of groups G (public by the model)"
G_V_PUBLIC = "number of groups of every region (public by the model)"
GROUP_COUNTS = ("noisy", "exact", "estimated")


def groups_parameter(default: str, *, estimated: bool = True) -> Parameter:
    """The ``groups`` option; ``estimated``: whether the total G can be estimated too (plain
    histograms only: their sensitivity holds when a group appears or disappears, that of
    cumulative histograms does not)."""
    text = ("every region's number of groups: exact (public G_v kept; --invariant groups) "
            "or noisy (estimated, consistent; the total G exact, --invariant total)")
    if estimated:
        text = text.replace(" or noisy", ", noisy") + (
            " or estimated (the total G too, from the root's noisy histogram: nothing exact, "
            "for group counts that are not declared)")
    return Parameter("groups", "choice", default, text,
                     choices=GROUP_COUNTS if estimated else GROUP_COUNTS[:2])


def estimated_total(noisy_root: np.ndarray) -> int:
    """The total G estimated from the root's noisy plain histogram (post-processing):
    its sum, rounded, at least 0."""
    return max(0, int(np.rint(np.sum(noisy_root))))


def total_groups(data: GroupSizeData, noisy_root: np.ndarray, p: dict) -> int:
    """The G a release uses: the public one, or with ``groups="estimated"`` the estimate
    from the root's noisy histogram (`estimated_total`)."""
    if p.get("groups") == "estimated":
        return estimated_total(noisy_root)
    return data.total_groups


@dataclass
class GroupSizeMechanism(Mechanism):
    """Shared machinery: plan the levels, measure plain or cumulative histograms, estimate.
    Subclasses set ``info``, ``representation`` and implement `estimate`."""

    info: MechanismInfo = field(init=False)
    representation: str = "plain"  # or "cumulative"
    invariants: tuple[str, ...] = (G_PUBLIC,)

    #: what the plan's note adds to the per-level sensitivity
    measured: str = ""

    def kept_invariants(self, **params) -> tuple[str, ...]:
        """What a release with these parameters publishes exactly: G_v with ``groups="exact"``,
        G with ``"noisy"``; ``invariants`` for a mechanism without the option."""
        p = self.params(**params)
        if "groups" not in p:
            return self.invariants
        return {"exact": (G_V_PUBLIC,), "noisy": (G_PUBLIC,)}.get(p["groups"], ())

    def privacy_plan(self, **params) -> PrivacyPlan:
        """One stage: every level measured once, L1 sensitivity per level by representation
        (`LEVEL_SENSITIVITY`), the levels composing sequentially."""
        p = self.params(**params)
        sensitivity = LEVEL_SENSITIVITY[self.representation]
        what = self.measured or f"{self.representation} size histograms of every region"
        exact = "; ".join(self.kept_invariants(**p)) or "nothing"
        note = (f"{what}: L1 sensitivity {sensitivity:g} per level; {LEVELS_NOTE}; published "
                f"exactly (declared invariants, not protected): {exact}")
        stage = Stage("levels", PERSON_IN_GROUP, sensitivity, p.get("noise", "geometric"),
                      1.0, note=note)
        return PrivacyPlan(self.info.name, PURE_DP, (stage,))

    def level_plans(self, hierarchy, budget: PrivacyBudget, split, p: dict):
        """One plan per level of ``hierarchy``: the noise of its share of ``budget``."""
        if budget.definition != PURE_DP:
            raise BudgetError(f"{self.info.name} gives pure epsilon-DP: give an epsilon budget")
        return derive_levels(self.privacy_plan(**p), budget,
                             resolve_shares(hierarchy.n_levels, split), hierarchy.level_names,
                             QUERY, noise=choose_noise(p.get("noise", "geometric"), budget))

    def measured_plans(self, hierarchy, budget: PrivacyBudget, split, p: dict):
        """`level_plans` of a release: every level measured, else a `BudgetError`."""
        plans = self.level_plans(hierarchy, budget, split, p)
        if any(plan.noise is None for plan in plans):
            raise BudgetError(f"{self.info.name} measures every level: give every level a "
                              "share of the budget")
        return plans

    def ledger(self, data, budget: PrivacyBudget, split=None, **params):
        return ledger_frame(self.level_plans(data.hierarchy, budget, split,
                                             self.params(**params)))

    def release(self, data, budget: PrivacyBudget, *, split=None,
                source: NoiseSource | None = None, **params) -> Release:
        return self.releaser(data, budget, split=split, **params)(
            source or NoiseSource(secure=True))

    def prepared(self, data, budget: PrivacyBudget, split, params: dict):
        """(parameters, level plans) of releases of ``data``: the data checked, the
        parameters validated, every level planned."""
        if not isinstance(data, GroupSizeData):
            raise MechanismError(f"{self.info.name} releases group sizes: load the data as "
                                 "groups (person records with a group column, or size "
                                 "histograms), e.g. `--query group-sizes`")
        p = self.params(**params)
        return p, self.measured_plans(data.hierarchy, budget, split, p)

    def releaser(self, data, budget: PrivacyBudget, *, split=None, **params):
        """`Mechanism.releaser`: the data checked, the levels planned and the privacy record
        and ledger made once; every call measures and estimates."""
        p, plans = self.prepared(data, budget, split, params)
        record = self.release_record(plans, p, groups_declared=data.groups_declared)
        estimate = self.estimator(data, plans, p)

        def release(source: NoiseSource) -> Release:
            values, noisy = estimate(source)
            return self.make_release(data.hierarchy, data.categories, plans, p, values, noisy,
                                     source, record=record)

        return release

    def trials(self, data: GroupSizeData, budget: PrivacyBudget, n: int, source: NoiseSource,
               *, split=None, **params) -> np.ndarray:
        """The values (n, n_nodes, N + 1) of ``n`` successive releases of ``data`` from
        ``source``, bit for bit those of ``n`` `release` calls in turn (every trial's noise
        drawn as its release draws it, from the same source in the same order); the set-up
        made once (`prepared`) and the trials estimated as `trial_values` does."""
        p, plans = self.prepared(data, budget, split, params)
        return self.trial_values(data, plans, p, source, n)

    def trial_values(self, data: GroupSizeData, plans, p: dict, source: NoiseSource,
                     n: int) -> np.ndarray:
        """`trials` once set up: the ``n`` measurements drawn in turn (`measure`), then
        estimated (`estimate_trials`). A mechanism that measures and estimates otherwise
        (its own `measure_and_estimate`) overrides it."""
        measured = [self.measure(data, plans, p, source) for _ in range(n)]
        return self.estimate_trials(data, np.stack([noisy for noisy, _ in measured]),
                                    measured[0][1], p)

    def estimate_trials(self, data: GroupSizeData, noisy: np.ndarray, variance: np.ndarray,
                        p: dict) -> np.ndarray:
        """`estimate` of every trial of ``noisy`` (K, n_nodes, N + 1), in order; a
        mechanism that solves many at once overrides it (with the same values)."""
        return np.stack([np.asarray(self.estimate(data, y, variance, p)) for y in noisy])

    def raw_trials(self, data: GroupSizeData, budget: PrivacyBudget, n: int,
                   source: NoiseSource, *, split=None, **params) -> np.ndarray:
        """The values (n, n_nodes, N + 1) of ``n`` independent releases of ``data`` at once,
        for a mechanism whose estimate takes every measured cell on its own
        (``Capabilities.estimate == "raw"``, plain histograms): the ``n`` copies of every
        histogram are measured side by side (every cell's noise is independent) and
        estimated together. ``n = 1`` is bit for bit the values `release` gives with
        ``source``."""
        if self.info.capabilities.estimate != "raw" or self.representation != "plain":
            raise MechanismError(f"{self.info.name} does not estimate cell by cell")
        p, plans = self.prepared(data, budget, split, params)
        h = data.hierarchy
        noisy, variance = measure_in_blocks(np.tile(data.node_counts(), n), h, plans, source)
        values = np.asarray(self.estimate(data, noisy, variance, p))
        return values.reshape(h.n_nodes, n, -1).transpose(1, 0, 2)

    def release_record(self, plans, p: dict, *, groups_declared: bool = False):
        """(invariants, privacy record, ledger) of a release measured with ``plans``: what
        does not depend on the noise. ``groups_declared``: whether the numbers of groups
        came from a declaration (recorded as ``privacy["group_counts"]``, which the verdict
        reads: `hierdp_core.verdict.GROUPS_FROM_DATA`)."""
        invariants = self.kept_invariants(**p)
        privacy = privacy_record(self.privacy_plan(**p), plans, invariants=invariants,
                                 group_counts="declared" if groups_declared else "from-data")
        return invariants, privacy, ledger_frame(plans)

    def make_release(self, hierarchy, categories, plans, p: dict, values, noisy,
                     source: NoiseSource, *, groups_declared: bool = False,
                     record=None) -> Release:
        """The Release of ``values`` (and the ``noisy`` plain histograms) measured with
        ``plans``, as every engine makes it; ``record``: its `release_record` when made
        already (else made here, with ``groups_declared``)."""
        invariants, privacy, ledger = record or self.release_record(
            plans, p, groups_declared=groups_declared)
        return Release(
            hierarchy=hierarchy, values=np.asarray(values), mechanism=self.info.name,
            parameters=p, privacy=privacy, ledger=ledger, randomness=source.as_dict(),
            categories=categories, invariants=invariants, noisy=noisy,
        )

    def estimator(self, data: GroupSizeData, plans,
                  p: dict) -> Callable[[NoiseSource], tuple[np.ndarray, np.ndarray]]:
        """`measure_and_estimate` of ``data`` as a function of the source; a mechanism that
        prepares what all releases of the data share overrides it (`releaser`)."""
        return partial(self.measure_and_estimate, data, plans, p)

    def measure_and_estimate(self, data: GroupSizeData, plans, p: dict,
                             source: NoiseSource) -> tuple[np.ndarray, np.ndarray]:
        """(released values, noisy plain histograms for display). The default `measure`s
        and calls `estimate`."""
        noisy, variance = self.measure(data, plans, p, source)
        shown = noisy if self.representation == "plain" else decumulate(noisy)
        return self.estimate(data, noisy, variance, p), shown

    def measure(self, data: GroupSizeData, plans, p: dict,
                source: NoiseSource) -> tuple[np.ndarray, np.ndarray]:
        """(noisy plain or cumulative histograms of every level, each level's noise
        variance): a seeded source's noise per block of top-level units from its own stream
        (`hierdp_core.mechanisms.streams`, as the Dask engine draws it); the last
        cumulative cell is the public G_v where the release keeps it."""
        truth = data.node_counts()
        if self.representation == "plain":
            return measure_in_blocks(truth, data.hierarchy, plans, source)
        noisy, variance = measure_in_blocks(cumulative(truth), data.hierarchy, plans, source)
        if G_V_PUBLIC in self.kept_invariants(**p):
            noisy[:, -1] = data.groups()  # the last cumulative cell is G_v: public
        return noisy, variance

    def estimate(self, data: GroupSizeData, noisy: np.ndarray, variance: np.ndarray,
                 p: dict) -> np.ndarray:
        raise NotImplementedError


def gs_info(name: str, description: str, reference: str, *, consistent: bool,
            private: bool = True, parameters=(NOISE_PARAM,), warning: str = "",
            capabilities: Capabilities | None = None) -> MechanismInfo:
    return MechanismInfo(name=name, description=description, reference=reference,
                         queries=(QUERY,), privacy=PURE_DP, private=private,
                         consistent=consistent, parameters=tuple(parameters),
                         neighbouring=NEIGHBOURING, warning=warning,
                         capabilities=capabilities or Capabilities())
