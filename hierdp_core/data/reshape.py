"""Reshape an input table before its query's data is built: wide to long, missing count
cells, units that skip a level.

* **Wide tables** (`melt_wide`): one column per category (age bands, sex, household
  sizes), as most census tables are published. The columns named by a spec (a comma list
  of names or `fnmatch` patterns such as ``age_*``, mixed freely) are melted into long
  form: one row per unit and wide column, the column's name (or the declared value or
  integer it stands for, `hierdp_core.data.wide_labels`) as the category value and its
  cell as the count. Vectorised: one repeat of the kept columns, one reshape of the cells.
* **Missing count cells** (`apply_missing`): ``error`` (default) names the columns, the
  number of cells and the first rows; ``zero`` counts them as 0; ``drop`` leaves their
  rows out.
* **Ragged hierarchies** (`fill_ragged`): an empty code at a level means the unit skips
  that level, and the nearest coarser unit passes through it as its own child: the empty
  code takes the code of the nearest non-empty coarser level of the row. A county with no
  tracts is its own tract; a city outside any county sits in a pseudo-county that is its
  state passing through; Bamako, a district with no cercle, is its own cercle. The
  hierarchy labels a node whose code equals its parent's as that parent passing through.

Rows in messages are 1-based data rows (header excluded), as in `hierdp_core.data.loaders`.

Example
-------
>>> wide = pd.DataFrame({"state": ["A", "B"], "age_0_17": [3, 1], "age_18_": [5, 2]})
>>> melt_wide(wide, "age_*", id_columns=["state"]).to_dict("list")
{'state': ['A', 'A', 'B', 'B'], 'category': ['age_0_17', 'age_18_', 'age_0_17', 'age_18_'], 'count': [3, 5, 1, 2]}
>>> t = pd.DataFrame({"state": ["06", "06", "11"], "county": ["06001", "", ""],
...                   "city": ["x", "y", "DC"]})
>>> filled, counts = fill_ragged(t, ["state", "county", "city"])
>>> filled["county"].tolist(), counts
(['06001', '06', '11'], {'county': 2})
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hierdp_core.defaults import MISSING_POLICIES
from hierdp_core.errors import MissingCellsError, RaggedLevelError, ReshapeError
from hierdp_core.hierarchy import missing_values
from hierdp_core.memory_plan import wide_plan

__all__ = ["MISSING_POLICIES", "apply_missing", "describe_shape", "fill_ragged",
           "melt_wide", "prepare", "preparation_note", "wide_columns"]

_MAX_LISTED = 5
_GLOB = re.compile(r"[*?\[]")


# ---- wide to long ----------------------------------------------------------------------
def wide_columns(spec: str | Sequence[str], columns: Sequence[str]) -> list[str]:
    """The columns of ``columns`` named by ``spec`` (a comma list, or a list, of names and
    `fnmatch` patterns), in table order. A part that matches nothing is a `ReshapeError`
    naming it and listing the columns."""
    parts = [p.strip() for p in (spec.split(",") if isinstance(spec, str) else spec)]
    parts = [p for p in parts if p]
    columns = [str(c) for c in columns]
    if not parts:
        raise ReshapeError("--wide wants column names or a pattern such as age_*")
    chosen: set[str] = set()
    for part in parts:
        found = [part] if part in columns else \
            [c for c in columns if fnmatch.fnmatchcase(c, part)] if _GLOB.search(part) else []
        if not found:
            raise ReshapeError(f"no column matches {part!r} (--wide); the table has {columns}")
        chosen.update(found)
    return [c for c in columns if c in chosen]


def melt_wide(table: pd.DataFrame, spec: str | Sequence[str], *,
              id_columns: Sequence[str] | None = None, name: str = "category",
              value_name: str = "count", labels=None) -> pd.DataFrame:
    """The long form of ``table``: one row per row of ``table`` and column named by
    ``spec`` (see `wide_columns`), in that order, with the ``id_columns`` (default: every
    other column) repeated, the column's name in ``name`` and its cell in ``value_name``.

    ``name`` holds the column's name (a Categorical whose categories are the wide columns
    in table order), or with ``labels`` (one per wide column) its label: a Categorical
    (declared category values, `hierdp_core.data.wide_labels.declared_labels`, whose
    categories are the declaration) or integers (sizes, attribute values,
    `hierdp_core.data.wide_labels.integer_labels`). A wide column that is also an id
    column, or a ``name`` / ``value_name`` the table already has, is a `ReshapeError`."""
    columns = wide_columns(spec, table.columns)
    ids = ([str(c) for c in table.columns if c not in columns] if id_columns is None
           else list(dict.fromkeys(id_columns)))
    both = [c for c in columns if c in ids]
    if both:
        raise ReshapeError(f"column {both[0]!r} is one of the wide columns and also a level, "
                           "category or name column; a column has one role")
    for column, flag in ((name, "--wide-name"), (value_name, "--count-column")):
        if column in table.columns:
            raise ReshapeError(f"the melted table needs a column {column!r}, which the table "
                               f"already has; name another with {flag}")
    if name == value_name:
        raise ReshapeError(f"the category and count columns of the melted table are both "
                           f"named {name!r}")
    n, k = len(table), len(columns)
    wide_plan(n, k, len(ids)).check(None)  # before the long form is made
    out = table[ids].take(np.repeat(np.arange(n), k)).reset_index(drop=True)
    position = np.tile(np.arange(k), n)
    if labels is None:
        out[name] = pd.Categorical.from_codes(position, categories=columns)
    elif isinstance(labels, pd.Categorical):
        out[name] = labels.take(position)
    else:
        out[name] = np.asarray(labels)[position]
    out[value_name] = table[columns].to_numpy().reshape(-1)
    return out


def describe_shape(columns: Sequence[str]) -> str:
    """'long', or 'wide: 21 columns age_0_4 … age_100'."""
    if not columns:
        return "long"
    ends = f"{columns[0]} … {columns[-1]}" if len(columns) > 2 else ", ".join(columns)
    return f"wide: {len(columns)} column{'s' if len(columns) > 1 else ''} {ends}"


# ---- missing count cells ---------------------------------------------------------------
def apply_missing(table: pd.DataFrame, columns: Sequence[str], policy: str = "error",
                  ) -> tuple[pd.DataFrame, int]:
    """The table with the empty cells of the count ``columns`` handled by ``policy``, and
    how many cells were set to 0 (``zero``) or rows left out (``drop``); ``error`` raises
    `MissingCellsError` naming the columns, the number of cells and the first rows."""
    if policy not in MISSING_POLICIES:
        raise ReshapeError(f"--missing wants one of {', '.join(MISSING_POLICIES)}, "
                           f"got {policy!r}")
    columns = [c for c in dict.fromkeys(columns) if c in table.columns]
    if not columns or len(table) == 0:
        return table, 0
    masks = np.column_stack([missing_values(table[c]) for c in columns])
    per_column = masks.sum(axis=0)
    if not per_column.any():
        return table, 0
    if policy == "zero":
        filled = {c: table[c].mask(masks[:, i], 0) for i, c in enumerate(columns)
                  if per_column[i]}
        return table.assign(**filled), int(per_column.sum())
    rows = masks.any(axis=1)
    if policy == "drop":
        if rows.all():
            raise MissingCellsError(f"every row has an empty count cell in {columns}: "
                                    "nothing is left to release")
        return table[~rows].reset_index(drop=True), int(rows.sum())
    where = ", ".join(f"{c!r} ({int(m):,})" for c, m in zip(columns, per_column, strict=True)
                      if m)
    first = (np.flatnonzero(rows)[:_MAX_LISTED] + 1).tolist()
    detail = (f"{int(per_column.sum()):,} empty count cell(s) in column(s) {where}, e.g. in "
              f"rows {first}")
    raise MissingCellsError(f"{detail}; use --missing zero to count them as 0 or --missing "
                            "drop to leave their rows out", detail)


# ---- ragged hierarchies ----------------------------------------------------------------
def _code_categorical(series: pd.Series, missing: np.ndarray) -> pd.Categorical:
    """The level codes of a column (`hierdp_core.hierarchy.codes_of` of its distinct
    values: strings, integral floats without '.0'), missing rows as NaN."""
    from hierdp_core.hierarchy import codes_of

    if isinstance(series.dtype, pd.CategoricalDtype):
        rows, raw = series.cat.codes.to_numpy(), series.cat.categories
    else:
        rows, raw = pd.factorize(series)
    text = np.asarray(codes_of(pd.Series(np.asarray(raw))), dtype=str)
    distinct, code = np.unique(text, return_inverse=True)
    rows = np.append(code, -1)[rows]
    rows[missing] = -1
    return pd.Categorical.from_codes(rows, categories=pd.Index(distinct, dtype=object))


def check_levels(table: pd.DataFrame, levels: Sequence[str], noun: str = "value") -> None:
    """`RaggedLevelError` for the first level column with empty codes (1-based rows);
    below the first level the message says the ragged rule lets units skip it."""
    for i, column in enumerate(levels):
        if column not in table.columns:
            continue
        missing = missing_values(table[column])
        if missing.any():
            rows = (np.flatnonzero(missing)[:_MAX_LISTED] + 1).tolist()
            detail = (f"level column {column!r} has {int(missing.sum()):,} missing {noun}(s), "
                      f"e.g. in rows {rows}")
            hint = ("; if these units skip that level (e.g. a city outside any county), "
                    "--ragged makes each pass through it as its own child" if i else "")
            raise RaggedLevelError(detail + hint, detail, skippable=i > 0)


def fill_ragged(table: pd.DataFrame, levels: Sequence[str], *,
                names: Mapping[str, str] | None = None,
                ) -> tuple[pd.DataFrame, dict[str, int]]:
    """The table with every empty code of the ``levels`` columns (coarse to fine) replaced
    by the code of the nearest non-empty coarser level of its row, and the number of codes
    filled per level (levels with none left out). Filled columns hold text codes
    (Categoricals); the others are untouched. ``names`` (level -> column of unit names):
    an empty name of a filled unit takes the name of the unit passing through (its code
    when the level above has no names).

    `RaggedLevelError`: an empty code at the first level (nothing coarser to pass through),
    a filled code equal to a real unit of that level under the same parent, or a row that
    ends above a level (empty there and below) under a unit that has real units at that
    level: a subtotal, which would be counted twice (naming both rows)."""
    levels = list(levels)
    masks = [missing_values(table[column]) for column in levels]
    if masks and masks[0].any():
        check_levels(table, levels[:1])
    ragged = [i for i, missing in enumerate(masks) if missing.any()]
    out, filled = table, {}
    codes = None  # the filled codes of the previous level
    path = np.zeros(len(table), dtype=np.int64)  # the unit of the previous level, per row
    for at, (column, missing) in enumerate(list(zip(levels, masks, strict=True))[
            :ragged[-1] + 1 if ragged else 0]):
        current = _code_categorical(table[column], missing)
        if missing.any():
            categories = np.union1d(current.categories, codes.categories)
            own = np.searchsorted(categories, current.categories)
            above = np.searchsorted(categories, codes.categories)
            merged = np.where(missing, above[codes.codes], np.append(own, -1)[current.codes])
            current = pd.Categorical.from_codes(merged, categories=pd.Index(categories,
                                                                            dtype=object))
            _check_collisions(path * len(categories) + merged, missing, column,
                              levels[at - 1], current)
            _refuse_subtotals(path, missing & np.logical_and.reduce(masks[at:]), missing,
                              column, levels[at - 1], codes)
            if out is table:
                out = table.copy(deep=False)
            out[column] = current
            filled[column] = int(missing.sum())
            named = {lv: c for lv, c in (names or {}).items() if c in out.columns}
            if column in named:
                out[named[column]] = _pass_names(out, named[column], missing,
                                                 named.get(levels[levels.index(column) - 1]),
                                                 codes)
        path = pd.factorize(path * max(len(current.categories), 1) + current.codes)[0]
        codes = current
    return out, filled


def _pass_names(table: pd.DataFrame, column: str, filled: np.ndarray, above: str | None,
                above_codes: pd.Categorical) -> np.ndarray:
    """The name column with the empty names of ``filled`` rows taken from the level above
    (its name column ``above``, else its codes)."""
    own = np.asarray(table[column], dtype=object)
    source = np.asarray(table[above] if above else above_codes, dtype=object)
    take = filled & missing_values(table[column])
    return np.where(take, source, own)


def _refuse_subtotals(path: np.ndarray, ending: np.ndarray, missing: np.ndarray, column: str,
                      above: str, codes: pd.Categorical) -> None:
    """A row ``ending`` above ``column`` (empty there and below) under a unit (``path``)
    that has real units at ``column`` is a `RaggedLevelError`: a subtotal of that unit."""
    mixed = ending & np.isin(path, path[~missing])
    if not mixed.any():
        return
    row = int(np.flatnonzero(mixed)[0])
    other = int(np.flatnonzero(~missing & (path == path[row]))[0])
    raise RaggedLevelError(
        f"row {row + 1} has no {column} (nor any finer level) while its {above} "
        f"{codes[row]!r} has real {column} units (row {other + 1}): a subtotal of "
        f"{above} {codes[row]!r}, which would be counted twice ({int(mixed.sum()):,} row(s) "
        f"like this); remove such rows, or give a unit outside every {column} a {column} "
        "code of its own")


def _check_collisions(key: np.ndarray, missing: np.ndarray, column: str, above: str,
                      codes: pd.Categorical) -> None:
    """A filled (unit, code) pair that is also a real one is a `RaggedLevelError`."""
    real = np.unique(key[~missing])
    clash = missing & np.isin(key, real)
    if not clash.any():
        return
    row = int(np.flatnonzero(clash)[0])
    other = int(np.flatnonzero(~missing & (key == key[row]))[0])
    code = codes[row]
    raise RaggedLevelError(
        f"row {row + 1} has no {column}, so its {above} {code!r} would pass through as "
        f"{column} {code!r}, but row {other + 1} has a real {column} {code!r} there "
        f"({int(clash.sum()):,} row(s) like this); give the real unit another code")


# ---- both, as a release needs them -----------------------------------------------------
def prepare(table: pd.DataFrame, level_sets: Sequence[Sequence[str]], count_column: str | None,
            *, missing: str = "error", ragged: bool = False,
            names: Mapping[str, str] | None = None,
            ) -> tuple[pd.DataFrame, int, dict[str, int]]:
    """The (long) table with its empty count cells handled by ``missing`` (`apply_missing`)
    and, with ``ragged``, the units that skip a level of each of the ``level_sets`` (one
    per hierarchy: the levels, or the origin and the destination levels) passed through it
    (`fill_ragged`); without, an empty level code is an error (`check_levels`). Returns the
    table, the cells or rows the policy touched and the codes filled per level."""
    table, handled = apply_missing(table, [count_column] if count_column else [], missing)
    passed: dict[str, int] = {}
    for levels in level_sets:
        levels = [c for c in levels if c in table.columns]
        if ragged:
            table, filled = fill_ragged(table, levels, names=names)
            passed.update(filled)
        else:
            check_levels(table, levels)
    return table, handled, passed


def preparation_note(missing: str, handled: int, passed: Mapping[str, int],
                     flags: bool = True) -> str:
    """One sentence on what `prepare` did ('' for nothing), naming the command-line option
    unless ``flags`` is False. The figures come from the confidential data: for the
    publisher's eyes, never for a release."""
    notes = []
    if handled:
        notes.append(f"{handled:,} empty count cell(s) "
                     + ("counted as 0" if missing == "zero" else "left out")
                     + (f" (--missing {missing})" if flags else ""))
    if passed:
        notes.append(f"{sum(passed.values()):,} empty level code(s) filled: each unit passes "
                     "through that level as its own child ("
                     + ", ".join(f"{level}: {n:,}" for level, n in passed.items()) + ")")
    return "; ".join(notes)
