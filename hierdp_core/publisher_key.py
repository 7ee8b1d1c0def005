"""The publisher's secret key, kept outside every release folder (by default
``$XDG_CONFIG_HOME/hierdp/fingerprint.key``, i.e. ``~/.config/hierdp/fingerprint.key``,
mode 0600). It keys the input fingerprint of a release (`keyed_fingerprint`: a plain hash
of the input would let someone who knows all records but one test guesses about the last
one) and signs its manifest (`hierdp_core.manifest_seal`, with a key derived from it).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from pathlib import Path

from hierdp_core.errors import InputError

KEY_FILE = "fingerprint.key"


def default_key_file() -> Path:
    """The publisher's key file: ``$XDG_CONFIG_HOME/hierdp/fingerprint.key``
    (``~/.config/hierdp/fingerprint.key`` when XDG_CONFIG_HOME is unset)."""
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "hierdp" / KEY_FILE


def publisher_key(key_file: str | Path | None, out_dir: Path | None) -> tuple[bytes, Path]:
    """The publisher's key (it keys the input fingerprint and signs manifests) read from
    ``key_file`` (default `default_key_file`), created (32 random bytes, mode 0600) when it
    does not exist; a key inside the release folder ``out_dir`` is refused, since
    everything in that folder may be published."""
    path = Path(key_file) if key_file else default_key_file()
    if out_dir is not None and path.resolve().is_relative_to(out_dir.resolve()):
        raise InputError(f"the key file {str(path)!r} lies inside the release folder "
                         f"{str(out_dir)!r}; keep it elsewhere (--key-file)")
    return _key(path, create=True), path


def local_key(key_file: str | Path | None = None) -> bytes | None:
    """The publisher's key when its file (``key_file``, default `default_key_file`) exists
    here, else None (never created: a reader of a release has no key)."""
    path = Path(key_file) if key_file else default_key_file()
    return _key(path, create=False) if key_file or path.exists() else None


def _key(path: Path, create: bool) -> bytes:
    """The key in ``path``, made there first when ``create`` and the file is absent."""
    try:
        if path.exists() or not create:
            key = bytes.fromhex(path.read_text().strip())
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            key = secrets.token_bytes(32)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(key.hex() + "\n")
    except ValueError:
        raise InputError(f"the key file {str(path)!r} does not hold a hex key") from None
    except OSError as exc:
        raise InputError(f"cannot use the key file {str(path)!r}: "
                         f"{exc.strerror or exc}") from None
    if len(key) < 16:
        raise InputError(f"the key in {str(path)!r} is shorter than 16 bytes")
    return key


def keyed_fingerprint(content: bytes | str | Path | list, key: bytes) -> str:
    """HMAC-SHA256 under a secret key (hex) of the input: its bytes, or the file at a path,
    or the files of a list of paths one after the other (a dataset's files, in order; read
    in blocks, never whole into memory). Files unchanged since the last call with the same
    key (path, size, modification time) are not read again: a release fingerprints its
    input for the ledger and for the manifest; nor are files `fingerprint_ahead` read
    (this waits for it)."""
    if isinstance(content, bytes):
        mac = hmac.new(key, digestmod=hashlib.sha256)
        mac.update(content)
        return mac.hexdigest()
    paths = content if isinstance(content, list) else [content]
    seen = _files_seen(paths, key)
    if _LAST_FILES[:1] == [seen]:
        return _LAST_FILES[1]
    thread, value = _AHEAD.pop(seen, (None, []))
    _AHEAD.clear()  # one at most, taken by the release that started it
    if thread is not None:
        thread.join()
    _LAST_FILES[:] = [seen, value[0] if value else _files_mac(paths, key)]
    return _LAST_FILES[1]


def fingerprint_ahead(path: str | Path, key_file: str | Path | None) -> None:
    """Start `keyed_fingerprint` of the file at ``path`` on a thread of its own when the
    publisher's key exists here (`local_key`; never made here): hashing lets go of
    Python's lock, so it runs beside a release's single-threaded stages. Anything amiss
    (no key, a bad key, no file) starts nothing, and `keyed_fingerprint` says it."""
    try:
        key = local_key(key_file)
        seen = _files_seen([path], key) if key is not None else None
    except (InputError, OSError):
        return
    if seen is None or _LAST_FILES[:1] == [seen] or seen in _AHEAD:
        return
    value: list[str] = []

    def run() -> None:
        try:
            value.append(_files_mac([path], key))
        except OSError:  # `keyed_fingerprint` reads the file again and says what is wrong
            pass

    thread = threading.Thread(target=run, daemon=True, name="hierdp-fingerprint")
    _AHEAD.clear()
    _AHEAD[seen] = (thread, value)
    thread.start()


def _files_seen(paths: list, key: bytes) -> tuple:
    """What makes a fingerprint of files the same: a digest of the key, each file's
    resolved path, size and modification time."""
    return (hashlib.sha256(key).digest(),
            tuple((str(Path(p).resolve()), os.stat(p).st_size, os.stat(p).st_mtime_ns)
                  for p in paths))


def _files_mac(paths: list, key: bytes) -> str:
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for path in paths:
        with open(path, "rb") as handle:
            for block in iter(lambda h=handle: h.read(1 << 20), b""):
                mac.update(block)
    return mac.hexdigest()


#: the files last fingerprinted (`_files_seen`) and their fingerprint
_LAST_FILES: list = []
#: fingerprints under way (`fingerprint_ahead`): their thread and, once done, the value
_AHEAD: dict[tuple, tuple[threading.Thread, list[str]]] = {}
