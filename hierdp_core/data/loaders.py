"""Read count tables from files or uploads, and validate their columns.

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

import codecs
import csv
import difflib
import gzip
import io
import os
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

from hierdp_core.data.integers import check_total
from hierdp_core.errors import InputError

__all__ = ["SUPPORTED_FORMATS", "read_header", "read_table", "validate_columns", "validate_counts"]

#: Extension (lower case) -> reader kind. Longest match wins (".csv.gz" before ".gz").
_KIND_BY_EXT = {
    ".csv": "text", ".tsv": "text", ".txt": "text",
    ".csv.gz": "text.gz", ".tsv.gz": "text.gz", ".txt.gz": "text.gz",
    ".parquet": "parquet", ".xlsx": "excel", ".xls": "excel", ".feather": "feather",
}
SUPPORTED_FORMATS = tuple(_KIND_BY_EXT)

_DELIMITERS = (",", ";", "\t")
_SNIFF_BYTES = 64 * 1024
_SCAN_CHUNK = 1 << 20
_MAX_LISTED = 5
_NA_TOKENS = frozenset({"NA", "N/A", "n/a", "#N/A", "NaN", "nan", "null", "NULL", "None", "-"})
_LEADING_ZERO = re.compile(r"0\d")
_RAGGED = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


# ---- sources ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Source:
    """A file to read: either a path on disk or the bytes of an upload, plus its name."""

    name: str
    path: Path | None = None
    data: bytes | None = None

    def open(self) -> BinaryIO:
        """A fresh binary stream over the (still compressed) content."""
        return open(self.path, "rb") if self.path is not None else io.BytesIO(self.data)

    def open_text_bytes(self, gz: bool) -> BinaryIO:
        """A binary stream over the content, decompressed when ``gz``."""
        if not gz:
            return self.open()
        if self.path is not None:
            return gzip.open(self.path, "rb")
        return gzip.GzipFile(fileobj=io.BytesIO(self.data), mode="rb")

    def for_pandas(self):
        """What to hand to a pandas reader: the path, or a buffer over the bytes."""
        return self.path if self.path is not None else io.BytesIO(self.data)


def _fail(name: str, message: str) -> InputError:
    return InputError(f"{name}: {message}")


def _human(n_bytes: int) -> str:
    """'1.5 MB (1,500,000 bytes)' (decimal units), or '512 bytes'."""
    if n_bytes < 1000:
        return f"{n_bytes:,} bytes"
    power = min(3, int(np.log10(n_bytes)) // 3)
    unit = ("KB", "MB", "GB")[power - 1]
    return f"{n_bytes / 1000**power:.1f} {unit} ({n_bytes:,} bytes)"


def _too_large(name: str, size: int | None, max_bytes: int) -> InputError:
    what = f"is {_human(size)}" if size is not None else f"is larger than {_human(max_bytes)}"
    return _fail(name, f"the file {what}, over the limit of {_human(max_bytes)} (max_bytes)")


def _resolve_source(source, name: str | None, max_bytes: int) -> _Source:
    """Check existence and size; read buffers into memory (at most ``max_bytes + 1``)."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        shown = name or str(source)
        if not path.exists():
            raise _fail(shown, "file not found")
        if path.is_dir():
            raise _fail(shown, "is a directory, not a file")
        size = path.stat().st_size
        if size > max_bytes:
            raise _too_large(shown, size, max_bytes)
        if size == 0:
            raise _fail(shown, "the file is empty (0 bytes): no columns and no data rows")
        if not os.access(path, os.R_OK):
            raise _fail(shown, "the file cannot be read (permission denied)")
        return _Source(shown, path=path)
    if not (hasattr(source, "read") or hasattr(source, "getvalue")):
        raise InputError(
            f"cannot read a table from a {type(source).__name__}; pass a path or a binary file"
        )
    own_name = getattr(source, "name", None)
    shown = name or (os.path.basename(str(own_name)) if own_name else "<uploaded file>")
    if hasattr(source, "getvalue"):
        data = source.getvalue()
        if len(data) > max_bytes:
            raise _too_large(shown, len(data), max_bytes)
    else:
        data = source.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise _too_large(shown, None, max_bytes)
    if isinstance(data, str):
        data = data.encode("utf-8")
    data = bytes(data)
    if not data:
        raise _fail(shown, "the file is empty (0 bytes): no columns and no data rows")
    return _Source(shown, data=data)


