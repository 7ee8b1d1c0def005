"""The publishable verdict of a release (DESIGN principle 8).

A release is publishable only when all of these hold:

* its noise is secure: exact noise from a keystream keyed by the OS, applied to the true values
  (a seeded generator lets anyone with the seed subtract the noise);
* its draw is charged to the dataset's budget ledger (`hierdp_core.privacy.ledger`): the
  charging paths (``hierdp release``, ``hierdp_core.release(..., out=...)``, the dashboard's
  "Draw the publishable release") reserve its budget before the noise is drawn and mark the
  release with their ledger entry (``randomness[LEDGER_ENTRY]``, a random id, no secret:
  `ReleaseRecord.charged`), an entry the ledger holds with a budget that covers the
  release's (`ledger_mark_problem`: a mark set by hand is no charge). Secure draws made
  outside the ledger (the Results page's preview, ``Mechanism.release`` called directly,
  the reproduce script) can be redrawn without limit and one picked by its error, so their
  epsilon no longer holds;
* its mechanism is differentially private as implemented (the registry's ``private``);
* its shape (units, categories, domains, sizes, O/D areas) was declared public, not read
  from the confidential data;
* its privacy loss is at or below a public ceiling on epsilon (``max_epsilon``, default
  `DEFAULT_MAX_EPSILON`): a huge epsilon releases the true values with noise too small to
  protect anyone. Pure and approximate DP are compared by their epsilon; rho-zCDP by the
  epsilon it implies at its delta, the smallest one (Canonne, Kamath & Steinke 2020,
  Prop. 12: `privacy.budget.rho_to_epsilon`, the conversion every page and the ledger use;
  Bun & Steinke's simpler rho + 2 sqrt(rho ln(1/delta)) is larger), at `REFERENCE_DELTA`
  when the release gives no delta (`epsilon_bound`). The charging paths refuse a release
  above the ceiling before any noise is drawn (`check_within_ceilings`): it could not be
  published and would spend the dataset's budget;
* its delta is at or below a public ceiling (``max_delta``, default `DEFAULT_MAX_DELTA`):
  a large delta lets a release fail outright with that probability, and for zCDP it would
  make any rho look small in epsilon (rho 8 at delta 0.9 converts to epsilon 6.4);
* everything it publishes exactly was declared too: a group-size release keeping numbers
  of groups (G, G_v) exactly needs them declared (a groups file), not counted from the
  records.

Otherwise the verdict lists, in plain words, every reason it is not.

Example
-------
>>> verdict(randomness={"mode": "exploration", "seed": 3}, mechanism_private=True,
...         mechanism_name="topdown", structure_declared=True)["publishable"]
False
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hierdp_core.errors import BudgetError, InputError
from hierdp_core.privacy.budget import (  # the ceilings: also read from here
    APPROX_DP,
    DEFAULT_MAX_DELTA,
    DEFAULT_MAX_EPSILON,
    PURE_DP,
    ZCDP,
    rho_to_epsilon,
)

if TYPE_CHECKING:
    from hierdp_core.releases import ReleaseRecord

#: the delta at which a rho-zCDP release without a delta is expressed as epsilon
REFERENCE_DELTA = 1e-6
#: the key of a release's randomness record naming its entry in the budget ledger
LEDGER_ENTRY = "budget_ledger_entry"
ZCDP_CONVERSION = ("rho-zCDP implies (epsilon, delta)-DP for the smallest epsilon of "
                   "Canonne, Kamath & Steinke (2020), Prop. 12")
#: relative slack of a comparison with a converted budget: a conversion and its inverse
#: (an epsilon turned into a rho and back) agree to about 1e-13 of the value
CONVERSION_SLACK = 1e-9
OVER_CEILING = "the privacy loss is above the public ceiling"
LEDGER_MARK = "its budget ledger entry"  # the start of every `ledger_mark_problem` reason
OVER_DELTA = "delta is above the public ceiling"
NOT_CHARGED = ("not charged to a budget ledger: its secure noise was drawn outside the "
               "dataset's budget across releases, so it could be drawn again and again and "
               "one draw picked by its error, and its epsilon would not hold; draw the "
               "release to publish with `hierdp release`, `hierdp_core.release(..., out=...)` "
               "or the dashboard's 'Draw the publishable release'")
SEEDED = ("the noise comes from a seeded generator (exploration): anyone who knows the seed "
          "can subtract it; release again with secure noise (without a seed)")
FROM_DATA = ("the release's units, categories or domain were read from the confidential data "
             "(structure from data), so its shape can reveal who is in it; declare them: a "
             "public geography listing every unit, and the category values or domain")
GROUPS_FROM_DATA = ("group counts read from the confidential data, not declared: the release "
                    "publishes numbers of groups exactly, and removing the only member of a "
                    "one-person group would change them; declare them (a groups file, "
                    "--groups) or use a mechanism that keeps no number of groups exactly")


def not_private_reason(name: str, warning: str = "") -> str:
    """Why a mechanism is not private: its name (and plain name, `mechanism_names.title`)
    and the registry's warning (the flaw and the private alternative)."""
    from hierdp_core.mechanism_names import title

    plain = f" ({title(name)})" if title(name) != name else ""
    text = f"mechanism {name!r}{plain} is not differentially private as published"
    return f"{text} ({warning})" if warning else text


