"""The mechanism interface and registry.

A mechanism is a named pair (measurement strategy, estimator) with a declared privacy
guarantee. Every mechanism has one registry entry, so the dashboard, CLI, benchmarks and
privacy audit list and run mechanisms the same way.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from hierdp_core.errors import MechanismError
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.plan import (
    ADD_REMOVE_PERSON,
    DEFAULT_RELATIONS,
    UNBOUNDED_RELATIONS,
    PrivacyPlan,
    Stage,
)
from hierdp_core.privacy.samplers import NoiseSource

QUERY_KINDS = ("counts", "group-sizes", "flows", "ranges")
#: the estimate shapes the block-by-block engines, the counts intervals and the split
#: optimiser know how to run or model (`Capabilities.estimate`)
ESTIMATES = ("raw", "least-squares", "topdown")
#: how a release's intervals are made (`Capabilities.intervals`, `hierdp_core.intervals`):
#: without re-running the mechanism, by TopDown's stacked bootstrap, or by re-running it on
#: the released values as plug-in truth (widened for its bias at small cells, on both sides
#: or on the side the truth then lies: `intervals.bootstrap.rerun_bootstrap`)
INTERVAL_METHODS = ("closed-form", "stacked bootstrap", "bootstrap", "bias-widened bootstrap",
                    "bias-sided bootstrap")


@dataclass(frozen=True)
class Parameter:
    """A tunable parameter: type, default, and either bounds or a set of choices."""

    name: str
    type: str  # "float" | "int" | "bool" | "choice"
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple | None = None
    #: the label a form shows, when the name would mislead (DAWA's "rho" is not zCDP's ρ)
    label: str | None = None

    def validate(self, value: Any) -> Any:
        if self.type == "bool":
            if isinstance(value, str):
                if value.lower() in ("true", "1", "yes"):
                    return True
                if value.lower() in ("false", "0", "no"):
                    return False
            if isinstance(value, bool):
                return value
            raise MechanismError(f"parameter {self.name!r} must be true or false, got {value!r}")
        if self.type == "choice":
            if value not in self.choices:
                raise MechanismError(
                    f"parameter {self.name!r} must be one of {list(self.choices)}, got {value!r}"
                )
            return value
        caster = int if self.type == "int" else float
        try:
            number = caster(value)
        except (TypeError, ValueError):
            raise MechanismError(f"parameter {self.name!r} must be a {self.type}, got {value!r}") \
                from None
        if self.minimum is not None and number < self.minimum:
            raise MechanismError(f"parameter {self.name!r} must be >= {self.minimum}, got {number}")
        if self.maximum is not None and number > self.maximum:
            raise MechanismError(f"parameter {self.name!r} must be <= {self.maximum}, got {number}")
        return number


@dataclass(frozen=True)
class Capabilities:
    """What a mechanism can do, declared where it is registered (as scikit-learn's
    estimator tags): the engines, intervals, command line and dashboard ask here and keep
    no list of names."""

    #: the shape of its estimate from the level measurements (`ESTIMATES`): "raw" (every
    #: measured cell on its own, `Mechanism.estimate` of any rows), "least-squares" (tree
    #: least squares), "topdown" (TopDown's projection of the least-squares estimates or,
    #: with ``estimate="noisy"``, of the noisy values); None: another estimate
    estimate: str | None = None
    #: runs block by block (`hierdp_core.engine.blockwise*`, ``--engine dask``), bit for bit
    #: the whole-tree release
    blockwise: bool = False
    #: the split optimiser (`hierdp_core.privacy.split_optimiser`) models its error
    split_optimiser: bool = False
    #: how its intervals are made (`INTERVAL_METHODS`)
    intervals: str = "bootstrap"
    #: (levels, reason): the levels (`hierdp_core.intervals.calibration.LEVELS`) where its
    #: intervals are measured to cover less than their level, and why
    uncalibrated: tuple[str, str] | None = None
    #: flows: keeps the origin-destination space sparse (`hierdp_core.memory_plan`)
    sparse_flows: bool = False
    #: ranges: runs on a declared domain too large to hold, by its non-zero cells, with an
    #: output that follows the data, not the domain (`hierdp_core.mechanisms.range_sparse`)
    sparse_ranges: bool = False

    def __post_init__(self):
        if self.estimate not in (*ESTIMATES, None):
            raise MechanismError(f"unknown estimate {self.estimate!r}; one of {ESTIMATES}")
        if self.intervals not in INTERVAL_METHODS:
            raise MechanismError(f"unknown intervals {self.intervals!r}; one of "
                                 f"{INTERVAL_METHODS}")
        if self.split_optimiser and self.estimate is None:
            raise MechanismError("the split optimiser models a declared estimate")


@dataclass(frozen=True)
class MechanismInfo:
    """What the registry says of a mechanism (serialised by ``hierdp mechanisms --json``)."""

    name: str
    description: str
    reference: str
    queries: tuple[str, ...]
    privacy: str
    private: bool
    consistent: bool
    parameters: tuple[Parameter, ...] = ()
    privacy_definitions: tuple[str, ...] = ()
    neighbouring: str = ""
    warning: str = ""
    #: category columns are processed independently, so one release with K identical
    #: columns is K independent trials (the audit batches them); declare only after checking
    #: that the mechanism never mixes categories
    independent_columns: bool = False
    #: the audit's default number of trials per side when one release is slow (None: the
    #: audit's own default); an explicit number of trials overrides it
    audit_trials: int | None = None
    capabilities: Capabilities = Capabilities()

    def as_dict(self) -> dict:
        d = asdict(self)
        d["queries"] = list(self.queries)
        d["privacy_definitions"] = list(self.privacy_definitions or (self.privacy,))
        d["parameters"] = [{k: v for k, v in asdict(p).items() if v is not None}
                           for p in self.parameters]
        return d


@dataclass
class Mechanism(ABC):
    """Interface every mechanism implements.

    ``info`` describes it; ``ledger`` shows, before running, how the budget is spent and the
    expected error per cell; ``release`` runs it on the true data and returns a Release that
    holds privatised values only.
    """

    info: MechanismInfo = field(init=False)

    def params(self, **overrides) -> dict:
        """Defaults merged with ``overrides``, each validated; unknown names are an error."""
        known = {p.name: p for p in self.info.parameters}
        unknown = set(overrides) - set(known)
        if unknown:
            raise MechanismError(
                f"mechanism {self.info.name!r} has no parameter(s) {sorted(unknown)}; "
                f"it takes {sorted(known)}"
            )
        out = {name: p.default for name, p in known.items()}
        out.update({name: known[name].validate(v) for name, v in overrides.items()})
        return out

    def privacy_plan(self, **params) -> PrivacyPlan:
        """The privacy claim as data (`hierdp_core.privacy.plan`). By default one stage: the
        whole mechanism at the whole budget, under its query kind's relation (the add/remove
        one for a ``neighbouring`` parameter set to ``unbounded``). Composite mechanisms
        override this with one stage per measurement."""
        p = self.params(**params)
        kind = self.info.queries[0] if self.info.queries else ""
        relation = DEFAULT_RELATIONS.get(kind, ADD_REMOVE_PERSON)
        if p.get("neighbouring") == "unbounded":
            relation = UNBOUNDED_RELATIONS.get(kind, relation)
        stage = Stage("release", relation, None, str(p.get("noise", "")), 1.0,
                      note=self.info.neighbouring)
        return PrivacyPlan(self.info.name, self.info.privacy, (stage,))

    def release_plan(self, release) -> PrivacyPlan:
        """The plan of the stages that ran for ``release`` (what its manifest states): by
        default its parameters' `privacy_plan`; a mechanism that skips a stage on public or
        released information says so from the release."""
        return self.privacy_plan(**release.parameters)

    @abstractmethod
    def ledger(self, data, budget: PrivacyBudget, split=None, **params) -> pd.DataFrame: ...

    @abstractmethod
    def release(self, data, budget: PrivacyBudget, *, split=None,
                source: NoiseSource | None = None, **params): ...

    def releaser(self, data, budget: PrivacyBudget, *, split=None,
                 **params) -> Callable[[NoiseSource], Any]:
        """``f`` with ``f(source)`` the release ``release(data, budget, split=split,
        source=source, **params)`` gives, for many releases of one dataset (audits). By
        default every call is a whole `release`; a mechanism whose checks and plans do not
        depend on the noise makes them once, and its releases then share their privacy
        record and ledger (read them, never change them)."""
        return lambda source: self.release(data, budget, split=split, source=source,
                                           **params)


_REGISTRY: dict[str, Mechanism] = {}


def register(mechanism: Mechanism) -> Mechanism:
    name = mechanism.info.name
    if name in _REGISTRY:
        raise MechanismError(f"mechanism {name!r} is registered twice")
    bad = set(mechanism.info.queries) - set(QUERY_KINDS)
    if bad:
        raise MechanismError(f"mechanism {name!r} declares unknown query kinds {sorted(bad)}")
    _REGISTRY[name] = mechanism
    return mechanism


#: the module of `hierdp_core.mechanisms` that registers each query kind's mechanisms,
#: imported when a mechanism of that kind is first asked for (the others stay unloaded,
#: with their numerical dependencies)
MODULES = {"counts": "counts", "group-sizes": "group_sizes", "flows": "flows",
           "ranges": "ranges"}


def get_mechanism(name: str, query: str | None = None) -> Mechanism:
    """The registered mechanism ``name``; ``query`` (its query kind, when known) spares
    importing the other kinds' modules. `MechanismError` naming the available ones."""
    if name not in _REGISTRY:
        _load(query)
    if name not in _REGISTRY and query is not None:
        _load(None)  # a mechanism of another kind: the caller says it does not release query
    try:
        return _REGISTRY[name]
    except KeyError:
        raise MechanismError(
            f"unknown mechanism {name!r}; available: {', '.join(sorted(_REGISTRY))}"
        ) from None