def _kind_of(name: str) -> str:
    lower = name.lower()
    for ext in sorted(_KIND_BY_EXT, key=len, reverse=True):
        if lower.endswith(ext):
            return _KIND_BY_EXT[ext]
    raise _fail(name, "unsupported file format; supported formats are "
                + ", ".join(SUPPORTED_FORMATS))


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
    (leading-zero codes and ``dtype_str_columns`` stay strings).
    Raises `InputError`, naming the file, for anything that makes the file unusable.

    ``columns``: read only these (for large inputs; the CLI passes the columns a release
    uses). CSV, Parquet and Feather are then read by pyarrow (`hierdp_core.data.arrow_io`)
    and text columns come back as pandas Categoricals (no Python string per row), with the
    same values and types otherwise; when a column is not in the file, the whole table is
    returned, so that the caller's check names the columns the file has.
    """
    src = _resolve_source(source, name, max_bytes)
    kind = _kind_of(src.name)
    force_str = list(dtype_str_columns or [])
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

    src = _resolve_source(source, name, max_bytes)
    return column_names(src, _kind_of(src.name), encoding)


def _read_selected(src: _Source, kind: str, columns: list[str], encoding: str | None,
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


def _read_all(src: _Source, kind: str, encoding: str | None,
              force_str: list[str]) -> pd.DataFrame:
    if kind.startswith("text"):
        raw = _read_text(src, encoding, gz=kind.endswith(".gz"))
        table = _infer_types(_with_header_row(raw, src.name), force_str, src.name)
    elif kind == "excel":
        raw = _read_excel(src)
        table = _infer_types(_with_header_row(raw, src.name), force_str, src.name)
    else:
        table = _read_columnar(src, kind)
        _check_shape(table, src.name)
        table = _force_strings(table, force_str, src.name)
    return table


# ---- text (CSV family) -----------------------------------------------------------------
def _read_text(src: _Source, encoding: str | None, *, gz: bool) -> pd.DataFrame:
    """Parse delimited text with every cell a string (header row included as row 0)."""
    head = _head_bytes(src, gz)
    enc = _choose_encoding(src.name, head, encoding)
    sep = _sniff_delimiter(head.decode(enc, errors="replace"),
                           prefer="\t" if ".tsv" in src.name.lower() else ",")
    try:
        return pd.read_csv(
            src.for_pandas(), sep=sep, header=None, dtype=str, keep_default_na=False,
            na_values=[""], encoding=enc, compression="gzip" if gz else None, engine="c",
        )
    except UnicodeDecodeError as exc:
        raise _decode_error(src, enc, gz, explicit=encoding is not None, exc=exc) from None
    except pd.errors.EmptyDataError:
        raise _fail(src.name, "the file is empty: no columns and no data rows") from None
    except pd.errors.ParserError as exc:
        raise _parser_error(src.name, sep, exc) from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise _fail(src.name, f"not a valid gzip file ({exc})") from None


def _head_bytes(src: _Source, gz: bool) -> bytes:
    """The first bytes of the (decompressed) content, for encoding and delimiter sniffing."""
    try:
        with src.open_text_bytes(gz) as stream:
            return stream.read(_SNIFF_BYTES)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise _fail(src.name, f"not a valid gzip file ({exc})") from None


def _choose_encoding(name: str, head: bytes, encoding: str | None) -> str:
    """The explicit encoding if given (checked to exist), else from the BOM, else UTF-8."""
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise _fail(name, f"unknown encoding {encoding!r}") from None
        return encoding
    for bom, enc in _BOMS:
        if head.startswith(bom):
            return enc
    return "utf-8-sig"


def _sniff_delimiter(sample: str, prefer: str = ",") -> str:
    """Pick the delimiter that splits the header into most fields with consistent rows.

    Candidates are comma, semicolon and tab; a one-column file gets ``prefer``.
    """
    cut = sample.rfind("\n")
    sample = sample[: cut + 1] if cut >= 0 else sample
    best, best_score = prefer, (0, 0)
    for sep in _DELIMITERS:
        try:
            rows = [r for r in csv.reader(io.StringIO(sample), delimiter=sep) if r][:50]
        except csv.Error:
            continue
        if not rows or len(rows[0]) < 2:
            continue
        width = len(rows[0])
        score = (sum(len(r) == width for r in rows), width)
        if score > best_score or (score == best_score and sep == prefer):
            best, best_score = sep, score
    return best


def _parser_error(name: str, sep: str, exc: Exception) -> InputError:
    shown = {",": "comma", ";": "semicolon", "\t": "tab"}[sep]
    m = _RAGGED.search(str(exc))
    if m:
        want, line, saw = m.groups()
        return _fail(name, f"malformed CSV: line {line} has {saw} fields but the first line has "
                           f"{want} (delimiter: {shown}); check for a stray delimiter or an "
                           "unquoted value containing one")
    detail = str(exc).replace("Error tokenizing data. C error: ", "").strip()
    return _fail(name, f"malformed CSV (delimiter: {shown}): {detail}")


def _decode_error(src: _Source, enc: str, gz: bool, *, explicit: bool,
                  exc: UnicodeDecodeError) -> InputError:
    """Locate the first undecodable byte and say how to fix it."""
    where = _locate_decode_error(src, enc, gz)
    if where is None:
        place = f"({exc.reason})"
    else:
        offset, line, bad = where
        data = "decompressed data" if gz else "file"
        place = f"byte {bad!r} at byte offset {offset:,} of the {data} (line {line})"
    if explicit:
        return _fail(src.name, f"cannot be decoded with encoding {enc!r}: {place}; "
                               "check the file's encoding")
    return _fail(src.name, f"is not valid UTF-8: {place}. The file was probably saved in "
                           "another encoding; try encoding='latin-1' or encoding='cp1252' "
                           "(Excel on Windows), or re-save it as UTF-8")


def _locate_decode_error(src: _Source, enc: str, gz: bool) -> tuple[int, int, bytes] | None:
    """(byte offset, 1-based line, offending bytes) of the first decoding error, if any."""
    scan_enc = "utf-8" if codecs.lookup(enc).name == "utf-8-sig" else enc
    decoder = codecs.getincrementaldecoder(scan_enc)("strict")
    offset, lines = 0, 1
    with src.open_text_bytes(gz) as stream:
        while chunk := stream.read(_SCAN_CHUNK):
            pending = _pending_bytes(decoder)
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as err:
                buf = pending + chunk
                pos = offset - len(pending) + err.start
                lines += buf[: err.start].count(b"\n") - pending.count(b"\n")
                return pos, lines, bytes(buf[err.start: err.end])
            offset += len(chunk)
            lines += chunk.count(b"\n")
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as err:
            return offset - len(err.object) + err.start, lines, bytes(err.object[err.start:])
    return None


def _pending_bytes(decoder: codecs.IncrementalDecoder) -> bytes:
    state = decoder.getstate()
    return state[0] if isinstance(state, tuple) and isinstance(state[0], bytes) else b""


# ---- excel and columnar ----------------------------------------------------------------
def _read_excel(src: _Source) -> pd.DataFrame:
    """First sheet, every cell a string; .xls that are really .xlsx (zip) work too."""
    with src.open() as stream:
        is_zip = stream.read(4) == b"PK\x03\x04"
    engine = "openpyxl" if is_zip or src.name.lower().endswith(".xlsx") else "xlrd"
    try:
        return pd.read_excel(src.for_pandas(), header=None, dtype=str, engine=engine)
    except ImportError:
        raise _fail(src.name, "legacy .xls files need the 'xlrd' package; save the sheet as "
                              ".xlsx or CSV instead") from None
    except Exception as exc:  # any failure of the reader means an unreadable workbook
        raise _fail(src.name, f"could not read the Excel file; it may be corrupted or not a "
                              f"real Excel file ({type(exc).__name__}: {exc})") from None


def _read_columnar(src: _Source, kind: str) -> pd.DataFrame:
    readers: dict[str, Callable] = {"parquet": pd.read_parquet, "feather": pd.read_feather}
    try:
        return readers[kind](src.for_pandas())
    except Exception as exc:  # any failure of the reader means an unreadable file
        raise _fail(src.name, f"could not read the {kind.capitalize()} file; it may be "
                              f"corrupted or not {kind} ({type(exc).__name__}: {exc})") from None


# ---- shape and types -------------------------------------------------------------------
def _with_header_row(raw: pd.DataFrame, name: str) -> pd.DataFrame:
    """Use row 0 as the column names (stripped; empty -> 'Unnamed: i') and check the shape."""
    if raw.shape[1] == 0 or raw.shape[0] == 0:
        raise _fail(name, "the file is empty: no columns and no data rows")
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
        raise _fail(name, "the table has no columns")
    cols = [str(c) for c in table.columns]
    dupes = sorted({c for c in cols if cols.count(c) > 1})
    if dupes:
        where = "; ".join(
            f"{d!r} at columns {[i + 1 for i, c in enumerate(cols) if c == d]}" for d in dupes
        )
        raise _fail(name, f"duplicate column names: {where}; every column needs a unique name")
    if table.shape[0] == 0:
        raise _fail(name, f"the table has a header ({len(cols)} columns) but no data rows")


def _infer_types(table: pd.DataFrame, force_str: Sequence[str], name: str) -> pd.DataFrame:
    """Convert all-numeric string columns to numbers, except forced and leading-zero ones."""
    validate_columns(table, force_str, "string (dtype_str_columns)", file_name=name)
    out = {}
    for col in table.columns:
        series = table[col]
        out[col] = series if col in force_str else _maybe_numeric(series)
    return pd.DataFrame(out, index=table.index)


def _maybe_numeric(series: pd.Series) -> pd.Series:
    """The column as numbers if every non-missing value is a number or an NA token.

    The tests and conversions run on the distinct values only (geography codes, names and
    categories repeat over millions of rows), then map back through the factor codes.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):  # e.g. from pyarrow: no hashing
        codes, distinct = series.cat.codes.to_numpy(), series.cat.categories
    else:
        codes, distinct = pd.factorize(series)  # missing -> code -1
    present = pd.Series(distinct, dtype=object).str.strip()
    if present.empty or present.str.match(_LEADING_ZERO).any():
        return series
    is_na_token = present.isin(_NA_TOKENS) | present.eq("")
    numbers = pd.to_numeric(present[~is_na_token], errors="coerce")
    if numbers.empty or numbers.isna().any():
        return series
    values = pd.to_numeric(present.mask(is_na_token)).to_numpy()
    if (codes < 0).any():
        values = np.append(values.astype(float), np.nan)  # code -1 takes the trailing NaN
    return pd.Series(values[codes], index=series.index, name=series.name)


