"""Plain-language explanation of a release's configuration, for every query kind (counts,
group sizes, flows, ranges), before anything runs:
what a neighbour is, what the budget guarantees, the a priori error per level and what the
publishable verdict depends on. Public parameters only (the mechanism, its declared privacy
plan, the budget and split, the tree's shape and whether the structure was declared), never
a count, so it may be shown beside a release or put in a report.

Every number comes from the core: the neighbouring relation from the mechanism's privacy
plan (`privacy.plan`), zCDP as (epsilon, delta) from `privacy.budget.rho_to_epsilon`, the
errors per level from `explain_errors` (by query kind, from the mechanism's declared noise
and sensitivity), the verdict from `verdict.verdict`.

Example
-------
>>> from hierdp_core.data.samples import synthetic_us_like
>>> from hierdp_core.queries.counts import count_data_from_table
>>> data = count_data_from_table(synthetic_us_like(seed=1, n_states=3, n_counties=9),
...                              ["state", "county"], count_column="count")
>>> e = explain(data, "topdown", PrivacyBudget.pure(1.0))
>>> e.neighbour, round(e.likelihood_ratio, 2), list(e.errors["level_name"])
('one person', 2.72, ['total', 'state', 'county'])
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import pandas as pd

from hierdp_core.explain_errors import APriori, a_priori_errors
from hierdp_core.mechanism_names import title
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.number_text import error_figure, figure_text
from hierdp_core.privacy.budget import ZCDP, PrivacyBudget, rho_to_epsilon
from hierdp_core.privacy.plan import (
    ADD_REMOVE_PERSON,
    ADD_REMOVE_TRIP,
    PERSON_IN_GROUP,
    RELATIONS,
    SUBSTITUTE_TRIP,
    WHOLE_GROUP,
)
from hierdp_core.verdict import LEDGER_ENTRY, verdict

#: relation key -> (who is protected, what the counts count, what a neighbour changes)
NEIGHBOURS = {
    ADD_REMOVE_PERSON: ("one person", "people", "one person's record is added or removed "
                        "(one row of a table of people, or 1 on one count)"),
    PERSON_IN_GROUP: ("one household member", "households", "one person joins or leaves "
                      "an existing household, which then has one member more or fewer"),
    WHOLE_GROUP: ("one household", "households", "a household of one person is created or "
                  "removed"),
    SUBSTITUTE_TRIP: ("one trip", "trips", "one trip is changed to another origin or "
                      "destination (the number of trips stays the same)"),
    ADD_REMOVE_TRIP: ("one trip", "trips", "one trip is added or removed"),
}
#: the secure-noise condition, by query kind: where the dashboard draws such a release
SECURE_NOISE = ("secure noise charged to the dataset's budget: drawn from the operating "
                "system's entropy by the publishable release drawn on the Export page, which "
                "counts it in the budget first; a seeded exploration release, or the Results "
                "page's secure preview (charged to nothing), never is publishable")
SECURE_NOISE_QUERY_PAGE = ("secure noise charged to the dataset's budget: drawn from the "
                           "operating system's entropy by the publishable release drawn "
                           "beside the downloads on this page, which counts it in the budget "
                           "first; a seeded exploration release never is publishable")


#: what the text adds where the a priori figures are the measurement noise, not the released
#: values' error (`APriori.released`): on the generated shapes of the coverage benchmark
#: the released error per level was 0-24 times the figure for group sizes, 0.02-4.0
#: times for ranges (docs/benchmarks.md)
NOT_THE_RELEASED_ERROR = (
    "The released numbers' error is not this: it depends on the data. The consistency step "
    "can make it far smaller (a value near 0 stays near 0) or larger (for example, keeping "
    "small values at or above 0 biases their sums up, fitting children to their parent can "
    "move a number by more than its noise, and a threshold, where there is one, drops small "
    "numbers). The intervals released with the table give each number's likely range at "
    "their confidence level (90% by default), and for group sizes and ranges its manifest "
    "gives each level's error estimated by re-running the mechanism on the release "
    "(`intervals.estimated_error`); `hierdp evaluate` (or the dashboard's evaluation "
    "mode) measures the error on a test table of your own.")

#: column names of `Explanation.errors` in a table: expectations, not measured errors
ERROR_NAMES = {"mae": "Expected mean |error|", "rmse": "Expected RMSE",
               "mae_low": "Mean |error| at least", "mae_high": "Mean |error| at most"}


@dataclass(frozen=True)
class Explanation:
    """The four parts of the explanation, as text (``*_text``, Markdown) and numbers:
    ``likelihood_ratio`` = e^epsilon (epsilon for zCDP from the conversion at ``delta``),
    ``errors`` one row per level (level_name, units (regions, pairs: `explain_errors`), mae,
    rmse: a priori, in ``unit``; for counts also mae_low, mae_high, the range the mean
    |error| lies in: `count_forecast`),
    ``conditions`` (condition, met: True/False, or None when decided at release time).
    ``ERROR_NAMES`` name the columns of ``errors`` for a table (`metric_names.friendly_table`).
    """

    neighbour: str
    unit: str
    neighbour_text: str
    epsilon: float
    delta: float | None
    likelihood_ratio: float
    guarantee_text: str
    errors: pd.DataFrame
    error_text: str
    conditions: tuple[tuple[str, bool | None], ...]
    verdict_text: str

    def error_table(self) -> pd.DataFrame:
        """``errors`` for a table: columns no level fills dropped, and the range's ends
        where every level's forecast is a point (both equal to ``mae``)."""
        table = self.errors.dropna(axis="columns", how="all")
        if {"mae_low", "mae_high"} <= set(table) and table["mae_low"].equals(table["mae"]) \
                and table["mae_high"].equals(table["mae"]):  # NaN where not measured
            table = table.drop(columns=["mae_low", "mae_high"])
        return table

    def markdown(self) -> str:
        """All four parts as Markdown, one heading each (for a panel or a report)."""
        marks = {True: "✓", False: "✗", None: "○"}  # in every common font (no emoji)
        # one line each, the mark its bullet (a list item's would stand beside it: "• ○")
        conditions = "  \n".join(f"{marks[met]} {text}" for text, met in self.conditions)
        return (f"**Who is protected.** {self.neighbour_text}\n\n"
                f"**What ε guarantees.** {self.guarantee_text}\n\n"
                f"**Expected error.** {self.error_text}\n\n"
                f"**When it is publishable.** A release is publishable only when all of "
                f"these hold:  \n{conditions}\n\n{self.verdict_text}")


