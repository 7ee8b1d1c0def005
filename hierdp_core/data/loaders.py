"""Read count tables from files or uploads (the checks of their columns are in
`hierdp_core.data.validate`, the file and text helpers in `hierdp_core.data.sources`; the
public names of both are importable from here).

Every problem with a file becomes an `InputError` whose message starts with the file name
and says what is wrong (missing, empty, too large, wrong encoding, malformed, corrupted),
so the CLI and the dashboard can show it as is.

Type rule for text formats (CSV family and Excel): every cell is first read as a string.
A column is then converted to numbers only if all of its non-missing values parse as numbers
(NA tokens such as ``NA`` or ``null`` count as missing there), **unless** it is listed in
``dtype_str_columns`` or some value looks like a code with a leading zero: a ``0`` followed by
another digit, e.g. ``06`` or ``06037`` (``0`` and ``0.5`` do not count). Such columns stay
strings, so geography codes keep their leading zeros. Only empty cells are missing in string
columns (``NA`` may be a code: Namibia). Parquet and Feather keep their stored types.

Example
-------
>>> import io
>>> buf = io.BytesIO(b"state;county;n\\n06;06037;12\\n06;06059;3\\n")
>>> t = read_table(buf, name="counts.csv")
>>> t["county"].tolist(), validate_counts(t, "n").tolist()
(['06037', '06059'], [12, 3])
>>> validate_columns(t, ["state", "tract"], "geography level")
Traceback (most recent call last):
...
hierdp_core.errors.InputError: geography level column 'tract' not found; the table has ['state', 'county', 'n']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hierdp_core.data.sources import (
    SUPPORTED_FORMATS,
    Source,
    fail,
    kind_of,
    read_text,
    refuse_cut_short,
    resolve_source,
)
from hierdp_core.data.validate import (
    NA_TOKENS,
    check_cells,
    check_column_roles,
    default_max_cells,
    lookalike_codes,
    stripped_text,
    validate_columns,
    validate_counts,
)

__all__ = ["SUPPORTED_FORMATS", "check_cells", "check_column_roles",
           "default_max_cells", "lookalike_codes", "read_header", "read_table",
           "validate_columns", "validate_counts"]

BOM = "\ufeff"
_LEADING_ZERO = re.compile(r"0\d")


# ---- public reader ---------------------------------------------------------------------
def read_table(
    source,
    *,
    name: str | None = None,
    encoding: str | None = None,
    max_bytes: int = 2_000_000_000,
    dtype_str_columns: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Read a table from a path or a binary file-like object (e.g. Streamlit's UploadedFile).

    The format comes from the extension of ``name`` (default: the path, or the buffer's
    ``.name``): .csv/.tsv/.txt (delimiter sniffed among comma, semicolon and tab),
    .csv.gz/.tsv.gz/.txt.gz, .parquet, .xlsx/.xls (first sheet), .feather.
    Text is decoded as UTF-8 (a BOM is honoured, UTF-16 with BOM is recognised) unless
    ``encoding`` is given. Column names are stripped of surrounding spaces; trailing all-empty
    rows and unnamed all-empty columns are dropped; a CSV row with fewer fields than the
    header is padded with missing values (more fields is an error). ``max_bytes`` limits the
    size on disk or of the upload (compressed size for .gz). Columns are typed by the module's rule
    (leading-zero codes, numbers written with '.' between groups of three digits and
    ``dtype_str_columns`` stay strings).
    Raises `InputError`, naming the file, for anything that makes the file unusable.

    ``columns``: read only these (for large inputs; the CLI passes the columns a release
    uses). CSV, Parquet and Feather are then read by pyarrow (`hierdp_core.data.arrow_io`)
    and text columns come back as pandas Categoricals (no Python string per row), with the
    same values and types otherwise; when a column is not in the file, the whole table is
    returned, so that the caller's check names the columns the file has.
    """
    src = resolve_source(source, name, max_bytes)
    kind = kind_of(src.name)
    force_str = list(dtype_str_columns or [])
    if kind == "text":
        refuse_cut_short(src, encoding)
    if columns is not None:
        return _read_selected(src, kind, list(columns), encoding, force_str)
    return _read_all(src, kind, encoding, force_str)


def read_header(source, *, name: str | None = None, encoding: str | None = None,
                max_bytes: int = 2_000_000_000) -> list[str] | None:
    """The column names of a table file from its header (text) or schema (Parquet,
    Feather) alone, without reading its rows; None when only a full `read_table` can tell
    (Excel, an unusual header). Raises `InputError` as `read_table` does for a missing,
    empty or unsupported file."""
    from hierdp_core.data.arrow_io import column_names

    src = resolve_source(source, name, max_bytes)
    return column_names(src, kind_of(src.name), encoding)


