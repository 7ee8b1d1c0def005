"""Privacy plans: a mechanism's privacy claim as data.

A plan lists the stages of a mechanism that see the confidential data. Each stage states the
neighbouring relation it is private under, the sensitivity of what it measures, its noise and
its share of the budget; the stages compose sequentially (shares sum to at most 1). Whatever
follows the stages is post-processing. The audit reads the plan
(`hierdp_core.audit.stages`): a composite mechanism is audited stage by stage, each stage
that can run on its own (``run`` given) against its own share of epsilon.

Relations are keys of `RELATIONS`; the audit builds its neighbouring datasets from them.

Example
-------
>>> plan = PrivacyPlan("dawa", "pure-dp", (
...     Stage("partition", ADD_REMOVE_PERSON, 1.0, "laplace", 0.25),
...     Stage("measurement", ADD_REMOVE_PERSON, 1.0, "laplace", 0.75)))
>>> plan.composite, [round(s.share * 2.0, 2) for s in plan.stages]
(True, [0.5, 1.5])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hierdp_core.errors import BudgetError, MechanismError
from hierdp_core.privacy.samplers import NOISES, Noise

ADD_REMOVE_PERSON = "add-remove-person"
PERSON_IN_GROUP = "person-in-existing-group"
WHOLE_GROUP = "add-remove-group"
SUBSTITUTE_TRIP = "substitute-trip"
ADD_REMOVE_TRIP = "add-remove-trip"

RELATIONS = {
    ADD_REMOVE_PERSON: "one person added or removed: one cell of one unit's vector per level "
                       "changes by 1",
    PERSON_IN_GROUP: "one person added to or removed from an existing group: one group of "
                     "one region moves from size k to k +- 1 (groups and their regions "
                     "public)",
    WHOLE_GROUP: "one group (of one person) created or removed: one region gains or loses "
                 "a group of size 1 (the number of groups is not public)",
    SUBSTITUTE_TRIP: "bounded DP: one trip substituted (one O/D cell -1, another +1)",
    ADD_REMOVE_TRIP: "unbounded DP: one trip added or removed",
}

#: The relation a query kind's mechanisms are private under unless they say otherwise.
DEFAULT_RELATIONS = {"counts": ADD_REMOVE_PERSON, "group-sizes": PERSON_IN_GROUP,
                     "flows": SUBSTITUTE_TRIP, "ranges": ADD_REMOVE_PERSON}
#: ... and the one when their ``neighbouring`` parameter is ``unbounded``.
UNBOUNDED_RELATIONS = {"flows": ADD_REMOVE_TRIP}

#: A stage run on its own, on many units at once. For ranges:
#: ``run(x (r, n), workload, epsilon, source) -> (r, d)``, with ``epsilon`` the whole budget
#: of the unit's level (the stage spends its share of it) and one output row per unit.
StageRunner = Callable[..., object]


@dataclass(frozen=True)
class Stage:
    """One measurement of the confidential data: a relation key of `RELATIONS`, the L1 (or
    L2, for Gaussian noise) sensitivity of what is measured, the noise, the share of the
    budget, and optionally ``run``, the stage on its own (for the audit). ``output`` says
    what ``run`` returns: ``"values"`` (numbers) or ``"partition"`` (one code per row).
    The noise's scale for epsilon is ``scale_factor * sensitivity * k / epsilon``
    (`scale_for`): ``scale_factor`` is 1 for a measurement and a selection's own calibration
    otherwise (PrivTree's (2 beta - 1)/(beta - 1) = 3, a noisy minimum's 2); ``parts``, when
    given, names the public number k of groups of this sensitivity that share the stage's
    epsilon equally (Privelet's "1 + log2 N", N known only with the domain)."""

    name: str
    relation: str
    sensitivity: float | None
    noise: str
    share: float
    note: str = ""
    output: str = "values"
    scale_factor: float = 1.0
    parts: str = ""
    run: StageRunner | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.relation not in RELATIONS:
            raise MechanismError(f"stage {self.name!r}: unknown neighbouring relation "
                                 f"{self.relation!r}; use one of {sorted(RELATIONS)}")
        if not 0 < self.share <= 1:
            raise MechanismError(f"stage {self.name!r}: share must be in (0, 1], got "
                                 f"{self.share}")
        if self.output not in ("values", "partition"):
            raise MechanismError(f"stage {self.name!r}: output must be 'values' or "
                                 f"'partition', got {self.output!r}")
        if not (math.isfinite(self.scale_factor) and self.scale_factor > 0):
            raise MechanismError(f"stage {self.name!r}: scale_factor must be positive, got "
                                 f"{self.scale_factor}")

    def scale_for(self, epsilon: float, *, sensitivity=None, parts: int = 1):
        """The stage's exact noise scale for spending ``epsilon`` (pure DP):
        ``scale_factor * sensitivity * parts / epsilon``, the one place a scale is computed
        from the plan. ``sensitivity``: a query's own (a float or an array, one per query), at
        most the stage's (a selection calibrated per candidate); ``parts``: the number of
        groups sharing ``epsilon`` (the stage's ``parts``). MechanismError for a stage that
        states no sensitivity or whose noise is not pure-DP noise, or a larger
        ``sensitivity``; BudgetError for epsilon <= 0."""
        if self.sensitivity is None or not hasattr(NOISES.get(self.noise), "for_epsilon"):
            raise MechanismError(f"stage {self.name!r} has no epsilon calibration "
                                 f"(sensitivity {self.sensitivity}, noise {self.noise!r})")
        if not epsilon > 0:
            raise BudgetError(f"epsilon must be positive, got {epsilon}")
        own = self.sensitivity if sensitivity is None else sensitivity
        if np.any(np.asarray(own) < 0) or np.any(np.asarray(own) > self.sensitivity):
            raise MechanismError(f"stage {self.name!r}: a query's sensitivity must lie in "
                                 f"[0, {self.sensitivity}] (the stage's)")
        return self.scale_factor * own * parts / epsilon

    def noise_for(self, epsilon: float, *, sensitivity: float | None = None,
                  parts: int = 1) -> Noise:
        """The stage's noise at its exact scale for spending ``epsilon`` (`scale_for`; for a
        measurement sensitivity / epsilon)."""
        return NOISES[self.noise](self.scale_for(epsilon, sensitivity=sensitivity,
                                                 parts=parts))

    @property
    def single_measurement(self) -> bool:
        """Measured once at sensitivity / epsilon (no selection factor, no parts)."""
        return self.scale_factor == 1.0 and not self.parts

    def as_dict(self) -> dict:
        return {"name": self.name, "relation": self.relation,
                "neighbouring": RELATIONS[self.relation], "sensitivity": self.sensitivity,
                "noise": self.noise, "share": self.share, "note": self.note,
                "runnable": self.run is not None,
                **({"scale_factor": self.scale_factor} if self.scale_factor != 1.0 else {}),
                **({"parts": self.parts} if self.parts else {})}


@dataclass(frozen=True)
class PrivacyPlan:
    """The stages of a mechanism, composing sequentially (their shares sum to at most 1)."""

    mechanism: str
    definition: str
    stages: tuple[Stage, ...]
    composition: str = "sequential"

    def __post_init__(self):
        if not self.stages:
            raise MechanismError(f"the privacy plan of {self.mechanism!r} has no stage")
        total = sum(s.share for s in self.stages)
        if total > 1 + 1e-9:
            raise MechanismError(f"the stages of {self.mechanism!r} spend {total:g} of the "
                                 "budget (more than all of it)")

    @property
    def composite(self) -> bool:
        """More than one stage: the audit checks each against its own share."""
        return len(self.stages) > 1

    @property
    def spent_share(self) -> float:
        """The share of the budget the stages spend together (1.0 when they divide all of
        it; rounded to 12 digits so that stages of rho and 1 - rho spend exactly 1)."""
        return min(1.0, round(math.fsum(s.share for s in self.stages), 12))

    def relations(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.relation for s in self.stages))

    def as_dict(self) -> dict:
        return {"mechanism": self.mechanism, "definition": self.definition,
                "composition": self.composition,
                "stages": [s.as_dict() for s in self.stages]}