def _force_strings(table: pd.DataFrame, force_str: Sequence[str], name: str) -> pd.DataFrame:
    """Columnar formats keep their types; ``dtype_str_columns`` become strings (NaN kept)."""
    validate_columns(table, force_str, "string (dtype_str_columns)", file_name=name)
    if not force_str:
        return table
    table = table.copy()
    for col in force_str:
        table[col] = table[col].astype("str")
    return table


# ---- validation ------------------------------------------------------------------------
def validate_columns(table: pd.DataFrame, columns: str | Sequence[str], role: str, *,
                     file_name: str | None = None) -> None:
    """Raise `InputError` unless every column in ``columns`` is in ``table``.

    The message names the ``role`` (e.g. "geography level"), the missing columns, the table's
    columns, and a close match when there is one.
    """
    wanted = [columns] if isinstance(columns, str) else list(columns)
    have = [str(c) for c in table.columns]
    missing = [c for c in wanted if c not in table.columns]
    if not missing:
        return
    noun = "column" if len(missing) == 1 else "columns"
    listed = ", ".join(repr(str(c)) for c in missing)
    message = f"{role} {noun} {listed} not found; the table has {have}"
    hints = []
    for c in missing:
        match = [h for h in have if h.lower() == str(c).lower()] or difflib.get_close_matches(
            str(c), have, n=1, cutoff=0.8
        )
        if match:
            hints.append(f"{match[0]!r} for {str(c)!r}")
    if hints:
        message += "; did you mean " + ", ".join(hints) + "?"
    raise _fail(file_name, message) if file_name else InputError(message)