def epsilon_bound(privacy: dict) -> dict:
    """The epsilon a privacy record (``definition`` and ``epsilon`` or ``rho``, perhaps
    ``delta``) guarantees: ``{"epsilon": value or None, "delta": ..., "conversion": how}``;
    epsilon None when the record states no budget."""
    definition, delta = privacy.get("definition"), privacy.get("delta")
    if definition == ZCDP and _finite(privacy.get("rho")):
        rho = float(privacy["rho"])
        at = float(delta) if _finite(delta) and 0 < delta < 1 else REFERENCE_DELTA
        given = "" if at == delta else " at the reference delta (the release gives none)"
        return {"epsilon": rho_to_epsilon(rho, at), "delta": at,
                "conversion": ZCDP_CONVERSION + given}
    if definition in (PURE_DP, APPROX_DP) and _finite(privacy.get("epsilon")):
        return {"epsilon": float(privacy["epsilon"]), "delta": delta,
                "conversion": "the release's own epsilon"}
    return {"epsilon": None, "delta": delta, "conversion": "no budget recorded"}


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def check_max_epsilon(value) -> float:
    """``value`` as a ceiling: a positive finite number, else an `InputError`."""
    if not _finite(value) or value <= 0:
        raise InputError(f"the epsilon ceiling must be a positive finite number, got {value!r}")
    return float(value)


def ceiling_record(privacy: dict, max_epsilon: float) -> dict:
    """The ceiling part of a verdict: the ceiling, the release's epsilon bound
    (`epsilon_bound`) and whether it is at or below the ceiling."""
    ceiling, bound = check_max_epsilon(max_epsilon), epsilon_bound(privacy)
    within = bound["epsilon"] is not None and \
        bound["epsilon"] <= ceiling * (1 + CONVERSION_SLACK)
    return {"max_epsilon": ceiling, **bound, "within": within}




def over_ceiling_reason(record: dict) -> str:
    """Why a release is above its ceiling, in plain words."""
    if record["epsilon"] is None:
        return f"{OVER_CEILING}: the release records no privacy budget to compare with it"
    return (f"{OVER_CEILING}: epsilon {record['epsilon']:.4g} > {record['max_epsilon']:g} "
            "(--max-epsilon): noise this small barely protects anyone; release with a "
            "smaller budget, or raise the ceiling on purpose")


def check_max_delta(value) -> float:
    """``value`` as a delta ceiling: a number in [0, 1), else an `InputError`."""
    if not _finite(value) or not 0 <= value < 1:
        raise InputError(f"the delta ceiling must be a number from 0 to below 1, got "
                         f"{value!r}")
    return float(value)


def delta_record(privacy: dict, max_delta: float) -> dict:
    """The delta part of a verdict: the ceiling, the delta the release's guarantee is
    stated at (`epsilon_bound`: its own, `REFERENCE_DELTA` for zCDP without one, None for
    pure DP) and whether it is at or below the ceiling."""
    ceiling, delta = check_max_delta(max_delta), epsilon_bound(privacy)["delta"]
    delta = float(delta) if _finite(delta) else None
    return {"max_delta": ceiling, "delta": delta,
            "within": delta is None or delta <= ceiling}


def over_delta_reason(record: dict) -> str:
    """Why a release's delta is above its ceiling, in plain words."""
    return (f"{OVER_DELTA}: delta {record['delta']:.4g} > {record['max_delta']:g} "
            "(--max-delta): with probability delta the release may expose someone outright, "
            "and a zCDP release's epsilon would be given at that delta; release with a "
            "delta below 1/n (the number of people), or raise the ceiling on purpose")


def check_within_ceilings(privacy: dict, max_epsilon: float, max_delta: float) -> None:
    """A `BudgetError` when a release of the privacy record ``privacy`` would be above the
    public ceiling on epsilon (`ceiling_record`) or on delta (`delta_record`): the charging
    paths call it before the ledger reserves anything (`hierdp_core.cli.budget`, whose
    `reserve_release` the API's charged releases use too, and the dashboard's
    `hierdp_core.ui.ledger.counted`), since such a release could not be published and
    would spend the dataset's budget."""
    breach = ceiling_breach(privacy, max_epsilon, max_delta)
    if breach is not None:
        reason = over_ceiling_reason if "max_epsilon" in breach else over_delta_reason
        raise BudgetError(f"{reason(breach)}; nothing was charged or drawn")