def _guarantee(budget: PrivacyBudget, neighbour: str) -> tuple[float, float | None, str]:
    """(epsilon, delta, sentence) of ``budget``: e^epsilon as the bound on how much more
    likely any output becomes with ``neighbour``'s data in it."""
    if budget.definition == ZCDP:
        if budget.delta is None:
            return math.nan, None, (f"ρ = {budget.value:g} (zero-concentrated DP); give a δ "
                                    "to express it as a bound on the odds.")
        eps = rho_to_epsilon(budget.value, budget.delta)
        head = (f"ρ = {budget.value:g} (zero-concentrated DP) implies ε = {eps:.3g} at "
                f"δ = {budget.delta:.0e}. ")
        tail = f", except with a probability of at most δ = {budget.delta:.0e}."
    else:
        eps = budget.value
        head = f"ε = {eps:g}. "
        tail = (f", except with a probability of at most δ = {budget.delta:.0e}."
                if budget.delta else ".")
    bound = math.exp(eps)
    return eps, budget.delta, (
        f"{head}Whatever the release shows, it is at most e^ε ≈ {figure_text(bound)} times as "
        f"likely with {neighbour}'s data in the table as without it (and the other way "
        f"round), whoever that is and whatever else is known{tail} Smaller ε: a smaller "
        "factor, more privacy, more noise.")