def _read_selected(src: Source, kind: str, columns: list[str], encoding: str | None,
                   force_str: list[str]) -> pd.DataFrame:
    """``columns`` of the file, through pyarrow when it can, else the full read's."""
    from hierdp_core.data.arrow_io import read_columns

    wanted = columns + [c for c in force_str if c not in columns]
    table = read_columns(src, kind, wanted, encoding)
    if table is None:
        table = _read_all(src, kind, encoding, force_str)
        if set(wanted) <= set(table.columns):
            table = table[[c for c in table.columns if c in wanted]]
        return table
    if kind.startswith("text"):
        return _infer_types(table, force_str, src.name)
    return _force_strings(table, force_str, src.name)


def _read_all(src: Source, kind: str, encoding: str | None,
              force_str: list[str]) -> pd.DataFrame:
    if kind.startswith("text"):
        raw = read_text(src, encoding, gz=kind.endswith(".gz"))
        table = _infer_types(_with_header_row(raw, src.name), force_str, src.name)
    elif kind == "excel":
        raw = _read_excel(src)
        table = _infer_types(_with_header_row(raw, src.name), force_str, src.name)
    else:
        table = _read_columnar(src, kind)
        _check_shape(table, src.name)
        table = _force_strings(table, force_str, src.name)
    return table


# ---- excel and columnar ----------------------------------------------------------------
def _read_excel(src: Source) -> pd.DataFrame:
    """First sheet, every cell a string, read by calamine (Rust; a 300,000-row sheet in 5 s
    where openpyxl took 33): .xlsx and legacy .xls, whatever the file's extension says."""
    try:
        return pd.read_excel(src.for_pandas(), header=None, dtype=str, engine="calamine")
    except ImportError:
        raise fail(src.name, "Excel files need the 'python-calamine' package (pip install "
                              "python-calamine); or save the sheet as CSV") from None
    except Exception as exc:  # any failure of the reader means an unreadable workbook
        raise fail(src.name, f"could not read the Excel file; it may be corrupted or not a "
                              f"real Excel file ({type(exc).__name__}: {exc})") from None


def _read_columnar(src: Source, kind: str) -> pd.DataFrame:
    readers: dict[str, Callable] = {"parquet": pd.read_parquet, "feather": pd.read_feather}
    try:
        return readers[kind](src.for_pandas())
    except Exception as exc:  # any failure of the reader means an unreadable file
        raise fail(src.name, f"could not read the {kind.capitalize()} file; it may be "
                              f"corrupted or not {kind} ({type(exc).__name__}: {exc})") from None


# ---- shape and types -------------------------------------------------------------------
def _with_header_row(raw: pd.DataFrame, name: str) -> pd.DataFrame:
    """Use row 0 as the column names (stripped; empty -> 'Unnamed: i') and check the shape."""
    if raw.shape[1] == 0 or raw.shape[0] == 0:
        raise fail(name, "the file is empty: no columns and no data rows")
    header = raw.iloc[0]
    names = [f"Unnamed: {i}" if pd.isna(v) or not str(v).strip() else str(v).strip()
             for i, v in enumerate(header)]
    body = raw.iloc[1:].reset_index(drop=True)
    body.columns = names
    unnamed_empty = [c for c, v in zip(names, header, strict=True)
                     if pd.isna(v) and body[c].isna().all()]
    body = body.drop(columns=unnamed_empty)
    filled = np.flatnonzero(body.notna().any(axis=1).to_numpy())
    body = body.iloc[: filled[-1] + 1 if filled.size else 0]
    _check_shape(body, name)
    return body


def _check_shape(table: pd.DataFrame, name: str) -> None:
    """No columns, duplicate column names, or no data rows -> InputError."""
    if table.shape[1] == 0:
        raise fail(name, "the table has no columns")
    cols = [str(c) for c in table.columns]
    dupes = sorted({c for c in cols if cols.count(c) > 1})
    if dupes:
        where = "; ".join(
            f"{d!r} at columns {[i + 1 for i, c in enumerate(cols) if c == d]}" for d in dupes
        )
        raise fail(name, f"duplicate column names: {where}; every column needs a unique name")
    if table.shape[0] == 0:
        raise fail(name, f"the table has a header ({len(cols)} columns) but no data rows")


