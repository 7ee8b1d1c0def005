"""pyarrow reading of the columns a release needs, and pyarrow writing of release tables.

Reading (`read_columns`): a large table is read by pyarrow, only the wanted columns, each
as a dictionary (a pandas ``Categorical``: one small array of distinct values and one
int32 code per row, no Python string per row). The module's type rule of
`hierdp_core.data.loaders` is then applied to the distinct values only, so the result
holds the same values as the full read: a column of numbers becomes numbers, a column of
codes stays text (as a Categorical), leading zeros kept. Parquet is read by columns with
its string columns as dictionaries; Feather by columns. Anything unusual (a ragged row, an
undecodable byte, a blank or repeated header name, a wanted column that is not there, an
empty table, trailing empty rows) returns None: the caller then reads the file the slow way,
which gives the same table or the same error message as before.

Writing (`release_csv_bytes` / `write_release_csv`): the CSV of a release table made by
pyarrow, byte-identical to pandas' ``to_csv(index=False)`` (comma, ``\\n``, quotes only
where needed, floats as numpy prints them, missing values empty). pyarrow's own quoting
styles quote every string (``needed``) or refuse structural characters (``none``); the
table is therefore written unquoted, and pandas writes it when some text holds a comma, a
quote or a line break.

Example
-------
>>> import io, pandas as pd
>>> from hierdp_core.data.loaders import read_table
>>> buf = io.BytesIO(b"state,county,n,note\\n06,06037,12,x\\n06,06059,3,y\\n")
>>> t = read_table(buf, name="t.csv", columns=["county", "n"])
>>> t["county"].tolist(), t["n"].tolist(), str(t["county"].dtype)
(['06037', '06059'], [12, 3], 'category')
>>> frame = pd.DataFrame({"node_id": ["root", "a,b"], "value": [1, 2]})
>>> release_csv_bytes(table_from_frame(frame)) == frame.to_csv(index=False).encode()
True
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq

from hierdp_core.data.arrow_text import text_csv, text_header

__all__ = ["column_names", "read_columns", "release_csv_bytes", "table_from_frame",
           "write_release_csv"]

_DICT = pa.dictionary(pa.int32(), pa.string())
#: the bytes that make pandas quote a text: comma, double quote, carriage return, line feed
_STRUCTURAL = (b",", b'"', b"\r", b"\n")


# ---- reading ---------------------------------------------------------------------------
def read_columns(src, kind: str, columns: Sequence[str], encoding: str | None,
                 ) -> pd.DataFrame | None:
    """The ``columns`` of the file ``src`` (a `hierdp_core.data.sources.Source`) of reader ``kind``, in
    the file's order, or None when the careful reader must do it (see the module doc).
    Text columns come back as Categoricals, typed by the loaders' rule afterwards."""
    wanted = list(dict.fromkeys(columns))
    if not wanted:
        return None
    try:
        if kind.startswith("text"):
            return _read_text_columns(src, wanted, encoding, gz=kind.endswith(".gz"))
        if kind == "parquet":
            return _read_parquet_columns(src, wanted)
        if kind == "feather":
            return _read_feather_columns(src, wanted)
    except (pa.ArrowException, OSError, UnicodeError, ValueError, csv.Error):
        return None  # the careful reader says what is wrong
    return None


def column_names(src, kind: str, encoding: str | None) -> list[str] | None:
    """The column names of the file ``src`` (a `hierdp_core.data.sources.Source`) from its header or
    schema alone, or None when only the careful reader can tell (Excel, odd headers)."""
    try:
        if kind.startswith("text"):
            header = text_header(src, encoding, gz=kind.endswith(".gz"))
            return header[0] if header else None
        if kind == "parquet":
            names = pq.read_schema(_columnar_source(src)).names
        elif kind == "feather":
            names = pa.ipc.open_file(_columnar_source(src)).schema.names
        else:
            return None
    except (pa.ArrowException, OSError, UnicodeError, ValueError, csv.Error):
        return None
    return names if len(set(names)) == len(names) else None


def _columnar_source(src):
    return str(src.path) if src.path is not None else pa.BufferReader(src.data)


def _read_text_columns(src, wanted: list[str], encoding: str | None, *, gz: bool,
                       ) -> pd.DataFrame | None:
    read = text_csv(src, wanted, encoding, _DICT, gz=gz)
    if read is None:
        return None
    table, names = read
    if table.num_rows == 0:
        return None
    last = table.slice(table.num_rows - 1)
    if all(last.column(i).null_count == 1 for i in range(table.num_columns)):
        return None  # trailing empty rows: the careful reader drops them
    return pd.DataFrame({name: table.column(i).to_pandas() for i, name in enumerate(names)})


