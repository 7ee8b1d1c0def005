"""Whether the input files of a release changed while it read them.

A release reads its input once, in parts on several threads, and keys its budget ledger by
a fingerprint of the same files read on a thread of its own. A file written, truncated or
replaced meanwhile (another program still writing it, a copy under way) would give a
release of rows no single version of the file holds, published as if whole. `file_states`
records each file's size, modification time and identity; `watching` records them as the
command starts (before its modules are imported, while the input is read ahead) and
`states_at_start` gives them back; `check_unchanged` refuses the release
(`InputChangedError`) when any has moved, before any noise is drawn or budget spent, and
`unchanged_input` does both around a release (an error of reading a file that changed is
told as the change). Not caught: a rewrite of the same size within the file system's time
tick, and a change after the check while the ledger's fingerprint is still being hashed.

Example
-------
>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "t.csv")
>>> _ = open(path, "w").write("a,n\\n1,2\\n")
>>> states = file_states([path])
>>> check_unchanged(states)  # nothing changed: nothing said
>>> _ = open(path, "a").write("2,3\\n")
>>> check_unchanged(states)
Traceback (most recent call last):
...
hierdp_core.errors.InputChangedError: t.csv changed while the release read it (its size went from 8 to 12 bytes): nothing was released and no budget spent; release it again once the file is complete
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hierdp_core.errors import HierdpError, InputChangedError

__all__ = ["FileState", "changed", "check_unchanged", "file_states", "states_at_start",
           "unchanged_input", "watching"]


@dataclass(frozen=True)
class FileState:
    """A file's path and what tells a change: size, modification time (ns), device and
    inode (a file replaced by another at the same path has another)."""

    path: str
    size: int
    mtime_ns: int
    identity: tuple[int, int]


def _state(path) -> FileState | None:
    try:
        stat = os.stat(path)
    except OSError:  # not there (the reader says so), or not a local file
        return None
    return FileState(str(path), stat.st_size, stat.st_mtime_ns, (stat.st_dev, stat.st_ino))


def file_states(paths) -> list[FileState]:
    """The state of each file of ``paths`` that exists now (others are left to the
    reader, which says what is wrong)."""
    return [s for s in map(_state, paths) if s is not None]


#: the files' states recorded by the `watching` under way, by absolute path
_WATCHED: dict[str, FileState] = {}


@contextmanager
def watching(paths) -> Iterator[None]:
    """Within it, the state of each file of ``paths`` as it was on entering (unless an
    outer one recorded it first) is what `states_at_start` gives."""
    recorded = [s for s in file_states(paths) if os.path.abspath(s.path) not in _WATCHED]
    _WATCHED.update((os.path.abspath(s.path), s) for s in recorded)
    try:
        yield
    finally:
        for s in recorded:
            _WATCHED.pop(os.path.abspath(s.path), None)


def states_at_start(paths) -> list[FileState]:
    """The state of each file of ``paths`` that `watching` recorded as the command
    started, else as it is now (files not there are left out: the reader says so)."""
    states = (_WATCHED.get(os.path.abspath(path)) or _state(path) for path in paths)
    return [state for state in states if state is not None]


def changed(states: list[FileState]) -> str | None:
    """The refusal's words (the file's name, what changed) for the first of the files
    recorded in ``states`` that is no longer as it was, or None when none changed."""
    for before in states:
        now = _state(before.path)
        how = ("it was removed" if now is None
               else "it was replaced by another file" if now.identity != before.identity
               else f"its size went from {before.size:,} to {now.size:,} bytes"
               if now.size != before.size
               else "it was written to" if now.mtime_ns != before.mtime_ns else None)
        if how is not None:
            return (f"{Path(before.path).name} changed while the release read it ({how}): "
                    "nothing was released and no budget spent; release it again once the "
                    "file is complete")
    return None


def check_unchanged(states: list[FileState]) -> None:
    """Refuse (`InputChangedError`, the words of `changed`) when a file recorded in
    ``states`` changed since."""
    if (what := changed(states)) is not None:
        raise InputChangedError(what)


@contextmanager
def unchanged_input(paths) -> Iterator[Callable[[], None]]:
    """Around a release of the files ``paths``: gives the check to call before its budget
    is spent (`check_unchanged` against `states_at_start`); a `HierdpError` raised within
    (a file cut short reads as a malformed one) is told as the change when a file
    changed."""
    states = states_at_start(paths)
    try:
        yield lambda: check_unchanged(states)
    except InputChangedError:
        raise
    except HierdpError:
        check_unchanged(states)
        raise
