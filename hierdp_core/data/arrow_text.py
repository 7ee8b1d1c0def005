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
import mmap
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
        return {"read_options": pacsv.ReadOptions(skip_rows=skip, column_names=raw,
                                                  encoding=arrow_enc,
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
        content, cuts = stretches
        readers = [pacsv.open_csv(pa.BufferReader(content.slice(a, b - a)),
                                  **options(1 if a == 0 else 0))
                   for a, b in itertools.pairwise(cuts)]
    return readers, [by_raw[c] for c in keep]


#: a file is parsed in stretches on several threads from this size (bytes)
SPLIT_FROM = 64 << 20
#: the text parsed into one batch of a part (bytes)
PART_BLOCK = 8 << 20


def _stretches(src, parts: int) -> tuple[pa.Buffer, list[int]] | None:
    """(the file's bytes, mapped; the offsets of ``parts`` stretches of whole lines, from 0
    to its size, each cut just after a line break), or None for a file below `SPLIT_FROM`."""
    content = (pa.py_buffer(src.data) if src.data is not None
               else pa.memory_map(str(src.path)).read_buffer())
    size = content.size
    if parts < 2 or size < SPLIT_FROM:
        return None
    cuts = [0]
    for i in range(1, parts):
        at = _line_break(content, i * size // parts)
        if at < 0 or at + 1 >= size:
            break
        cuts.append(at + 1)
    return (content, [*cuts, size]) if len(cuts) > 1 else None


def _line_break(content: pa.Buffer, start: int) -> int:
    """The offset of the first ``\\n`` of ``content`` at or after ``start``, or -1."""
    step = 1 << 16
    while start < content.size:
        at = content.slice(start, min(step, content.size - start)).to_pybytes().find(b"\n")
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
        return _quote_after_header(src.data)
    with open(src.path, "rb") as handle, \
            mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        return _quote_after_header(view)


def _quote_after_header(content) -> bool:
    """`has_quote` of ``content`` (bytes or a memory map)."""
    quote = content.find(b'"')
    if quote < 0:
        return False
    breaks = [at for at in (content.find(b"\n"), content.find(b"\r")) if at >= 0]
    header_end = min(breaks, default=len(content))
    return quote > header_end or content.find(b'"', header_end) >= 0


