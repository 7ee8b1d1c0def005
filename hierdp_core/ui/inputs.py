"""The Data page's input model for an uploaded table (`hierdp_core.data.reshape`): its
shape (long, or wide: one column per category, melted into one row per unit and category
before anything else), what empty count cells mean, and whether units may skip a level.

Session state: ``hd_input`` (`SHAPE`) holds the upload's shape, ``wide`` (the melted
columns, in table order; empty: long as uploaded), ``name`` (their category column) and
``totals`` (the columns holding their row sums, `shape_guess.row_totals`);
once melted, the upload as read is kept in ``hd_dataset['raw']`` and ``hd_dataset['table']``
is the long table every page uses. Empty cells and skipped levels are roles (``missing``,
``ragged`` in ``hd_roles``), applied where the count data is built (`ui.session.count_data`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from hierdp_core import column_roles
from hierdp_core.data.reshape import melt_wide
from hierdp_core.data.shape_guess import code_like_columns, row_totals
from hierdp_core.errors import (
    EncodingError,
    MissingCellsError,
    RaggedLevelError,
    ReshapeError,
)
from hierdp_core.ui import session
from hierdp_core.ui import widget_keys as wk

SHAPE = session.INPUT
COUNT = "count"  # the count column of a melted table
NO_COUNT = "(none: one row per person)"
NO_NAME = "(no names)"
MISSING_LABELS = {"error": "stop and show them", "zero": "count them as 0",
                  "drop": "leave their rows out"}


def shape() -> dict:
    """The upload's shape (see the module docstring)."""
    return st.session_state.setdefault(SHAPE, {"wide": [], "name": "category"})


def upload_key(name: str) -> str:
    """A widget key of one upload (its shape, empty cells, skipped levels): a new upload
    gets new widgets, drawn from their defaults (a key dropped from the session state would
    leave the browser showing the old value)."""
    return f"{name}_{session.ensure_dataset().get('loaded', 0)}"


def table_key(name: str) -> str:
    """A widget key of the current table's columns (levels, count, categories): new
    widgets, drawn from the roles, whenever the table changes (a new upload or shape)."""
    return f"{name}_{session.ensure_dataset()['version']}"


def raw_table() -> pd.DataFrame:
    """The upload as read (before any melt)."""
    ds = session.ensure_dataset()
    return ds.get("raw", ds["table"])


def set_shape(wide: list[str], name: str) -> None:
    """Melt the upload by its ``wide`` columns (none: long, as uploaded) into the dataset's
    table. The roles follow: the count column `COUNT` and the category ``name``, whose
    values the user declares (the header is not a declaration: `ui.session.count_data`
    maps the columns onto the declared values; the melted counts are the count column,
    and back to long the count column is to be chosen again); the guess is made again on
    the table as it now is, a row total of the melted columns never its count. Raises `ReshapeError` and
    leaves the table as it was when the columns cannot be melted, or one looks like a
    code."""
    current = shape()
    if (list(wide), name) == (current["wide"], current["name"]):
        return
    ds = session.ensure_dataset()
    raw = ds.setdefault("raw", ds["table"])
    codes = [c for c in wide if c in code_like_columns(raw, session.roles()["levels"])]
    if codes:
        raise ReshapeError(f"{codes} look like codes (their name, leading zeros, or numbers "
                           "that repeat in every unit): a code is never melted into counts")
    table = melt_wide(raw, wide, name=name, value_name=COUNT) if wide else raw
    session.replace_table(table)
    current.update(wide=list(wide), name=name, totals=row_totals(raw, wide))
    r, columns = session.roles(), set(map(str, table.columns))
    categories = [c for c in r["category_columns"] if c in columns]
    count = COUNT if wide else r["count_column"] if r["count_column"] in columns else None
    confirmed = bool(wide) or (count is not None and r["count_confirmed"])
    session.set_roles({**r, "guessed": guess_roles(table, current["totals"]),
                            "levels": [c for c in r["levels"] if c in columns],
                            "count_column": count, "count_confirmed": confirmed,
                            "category_columns": [*categories, name] if wide and name not in categories
                            else categories})


def wide_hints() -> dict[str, str]:
    """The melted category of a wide upload -> what to declare as its values (the header
    is not a declaration: `wide_labels`), for the structure panel."""
    current = shape()
    if not current["wide"]:
        return {}
    from hierdp_core.data.wide_labels import column_label, common_pattern

    parts = common_pattern(current["wide"])
    labels = "|".join(column_label(c, parts) for c in current["wide"])
    return {current["name"]: f"Its columns are {', '.join(current['wide'])}. Declare every "
                             f"value the category has, e.g. {labels}, each naming a column "
                             "by its name or label (a band is its own value); a value no "
                             "column has is released as 0, and a column naming no value "
                             "is an error."}


