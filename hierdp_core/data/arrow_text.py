"""pyarrow reading of delimited text files by column, with nothing heavier than pyarrow: the
header (names, delimiter, encoding), and the wanted columns as a Table or as streaming
batch readers, a large file in stretches of whole lines read on threads of their own
(`text_string_parts`). `hierdp_core.data.arrow_io` builds its typed reading on it;
`hierdp_core.data.prefetch` starts it as the command starts, before numpy's and pandas'
users are imported. Anything unusual (an odd header, a wanted column missing) gives None:
the caller then reads the file the careful way.
"""

from __future__ import annotations

import csv
import io
import itertools
import os
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.csv as pacsv

__all__ = ["PART_BLOCK", "SPLIT_FROM", "arrow_source", "has_quote", "text_csv", "text_header",
           "text_string_parts"]


def arrow_source(src, gz: bool = False):
    stream = pa.OSFile(str(src.path)) if src.path is not None else pa.BufferReader(src.data)
    return pa.CompressedInputStream(stream, "gzip") if gz else stream


def text_header(src, encoding: str | None, *, gz: bool,
                 ) -> tuple[list[str], str, str] | None:
    """(column names, delimiter, encoding) of a delimited text file, or None when its
    header is unusual (longer than the sample, blank or repeated names)."""
    from hierdp_core.data.sources import choose_encoding, head_bytes, sniff_delimiter

    head = head_bytes(src, gz)
    enc = choose_encoding(src.name, head, encoding)
    text = head.decode(enc, errors="replace")
    sep = sniff_delimiter(text, prefer="\t" if ".tsv" in src.name.lower() else ",")
    if "\n" not in text and "\r" not in text:
        return None  # the header is longer than the sample, or there is no data row
    header = next(csv.reader(io.StringIO(text), delimiter=sep), [])
    names = [h.strip() for h in header]
    if (not names or any(not n or "\n" in n or "\r" in n for n in names)
            or len(set(names)) != len(names)):
        return None
    return names, sep, enc


def text_string_parts(src, columns: Sequence[str], encoding: str | None,
                      parts: int = 1) -> list | None:
    """The ``columns`` of the delimited text file ``src`` as record batch readers of pyarrow
    strings (empty cells null), named as in the file: one, or for a large uncompressed
    UTF-8 file without quotes up to ``parts`` over consecutive stretches of its lines (each
    read on its own thread, two cores parse it); None when the careful reader must read
    it (an unusual header, a wanted column missing). A reader stops with an
    `pa.ArrowException` where the file is malformed or, in an encoding other than UTF-8,
    undecodable. Texts are not checked as UTF-8 (a sixth of the parsing's time): a byte
    that is no UTF-8 stays in its text, which the caller must match against valid texts
    or ASCII digits (`hierdp_core.data.declared_rows` does: such a text matches none, and
    the careful reader then names the byte)."""
    from hierdp_core.data.sources import kind_of

    kind = kind_of(src.name)
    if not kind.startswith("text"):
        return None
    read = text_csv(src, list(dict.fromkeys(columns)), encoding, pa.string(),
                     gz=kind.endswith(".gz"), parts=parts)
    if read is None:
        return None
    readers, names = read
    return [(batch.rename_columns(names) for batch in reader) for reader in readers]


def text_csv(src, wanted: list[str], encoding: str | None, kind: pa.DataType, *,
              gz: bool, parts: int = 0):
    """(the ``wanted`` columns of a delimited text file read by pyarrow as ``kind``, in the
    file's order: a Table, or with ``parts`` a list of batch readers (`text_string_parts`,
    texts not checked as UTF-8); their names), or None when the careful reader must read
    it."""
    header = text_header(src, encoding, gz=gz)
    if header is None or not set(wanted) <= set(header[0]):
        return None
    names, sep, enc = header
    raw = [f"c{i}" for i in range(len(names))]
    keep = [raw[i] for i, n in enumerate(names) if n in wanted]
    quoted = gz or has_quote(src)
    arrow_enc = "utf8" if enc in ("utf-8", "utf-8-sig") else enc
    by_raw = dict(zip(raw, names, strict=True))

    def options(skip: int) -> dict:
        # parts parse on their own threads (`use_threads=False`): two parts fill both
        # cores already
        return {"read_options": pacsv.ReadOptions(skip_rows=skip, column_names=raw,
                                                  encoding=arrow_enc, use_threads=not parts,
                                                  block_size=PART_BLOCK if parts else 32 << 20),
                "parse_options": pacsv.ParseOptions(delimiter=sep, newlines_in_values=quoted),
                "convert_options": pacsv.ConvertOptions(
                    include_columns=keep, column_types=dict.fromkeys(keep, kind),
                    strings_can_be_null=True, quoted_strings_can_be_null=True,
                    null_values=[""], check_utf8=not parts)}

    if not parts:
        return pacsv.read_csv(arrow_source(src, gz), **options(1)), [by_raw[c] for c in keep]
    stretches = (_stretches(src, parts) if not quoted and arrow_enc == "utf8" else None)
    if stretches is None:
        readers = [pacsv.open_csv(arrow_source(src, gz), **options(1))]
    else:
        readers = [pacsv.open_csv(stretch, **options(1 if i == 0 else 0))
                   for i, stretch in enumerate(stretches)]
    return readers, [by_raw[c] for c in keep]


