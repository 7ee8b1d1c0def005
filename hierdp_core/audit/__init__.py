"""Empirical privacy audit: a statistically valid LOWER bound on the epsilon a mechanism gives.

A mechanism that claims epsilon-DP must satisfy, for every pair of neighbouring inputs D, D'
and every set of outputs E,

    P[M(D) in E] <= exp(epsilon) * P[M(D') in E] + delta        (delta = 0 for pure DP).

So for any fixed E with P[M(D') in E] > 0, ``ln((P[M(D) in E] - delta) / P[M(D') in E])`` is a
lower bound on the true epsilon. The audit estimates those two probabilities by running the
mechanism many times on D and on D', with confidence bounds, and reports

    epsilon_lb = max(0, max over both directions of ln((p_lower(D, E) - delta) / p_upper(D', E)))

where p_lower / p_upper are one-sided Clopper-Pearson bounds. If the mechanism honours its
claim, ``epsilon_lb <= claimed epsilon`` with probability at least ``1 - alpha``; a lower
bound above the claim is evidence (at level alpha) that the implementation is broken. A
passing audit proves nothing; it can only catch mechanisms that leak more than they claim,
and only through the events it tries.

Method
------
1. Neighbours. An adapter (one per query kind, see `register_adapter`) builds a small pair
   D, D' (`neighbours`) under each relation the mechanism's privacy plan declares. For
   counts: root > 2 regions > 2 leaves with leaf counts (3, 0, 5, 2), and D' adds one
   person to one leaf (the add/remove-one-person relation the count mechanisms declare).
   For O/D flows: the same geography, five leaf flows, and D' moves one trip to another
   pair (bounded DP, substitution) or adds one (unbounded), see `flow_adapter`.
2. Trials. ``trials`` independent releases per side, run in chunks. The registered count
   mechanisms process category columns independently (documented in
   `hierdp_core.mechanisms.counts`), so ``K`` trials are ONE release of a CountData with ``K``
   identical category columns; every column of the release is an independent trial. That
   is only valid for mechanisms known to work column by column: the declared set
   `BATCHED_COUNT_MECHANISMS` (every entry whose queries are ``('counts',)``). Any other
   count mechanism is run one release per trial (slow but always valid). Group-size
   mechanisms whose estimate takes every cell on its own (``Capabilities.estimate ==
   "raw"``) measure the trials side by side (`GroupSizeMechanism.raw_trials`); the others
   run one release per trial, their set-up made once per side (`Mechanism.releaser`; group
   sizes: `GroupSizeMechanism.trials`, the same values, estimated together). Range
   mechanisms make a side's trials together (`RangeReleaser.trials`: without a Stage 1
   every trial's noise drawn as its release draws it, then one run over every trial's
   rows; with one, measured one by one; made consistent together), and so do flow
   mechanisms (`FlowMechanism.trees`): bit for bit the releases one after another.
3. Statistics and events. Each output is reduced to scalar statistics. For counts (nodes on
   the path root -> region -> changed leaf, ``x`` the true values under D, per-level weights
   ``w_l`` from the mechanism's own ledger: epsilon_l = 1/scale for Laplace / geometric noise,
   1/sigma_l^2 for (discrete) Gaussian noise):

   * ``path-weighted``: sum_l w_l (y_l - x_l), the privacy-loss statistic of Gaussian noise;
   * ``path-clipped``: sum_l w_l clip(2 (y_l - x_l) - 1, -1, 1), the exact privacy loss of
     Laplace / geometric noise on the raw measurements;
   * ``root``, ``region``, ``leaf``: single released coordinates.

   Events are ``{T >= t}`` and ``{T <= t}`` over candidate thresholds ``t`` (the distinct
   values, or a grid of quantiles dense in both tails).
4. Sample splitting. The event is chosen from the data, so the first half of each side's
   trials only SELECTS, per direction (D' vs D, D vs D'), the event with the largest bound
   computed on that half (at a level divided by the square root of the number of candidate
   events, which discounts lucky small-count tail events); the second, independent half
   ESTIMATES it. The selection may use anything; validity rests only on the held-out half.
5. Confidence. Four one-sided Clopper-Pearson bounds are used (a lower and an upper bound in
   each of the two directions), each at level ``alpha / 4`` (Bonferroni), so the reported
   maximum over directions holds with probability >= 1 - alpha jointly.

6. Stages. A composite mechanism (several stages in its `privacy_plan`, e.g. DAWA's
   partition and measurement) is audited stage by stage, every stage that can run on its
   own against its own share of epsilon (`stages`); the level alpha is split over those
   audits. A stage that overspends its share is caught even when the other stages' noise
   keeps the whole mechanism below the whole epsilon.

Layout: `neighbours` (the pairs), `estimators` (Clopper-Pearson bounds, event selection,
the bound), `counts` / `group_sizes` / `flows` / `ranges` (one adapter per query kind, on
the shared `adapter` machinery), `stages` (stage audits), `report` (driver and result).

Budgets. ``epsilon`` means epsilon-DP for mechanisms that run under pure DP (the claim is
checked with delta = 0). Mechanisms whose noise is (discrete) Gaussian give zCDP; they get
``PrivacyBudget.approx(epsilon, delta)``, which they convert to the largest rho implying
(epsilon, delta)-DP (tight conversion, as they do for any approx budget); the claim checked
is then (epsilon, delta)-DP, with the bound ``ln((p_lower - delta) / p_upper)``.

Assumptions and limits
----------------------
* Trials are independent and identically distributed: the seeded exploration sampler
  (numpy PCG64) is used unless ``secure=True`` (secure noise, not reproducible). An
  audit of the seeded sampler says nothing about floating-point attacks on it.
* Batching over categories is valid only if categories really are processed independently.
  Unbatched audits cost one release per trial (a few ms each): use fewer trials.
* Memory: trials run in chunks of ``chunk`` and only the scalar statistics are kept.
* The bound concerns one pair of neighbours and threshold events of a few statistics; the
  true epsilon may be much larger than what is found (the audit is a lower bound, not a
  proof of privacy). Post-processed releases (least squares, TopDown) lose information, so
  their bounds sit further below the claim than those of the raw mechanisms.
* An invariant (e.g. ``root_invariant=True``) is published exactly and is correctly reported
  as non-private: the audit fails it.

Example
-------
>>> r = audit_mechanism("raw-laplace", 1.0, trials=4000, seed=1)
>>> r.passed, 0.0 <= r.epsilon_lower_bound <= 1.0
(True, True)
"""

