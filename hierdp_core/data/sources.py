"""Files a table is read from: a path or an upload's bytes, checked before reading (found,
not empty, not too large, readable), the reader kind from the extension, and the helpers of
delimited text shared by the pandas and pyarrow readers (encoding from the BOM, delimiter
sniffing, pandas' string read of every cell, and messages that name the file and, for a
decoding error, the byte offset and line). Every problem is an `InputError` whose message
starts with the file name.

Example
-------
>>> import io
>>> src = resolve_source(io.BytesIO(b"a;b\\n1;2\\n"), "t.csv", 1000)
>>> kind_of(src.name), sniff_delimiter(head_bytes(src, False).decode())
('text', ';')
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import math
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from hierdp_core.errors import EncodingError, InputError

if TYPE_CHECKING:  # pandas is imported where used: `hierdp_core.data.prefetch` reads
    import pandas as pd  # a file's header before it is

__all__ = ["SUPPORTED_FORMATS", "Source", "choose_encoding", "fail", "head_bytes", "kind_of",
           "own_encoding", "read_text", "resolve_source", "sniff_delimiter"]

#: Extension (lower case) -> reader kind. Longest match wins (".csv.gz" before ".gz").
_KIND_BY_EXT = {
    ".csv": "text", ".tsv": "text", ".txt": "text",
    ".csv.gz": "text.gz", ".tsv.gz": "text.gz", ".txt.gz": "text.gz",
    ".parquet": "parquet", ".xlsx": "excel", ".xls": "excel", ".feather": "feather",
}
SUPPORTED_FORMATS = tuple(_KIND_BY_EXT)

_DELIMITERS = (",", ";", "\t")
_SNIFF_BYTES = 64 * 1024
SCAN_CHUNK = 1 << 20
_RAGGED = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


# ---- sources ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Source:
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


def fail(name: str, message: str) -> InputError:
    return InputError(f"{name}: {message}")


def _human(n_bytes: int) -> str:
    """'1.5 MB (1,500,000 bytes)' (decimal units), or '512 bytes'."""
    if n_bytes < 1000:
        return f"{n_bytes:,} bytes"
    power = min(3, int(math.log10(n_bytes)) // 3)
    unit = ("KB", "MB", "GB")[power - 1]
    return f"{n_bytes / 1000**power:.1f} {unit} ({n_bytes:,} bytes)"


def _too_large(name: str, size: int | None, max_bytes: int) -> InputError:
    what = f"is {_human(size)}" if size is not None else f"is larger than {_human(max_bytes)}"
    return fail(name, f"the file {what}, over the limit of {_human(max_bytes)} (max_bytes)")


def resolve_source(source, name: str | None, max_bytes: int) -> Source:
    """Check existence and size; read buffers into memory (at most ``max_bytes + 1``)."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        shown = name or str(source)
        if not path.exists():
            raise fail(shown, "file not found")
        if path.is_dir():
            raise fail(shown, "is a directory, not a file")
        size = path.stat().st_size
        if size > max_bytes:
            raise _too_large(shown, size, max_bytes)
        if size == 0:
            raise fail(shown, "the file is empty (0 bytes): no columns and no data rows")
        if not os.access(path, os.R_OK):
            raise fail(shown, "the file cannot be read (permission denied)")
        return Source(shown, path=path)
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
        raise fail(shown, "the file is empty (0 bytes): no columns and no data rows")
    return Source(shown, data=data)


def kind_of(name: str) -> str:
    lower = name.lower()
    for ext in sorted(_KIND_BY_EXT, key=len, reverse=True):
        if lower.endswith(ext):
            return _KIND_BY_EXT[ext]
    raise fail(name, "unsupported file format; supported formats are "
                + ", ".join(SUPPORTED_FORMATS))


# ---- text (CSV family) -----------------------------------------------------------------
def read_text(src: Source, encoding: str | None, *, gz: bool) -> pd.DataFrame:
    """Parse delimited text with every cell a string (header row included as row 0)."""
    import pandas as pd

    head = head_bytes(src, gz)
    enc = choose_encoding(src.name, head, encoding)
    sep = sniff_delimiter(head.decode(enc, errors="replace"),
                           prefer="\t" if ".tsv" in src.name.lower() else ",")
    try:
        return pd.read_csv(
            src.for_pandas(), sep=sep, header=None, dtype=str, keep_default_na=False,
            na_values=[""], encoding=enc, compression="gzip" if gz else None, engine="c",
        )
    except UnicodeDecodeError as exc:
        raise _decode_error(src, enc, gz, explicit=encoding is not None, exc=exc) from None
    except pd.errors.EmptyDataError:
        raise fail(src.name, "the file is empty: no columns and no data rows") from None
    except pd.errors.ParserError as exc:
        raise _parser_error(src.name, sep, exc) from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise fail(src.name, f"not a valid gzip file ({exc})") from None


#: `refuse_cut_short` looks at this many bytes at the end of a file
_TAIL_BYTES = 1 << 16


