"""Range-query mechanisms: DAWA and its baselines, per geographic level, made consistent.

For every level of the hierarchy, every unit's histogram over the ordered attribute is released
by a 1-D method with that level's share epsilon_l of the budget; then, from the root down, the
children's totals over each atom of the workload (the runs of cells no query tells apart: one
per value for prefixes, one per band for age bands) are projected onto non-negative values
summing to their parent's and rounded keeping the sums (the core's TopDown), and spread over
the atom's cells in their parent's proportions (`hierdp_core.ranges.consistency`), so that
every parent histogram equals the sum of its children's and every cell is a non-negative
integer.

DAWA's Stage 1 runs only where it can pay, by public or released information: at the levels
``partition_from`` chooses, not when the public workload leaves nothing to merge
(`hierdp_core.ranges.dawa.partition_can_pay`), and, below a released level, only for the
children of parents whose release says so (`hierdp_core.ranges.plugin`). A unit without a
partition gives the whole epsilon_l to Stage 2; the ledger's ``epsilon_stage1`` is the
level's Stage-1 share for the units that are partitioned.

Privacy: add/remove one person changes one cell of one unit's histogram per level. Within a
level the units are disjoint (parallel composition) and each 1-D method is epsilon_l-DP on one
histogram (its own statement: `hierdp_core.ranges`); levels compose sequentially, so the release
is epsilon-DP with epsilon = sum epsilon_l. The workload is public (chosen without the data).
TopDown is post-processing. ``dawa-reference`` is NOT established as private (see
`hierdp_core.ranges.partition`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hierdp_core.errors import BudgetError
from hierdp_core.mechanisms.base import Capabilities, Mechanism, MechanismInfo, register
from hierdp_core.mechanisms.measure import records_frame
from hierdp_core.mechanisms.range_parameters import (
    BRANCHING,
    CANDIDATES,
    PARTITION,
    PARTITION_FROM,
    PARTITION_IF,
    PENALTY,
    RHO,
    STAGE2_PARAM,
)
from hierdp_core.mechanisms.range_release import RangeRelease
from hierdp_core.mechanisms.range_releaser import RangeReleaser
from hierdp_core.mechanisms.range_statements import (
    DAWA_REF,
    NEIGHBOURING,
    NOT_PRIVATE,
    PRIVELET_PARTS,
    PRIVELET_SENSITIVITY,
    REFERENCE_STAGE1,
    STAGE1_PRIVACY,
    STAGE1_SELECTION,
    STAGE2_PRIVACY,
)
from hierdp_core.privacy.budget import APPROX_DP, PURE_DP, PrivacyBudget, resolve_shares
from hierdp_core.privacy.levels import derive_levels, privacy_record
from hierdp_core.privacy.plan import ADD_REMOVE_PERSON, PrivacyPlan, Stage
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.ranges import RangeData
from hierdp_core.ranges.baselines import BASELINES, REFERENCES
from hierdp_core.ranges.dawa import (
    RangeEstimate,
    dawa,
    partition_can_pay,
    partition_stage,
    stage1_partition,
)

Estimator = Callable[..., RangeEstimate]

#: L1 sensitivity, under add/remove one person, of what the range mechanisms measure: one
#: histogram (one cell changes by 1), its total, each level of a tree over it, strategy
#: answers whose columns have L1 norm 1, or one group of Privelet's weighted Haar
#: coefficients. Stated once here, in the plans; the noise reads it.
MEASUREMENT_SENSITIVITY = 1.0


@dataclass
class RangeMechanism(Mechanism):
    """A 1-D histogram method applied to every unit of every level, then TopDown."""

    info: MechanismInfo
    estimator: Estimator = field(repr=False)
    #: the measurement stage's L1 sensitivity (``sensitivity_note`` saying what it is of and
    #: ``parts`` in how many groups sharing epsilon it is measured, if not once)
    sensitivity: float | None = MEASUREMENT_SENSITIVITY
    sensitivity_note: str = ""
    parts: str = ""

    def _levels(self, data: RangeData, budget: PrivacyBudget, split, params: dict):
        """(one `LevelPlan` per level, its budget None where unmeasured; the split's shares),
        from the privacy plan (`derive_levels`); its stages divide a level's epsilon."""
        if budget.definition == APPROX_DP:
            budget = PrivacyBudget.pure(budget.value)
        if budget.definition != PURE_DP:
            raise BudgetError(f"{self.info.name} uses Laplace noise (pure epsilon-DP): give "
                              "an epsilon budget")
        shares = resolve_shares(data.hierarchy.n_levels, split)
        if (shares[1:] <= 0).any():
            raise BudgetError("range mechanisms release every level below the root: give "
                              "each of them a share")
        return derive_levels(self.privacy_plan(**params), budget, shares,
                             data.hierarchy.level_names, "ranges"), shares

    @staticmethod
    def _level_params(p: dict, level: int, n_levels: int, workload=None) -> dict:
        """The 1-D method's parameters at ``level`` of ``n_levels``: above ``partition_from``
        (negative: counted from the finest level, -1 = the finest) DAWA makes no partition
        (rho = 0, the whole epsilon_l on Stage 2), nor where ``partition_if="it-can-pay"``
        and the public ``workload`` fails `partition_can_pay`. Public choices: privacy is
        unchanged."""
        level_params = {k: v for k, v in p.items() if k != "partition_from"}
        first = p.get("partition_from", 0)
        if level < (first if first >= 0 else n_levels + first):
            level_params["rho"] = 0.0
        rho = level_params.get("rho", 0.0)
        if (workload is not None and rho > 0 and p.get("partition_if") == "it-can-pay"
                and not partition_can_pay(workload, rho, p.get("branching", 2))):
            level_params["rho"] = 0.0
        return level_params

    def histogram_estimator(self, **params) -> Callable[..., RangeEstimate]:
        """The 1-D method alone, as applied to a one-level release: a function of
        (histograms (r, n), workload, epsilon, source)."""
        level_params = self._level_params(self.params(**params), 0, 1)
        stages = self.estimator_stages(**params)
        return lambda x, workload, epsilon, source: self.estimator(
            x, workload, epsilon, source, **stages, **level_params)

    def measurement_stage(self, **params) -> Stage:
        """The plan's last stage, the measurement, whose noise at its exact scale
        (`Stage.noise_for`) the estimators draw."""
        return self.privacy_plan(**params).stages[-1]

    def estimator_stages(self, **params) -> dict:
        """The plan's stages the estimator draws its noise from: the measurement
        (``stage``) and, for DAWA with a partition, Stage 1 (``partition_stage``)."""
        plan = self.privacy_plan(**params)
        if not plan.composite:
            return {"stage": plan.stages[-1]}
        return {"stage": plan.stages[-1], "partition_stage": plan.stages[0]}

    def measurement_sensitivity(self, **params) -> float | None:
        """The L1 sensitivity the measurement's noise is calibrated with."""
        return self.measurement_stage(**params).sensitivity

    def privacy_plan(self, **params) -> PrivacyPlan:
        """DAWA-style methods with a partition (rho > 0): Stage 1, the partition, with share
        rho of each partitioned level's epsilon_l, and Stage 2, the measurement over the
        buckets, with the rest; each runnable on its own on many histograms (one unit of a
        level each, ``run(x, workload, epsilon_l, source)``) for the audit. Stage 2 runs on
        the public partition into single cells: its claim holds for every partition fixed
        before it. Methods without a partition: one stage, the measurement. Every stage
        states its L1 sensitivity (``sensitivity``, 1 for the measurements, per group for
        Privelet's; Stage 1's that of its scores or costs, with its ``scale_factor``), from
        which the release calibrates its noise (`estimator_stages`). The plan describes a
        partitioned level whatever ``partition_from`` (`release_plan`: the stages that ran)."""
        options = getattr(self.estimator, "options", None)
        p = {"partition": "privtree", "candidates": "pow2", "penalty": 0.0,
             "stage2": "greedy", "branching": 2,
             **{k: v for k, v in self.params(**params).items() if k != "partition_from"},
             **(options or {})}
        rho = float(p.get("rho", 0.0))
        if options is None or rho <= 0:
            return self._one_stage_plan()

        def partition(x, workload, epsilon, source):  # the inner edges' marks
            return stage1_partition(np.asarray(x, dtype=float), rho * epsilon,
                                    (1 - rho) * epsilon, source, p["partition"],
                                    p["candidates"], p["penalty"], stage=stage1
                                    )[:, 1:-1].astype(float)

        def measurement(x, workload, epsilon, source):
            return dawa(x, workload, (1 - rho) * epsilon, source, rho=0.0,
                        stage2=p["stage2"], branching=p["branching"],
                        stage=stage2).values

        provable = p["partition"] != "least-cost-reference"
        stage1 = partition_stage(p["partition"], rho, run=partition,
                                 note=(STAGE1_PRIVACY if provable else REFERENCE_STAGE1)
                                 + "; " + STAGE1_SELECTION)
        stage2 = Stage("measurement", ADD_REMOVE_PERSON, self.sensitivity, "laplace",
                       1.0 - rho, note=STAGE2_PRIVACY, run=measurement)
        return PrivacyPlan(self.info.name, PURE_DP, (stage1, stage2))

    def _one_stage_plan(self) -> PrivacyPlan:
        """The plan of a method without a partition: one stage, the measurement."""
        note = self.info.neighbouring
        if self.sensitivity_note:
            note += "; " + self.sensitivity_note
        stage = Stage("release", ADD_REMOVE_PERSON, self.sensitivity, "laplace", 1.0,
                      note=note, parts=self.parts)
        return PrivacyPlan(self.info.name, PURE_DP, (stage,))

    def release_plan(self, release) -> PrivacyPlan:
        """The stages that ran: where Stage 1 ran at no level (``partition_if`` skipped it
        everywhere, or ``partition_from`` chose no level), the measurement alone with the
        whole budget, as for a method without a partition."""
        if not (release.ledger["epsilon_stage1"] > 0).any():
            return self._one_stage_plan()
        return self.privacy_plan(**release.parameters)

    def ledger(self, data: RangeData, budget: PrivacyBudget, split=None, **params):
        return records_frame(self._ledger_rows(data, budget, split, self.params(**params)))

    def _ledger_rows(self, data: RangeData, budget: PrivacyBudget, split, p: dict) -> list:
        """The rows of `ledger` (one dict per level), before any frame is built."""
        levels, shares = self._levels(data, budget, split, p)
        parts = [level.budget for level in levels]
        rows = []
        for level, (part, share) in enumerate(zip(parts, shares, strict=True)):
            eps = 0.0 if part is None else part.value
            stage1 = eps * self._level_params(p, level, len(parts),
                                              data.workload).get("rho", 0.0)
            rows.append({"level": level, "level_name": data.hierarchy.level_names[level],
                         "query": "ranges", "share": float(share),
                         "definition": PURE_DP if part is not None else None,
                         "budget": eps, "epsilon_stage1": stage1,
                         "epsilon_stage2": eps - stage1,
                         "units": data.hierarchy.level_size(level),
                         "noise": "laplace" if part is not None else "not measured"})
        return rows

    def release(self, data: RangeData, budget: PrivacyBudget, *, split=None,
                source: NoiseSource | None = None, **params) -> RangeRelease:
        if not isinstance(data, RangeData):  # a domain kept sparse (`range_sparse`)
            from hierdp_core.mechanisms.range_sparse import sparse_range_release

            return sparse_range_release(self, data, budget, split=split, source=source,
                                        **params)
        return self.releaser(data, budget, split=split, **params)(
            source or NoiseSource(secure=True))

    def releaser(self, data: RangeData, budget: PrivacyBudget, *, split=None, **params):
        """`Mechanism.releaser`: a `RangeReleaser` (the levels planned, each level's
        parameters, the privacy record and the ledger rows made once); every call measures
        and estimates."""
        if not isinstance(data, RangeData):
            return super().releaser(data, budget, split=split, **params)
        p = self.params(**params)
        levels, _ = self._levels(data, budget, split, p)
        n_levels = data.hierarchy.n_levels
        return RangeReleaser(
            self, data, [level.budget for level in levels], p,
            [self._level_params(p, level, n_levels, data.workload) for level in range(n_levels)],
            privacy_record(self.privacy_plan(**p), levels, note=NEIGHBOURING,
                           private=self.info.private),
            self._ledger_rows(data, budget, split, p))


def _dawa_with(**fixed) -> Estimator:
    def estimate(x, workload, epsilon, source, *, stage, partition_stage=None, **params):
        return dawa(x, workload, epsilon, source, stage=stage, partition_stage=partition_stage,
                    **{**params, **fixed})
    estimate.options = fixed  # what the privacy plan reads
    return estimate


def _baseline(function) -> Estimator:
    """A data-independent 1-D method as an estimator; one that spreads each row's total
    evenly (``function.one_bucket``) states its one bucket per row (public: the same for
    every input), so its intervals bound each cell by its row's total. Their arithmetic is
    row by row, whatever the number of rows: ``releases`` (`dawa`) changes nothing."""
    def estimate(x, workload, epsilon, source, *, stage, releases=1, **params):
        values = function(x, epsilon, source, stage=stage, **params)
        if not getattr(function, "one_bucket", False):
            return RangeEstimate(values)
        return RangeEstimate(values, [np.array([0, values.shape[-1]])] * len(values))
    return estimate


def _info(name: str, description: str, reference: str, privacy_note: str, *,
          parameters=(), private: bool = True, warning: str = "",
          capabilities: Capabilities | None = None) -> MechanismInfo:
    return MechanismInfo(
        name=name, description=description, reference=reference, queries=("ranges",),
        privacy=PURE_DP, private=private, consistent=True, parameters=parameters,
        neighbouring=NEIGHBOURING + "; " + privacy_note, warning=warning,
        capabilities=capabilities or Capabilities())


register(RangeMechanism(
    info=_info("dawa", "DAWA: a private partition into near-uniform buckets, then "
               "workload-aware weighted range queries over the buckets and least squares. "
               "Stage 1 is a provably private PrivTree-style bisection, by default at the "
               "finest level only (coarser levels: queries alone).", DAWA_REF,
               STAGE1_PRIVACY + "; " + STAGE2_PRIVACY,
               parameters=(RHO, PARTITION_FROM, PARTITION_IF, BRANCHING, PARTITION,
                           CANDIDATES, PENALTY, STAGE2_PARAM)),
    estimator=_dawa_with()))
register(RangeMechanism(
    info=_info("dawa-reference", "DAWA with the Stage 1 of the authors' released code "
               "(reproduces the paper's accuracy).", DAWA_REF,
               "Stage 1 with half the noise, none on single cells, clamped costs; "
               + STAGE2_PRIVACY, parameters=(RHO, BRANCHING, CANDIDATES), private=False,
               warning=NOT_PRIVATE),
    estimator=_dawa_with(partition="least-cost-reference")))
register(RangeMechanism(
    info=_info("greedy-h", "DAWA's Stage 2 alone on the cells (no partition; the whole epsilon "
               "to workload-aware weighted queries).", DAWA_REF,
               "weighted queries with column L1 norm 1, Laplace(1/epsilon_l)",
               parameters=(BRANCHING,)),
    estimator=_dawa_with(rho=0.0)))
register(RangeMechanism(
    info=_info("partition-laplace", "DAWA's private partition, then Laplace noise on each "
               "bucket count.", DAWA_REF,
               STAGE1_PRIVACY + "; Stage 2: Laplace(1/epsilon2) per bucket",
               parameters=(RHO, PARTITION, CANDIDATES, PENALTY),
               capabilities=Capabilities(sparse_ranges=True)),
    estimator=_dawa_with(stage2="laplace")))

#: Uniform's levels below the root (`intervals.calibration`), measured with
#: `benchmarks/bench_coverage.py` (docs/benchmarks.md)
UNIFORM_UNCALIBRATED = (
    "below the root",
    "measured 0.909 at nominal 0.95 (standard error 0.002) at the 20 units of a tree of 394 "
    "people at epsilon 10 (0.886 at nominal 0.9, epsilon 1): TopDown rounds each value's "
    "even share of the total to 0 or 1 per unit, so a unit's total is released 0 or 32 "
    "where 8 to 43 people live, and re-runs on the even plug-in show none of that bias")

for _key, (_function, _display, _summary, _statement) in BASELINES.items():
    register(RangeMechanism(
        info=_info(_key, f"{_display} (data-independent): {_summary}", REFERENCES[_key],
                   _statement, capabilities=Capabilities(uncalibrated=UNIFORM_UNCALIBRATED)
                   if _key == "uniform" else None),
        estimator=_baseline(_function),
        sensitivity_note=PRIVELET_SENSITIVITY if _key == "privelet" else "",
        parts=PRIVELET_PARTS if _key == "privelet" else ""))