#: the Data page's encodings: automatic (UTF-8, else `FALLBACK_ENCODING`) or the one chosen
ENCODINGS = ("auto (UTF-8, else cp1252)", "utf-8", "latin-1", "cp1252")
#: what a text that is not UTF-8 is read in automatically: Excel's on Windows in Western
#: Europe and the Americas (a superset of latin-1's printable characters)
FALLBACK_ENCODING = "cp1252"


def read_upload(uploaded, choice: str) -> tuple[pd.DataFrame, str | None]:
    """(the uploaded file read as a table, a note or None) in the encoding ``choice`` (of
    `ENCODINGS`): automatic reads UTF-8, and a text that is not UTF-8 in
    `FALLBACK_ENCODING`, saying so; a file that decodes in neither is an `EncodingError`
    in the page's words.
    Raises HierdpError for a file that cannot be read."""
    from hierdp_core.data.loaders import read_table

    if choice != ENCODINGS[0]:
        return read_table(uploaded, name=uploaded.name, encoding=choice), None
    try:
        return read_table(uploaded, name=uploaded.name), None
    except EncodingError as first:
        try:
            table = read_table(uploaded, name=uploaded.name, encoding=FALLBACK_ENCODING)
        except EncodingError:
            raise EncodingError(f"{uploaded.name} is neither UTF-8 nor {FALLBACK_ENCODING} "
                                f"text ({first.place}): choose its encoding under Text "
                                "encoding above, or save it as UTF-8", first.place) from None
    return table, (f"{uploaded.name} is not UTF-8: read as {FALLBACK_ENCODING} (Excel's on "
                   "Windows). If its accents look wrong in the preview, choose its "
                   "encoding under Text encoding and use the file again.")


def friendly(exc: Exception) -> str:
    """The message of a table that does not work yet, in the Data page's words."""
    if isinstance(exc, MissingCellsError):
        return (f"{exc.detail}. Choose what they mean under \"Empty count cells\" on the "
                "Data page: count them as 0, or leave their rows out.")
    if isinstance(exc, RaggedLevelError) and exc.skippable:
        return (f"{exc.detail}. If these units skip that level (a city outside any county), "
                "tick \"Units may skip a level\" on the Data page: each then passes through "
                "it as its own child.")
    return str(exc)


#: in a table of one row per person, a geography unit holds at least this many rows on
#: average (`column_roles.guess_levels`): a column of more values is a person's id
PERSONS_PER_UNIT = 2


def default_roles(table: pd.DataFrame) -> dict:
    """Roles of a new upload: no level and no count column chosen (a guess is never applied
    without the user's click, DESIGN principle 10); the guess (`guess_roles`) kept under
    ``guessed`` for `guess_panel`, its names per guessed level as the name pickers'
    defaults."""
    guessed = guess_roles(table)
    return {"levels": [], "count_column": None, "count_confirmed": False,
            "category_columns": [], "local_codes": False,
            "name_columns": guessed["name_columns"], "guessed": guessed}


def guess_roles(table: pd.DataFrame, not_counts: Sequence[str] = ()) -> dict:
    """The roles guessed for ``table`` (`column_roles`): the nested code columns as levels,
    with a level of local codes (``local_codes``: `column_roles.local_code_levels`), else
    the first column; a count column named like a count in one of the languages it
    knows, else the one column that can only be a count (never one of ``not_counts``: a
    melted table's row totals); categories, names per level, and the columns left out."""
    named = [c for c in column_roles.count_candidates(table, not_counts)
             if column_roles.hinted(c, column_roles.COUNT_HINTS)]
    levels = column_roles.guess_levels(table, named[:1])
    count = named[0] if named else column_roles.sole_count(table, levels)
    if (count is None and levels and column_roles.names_an_id(levels[-1])
            and table[levels[-1]].nunique() == len(table)):
        # one row per person, with a person's id for its finest "level": no level
        levels = column_roles.guess_levels(table, rows_per_unit=PERSONS_PER_UNIT)
    local = column_roles.local_code_levels(table, levels, named[:1])
    levels = local or levels or [str(table.columns[0])]
    names = column_roles.guess_name_columns(table, levels)
    categories = column_roles.guess_categories(table, levels, count, names.values())
    return {"levels": levels, "local_codes": bool(local), "count_column": count,
            "category_columns": categories, "name_columns": names,
            "separated": column_roles.separated_numbers(table),
            "left_out": column_roles.left_out_levels(
                table, levels, [*names.values(), *categories, count or ""])}


