"""Checks of a table's columns before a release is built from it: the columns a role
needs are there (with a close match suggested), the count column holds whole non-negative
numbers within the exact total, a column has one role, codes that differ only by leading
zeros are found, and the cells of a release stay under a limit. Each failure is a typed
`hierdp_core.errors.InputError` (or subclass) with one clear message.

Example
-------
>>> import pandas as pd
>>> validate_counts(pd.DataFrame({"n": [3, 0, 2]}), "n").tolist()
[3, 0, 2]
>>> lookalike_codes(pd.DataFrame({"c": ["1", "01", "2"]}), ["c"])
[('c', '01', '1')]
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from hierdp_core.data.integers import check_total
from hierdp_core.data.sources import fail as _fail
from hierdp_core.errors import InputError

__all__ = ["DOT_GROUPED", "check_cells", "check_column_roles", "default_max_cells",
           "lookalike_codes", "validate_columns", "validate_counts"]

_MAX_LISTED = 5
#: a number written with '.' between groups of three digits ("3.000", "1.234.567"): a
#: thousands separator in much of Europe, three decimals elsewhere; 3 or 3,000 cannot be
#: told, so it is refused as a count (a column of whole ones stays text, `loaders`)
DOT_GROUPED = r"[1-9]\d{0,2}(?:\.\d{3})+"
#: cells read as empty (spreadsheet and statistics-office spellings of "no value")
NA_TOKENS = frozenset({"NA", "N/A", "n/a", "#N/A", "NaN", "nan", "null", "NULL", "None", "-"})
#: a whole number with ',', an apostrophe or a space between groups of three digits
#: ("1,200", "1'200", "1 200"): read as text, and refused as a count naming the separator
SEPARATED = r"[1-9]\d{0,2}(?:([,'\u00a0\u202f ])\d{3})(?:\1\d{3})*"


# ---- validation ------------------------------------------------------------------------
def validate_columns(table: pd.DataFrame, columns: str | Sequence[str], role: str, *,
                     file_name: str | None = None,
                     offered: Sequence[str] | None = None) -> None:
    """Raise `InputError` unless every column in ``columns`` is in ``table``.

    The message names the ``role`` (e.g. "geography level"), the missing columns, the table's
    columns, and a close match when there is one among ``offered`` (default: every column).
    """
    wanted = [columns] if isinstance(columns, str) else list(columns)
    have = [str(c) for c in table.columns]
    missing = [c for c in wanted if c not in table.columns]
    if not missing:
        return
    noun = "column" if len(missing) == 1 else "columns"
    listed = ", ".join(repr(str(c)) for c in missing)
    message = f"{role} {noun} {listed} not found; the table has {have}"
    pool = have if offered is None else [str(c) for c in offered]
    hints = []
    for c in missing:
        match = [h for h in pool if h.lower() == str(c).lower()] or difflib.get_close_matches(
            str(c), pool, n=1, cutoff=0.8
        )
        if match:
            hints.append(f"{match[0]!r} for {str(c)!r}")
    if hints:
        message += "; did you mean " + ", ".join(hints) + "?"
    raise _fail(file_name, message) if file_name else InputError(message)


def validate_counts(table: pd.DataFrame, column: str, *, file_name: str | None = None,
                    roles: Sequence[str] = (), role: str = "count") -> np.ndarray:
    """The count column as an int64 array, or `InputError` (naming it as the ``role``
    column: ``"size"`` for group sizes).

    The column must exist and hold non-missing, finite, non-negative, integral numbers
    (``3.0`` is fine, ``1.5`` is not) summing to at most 2^53 - 1
    (`hierdp_core.data.integers.check_total`); numeric strings such as ``"12"`` are
    accepted. A missing column's close match is only one that could hold counts: of
    numbers, and not one of ``roles`` (the columns of the levels, categories ...).
    Messages name up to 5 offending rows (1-based data rows, header excluded) and values.
    """
    def fail(message: str) -> InputError:
        return _fail(file_name, message) if file_name else InputError(message)

    offered = [c for c, dtype in table.dtypes.items() if c not in roles
               and pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)]
    validate_columns(table, [column], role, file_name=file_name, offered=offered)
    series = table[column]
    label = f"{role} column {column!r}"
    if pd.api.types.is_bool_dtype(series):
        raise fail(f"{label} holds true/false values, not counts")
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iu":
        values = series.to_numpy()  # no missing value or fraction to look for
        checks = [(values < 0, "negative value(s) (counts must be >= 0)")]
        if values.dtype.kind == "u":
            checks.append((values >= 2**63, "value(s) too large for a 64-bit count"))
        _refuse_first(checks, series, label, fail)
        values = values.astype(np.int64, copy=False)
    else:
        values = _float_counts(series, label, fail)
    check_total(values, f"{file_name}: {label}" if file_name else label)
    return values


def _float_counts(series: pd.Series, label: str, fail) -> np.ndarray:
    """The counts of a column that is not of a numpy integer type (floats, nullable
    integers, text), as int64, after the checks of `validate_counts`."""
    if pd.api.types.is_numeric_dtype(series):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text = series.astype("str").str.strip()
        grouped = text.str.fullmatch(DOT_GROUPED).to_numpy(dtype=bool)
        if grouped.any():
            first = text[grouped].iloc[0]
            raise fail(f"{label} has {int(grouped.sum())} value(s) with '.' between groups of "
                       f"three digits: {_rows(grouped, series)}; {first} is "
                       f"{first.replace('.', '')} with '.' as a thousands separator, "
                       f"{float(first):g} with '.' as a decimal point: write counts as plain "
                       "integers, without a thousands separator")
        values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isnan(values) & series.notna().to_numpy() & text.ne("").to_numpy()
        separated = text.str.fullmatch(SEPARATED).to_numpy(dtype=bool) & bad
        if separated.any():
            first = text[separated].iloc[0]
            raise fail(f"{label} has {int(separated.sum())} value(s) with a separator "
                       f"between groups of three digits: {_rows(separated, series)}; write "
                       f"them as plain integers, without a thousands separator ({first} as "
                       f"{re.sub(r'[^0-9]', '', first)})")
        if bad.any():
            open_ended = text[bad & text.str.fullmatch(r"\d+\+").to_numpy(dtype=bool)]
            raise fail(f"{label} has non-numeric values: {_rows(bad, series)}" + (
                f" ({open_ended.iloc[0]} stands for every value from "
                f"{open_ended.iloc[0][:-1]} up, not one number)" if len(open_ended) else ""))
    nan, inf = np.isnan(values), np.isinf(values)
    finite = np.where(nan | inf, 0.0, values)
    _refuse_first([
        (nan, "missing value(s)"),
        (inf, "infinite value(s)"),
        (finite < 0, "negative value(s) (counts must be >= 0)"),
        (np.mod(finite, 1) != 0, "non-integer value(s) (counts must be whole numbers)"),
        (finite >= 2.0**63, "value(s) too large for a 64-bit count"),
    ], series, label, fail)
    if series.dtype.kind == "i":  # a nullable integer column as it is (float64 rounds
        return series.to_numpy(np.int64)  # above 2^53, e.g. in the total's message)
    return values.astype(np.int64)


def _refuse_first(checks: list[tuple[np.ndarray, str]], series: pd.Series, label: str,
                  fail) -> None:
    """The error of the first (mask, problem) whose mask holds a row, naming the rows."""
    for mask, problem in checks:
        if mask.any():
            raise fail(f"{label} has {int(mask.sum())} {problem}: {_rows(mask, series)}")


def _rows(mask: np.ndarray, series: pd.Series) -> str:
    """'row 2: -1, row 7: 'x' and 3 more' for up to 5 offending 1-based rows."""
    idx = np.flatnonzero(mask)
    shown = series.iloc[idx[:_MAX_LISTED]].to_numpy(dtype=object)
    parts = [f"row {i + 1}: {_show(v)}" for i, v in zip(idx[:_MAX_LISTED], shown, strict=True)]
    more = f" and {idx.size - _MAX_LISTED} more" if idx.size > _MAX_LISTED else ""
    return ", ".join(parts) + more


def _show(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return "(empty)"
    return repr(value) if isinstance(value, str) else str(value)


# ---- column roles, look-alike codes and size guards -----------------------------------------

_ROLE_NOUNS = {"levels": "level", "categories": "category", "attributes": "attribute",
               "group_columns": "group", "size_columns": "size",
               "origin_levels": "origin level", "destination_levels": "destination level"}


def check_column_roles(count_column: str | None, **roles: Sequence[str] | str | None) -> None:
    """`ColumnRoleError` when the count column is also given another role (``levels=...``,
    ``categories=...``, ``attribute=...``), naming the column and both roles."""
    from hierdp_core.errors import ColumnRoleError

    if not count_column:
        return
    for role, columns in roles.items():
        wanted = [columns] if isinstance(columns, str) else list(columns or ())
        if count_column in wanted:
            noun = _ROLE_NOUNS.get(role, role.replace("_", " "))
            raise ColumnRoleError(f"column {count_column!r} is given both as the count column "
                                  f"and as a {noun} column; a column has one role")


def stripped_text(values):
    """Text ``values`` without surrounding whitespace, as a pyarrow string array (one call
    of its kernel, which strips what ``str.strip`` does); a pyarrow error or TypeError when
    some value is not text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.utf8_trim_whitespace(pa.array(values, type=pa.string(), from_pandas=True))