def _infer_types(table: pd.DataFrame, force_str: Sequence[str], name: str) -> pd.DataFrame:
    """Convert all-numeric string columns to numbers, except forced and leading-zero ones;
    a row repeating the header is refused (`_refuse_repeated_header`)."""
    validate_columns(table, force_str, "string (dtype_str_columns)", file_name=name)
    _refuse_repeated_header(table, name)
    out = {}
    for col in table.columns:
        series = table[col]
        out[col] = series if col in force_str else _maybe_numeric(series)
    return pd.DataFrame(out, index=table.index, copy=False)


def _refuse_repeated_header(table: pd.DataFrame, name: str) -> None:
    """A row (of two columns or more) whose every cell is its column's name, as files
    concatenated with their headers hold, is an `InputError` naming the rows: its codes
    would be read as units named after the columns. Each column is looked at through its
    distinct values, and no further than the first without its name."""
    if table.shape[1] < 2:
        return
    repeated = np.ones(len(table), dtype=bool)
    for column in table.columns:
        series = table[column]
        if isinstance(series.dtype, pd.CategoricalDtype):
            codes, distinct = series.cat.codes.to_numpy(), series.cat.categories
        else:
            codes, distinct = pd.factorize(series)
        names = _stripped(distinct).str.lstrip(BOM)  # a joined file's header keeps its BOM
        named = np.flatnonzero(names.eq(str(column)).to_numpy())
        if named.size == 0:
            return
        repeated &= np.isin(codes, named)
    rows = np.flatnonzero(repeated)
    if rows.size:
        shown = ", ".join(str(r + 1) for r in rows[:5]) + (" ..." if rows.size > 5 else "")
        raise fail(name, f"data row(s) {shown} repeat the header (files joined with their "
                         "headers?): remove them")


def _maybe_numeric(series: pd.Series) -> pd.Series:
    """The column as numbers if every non-missing value is a number or an NA token.

    The tests and conversions run on the distinct values only (geography codes, names and
    categories repeat over millions of rows), then map back through the factor codes.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):  # e.g. from pyarrow: no hashing
        codes, distinct = series.cat.codes.to_numpy(), series.cat.categories
    else:
        codes, distinct = pd.factorize(series)  # missing -> code -1
    present = _stripped(distinct)
    if present.empty or _has_leading_zero(present) or _dot_grouped(present):
        return series
    is_na_token = present.isin(NA_TOKENS) | present.eq("")
    numbers = pd.to_numeric(present[~is_na_token], errors="coerce")
    if numbers.empty or numbers.isna().any():
        return series
    values = pd.to_numeric(present.mask(is_na_token)).to_numpy()
    if (codes < 0).any():
        values = np.append(values.astype(float), np.nan)  # code -1 takes the trailing NaN
    return pd.Series(values[codes], index=series.index, name=series.name, copy=False)


def _stripped(distinct) -> pd.Series:
    """The distinct values without surrounding whitespace, as Python objects (text by
    pyarrow's string kernel, one call for all, which strips what ``str.strip`` does; other
    values as pandas strips them)."""
    values = pd.Series(distinct, dtype=object)
    try:
        text = stripped_text(values)
    except (pa.ArrowException, TypeError):
        return values.str.strip()
    return pd.Series(text.to_numpy(zero_copy_only=False), dtype=object)


def _dot_grouped(present: pd.Series) -> bool:
    """Whether every text with a '.' is a whole number with '.' before groups of three
    zeros ("3.000", "12.000": 3 or 3,000?): the column stays text, for its reader to say
    (counts are refused, `validate.DOT_GROUPED`) rather than read 3.000 as 3. Decimals that are no
    whole numbers ("4.125", "2.500") stay numbers: a count column of them is refused as
    fractional, and a column of means or rates is what it was."""
    text = present[present.map(lambda v: isinstance(v, str) and "." in v)]
    return bool(len(text)) and bool(text.str.fullmatch(r"[1-9]\d{0,2}(?:\.000)+").all())


def _has_leading_zero(present: pd.Series) -> bool:
    """Whether some value looks like a code with a leading zero (`_LEADING_ZERO`)."""
    try:
        text = pa.array(present, type=pa.string(), from_pandas=True)
    except (pa.ArrowException, TypeError):
        return bool(present.str.match(_LEADING_ZERO).any())
    return bool(pc.any(pc.match_substring_regex(text, r"^0\p{Nd}")).as_py())


def _force_strings(table: pd.DataFrame, force_str: Sequence[str], name: str) -> pd.DataFrame:
    """Columnar formats keep their types; ``dtype_str_columns`` become strings (NaN kept)."""
    validate_columns(table, force_str, "string (dtype_str_columns)", file_name=name)
    if not force_str:
        return table
    table = table.copy()
    for col in force_str:
        table[col] = table[col].astype("str")
    return table
