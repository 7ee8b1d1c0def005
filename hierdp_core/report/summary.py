"""The one-minute summary on top of the release report (`hierdp_core.report.stakeholder`):
five plain lines (what was published, where, how private with a yardstick of what an agency
has used, the typical error in people and as a share of a typical number, the verdict),
and the error table by level behind them. Everything comes from the release and public
parameters (the a priori error of `hierdp_core.explain`, the released values, their
intervals), never from the true data.

Example
-------
>>> plural(3141, "county"), YARDSTICKS[0].epsilon
('3,141 counties', 17.14)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierdp_core.explain import Explanation, explain
from hierdp_core.mechanism_names import title
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.number_text import figure_text
from hierdp_core.privacy.budget import ZCDP, PrivacyBudget
from hierdp_core.verdict import release_verdict


@dataclass(frozen=True)
class Yardstick:
    """The privacy budget an agency used for a published product, with its source."""

    agency: str
    product: str
    epsilon: float
    delta: float | None
    scope: str
    source: str


#: budgets agencies have published with. The Census Bureau announced the 2020 redistricting
#: data's production setting on 9 June 2021 (also quoted by the O/D TopDown paper, section
#: 1.2: "(17.14, 10^-10)-DP"); it covers all the product's tables and geographic levels.
YARDSTICKS = (
    Yardstick("the US Census Bureau", "2020 Census redistricting data (P.L. 94-171)", 17.14,
              1e-10, "for persons, over all its tables and geographic levels together",
              "https://www.census.gov/newsroom/press-releases/2021/2020-census-key-parameters"
              ".html"),
)


def release_budget(release) -> PrivacyBudget:
    """The budget a release was made with, from its privacy record."""
    privacy = release.privacy
    if privacy.get("definition") == ZCDP:
        return PrivacyBudget.zcdp(privacy["rho"], privacy.get("delta"))
    if privacy.get("delta"):
        return PrivacyBudget.approx(privacy["epsilon"], privacy["delta"])
    return PrivacyBudget.pure(privacy["epsilon"])


def release_explanation(release, data) -> Explanation:
    """`hierdp_core.explain` of the release's own configuration (public parameters and the
    tree's shape only)."""
    split = release.ledger["share"].to_numpy(float).tolist()
    return explain(data, release.mechanism, release_budget(release), split,
                   **release.parameters)


def _number(x: float) -> str:
    """A count for reading: 3.0, 42, 1,234."""
    if not math.isfinite(x):
        return "n/a"
    return f"{x:,.1f}" if abs(x) < 10 else f"{x:,.0f}"


def _share(x: float) -> str:
    """A fraction as a percentage with two significant digits: 0.071%, 1.2%, 15% (below
    0.01%: "< 0.01%")."""
    if not math.isfinite(x):
        return "n/a"
    if 100 * x < 0.01:
        return "< 0.01%"
    return f"{100 * x:.2g}%" if 100 * x < 10 else f"{100 * x:.0f}%"


#: `error_by_level`'s column of the error estimated after the release from its intervals'
#: re-runs (`intervals.estimated_error`; TopDown, group sizes, ranges)
ESTIMATED_COLUMN = "Estimated mean error (from the release)"


def error_by_level(release, explanation: Explanation) -> pd.DataFrame:
    """One row per level: ``Level``, ``Units``, ``Typical unit (released total)`` (the
    median of the level's released totals), ``Typical released number`` (the median
    released cell: unit x category), ``Typical error (RMSE)`` (a priori, per released
    number), ``Relative error`` (that error over the typical released number) and, when
    the release carries intervals, ``Typical N% interval (±)`` (the median half-width)
    and, where they were bootstrapped, `ESTIMATED_COLUMN` (the mean |error| per released
    number their re-runs estimate)."""
    h = release.hierarchy
    errors = explanation.errors.set_index("level_name")
    totals = release.totals()
    rows = []
    for level, name in enumerate(h.level_names):
        sl = h.level_slice(level)
        cells = release.values[sl].ravel()
        rmse = float(errors["rmse"].get(name, np.nan))
        if not math.isfinite(rmse):
            rmse = float(errors["mae"].get(name, np.nan))
        typical = float(np.median(cells))
        row = {"Level": name, "Units": int(h.level_size(level)),
               "Typical unit (released total)": float(np.median(totals[sl])),
               "Typical released number": typical, "Typical error (RMSE)": rmse,
               "Relative error": rmse / typical if typical > 0 else math.nan}
        if release.intervals is not None:
            half = (release.intervals.upper[sl] - release.intervals.lower[sl]).ravel() / 2
            level_pct = release.intervals.record.get("level", 0.9)
            row[f"Typical {level_pct:.0%} interval (±)"] = float(np.median(half))
            estimate = release.intervals.record.get("estimated_error", {}).get("by_level", {})
            if name in estimate:
                row[ESTIMATED_COLUMN] = math.nan if estimate[name] is None else estimate[name]
        rows.append(row)
    return pd.DataFrame(rows)