def _error_text(errors: APriori, unit: str) -> str:
    parts, shown = [], []
    for row in errors.table.itertuples():
        value = row.mae if errors.measure == "mean |error|" else row.rmse
        low, high = getattr(row, "mae_low", value), getattr(row, "mae_high", value)
        if value == 0 and row.rmse == 0:
            parts.append(f"{row.level_name}: exact")
        elif math.isfinite(value) and low == 0 < value:
            parts.append(f"{row.level_name} up to {error_figure(high)}")
        elif math.isfinite(value) and not low == value == high:
            parts.append(f"{row.level_name} {error_figure(low)} to {error_figure(high)}")
        elif math.isfinite(value):
            parts.append(f"{row.level_name} {error_figure(value)}")
        elif math.isfinite(row.rmse):  # a level whose RMSE alone is known
            parts.append(f"{row.level_name} {row.rmse:,.1f} (RMSE)")
        else:
            parts.append(f"{row.level_name}: " + ("not modelled" if errors.measure == "RMSE"
                                                 else "not measured"))
        shown += [value] if math.isfinite(value) and value > 0 else []
    head = ("Per released number" if errors.released else
            "Per number before the consistency step")
    text = (f"{head} ({errors.measure} per {errors.per}, in {unit}): " + ", ".join(parts)
            + f". A priori: {errors.basis}; no count is read. ")
    if not errors.released:
        text += NOT_THE_RELEASED_ERROR + " "
    if not shown:
        return text.rstrip()
    typical = statistics.median(shown)
    return text + (f"An error of {error_figure(typical)} on a number of 50 {unit} is "
                   f"{typical / 50:.0%} of it, so small numbers suffer most.")


def _exact_text(mechanism, params: dict) -> str:
    """What the mechanism publishes exactly (not protected), as a sentence, or ''."""
    p = mechanism.params(**params)
    if p.get("root_invariant"):
        return (" The root is published exactly, its total and with categories its count "
                "of every category: it is NOT protected.")
    kept = getattr(mechanism, "kept_invariants", None)
    if kept is not None and kept(**params):
        return " Published exactly, NOT protected: " + "; ".join(kept(**params)) + "."
    if p.get("neighbouring") == "bounded":
        return " The number of trips is published exactly (public under these neighbours)."
    return ""


def explain(data, mechanism: str, budget: PrivacyBudget, split=None, **params
            ) -> Explanation:
    """The explanation of releasing ``data`` (the data of the mechanism's query kind:
    CountData, GroupSizeData, FlowData or RangeData; only its tree's shape, whether it has
    categories, whether its structure was declared and, for ranges, the public workload are
    read) with ``mechanism`` at ``budget`` split over levels by ``split`` (weights, a preset
    or None, as for ``Mechanism.ledger``) with ``params``. Raises what the ledger raises for
    bad settings (a `HierdpError`)."""
    m = get_mechanism(mechanism)
    plan = m.privacy_plan(**params)
    relation = plan.relations()[0]
    neighbour, unit, change = NEIGHBOURS.get(relation, ("one record", "records",
                                                        RELATIONS[relation]))
    neighbour_text = (f"The guarantee protects {neighbour}. Two versions of the data are "
                      f"*neighbours* when {change}. The release must look almost the same "
                      "for any two neighbours, so it cannot tell whether any one is in it.")
    neighbour_text += _exact_text(m, params)
    eps, delta, guarantee = _guarantee(budget, neighbour)
    errors = a_priori_errors(data, mechanism, budget, split, params)
    declared = bool(data.declared_structure)
    info = m.info
    conditions = (
        (SECURE_NOISE if info.queries[0] == "counts" else SECURE_NOISE_QUERY_PAGE, None),
        (f"a private mechanism: {title(info.name)} "
         + ("is differentially private" if info.private
            else "is NOT differentially private as published"), info.private),
        ("a declared structure: " + ("the units and categories come from a declared public "
                                     "geography and code lists" if declared else
                                     "the units were read from your table (exploration "
                                     "only); declare the geography on the Data page"),
         declared),
    )
    exact_groups = "group-sizes" in info.queries and bool(m.kept_invariants(**params))
    secure = verdict(randomness={"mode": "secure", LEDGER_ENTRY: "the draw's charge"},
                     mechanism_private=info.private,
                     mechanism_name=info.name, structure_declared=declared,
                     mechanism_warning=info.warning, privacy=budget.as_dict(),
                     exact_groups_from_data=exact_groups
                     and not getattr(data, "groups_declared", False))
    verdict_text = ("Released with secure noise, this configuration is publishable."
                    if secure["publishable"] else
                    "Even with secure noise this configuration is not publishable: "
                    + "; ".join(secure["not_publishable_because"]) + ".")
    return Explanation(neighbour, unit, neighbour_text, eps, delta,
                       math.exp(eps) if math.isfinite(eps) else math.nan, guarantee,
                       errors.table, _error_text(errors, unit), conditions, verdict_text)