from __future__ import annotations

from hierdp_core.audit import counts, flows, group_sizes, ranges  # noqa: F401  (register)
from hierdp_core.audit.adapter import (
    ADAPTERS,
    DEFAULT_DELTA,
    AuditAdapter,
    claimed_budget,
    register_adapter,
)
from hierdp_core.audit.counts import count_adapter
from hierdp_core.audit.estimators import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    log_ratio_bound,
)
from hierdp_core.audit.flows import flow_adapter
from hierdp_core.audit.group_sizes import group_size_adapter
from hierdp_core.audit.ranges import range_adapter
from hierdp_core.audit.report import (
    DEFAULT_ALPHA,
    DEFAULT_CHUNK,
    DEFAULT_TRIALS,
    MIN_TRIALS,
    PILOT_TRIALS,
    AuditResult,
    audit_callable,
    audit_mechanism,
    audit_registered,
)

__all__ = [
    "ADAPTERS", "DEFAULT_ALPHA", "DEFAULT_CHUNK", "DEFAULT_DELTA", "DEFAULT_TRIALS",
    "MIN_TRIALS", "PILOT_TRIALS", "AuditAdapter", "AuditResult", "audit_callable",
    "audit_mechanism", "audit_registered", "claimed_budget", "clopper_pearson_lower",
    "clopper_pearson_upper", "count_adapter", "flow_adapter", "group_size_adapter",
    "log_ratio_bound", "range_adapter", "register_adapter",
]