def _read_parquet_columns(src, wanted: list[str]) -> pd.DataFrame | None:
    schema = pq.read_schema(_columnar_source(src))
    if len(set(schema.names)) != len(schema.names) or not set(wanted) <= set(schema.names):
        return None
    keep = [n for n in schema.names if n in wanted]
    strings = [n for n in keep if pa.types.is_string(schema.field(n).type)
               or pa.types.is_large_string(schema.field(n).type)]
    table = pq.read_table(_columnar_source(src), columns=keep, read_dictionary=strings)
    return _frame(table)


def _read_feather_columns(src, wanted: list[str]) -> pd.DataFrame | None:
    names = pa.ipc.open_file(_columnar_source(src)).schema.names
    if len(set(names)) != len(names) or not set(wanted) <= set(names):
        return None
    keep = [n for n in names if n in wanted]
    return _frame(feather.read_table(_columnar_source(src), columns=keep))


def _frame(table: pa.Table) -> pd.DataFrame | None:
    return table.to_pandas() if table.num_rows else None


# ---- writing ---------------------------------------------------------------------------
def table_from_frame(frame: pd.DataFrame) -> pa.Table:
    """A small pandas frame as a pyarrow Table (for tests and examples)."""
    return pa.Table.from_pandas(frame, preserve_index=False)


def _csv_ready(table: pa.Table) -> pa.Table | None:
    """The table with every column as pandas writes it, or None when some text needs
    quotes (pandas writes it then)."""
    columns = []
    for column in table.columns:
        kind = column.type
        if pa.types.is_dictionary(kind):
            values = column.combine_chunks().dictionary
            kind = kind.value_type
        else:
            values = column
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            if _needs_quotes(values):
                return None
            columns.append(column)
        elif pa.types.is_floating(kind):
            columns.append(_float_text(column.to_numpy()))
        elif pa.types.is_integer(kind):
            if column.null_count:
                return None
            columns.append(column)
        else:
            return None
    return pa.table(columns, names=table.column_names)


def _needs_quotes(values: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a text of the string array may hold a structural byte (`_STRUCTURAL`),
    looked up in its bytes (one ``memchr`` per byte: a tenth of a numpy table lookup's
    time): those of every text lie between its first and last offsets (a null's bytes
    too, if any: then pandas writes the table, as it would anyway)."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    for chunk in chunks:
        _, offsets, data = chunk.buffers()
        if data is None or not len(chunk):
            continue
        wide = pa.types.is_large_string(chunk.type)
        at = np.frombuffer(offsets, dtype=np.int64 if wide else np.int32,
                           count=len(chunk) + 1, offset=chunk.offset * (8 if wide else 4))
        text = data.slice(int(at[0]), int(at[-1] - at[0])).to_pybytes()
        if any(byte in text for byte in _STRUCTURAL):
            return True
    return False


def _float_text(values: np.ndarray) -> pa.Array:
    """Floats as pandas' CSV writer prints them (numpy's shortest repr; NaN empty), made by
    pyarrow where its text is the same, about 10x faster: a whole number below 1e16 (but
    -0.0) is the integer and '.0'; from 1e-4 to 1e9 pyarrow's shortest text of a float is
    numpy's (it turns to exponents from 1e10, numpy from 1e16); numpy prints the rest."""
    size = np.abs(values)
    whole = (size < 1e16) & (values == np.round(values)) & ((values != 0) | ~np.signbit(values))
    short = (size >= 1e-4) & (size < 1e9) & ~whole
    text = pc.binary_join_element_wise(
        pc.cast(pa.array(np.where(whole, values, 0).astype(np.int64)), pa.string()), ".0", "")
    if short.any():
        text = pc.replace_with_mask(text, pa.array(short),
                                    pc.cast(pa.array(values[short]), pa.string()))
    rest = ~(whole | short)
    if rest.any():
        other = values[rest]
        digits = other.astype(str).astype(object)
        digits[np.isnan(other)] = ""
        text = pc.replace_with_mask(text, pa.array(rest), pa.array(digits, pa.string()))
    return text


def release_csv_bytes(table: pa.Table) -> bytes:
    """The table as CSV bytes identical to pandas' ``to_csv(index=False)``."""
    sink = io.BytesIO()
    _write_csv(table, sink)
    return sink.getvalue()


def write_release_csv(table: pa.Table, path: Path) -> None:
    """Write the table to ``path`` as `release_csv_bytes` would give it."""
    with open(path, "wb") as handle:
        _write_csv(table, handle)


def _write_csv(table: pa.Table, sink) -> None:
    ready = _csv_ready(table) if table.num_columns > 1 else None
    if ready is None:
        sink.write(table.to_pandas().to_csv(index=False).encode("utf-8"))
        return
    sink.write(_header(table.column_names))
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    pacsv.write_csv(ready, sink, write_options=options)


def _header(names: list[str]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(names)
    return out.getvalue().encode("utf-8")