def validate_counts(table: pd.DataFrame, column: str, *,
                    file_name: str | None = None) -> np.ndarray:
    """The count column as an int64 array, or `InputError`.

    The column must exist and hold non-missing, finite, non-negative, integral numbers
    (``3.0`` is fine, ``1.5`` is not) summing to at most 2^53 - 1
    (`hierdp_core.data.integers.check_total`); numeric strings such as ``"12"`` are
    accepted.
    Messages name up to 5 offending rows (1-based data rows, header excluded) and values.
    """
    def fail(message: str) -> InputError:
        return _fail(file_name, message) if file_name else InputError(message)

    validate_columns(table, [column], "count", file_name=file_name)
    series = table[column]
    label = f"count column {column!r}"
    if pd.api.types.is_bool_dtype(series):
        raise fail(f"{label} holds true/false values, not counts")
    original = series.to_numpy(dtype=object)
    if pd.api.types.is_numeric_dtype(series):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        text = series.astype("str").str.strip()
        values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isnan(values) & series.notna().to_numpy() & text.ne("").to_numpy()
        if bad.any():
            raise fail(f"{label} has non-numeric values: {_rows(bad, original)}")
    nan, inf = np.isnan(values), np.isinf(values)
    finite = np.where(nan | inf, 0.0, values)
    checks = [
        (nan, "missing value(s)"),
        (inf, "infinite value(s)"),
        (finite < 0, "negative value(s) (counts must be >= 0)"),
        (np.mod(finite, 1) != 0, "non-integer value(s) (counts must be whole numbers)"),
        (finite >= 2.0**63, "value(s) too large for a 64-bit count"),
    ]
    for mask, problem in checks:
        if mask.any():
            raise fail(f"{label} has {int(mask.sum())} {problem}: {_rows(mask, original)}")
    # an integer column as it is (float64 rounds above 2^53, e.g. in the total's message)
    values = series.to_numpy(np.int64) if series.dtype.kind == "i" else values.astype(np.int64)
    check_total(values, f"{file_name}: {label}" if file_name else label)
    return values