def lookalike_codes(table: pd.DataFrame, columns: Sequence[str],
                    limit: int = 5) -> list[tuple[str, str, str]]:
    """Pairs of distinct codes of the same column that differ only by leading zeros or
    surrounding whitespace (``'1'`` and ``'01'``, ``'06 '`` and ``'06'``), as
    ``(column, code, code)``, at most ``limit``, in the codes' sorted order. Codes are left
    as they are (two units); the caller may warn."""
    import pyarrow.compute as pc

    pairs: list[tuple[str, str, str]] = []
    for column in columns:
        if column not in table.columns or len(pairs) >= limit:
            continue
        text = np.unique(np.asarray([str(v) for v in _present_values(table[column])],
                                    dtype=object))
        stripped = stripped_text(text)
        key = pc.utf8_ltrim(stripped, characters="0")
        key = pc.if_else(pc.and_(pc.equal(key, ""), pc.not_equal(stripped, "")), "0", key)
        key = np.asarray(key.to_pylist(), dtype=object)  # '00' is '0'
        keys, first = np.unique(key, return_index=True)
        twins = np.flatnonzero(pd.Series(key).duplicated().to_numpy())
        for i in twins[: limit - len(pairs)]:
            pairs.append((column, str(text[first[np.searchsorted(keys, key[i])]]),
                          str(text[i])))
    return pairs