def ceiling_breach(privacy: dict, max_epsilon: float, max_delta: float) -> dict | None:
    """The first ceiling the privacy record ``privacy`` is above: its epsilon's
    (`ceiling_record`, with ``max_epsilon``) or its delta's (`delta_record`, with
    ``max_delta``); None when it is within both."""
    for record in (ceiling_record(privacy, max_epsilon), delta_record(privacy, max_delta)):
        if not record["within"]:
            return record
    return None


def is_charged(randomness: dict) -> bool:
    """Whether a release's randomness names its entry in the budget ledger."""
    return bool(randomness.get(LEDGER_ENTRY))


def ledger_mark_problem(randomness: dict, privacy: dict) -> str | None:
    """Why the ledger entry a secure release names (`is_charged`) is no charge of it, in
    plain words: the budget ledger (`hierdp_core.privacy.ledger.Ledger`, this machine's)
    holds no such entry, or one whose budget does not cover the release's ``privacy``
    record (`_covers`); None when the entry covers the release (or it names none)."""
    from hierdp_core.privacy.ledger import Ledger

    entry = randomness.get(LEDGER_ENTRY)
    if randomness.get("mode") != "secure" or not entry:
        return None
    ledger = Ledger()
    try:
        spend = ledger.spend(str(entry))
    except InputError as exc:
        return f"{LEDGER_MARK} {entry!r} could not be checked: {exc}"
    if spend is None:
        return (f"{LEDGER_MARK} {entry!r} is not in the budget ledger "
                f"({ledger.path}): the release was marked as charged but no budget was "
                "reserved for it; draw it with a path that charges the ledger")
    if not _covers(spend.definition, spend.budget, spend.delta, privacy):
        definition, spent, delta = _spent(privacy)
        return (f"{LEDGER_MARK} {entry!r} charged {spend.definition} "
                f"{spend.budget:g} (delta {spend.delta}), which does not cover the "
                f"release's {definition} {spent} (delta {delta})")
    return None


def _spent(privacy: dict) -> tuple:
    """(definition, epsilon or rho, delta) of a release's privacy record."""
    definition = privacy.get("definition")
    return (definition, privacy.get("rho" if definition == ZCDP else "epsilon"),
            privacy.get("delta"))


def _covers(definition: str, budget: float, delta: float | None, privacy: dict) -> bool:
    """Whether a charge of ``budget`` under ``definition`` (and ``delta``) covers a release
    whose privacy record is ``privacy``: the same definition with at least its budget and
    delta, or through the conversions the mechanisms make (a release drawn under
    rho-zCDP for an (epsilon, delta) request: its epsilon at that delta, the tight
    conversion of Canonne, Kamath & Steinke, at most the charge's; a pure release's
    epsilon^2 / 2 at most a rho charge; a pure release under an (epsilon, delta) charge).
    Never the other way: a rho-zCDP release is epsilon-DP for no finite epsilon, so a pure
    charge does not cover it."""
    released, value, released_delta = _spent(privacy)
    if value is None:
        return False
    value, released_delta, slack = float(value), released_delta or 0.0, 1 + CONVERSION_SLACK
    if released == definition:
        return value <= budget * slack and released_delta <= (delta or 0.0) * slack
    if released == ZCDP and definition == APPROX_DP and delta:
        try:
            return rho_to_epsilon(value, delta, tight=True) <= budget * slack
        except BudgetError:  # a rho of no meaning (0 or below): no charge covers it
            return False
    if released == PURE_DP and definition == ZCDP:
        return value ** 2 / 2 <= budget * slack
    return released == PURE_DP and definition == APPROX_DP and value <= budget * slack


