"""The guess that an upload is wide (one column per category), and what melting it gives.

A guess is only a proposal (DESIGN principle 10): the Data page shows it with its
consequence and melts nothing until the user ticks it. A column that looks like a code is
never part of the guess nor offered to melt (`code_like_columns`): a name that says so
(`column_roles.looks_like_code`: ``*_code``, ``*_id``, ``*_no``, ``tract``, ``geoid``),
digits with leading zeros, or a local code (its values repeat across the units of the
finest level but never within one). A column named like a count (``population``,
``total``) is the obvious count column, never guessed as a category: melting it beside the
bands would count everyone twice. `consequence` says the total the melt gives beside that
column's total.

>>> t = pd.DataFrame({"town_no": [1, 1, 2], "tract": [1, 2, 1], "population": [9, 7, 5],
...                   "age_0_19": [4, 3, 2], "age_20_64": [4, 3, 2], "age_65_plus": [1, 1, 1]})
>>> g = guess_wide(t, ["town_no"])
>>> g.columns, g.codes, g.total
(['age_0_19', 'age_20_64', 'age_65_plus'], ['tract'], 'population')
>>> consequence(t, g.columns, g.total)
"Melting these 3 columns gives 21 in total; the column 'population' sums to 21 (the same)."
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hierdp_core import column_roles

LEAST_COLUMNS = 3  # fewer numeric columns than this: a long table


@dataclass(frozen=True)
class WideGuess:
    """``columns``: the columns that look like one per category (empty: long); ``codes``:
    numeric columns left out because they look like codes; ``total``: the obvious count
    column (named like a count, not melted), or None."""

    columns: list[str]
    codes: list[str]
    total: str | None


def _leading_zeros(series: pd.Series) -> bool:
    """Text whose values are all digits, some with a leading zero ('06', '001')."""
    if series.dtype.kind not in "OSU" and not pd.api.types.is_string_dtype(series):
        return False
    text = series.dropna().astype(str).str.strip()
    return bool(len(text) and text.str.fullmatch(r"\d+").all()
                and text.str.match(r"0\d").any())


def _local_code(table: pd.DataFrame, column: str, levels: Sequence[str]) -> bool:
    """Whole numbers that repeat across the units of the finest level but never within one
    (tract 1, 2, 3 in every town): a code that nests in that level."""
    if not levels or not column_roles.integer_valued(table[column]):
        return False
    groups = table.groupby(list(levels), sort=False, observed=True)[column]
    no_repeat_within = bool((groups.nunique() == groups.size()).all())
    return no_repeat_within and table[column].nunique() * 2 < len(table) \
        and groups.ngroups < len(table)


def code_like_columns(table: pd.DataFrame, levels: Sequence[str] = ()) -> list[str]:
    """The columns outside ``levels`` that look like codes (see the module docstring), in
    table order."""
    skip = set(map(str, levels))
    present = [lv for lv in levels if lv in table.columns]
    return [str(c) for c in table.columns if str(c) not in skip and (
        column_roles.looks_like_code(c) or _leading_zeros(table[c])
        or _local_code(table, c, present))]


def guess_wide(table: pd.DataFrame, levels: Sequence[str] = (),
               least: int = LEAST_COLUMNS) -> WideGuess:
    """The wide guess of ``table`` whose level columns are ``levels``: its numeric columns
    that are neither levels, codes nor named like a count, when there are at least
    ``least`` of them."""
    codes = code_like_columns(table, levels)
    skip = {*map(str, levels), *codes}
    numeric = [str(c) for c in table.columns
               if str(c) not in skip and table[c].dtype.kind in "iuf"]
    named = [c for c in numeric if column_roles.hinted(c, column_roles.COUNT_HINTS)]
    total = next((c for c in column_roles.count_candidates(table, [*skip])
                  if c in named), None)
    bands = [c for c in numeric if c not in named]
    return WideGuess(bands if len(bands) >= least else [],
                     [c for c in codes if table[c].dtype.kind in "iuf"], total)


def meltable_columns(table: pd.DataFrame, levels: Sequence[str] = ()) -> list[str]:
    """The columns the user may melt: numeric, not a level, not code-like."""
    codes = set(code_like_columns(table, levels))
    return [str(c) for c in table.columns if str(c) not in {*map(str, levels), *codes}
            and table[c].dtype.kind in "iuf"]


def row_totals(table: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """The numeric columns outside ``columns`` holding each row's sum of ``columns`` (a
    'Totaal' beside its bands): once ``columns`` are melted, never a count (it would count
    everyone once per melted column)."""
    if not columns:
        return []
    sums = table[list(columns)].to_numpy(dtype=float, na_value=0.0).sum(axis=1)
    return [str(c) for c in table.columns if str(c) not in columns
            and table[c].dtype.kind in "iuf"
            and np.array_equal(table[c].to_numpy(dtype=float, na_value=np.nan), sums)]


def consequence(table: pd.DataFrame, columns: Sequence[str], total: str | None) -> str:
    """One sentence: the total that melting ``columns`` gives, beside the sum of the count
    column ``total`` (if any) and whether they agree."""
    cells = table[list(columns)].to_numpy(dtype=float, na_value=0.0)
    melted = float(np.nansum(cells)) if cells.size else 0.0
    n = len(columns)
    text = f"Melting {'these' if n > 1 else 'this'} {n} column{'s' if n != 1 else ''} gives " \
           f"{_number(melted)} in total"
    if total is None or total not in table.columns:
        return text + "."
    column = float(np.nansum(table[total].to_numpy(dtype=float, na_value=0.0)))
    if melted == column:
        return text + f"; the column {total!r} sums to {_number(column)} (the same)."
    return (text + f"; the column {total!r} sums to {_number(column)}: they differ by "
            f"{_number(abs(melted - column))}. Check that no chosen column is a code, a total "
            "or a subgroup of another.")


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.1f}"