def _present_values(series: pd.Series):
    """The distinct non-missing values of a column (of a Categorical: its categories that
    some row holds, counted from the codes, with no pass over the values)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy()
        if codes.size and codes.min() < 0:
            codes = codes[codes >= 0]  # missing values
        used = np.bincount(codes, minlength=len(series.cat.categories)) > 0
        return np.asarray(series.cat.categories)[used]
    return pd.unique(series.dropna())


def default_max_cells() -> int:
    """The default cap on the cells of a release: the default ``--max-memory`` (half of
    this machine's memory) over the least bytes a cell was measured to cost
    (`hierdp_core.memory_plan`)."""
    from hierdp_core.memory_plan import BYTES_PER_CELL, default_max_memory

    return max(1, default_max_memory() // min(BYTES_PER_CELL.values()))


def check_cells(cells: int, max_cells: int | None, what: str) -> None:
    """`SizeLimitError` when ``cells`` exceeds ``max_cells`` (None: no limit), with the
    figure and what it is made of."""
    from hierdp_core.errors import SizeLimitError

    if max_cells is not None and cells > max_cells:
        raise SizeLimitError(f"the release would have {cells:,} cells ({what}), above the "
                             f"limit of {max_cells:,} (--max-cells, or what --max-memory "
                             "holds); use a smaller domain, fewer categories or a coarser "
                             "geography, or raise --max-cells or --max-memory")
