"""Rows of a table that look like totals or subtotals rather than units: a national total
row ("Total", "Ensemble") or a subtotal row (a unit's code repeated at the level below).
Read as units (a structure read from the data), each would be released as a unit of its
own and added into the levels above; the command line and the Data page warn of them.

>>> t = pd.DataFrame({"region": ["84", "84", "Total"], "dep": ["01", "84", "Total"]})
>>> totals_like_units(t, ["region", "dep"])
["region 'Total'", "dep 'Total'", "dep '84' (the code of its region)", \
"dep 'Total' (the code of its region)"]
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

#: codes of a level that name a total, not a unit (lower case; also "total ..." / "... total")
TOTAL_WORDS = frozenset({"total", "totals", "grand total", "all", "sum", "ensemble",
                         "insgesamt", "gesamt", "totale", "totaal", "totalt", "todos"})


def totals_like_units(table: pd.DataFrame, levels: Iterable[str],
                      local_codes: bool = False, ragged: bool = False) -> list[str]:
    """The units of a table read with its units from the data that look like totals or
    subtotals, each released as a unit of its own and added into the levels above: a code
    of a level that is a total word (`TOTAL_WORDS`) or, but with ``local_codes`` or
    ``ragged`` (a unit passing through a level keeps its parent's code there), a code
    equal to its row's code of the level above (a subtotal row); at most three a level."""
    levels = [c for c in levels if c in table.columns]
    found: list[str] = []
    for i, level in enumerate(levels):
        codes = pd.Series(pd.unique(table[level])).astype(str).str.strip().drop_duplicates()
        lower = codes.str.lower()
        words = codes[lower.isin(TOTAL_WORDS) | lower.str.match(r"^total\b|\btotal$")]
        found += [f"{level} {code!r}" for code in words[:3]]
        if i and not (local_codes or ragged):  # their codes repeat their parent's
            pairs = table[[levels[i - 1], level]].drop_duplicates().astype(str).drop_duplicates()
            same = pairs[pairs[levels[i - 1]].str.strip() == pairs[level].str.strip()]
            found += [f"{level} {code!r} (the code of its {levels[i - 1]})"
                      for code in same[level][:3]]
    return found


def totals_text(found: list[str]) -> str:
    """What `totals_like_units` found, as a warning."""
    return (f"units that look like totals or subtotals: {', '.join(found[:5])}; each is "
            "released as a unit of its own, added into the levels above: if they are totals "
            "rows, remove them from the input")