def capabilities(name: str, query: str | None = None) -> Capabilities:
    """The `Capabilities` of the registered mechanism ``name`` (``query``: as for
    `get_mechanism`)."""
    return get_mechanism(name, query).info.capabilities


def list_mechanisms(query: str | None = None) -> list[MechanismInfo]:
    """The registered mechanisms (of ``query``'s kind, importing only its module)."""
    _load(query)
    infos = [m.info for m in _REGISTRY.values()]
    return [i for i in infos if query is None or query in i.queries]


def _load(query: str | None) -> None:
    """Import the mechanism module of ``query``'s kind (every module for None or a kind
    that has none) so that their entries are registered."""
    kinds = [query] if query in MODULES else list(MODULES)
    for kind in kinds:
        importlib.import_module(f"hierdp_core.mechanisms.{MODULES[kind]}")


def optimiser_family(mechanism_name: str) -> str | None:
    """The split optimiser's model (family) of the counts mechanism ``mechanism_name``: the
    shape of its estimate when its `Capabilities` say ``split_optimiser``, else None."""
    declared = capabilities(mechanism_name)
    return declared.estimate if declared.split_optimiser else None


def optimised_mechanisms() -> list[str]:
    """The counts mechanisms the split optimiser models (their `Capabilities` say so)."""
    return [i.name for i in list_mechanisms("counts") if i.capabilities.split_optimiser]


def keeps_flows_sparse(mechanism: str | None) -> bool:
    """Whether the flow mechanism ``mechanism`` keeps the O/D space sparse (its
    `Capabilities` say ``sparse_flows``); False for None or a name that is no flow
    mechanism (refused where it runs). Such a mechanism never holds areas x areas: the
    top-down ones noise only the children of released positive O/D pairs, the stability
    histogram only the positive pairs (the bench's slope over the dense O/D cells was nil:
    inftda -7, tda-l2 1 bytes per cell); its plan is `memory_sparse.sparse_flows_plan`."""
    if mechanism is None:
        return False
    try:
        return capabilities(mechanism, "flows").sparse_flows
    except MechanismError:
        return False