def refuse_cut_short(src: Source, encoding: str | None) -> None:
    """An `InputError` when an uncompressed delimited text file ends in the middle of a row:
    no line break after its last line, which has fewer fields than the header (an
    interrupted copy or download; the readers pad such a row with missing cells)."""
    if src.path is not None:
        with open(src.path, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - _TAIL_BYTES))
            tail = handle.read()
    else:
        tail = src.data[-_TAIL_BYTES:]
    if not tail or tail.endswith((b"\n", b"\r")):
        return
    head = head_bytes(src, False)
    enc = choose_encoding(src.name, head, encoding)
    if codecs.lookup(enc).name.startswith(("utf-16", "utf-32")):
        return  # a line break is no single byte there (UTF-16 is read whole anyway)
    text = head.decode(enc, errors="replace")
    sep = sniff_delimiter(text, prefer="\t" if ".tsv" in src.name.lower() else ",")
    n_columns = len(next(csv.reader(io.StringIO(text), delimiter=sep), []))
    last = tail.splitlines()[-1].decode(enc, errors="replace")
    fields = next(csv.reader([last], delimiter=sep), [])
    if 0 < len(fields) < n_columns:
        raise fail(src.name, f"the file ends in the middle of a row: its last line has "
                             f"{len(fields)} of the header's {n_columns} fields and no line "
                             "break after it (cut short by an interrupted copy or "
                             "download?): read it again from its source")


def head_bytes(src: Source, gz: bool) -> bytes:
    """The first bytes of the (decompressed) content, for encoding and delimiter sniffing."""
    try:
        with src.open_text_bytes(gz) as stream:
            return stream.read(_SNIFF_BYTES)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise fail(src.name, f"not a valid gzip file ({exc})") from None


def choose_encoding(name: str, head: bytes, encoding: str | None) -> str:
    """The encoding of the BOM if the file starts with one (whatever ``encoding`` says),
    else the explicit encoding if given (checked to exist), else UTF-8."""
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise fail(name, f"unknown encoding {encoding!r}") from None
    return next((enc for bom, enc in _BOMS if head.startswith(bom)), encoding or "utf-8-sig")


def own_encoding(path, encoding: str | None) -> tuple[str | None, str]:
    """(the encoding to read the text file ``path`` in, why when not ``encoding``) for a
    file with an encoding of its own, such as a public geography beside an input read in
    ``encoding``: its BOM's, else UTF-8 when its bytes are UTF-8 (text in another encoding
    with non-ASCII letters practically never is), else ``encoding``. The reason is empty
    when the text reads the same in ``encoding`` (no ``encoding``, ASCII, not a text file)."""
    src = resolve_source(path, None, math.inf)
    kind = kind_of(src.name)
    if encoding is None or not kind.startswith("text"):
        return encoding, ""
    chosen = choose_encoding(src.name, head_bytes(src, kind.endswith(".gz")), encoding)
    if chosen != encoding:
        same = codecs.lookup(chosen).name.removesuffix("-sig") == codecs.lookup(encoding).name
        return chosen, "" if same else "its byte-order mark"
    decoder, ascii_only = codecs.getincrementaldecoder("utf-8")("strict"), True
    with src.open_text_bytes(kind.endswith(".gz")) as stream:
        try:
            while chunk := stream.read(SCAN_CHUNK):
                decoder.decode(chunk)
                ascii_only = ascii_only and chunk.isascii()
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return encoding, ""
    same = ascii_only or codecs.lookup(encoding).name == "utf-8"
    return "utf-8", "" if same else "its bytes are UTF-8"


def sniff_delimiter(sample: str, prefer: str = ",") -> str:
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
        return fail(name, f"malformed CSV: line {line} has {saw} fields but the first line has "
                           f"{want} (delimiter: {shown}); check for a stray delimiter or an "
                           "unquoted value containing one")
    detail = str(exc).replace("Error tokenizing data. C error: ", "").strip()
    return fail(name, f"malformed CSV (delimiter: {shown}): {detail}")


def _decode_error(src: Source, enc: str, gz: bool, *, explicit: bool,
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
        return EncodingError(f"{src.name}: cannot be decoded with encoding {enc!r}: {place}; "
                             "check the file's encoding", place)
    return EncodingError(f"{src.name}: is not valid UTF-8: {place}. The file was probably "
                         "saved in another encoding, such as latin-1 or cp1252 (Excel on "
                         "Windows): give it (--encoding latin-1 on the command line, 'Text "
                         "encoding' on the Data page, encoding='latin-1' in Python), or "
                         "re-save the file as UTF-8", place)


def _locate_decode_error(src: Source, enc: str, gz: bool) -> tuple[int, int, bytes] | None:
    """(byte offset, 1-based line, offending bytes) of the first decoding error, if any."""
    scan_enc = "utf-8" if codecs.lookup(enc).name == "utf-8-sig" else enc
    decoder = codecs.getincrementaldecoder(scan_enc)("strict")
    offset, lines = 0, 1
    with src.open_text_bytes(gz) as stream:
        while chunk := stream.read(SCAN_CHUNK):
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