def verdict(*, randomness: dict, mechanism_private: bool, mechanism_name: str,
            structure_declared: bool, mechanism_warning: str = "",
            privacy: dict | None = None, max_epsilon: float = DEFAULT_MAX_EPSILON,
            max_delta: float = DEFAULT_MAX_DELTA,
            exact_groups_from_data: bool = False, ledger_problem: str | None = None
            ) -> dict:
    """``{"publishable": bool, "not_publishable_because": [plain-word reasons]}``, with
    ``privacy`` (the release's privacy record) also ``"epsilon_ceiling"``
    (`ceiling_record`) and ``"delta_ceiling"`` (`delta_record`), a reason when the release
    is above ``max_epsilon`` or ``max_delta``. Secure noise without a ledger entry in
    ``randomness`` (`is_charged`) is `NOT_CHARGED`. ``exact_groups_from_data``: numbers of
    groups published exactly but counted from the records (`GROUPS_FROM_DATA`).
    ``ledger_problem``: why the ledger entry named is no charge (`ledger_mark_problem`)."""
    reasons = []
    if randomness.get("mode") != "secure":
        reasons.append(SEEDED)
    elif not is_charged(randomness):
        reasons.append(NOT_CHARGED)
    elif ledger_problem:
        reasons.append(ledger_problem)
    if not mechanism_private:
        reasons.append(not_private_reason(mechanism_name, mechanism_warning))
    if not structure_declared:
        reasons.append(FROM_DATA)
    if exact_groups_from_data:
        reasons.append(GROUPS_FROM_DATA)
    out = {}
    if privacy is not None:
        out["epsilon_ceiling"] = ceiling_record(privacy, max_epsilon)
        if not out["epsilon_ceiling"]["within"]:
            reasons.append(over_ceiling_reason(out["epsilon_ceiling"]))
        out["delta_ceiling"] = delta_record(privacy, max_delta)
        if not out["delta_ceiling"]["within"]:
            reasons.append(over_delta_reason(out["delta_ceiling"]))
    return {"publishable": not reasons, "not_publishable_because": reasons, **out}


def release_verdict(release: ReleaseRecord, *, structure_declared: bool,
                    max_epsilon: float = DEFAULT_MAX_EPSILON,
                    max_delta: float = DEFAULT_MAX_DELTA) -> dict:
    """The verdict of a Release / FlowRelease / RangeRelease from its randomness (with its
    ledger entry, looked up in the budget ledger: `ledger_mark_problem`), its privacy
    record (against ``max_epsilon`` and ``max_delta``) and its mechanism's registry
    entry."""
    from hierdp_core.mechanisms.base import get_mechanism

    info = get_mechanism(release.mechanism).info
    privacy = getattr(release, "privacy", None) or {}
    return verdict(randomness=release.randomness, mechanism_private=info.private,
                   mechanism_name=info.name, structure_declared=structure_declared,
                   mechanism_warning=info.warning, privacy=release.privacy,
                   max_epsilon=max_epsilon, max_delta=max_delta,
                   exact_groups_from_data=bool(privacy.get("invariants"))
                   and privacy.get("group_counts") == "from-data",
                   ledger_problem=ledger_mark_problem(release.randomness, privacy))


def short_reason_tag(result: dict) -> str:
    """A file-name tag saying why a release is not publishable (empty when it is), e.g.
    ``NOT-PUBLISHABLE_seeded_structure-from-data``."""
    if result["publishable"]:
        return ""
    tags = []
    for reason in result["not_publishable_because"]:
        if reason == SEEDED:
            tags.append("seeded")
        elif reason == NOT_CHARGED or reason.startswith(LEDGER_MARK):
            tags.append("not-charged")
        elif reason == FROM_DATA:
            tags.append("structure-from-data")
        elif reason.startswith(OVER_CEILING):
            tags.append("over-epsilon-ceiling")
        elif reason.startswith(OVER_DELTA):
            tags.append("over-delta-ceiling")
        elif reason == GROUPS_FROM_DATA:
            tags.append("groups-from-data")
        else:
            tags.append("not-private")
    return "NOT-PUBLISHABLE_" + "_".join(tags)


def describe_ceiling(record: dict) -> str:
    """The ceiling in a few words: ``epsilon 1 <= ceiling 10`` (zCDP: ``epsilon 5.222 at
    delta 1e-06 <= ceiling 10``), ``>`` above it."""
    if record["epsilon"] is None:
        return f"no epsilon to compare with the ceiling {record['max_epsilon']:g}"
    at = f" at delta {record['delta']:g}" if record["conversion"].startswith("rho") else ""
    sign = "<=" if record["within"] else ">"
    return f"epsilon {record['epsilon']:.4g}{at} {sign} ceiling {record['max_epsilon']:g}"


def describe(result: dict) -> str:
    """One line for the CLI: ``publishable: yes`` or ``publishable: NO (reason; reason)``."""
    if result["publishable"]:
        ceiling = result.get("epsilon_ceiling")
        within = f", {describe_ceiling(ceiling)}" if ceiling else ""
        delta = (result.get("delta_ceiling") or {}).get("delta")
        if delta is not None:
            within += f", delta {delta:g} <= ceiling {result['delta_ceiling']['max_delta']:g}"
        return ("publishable: yes (secure noise charged to the budget ledger, private "
                f"mechanism, declared structure{within})")
    return "publishable: NO (" + "; ".join(result["not_publishable_because"]) + ")"
