"""A release's input file read ahead while the command starts.

pyarrow parses a file without Python's lock, so the parsing can run on the second core
while the command imports numpy, pandas and the mechanisms and reads the geography on the
first (about a second and a half before the rows are placed). `reading` starts
`hierdp_core.data.arrow_text.text_string_parts` of the file on a thread, each part of it
then on a thread of its own that holds at most `AHEAD` batches not yet taken (the memory
read ahead stays bounded); `read_parts`, which `hierdp_core.data.declared_rows.place_rows`
calls, gives those parts when they are of the same columns of the same file (unchanged
since: path, size, modification time, encoding, parts), else reads it as before. The
batches, and any error of the reading (raised where they are taken), are the ones
`text_string_parts` gives: what is placed, refused or read the careful way is the same.
Leaving `reading` (the command ended, or failed before its rows were placed) stops the
threads after the batch each is parsing; a part whose reader stops taking batches stops
too.

This module imports pyarrow only when a file is read ahead.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["AHEAD", "PARTS", "declared_columns", "read_parts", "reading"]

#: the parts of a large file read at once (`hierdp_core.data.arrow_text.text_string_parts`)
PARTS = 2
#: batches (about 8 MB of text each) a part's thread reads ahead of its reader at most:
#: two parts hold about 300 MB of strings (a batch's strings take about 13 MB), half of
#: the 330 MB benchmark file; fewer under a small memory limit (`reading`)
AHEAD = 12
#: the batches read ahead take at most this share of the release's memory limit
AHEAD_SHARE = 4
_BATCH_BYTES = 16 << 20  # a batch's strings, counted generously
_POLL = 0.05  # seconds between looks at the stop flag of a thread waiting to hand over
_END = object()
_AHEAD: list[_ReadAhead] = []  # the reading under way (one at most)


class _Failed:
    """An error of the reading, handed to the reader to raise."""

    def __init__(self, error: BaseException):
        self.error = error


class _Part:
    """One part's batches, read on a thread of its own into a bounded queue."""

    def __init__(self, batches: Iterator, stop: threading.Event, ahead: int):
        self.queue: queue.Queue = queue.Queue(ahead)
        self.stop = stop
        self.thread = threading.Thread(target=self._fill, args=(batches,), daemon=True,
                                       name="hierdp-read-ahead")
        self.thread.start()

    def _fill(self, batches: Iterator) -> None:
        try:
            for batch in batches:
                if not self._hand_over(batch):
                    return
            self._hand_over(_END)
        except Exception as exc:  # raised where the batches are taken
            self._hand_over(_Failed(exc))
        finally:
            if self.stop.is_set():  # what the reader no longer takes: nothing kept
                self._clear()

    def _hand_over(self, item) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator:
        try:
            while (item := self.queue.get()) is not _END:
                if isinstance(item, _Failed):
                    raise item.error
                yield item
        finally:  # the reader is done with this part: no more batches are read for it
            self.stop.set()
            self._clear()

    def _clear(self) -> None:
        with self.queue.mutex:
            self.queue.queue.clear()


class _ReadAhead:
    """`text_string_parts` of a file, started on a thread (`reading`)."""

    def __init__(self, key: tuple, read: Callable[[], list | None], ahead: int):
        self.key = key
        self.ahead = ahead
        self.stop = threading.Event()
        self.parts: list[_Part] = []
        self.result: list | None = None
        self.error: BaseException | None = None
        self.taken = False
        self.starter = threading.Thread(target=self._start, args=(read,), daemon=True,
                                        name="hierdp-read-ahead")
        self.starter.start()

    def _start(self, read: Callable[[], list | None]) -> None:
        try:
            readers = read()
        except Exception as exc:  # raised where the parts are asked for
            self.error = exc
            return
        if readers is not None and not self.stop.is_set():
            self.parts = [_Part(batches, threading.Event(), self.ahead) for batches in readers]
            self.result = [iter(part) for part in self.parts]

    def take(self) -> list | None:
        """The parts, as `text_string_parts` gives them (its error raised here)."""
        self.starter.join()
        if self.error is not None:
            raise self.error
        return self.result

    def close(self) -> None:
        self.stop.set()
        self.starter.join()
        for part in self.parts:
            part.stop.set()
        for part in self.parts:
            part.thread.join()


def declared_columns(levels: Sequence[str], categories: Sequence[str],
                     count: str | None) -> list[str]:
    """The columns a declared counts release reads, in the order
    `hierdp_core.data.declared_rows.place_rows` asks for them (and a reading ahead must
    match)."""
    return [*levels, *categories, *([count] if count else [])]


def _key(path, columns: Sequence[str], encoding: str | None, parts: int) -> tuple:
    """What makes a reading the same: the file (resolved path, size, modification time),
    the columns, the encoding and the parts."""
    where = Path(path).resolve()
    stat = os.stat(where)
    return str(where), stat.st_size, stat.st_mtime_ns, tuple(columns), encoding, parts


@contextmanager
def reading(path, columns: Sequence[str], encoding: str | None, parts: int,
            max_bytes: int, memory: int) -> Iterator[None]:
    """Within it, the ``columns`` of the delimited text file at ``path`` are read ahead in
    ``parts`` (`read_parts` takes them), the batches not yet taken within 1 / `AHEAD_SHARE`
    of ``memory`` (the release's limit, bytes; `AHEAD` a part at most, one at least); a
    file that cannot be (not found, over ``max_bytes``, not text) is not, and is read where
    it is asked for as before."""
    try:
        from hierdp_core.data.arrow_text import text_string_parts
        from hierdp_core.data.sources import resolve_source

        src = resolve_source(Path(path), None, max_bytes)
        key = _key(path, columns, encoding, parts)
    except Exception:  # the reader says what is wrong, where it always did
        yield
        return
    batches = int(min(AHEAD, max(1, memory // AHEAD_SHARE // (_BATCH_BYTES * parts))))
    ahead = _ReadAhead(key, lambda: text_string_parts(src, columns, encoding, parts=parts),
                       batches)
    _AHEAD.append(ahead)
    try:
        yield
    finally:
        _AHEAD.remove(ahead)
        ahead.close()


def read_parts(src, columns: Sequence[str], encoding: str | None, parts: int) -> list | None:
    """`text_string_parts` of the file ``src`` (a `hierdp_core.data.sources.Source`): the
    parts `reading` read ahead when they are the same (taken once), else read now."""
    from hierdp_core.data.arrow_text import text_string_parts

    if src.path is not None and _AHEAD:
        try:
            key = _key(src.path, columns, encoding, parts)
        except OSError:
            key = None
        ahead = _AHEAD[0]
        if key == ahead.key and not ahead.taken:
            ahead.taken = True  # once: a second reader of the file reads it itself
            return ahead.take()
    return text_string_parts(src, columns, encoding, parts=parts)