#: a file is parsed in stretches on several threads from this size (bytes)
SPLIT_FROM = 64 << 20
#: the text parsed into one batch of a part (bytes)
PART_BLOCK = 8 << 20


def _stretches(src, parts: int) -> list | None:
    """Input streams over ``parts`` consecutive stretches of whole lines of the file, each
    cut just after a line break, or None for a file below `SPLIT_FROM` (or where the system
    has no reads at an offset). A file's stretches are read, not memory-mapped
    (`_Window`), all from the one file opened here: a file truncated while it is read then
    stops its reader with `OSError` (the careful reader reads it again) where a mapped one
    killed the process (SIGBUS), and one replaced meanwhile is not read at its old offsets."""
    if src.data is not None:
        content = pa.py_buffer(src.data)
        cuts = _cuts(content.size, parts, content.slice)
        return None if cuts is None else [pa.BufferReader(content.slice(a, b - a))
                                           for a, b in itertools.pairwise(cuts)]
    if not hasattr(os, "pread"):
        return None
    with open(src.path, "rb", buffering=0) as handle:
        fd = handle.fileno()
        cuts = _cuts(os.fstat(fd).st_size, parts,
                     lambda at, n: pa.py_buffer(os.pread(fd, n, at)))
        return None if cuts is None else [
            pa.PythonFile(_Window(os.dup(fd), src.path, a, b), mode="r")
            for a, b in itertools.pairwise(cuts)]


def _cuts(size: int, parts: int, read) -> list[int] | None:
    """The offsets (0, ..., ``size``) of `_stretches` of ``size`` bytes that
    ``read(offset, n)`` gives (a pyarrow buffer), or None."""
    if parts < 2 or size < SPLIT_FROM:
        return None
    cuts = [0]
    for i in range(1, parts):
        at = _line_break(read, size, max(i * size // parts, cuts[-1]))
        if at < 0 or at + 1 >= size:
            break
        cuts.append(at + 1)
    return [*cuts, size] if len(cuts) > 1 else None


class _Window:
    """The bytes ``start`` to ``end`` of the open file descriptor ``fd`` (its own: closed
    once the window is read to its end, or closed), read as a stream (what
    `pa.PythonFile` reads from): `OSError` when the file ends before ``end`` (it was
    truncated since its size was read). ``path``: for the message."""

    def __init__(self, fd: int, path, start: int, end: int):
        self._fd, self._path = fd, path
        self._at, self._end = start, end
        self.closed = False

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self.closed:
            return b""
        n = self._end - self._at if n is None or n < 0 else min(n, self._end - self._at)
        data = os.pread(self._fd, n, self._at) if n > 0 else b""
        while 0 < len(data) < n and (more := os.pread(self._fd, n - len(data),
                                                      self._at + len(data))):
            data += more  # a read cut short (above 2 GB at once): rare
        if len(data) < n:
            self.close()
            raise OSError(f"{self._path}: the file changed while it was read (it was cut "
                          f"short of byte {self._end:,})")
        self._at += n
        if self._at >= self._end:
            self.close()
        return data

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
            self.closed = True

    def __del__(self):
        self.close()


def _line_break(read, size: int, start: int) -> int:
    """The offset of the first ``\\n`` at or after ``start`` of the ``size`` bytes that
    ``read(offset, n)`` gives, or -1."""
    step = 1 << 16
    while start < size:
        at = read(start, min(step, size - start)).to_pybytes().find(b"\n")
        if at >= 0:
            return start + at
        start += step
    return -1


def has_quote(src) -> bool:
    """Whether a line after the header of the (uncompressed) content holds a double quote:
    without one no value can hold a line break, and pyarrow may split the file into blocks
    at any line break. A quoted header (as many writers make it) does not count: its names
    hold no line break (`text_header`), so it ends at the first one."""
    if src.data is not None:
        return _quote_after_header([src.data])
    with open(src.path, "rb") as handle:
        return _quote_after_header(iter(lambda: handle.read(QUOTE_BLOCK), b""))


#: `has_quote` reads a file in blocks of this many bytes (read, not memory-mapped: see
#: `_stretches`)
QUOTE_BLOCK = 8 << 20


def _quote_after_header(blocks) -> bool:
    """`has_quote` of the content given as consecutive ``blocks`` of bytes: a double quote
    after the first line break (none: the header is all)."""
    past_header = False
    for block in blocks:
        if not past_header:
            breaks = [at for at in (block.find(b"\n"), block.find(b"\r")) if at >= 0]
            if not breaks:
                continue
            past_header, block = True, block[min(breaks):]
        if block.find(b'"') >= 0:
            return True
    return False


