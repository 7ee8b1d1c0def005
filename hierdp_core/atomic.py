"""Write a folder whole or not at all.

`staged_folder` hands out a fresh temporary folder beside the target; when the block ends
without error the temporary folder takes the target's place in one step, so a reader (or an
interrupt at any moment) sees either the old folder or the new one, never a mix. On Linux
the swap of an existing target is ``renameat2(RENAME_EXCHANGE)``, atomic; elsewhere the old
folder is renamed aside first (a short window without a target). A folder that is not a
hierdp release is never replaced.

Example
-------
>>> import tempfile, pathlib
>>> target = pathlib.Path(tempfile.mkdtemp()) / "out"
>>> with staged_folder(target, overwrite=False, marker="a.txt") as tmp:
...     _ = (tmp / "a.txt").write_text("new")
>>> (target / "a.txt").read_text()
'new'
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hierdp_core import interrupts
from hierdp_core.errors import InputError

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_STAGE_TAG = ".hierdp-staging-"


def _renameat2():
    """libc's renameat2, or None where there is none (not Linux / old glibc)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    libc = ctypes.CDLL(name, use_errno=True)
    return getattr(libc, "renameat2", None)


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths atomically; False where the system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc != 0:
        err = ctypes.get_errno()
        if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: not supported here
            return False
        raise OSError(err, os.strerror(err), str(a))
    return True


def _fsync_tree(folder: Path) -> None:
    for path in folder.iterdir():
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_stages(target: Path) -> None:
    """Staging folders left beside ``target`` by interrupted runs."""
    for stale in target.parent.glob(f".{target.name}{_STAGE_TAG}*"):
        shutil.rmtree(stale, ignore_errors=True)


def _unwritable(reason: str, target: Path, where: Path) -> InputError:
    at = "" if where == target else f" ({str(where)!r})"
    return InputError(f"cannot write the output folder {str(target)!r}: {reason}{at}")


def check_writable(target: str | Path) -> None:
    """Refuse, before any work, an output folder ``target`` that cannot be written: one
    line naming it and the reason (a read-only mount, permission denied, a file in the way,
    a mount point, which a release cannot replace whole by renaming). The test is the
    write itself: a staging folder made and removed in the nearest existing folder above
    ``target`` (where the release's staging folder and missing parents will go)."""
    target = Path(os.path.abspath(target))
    if os.path.ismount(target):
        raise _unwritable("it is a mount point, which a release cannot replace whole; give "
                          "a folder inside it", target, target)
    if target.exists() and not target.is_dir():
        raise _unwritable("it exists and is not a folder", target, target)
    where = target.parent
    while not where.exists():
        where = where.parent
    if not where.is_dir():
        raise _unwritable("a file is in the way, not a folder", target, where)
    try:
        os.rmdir(tempfile.mkdtemp(prefix=f".{target.name}{_STAGE_TAG}", dir=where))
    except OSError as exc:
        raise _unwritable((exc.strerror or str(exc)).lower(), target, where) from None


def check_target(target: Path, overwrite: bool, marker: str) -> None:
    """Refuse an existing non-empty target without ``overwrite``, and any non-empty folder
    that is not a release (has no ``marker`` file), whatever ``overwrite`` says."""
    if not target.exists():
        return
    if not target.is_dir():
        raise InputError(f"{str(target)!r} exists and is not a folder")
    if not any(target.iterdir()):
        return  # an empty folder: nothing to lose
    if not overwrite:
        raise InputError(f"{str(target)!r} exists; choose another --out (out= in Python), "
                         "or --overwrite (overwrite=True) to replace that release whole")
    if not (target / marker).exists():
        raise InputError(f"{str(target)!r} is a folder but not a release (no {marker}); "
                         "it is never replaced")


@contextlib.contextmanager
def staged_folder(target: str | Path, *, overwrite: bool, marker: str) -> Iterator[Path]:
    """A temporary folder beside ``target`` that replaces it whole when the block succeeds
    (and is removed when it fails). ``marker`` names the file every release folder holds."""
    target = Path(target)
    check_target(target, overwrite, marker)
    check_writable(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_stages(target)
        stage = target.parent / f".{target.name}{_STAGE_TAG}{secrets.token_hex(4)}"
        stage.mkdir()
    except OSError as exc:
        raise _unwritable((exc.strerror or str(exc)).lower(), target,
                          Path(exc.filename or target)) from None
    try:
        yield stage
        if interrupts.received():  # a Ctrl-C swallowed on its way (`hierdp_core.interrupts`)
            raise KeyboardInterrupt
        _fsync_tree(stage)
        check_target(target, overwrite, marker)  # it may have appeared meanwhile
        if target.exists():
            if not exchange(stage, target):
                aside = stage.with_name(stage.name + "-old")
                os.rename(target, aside)
                os.rename(stage, target)
                stage = aside
        else:
            os.rename(stage, target)
    except OSError as exc:  # a full disk, a mount gone read-only meanwhile...
        raise _unwritable((exc.strerror or str(exc)).lower(), target,
                          Path(exc.filename or target)) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