def _what(release, data, unit: str) -> str:
    info = get_mechanism(release.mechanism).info
    if data.has_categories:
        kinds = " × ".join(c.replace("_", " ") for c in data.category_columns)
        what = f"Counts of {unit} by {kinds} ({len(release.categories or ())} groups)"
    else:
        what = f"Counts of {unit}"
    rules = ("whole numbers, never negative, each unit the sum of its parts"
             if release.is_integer and info.consistent else
             "consistent across levels" if info.consistent else
             "NOT made consistent: parts need not add up to their unit")
    exact = (f"; published exactly, not protected: {', '.join(release.invariants)}"
             if release.invariants else "")
    return (f"{what} for every unit of every level, released with the {title(info.name)} mechanism "
            f"({rules}){exact}.")


def plural(n: int, noun: str) -> str:
    """"1 county", "3,141 counties", "51 states"."""
    return f"1 {noun}" if n == 1 else f"{n:,} {plural_noun(noun)}"


#: level names given an English plural (others, such as a table's own "gemeente" or "com",
#: are counted as "gemeente units")
ENGLISH_LEVELS = frozenset({
    "state", "county", "tract", "region", "province", "municipality", "district", "city",
    "town", "country", "nation", "block", "area", "zone", "ward", "parish", "village",
    "department", "canton", "commune", "neighbourhood", "neighborhood", "borough", "unit",
    "airport", "household", "group", "division", "subdivision", "territory", "locality",
    "place", "settlement", "prefecture", "origin", "destination", "bucket", "node", "day",
    "week", "month", "year", "hour", "class", "size", "value", "category", "person", "trip",
    "flight", "cell"})


def plural_noun(noun: str) -> str:
    """English plural of a level name: county -> counties, state -> states; a name that is
    no English level's (`ENGLISH_LEVELS`; the table's own word) -> "gemeente units"."""
    if str(noun).lower() not in ENGLISH_LEVELS:
        return f"{noun} units"
    if noun.endswith("y") and noun[-2:-1] not in tuple("aeiou"):
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def _where(release, source: str | None) -> str:
    h = release.hierarchy
    first = 1 if h.level_size(0) == 1 else 0  # a single root: the whole, not a level
    parts = [plural(h.level_size(lv), name) for lv, name in enumerate(h.level_names)
             if lv >= first]
    whole = f" and their {h.level_names[0]}" if first else ""
    head = f"{source}: " if source else ""
    return f"{head}{' and '.join(parts) if len(parts) < 3 else ', '.join(parts)}{whole}."


def _privacy(explanation: Explanation, release) -> str:
    eps, zcdp = explanation.epsilon, release.privacy.get("definition") == ZCDP
    if not math.isfinite(eps):
        return (f"Protected by zero-concentrated differential privacy, ρ = "
                f"{release.privacy.get('rho'):g}; a δ is needed to state it as ε.")
    definition = (f"zero-concentrated differential privacy, ρ = {release.privacy.get('rho'):g},"
                  " which implies " if zcdp else "differential privacy, ")
    delta = f" (δ = {explanation.delta:.0e})" if explanation.delta else ""
    stick = YARDSTICKS[0]
    return (f"Protected by {definition}ε = {eps:.3g}{delta}: any one person changes the "
            f"odds of any result by a factor of at most {figure_text(explanation.likelihood_ratio)}. "
            f"For scale: {stick.agency} used ε = {stick.epsilon:g} (δ = {stick.delta:.0e}) "
            f"{stick.scope} in its {stick.product}; smaller ε means stronger protection.")


def _typical_error(table: pd.DataFrame, unit: str) -> str:
    finest = table.iloc[-1]
    rmse, typical = finest["Typical error (RMSE)"], finest["Typical released number"]
    share = (f"{_share(finest['Relative error'])} of a typical released number there "
             f"({_number(typical)} {unit})" if typical > 0 else
             "while most released numbers there are 0")
    return (f"At the {finest['Level']} level a released number is typically off by about "
            f"±{_number(rmse)} {unit} (RMSE, expected before the release), {share}; a "
            f"typical {finest['Level']} has "
            f"{_number(finest['Typical unit (released total)'])} {unit}. Small numbers "
            "suffer most.")


def _verdict(verdict: dict) -> str:
    if verdict["publishable"]:
        return ("Publishable: secure noise charged to the dataset's budget, a private "
                "mechanism, a declared structure and a budget within its ceilings.")
    return "Not publishable as it is: " + "; ".join(verdict["not_publishable_because"]) + "."


def summary_lines(release, data, *, structure_declared: bool, source: str | None = None,
                  explanation: Explanation | None = None,
                  table: pd.DataFrame | None = None) -> list[tuple[str, str]]:
    """The five (title, sentence) lines of the summary of ``release`` (a counts release of
    ``data``, whose tree shape and categories are read, never its counts); ``source``
    names the data (a sample's title, a file name)."""
    explanation = explanation or release_explanation(release, data)
    table = error_by_level(release, explanation) if table is None else table
    verdict = release_verdict(release, structure_declared=structure_declared)
    return [("What was published", _what(release, data, explanation.unit)),
            ("Where", _where(release, source)),
            ("Privacy", _privacy(explanation, release)),
            ("Typical error", _typical_error(table, explanation.unit)),
            ("Verdict", _verdict(verdict))]


def format_error_table(table: pd.DataFrame) -> pd.DataFrame:
    """``error_by_level`` with its numbers as text for reading (counts, percentages)."""
    shown = table.copy()
    for column in shown.columns[2:]:
        fmt = _share if column == "Relative error" else _number
        shown[column] = [fmt(float(v)) for v in shown[column]]
    shown["Units"] = [f"{u:,}" for u in table["Units"]]
    return shown