def _rows(mask: np.ndarray, values: np.ndarray) -> str:
    """'row 2: -1, row 7: 'x' and 3 more' for up to 5 offending 1-based rows."""
    idx = np.flatnonzero(mask)
    parts = [f"row {i + 1}: {_show(values[i])}" for i in idx[:_MAX_LISTED]]
    more = f" and {idx.size - _MAX_LISTED} more" if idx.size > _MAX_LISTED else ""
    return ", ".join(parts) + more


def _show(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return "(empty)"
    return repr(value) if isinstance(value, str) else str(value)


# ---- column roles, look-alike codes and size guards -----------------------------------------

#: bytes of memory counted per cell of a release when sizing the default ``max_cells``
BYTES_PER_CELL = 64


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


def _code_key(code: str) -> str:
    stripped = code.strip()
    trimmed = stripped.lstrip("0")
    return trimmed if trimmed or not stripped else "0"


def lookalike_codes(table: pd.DataFrame, columns: Sequence[str],
                    limit: int = 5) -> list[tuple[str, str, str]]:
    """Pairs of distinct codes of the same column that differ only by leading zeros or
    surrounding whitespace (``'1'`` and ``'01'``, ``'06 '`` and ``'06'``), as
    ``(column, code, code)``, at most ``limit``. Codes are left as they are (two units); the
    caller may warn."""
    pairs: list[tuple[str, str, str]] = []
    for column in columns:
        if column not in table.columns:
            continue
        values = pd.unique(table[column].dropna())
        seen: dict[str, str] = {}
        for value in sorted({str(v) for v in values}):
            key = _code_key(value)
            if key in seen:
                pairs.append((column, seen[key], value))
                if len(pairs) >= limit:
                    return pairs
            else:
                seen[key] = value
    return pairs


def default_max_cells() -> int:
    """The default cap on the cells of a release: total memory / `BYTES_PER_CELL`."""
    try:
        import psutil

        total = int(psutil.virtual_memory().total)
    except Exception:  # psutil missing or unsupported: ask the OS
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            total = 8 * 2**30
    return max(1, total // BYTES_PER_CELL)


def check_cells(cells: int, max_cells: int | None, what: str) -> None:
    """`SizeLimitError` when ``cells`` exceeds ``max_cells`` (None: no limit), with the
    figure and what it is made of."""
    from hierdp_core.errors import SizeLimitError

    if max_cells is not None and cells > max_cells:
        raise SizeLimitError(f"the release would have {cells:,} cells ({what}), above the "
                             f"limit of {max_cells:,} (--max-cells); use a smaller domain, "
                             "fewer categories or a coarser geography, or raise --max-cells")