def _use_guess(guessed: dict) -> None:
    """Apply the guessed roles (the button's on_click, before the page redraws); a guess
    of local codes ticks their box."""
    categories = list(guessed.get("category_columns", []))
    local = bool(guessed.get("local_codes") or session.roles().get("local_codes"))
    st.session_state[table_key(wk.ROLES_LEVELS)] = list(guessed["levels"])
    st.session_state[table_key(wk.ROLES_COUNT)] = guessed["count_column"] or NO_COUNT
    st.session_state[table_key(wk.ROLES_CATEGORIES)] = categories
    st.session_state[wk.ROLES_LOCAL] = local
    session.set_roles({**session.roles(), "levels": list(guessed["levels"]),
                       "count_column": guessed["count_column"], "count_confirmed": True,
                       "category_columns": categories, "local_codes": local})


def guess_panel(table: pd.DataFrame) -> None:
    """While the levels or the count column are not chosen: the guess, with what it gives
    (the people it counts beside the number of rows), and a button that applies it."""
    r = session.roles()
    guessed = r.get("guessed")
    if not guessed or (r["levels"] and r["count_confirmed"]):
        return
    count = guessed["count_column"]
    total = (f"the count column {count!r} gives {int(table[count].sum()):,} people; with "
             f"no count column each of the {len(table):,} rows would be one person" if count
             else f"no count column: each of the {len(table):,} rows is one person")
    categories = guessed.get("category_columns") or []
    by = f"; categories {', '.join(categories)}" if categories else "; no category column"
    left = guessed.get("left_out") or []
    out = (f" Left out: {', '.join(left)}, which does not nest with these levels (a unit "
           "under two parents); choose it below to see where." if left else "")
    separated = guessed.get("separated") or []
    out += (f" {', '.join(separated)} holds numbers written with a thousands separator "
            "('1 234'), read as text: save the file without the separators to use them as "
            "counts." if separated else "")
    levels = guessed["levels"]
    local = (f", whose codes are local (unique only within their {levels[-2]})"
             if guessed.get("local_codes") else "")
    st.info(f"Guessed from the table, not applied: levels {' › '.join(levels)}{local}"
            f"{by}; {total}. Check it, then use it (or choose the columns below).{out}")
    st.button("Use the guessed columns", key=table_key(wk.ROLES_GUESS), on_click=_use_guess,
              args=(guessed,))


def count_picker(table: pd.DataFrame, levels: list[str], current: str | None,
                 confirmed: bool = True) -> tuple[str | None, bool]:
    """The count column: only columns of whole numbers >= 0 that are not levels, codes
    (`column_roles.count_candidates`) or row totals of melted columns; None: one row per
    person. Empty until ``confirmed`` (a new upload's). Returns (the column, whether one
    was chosen)."""
    options = [NO_COUNT] + column_roles.count_candidates(
        table, [*levels, *shape().get("totals", [])])
    index = (options.index(current) if current in options else 0) if confirmed else None
    count = st.selectbox("Count column", options, index=index, key=table_key(wk.ROLES_COUNT),
                         placeholder="choose the count column, or none",
                         help="Only columns of whole numbers (0 or more) that are not a level "
                              "or a code are offered.")
    return (None if count in (NO_COUNT, None) else count), count is not None


def name_pickers(table: pd.DataFrame, levels: list[str],
                 taken: list[str]) -> dict[str, str | None]:
    """One "names of <level>" picker per level (any column not otherwise used; default the
    roles' choice, else a guess of a column no other level's names take): level -> name
    column, None where the user chose none."""
    picked = {lv: c for lv, c in (session.roles().get("name_columns") or {}).items()
              if lv in levels}
    chosen = {**column_roles.guess_name_columns(
        table, [lv for lv in levels if lv not in picked], filter(None, picked.values())),
        **picked}
    options = [NO_NAME, *(str(c) for c in table.columns if str(c) not in {*levels, *taken})]
    out = {}
    for col, level in zip(st.columns(max(len(levels), 1)), levels, strict=False):
        pick = col.selectbox(f"Names of {level}", options,
                             index=options.index(chosen[level]) if chosen.get(level) in options
                             else 0, key=table_key(wk.roles_names(level)))
        out[level] = None if pick == NO_NAME else pick
    return out
