"""A manifest's seal, which makes it tamper-evident (DESIGN principle 8).

* ``checksum``: the sha256 of the manifest's canonical JSON (`canonical_json`: the manifest
  without ``checksum`` and ``signature``, keys sorted, no spaces, UTF-8). Anyone can
  recompute it: it catches an edit, not a forger who recomputes it too.
* ``signature``: the HMAC-SHA256 of the same bytes under a key derived from the
  publisher's local key (`signing_key`; the key file of `hierdp_core.publisher_key`,
  never in a release folder), with the key's public ``key_id``. Only a holder of the key
  can make or check it.

The manifest's ``files`` (each release file's sha256) are covered by both, so a file
changed after the release was written is caught through them
(`hierdp_core.export.verify_release_files`).

Example
-------
>>> sealed = seal({"epsilon": 1.0}, b"k" * 32)
>>> check_seal(sealed, b"k" * 32)
'signature'
>>> check_seal({**sealed, "epsilon": 0.01}, None)
Traceback (most recent call last):
...
hierdp_core.errors.ManifestError: the manifest was edited after it was written: its checksum does not match its content
"""

from __future__ import annotations

import hashlib
import hmac
import json

from hierdp_core.errors import ManifestError

CHECKSUM = "checksum"
SIGNATURE = "signature"
CANONICAL = ("sha256 of the manifest without 'checksum' and 'signature' as JSON with keys "
             "sorted, separators ',' and ':', UTF-8")


def canonical_json(manifest: dict) -> bytes:
    """The bytes the checksum and signature cover: the manifest without its seal, JSON with
    sorted keys and no spaces, UTF-8 (the same bytes after a JSON round trip)."""
    body = {k: v for k, v in manifest.items() if k not in (CHECKSUM, SIGNATURE)}
    return json.dumps(body, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def manifest_checksum(manifest: dict) -> str:
    """The hex sha256 of `canonical_json`."""
    return hashlib.sha256(canonical_json(manifest)).hexdigest()


def signing_key(key: bytes) -> bytes:
    """The key that signs manifests, derived from the publisher's key (the same key also
    keys the input fingerprint: each use gets its own)."""
    return hmac.new(key, b"hierdp manifest signature/1", hashlib.sha256).digest()


def key_id(key: bytes) -> str:
    """A public name of a publisher's key (16 hex digits), telling keys apart."""
    return hashlib.sha256(b"hierdp key id/1" + key).hexdigest()[:16]


def signature(manifest: dict, key: bytes) -> str:
    """The hex HMAC-SHA256 of `canonical_json` under `signing_key`."""
    return hmac.new(signing_key(key), canonical_json(manifest), hashlib.sha256).hexdigest()


def seal(manifest: dict, key: bytes | None) -> dict:
    """``manifest`` with its ``checksum`` and, with the publisher's ``key``, its
    ``signature`` (last, after every other field)."""
    body = {k: v for k, v in manifest.items() if k not in (CHECKSUM, SIGNATURE)}
    out = {**body, CHECKSUM: {"method": CANONICAL, "value": manifest_checksum(body)}}
    if key is not None:
        out[SIGNATURE] = {"method": "hmac-sha256 of the same bytes, under a key derived from "
                                    "the publisher's key (kept outside the release folder)",
                          "key_id": key_id(key), "value": signature(body, key)}
    return out


def check_seal(manifest: dict, key: bytes | None) -> str:
    """Check the checksum and, with ``key`` (the local publisher's key), the signature;
    return what was checked (``"signature"`` or ``"checksum"``); a `ManifestError` naming
    what is wrong otherwise."""
    recorded = _value(manifest, CHECKSUM)
    if recorded is None:
        raise ManifestError("the manifest has no checksum: it was written by an older hierdp "
                            "or its seal was removed")
    if not hmac.compare_digest(recorded, manifest_checksum(manifest)):
        raise ManifestError("the manifest was edited after it was written: its checksum "
                            "does not match its content")
    if key is None:
        return "checksum"
    signed = _value(manifest, SIGNATURE)
    if signed is None:
        raise ManifestError("the manifest is not signed, though a signature key is here: its "
                            "signature was removed, or it was written without a key")
    their_id = (manifest.get(SIGNATURE) or {}).get("key_id")
    if their_id != key_id(key):
        raise ManifestError(f"the manifest was signed with another key (id {their_id}, the "
                            f"key here is {key_id(key)}): give its key with --key-file")
    if not hmac.compare_digest(signed, signature(manifest, key)):
        raise ManifestError("the manifest's signature does not match: it was edited after it "
                            "was written (and its checksum recomputed)")
    return "signature"


def _value(manifest: dict, field: str) -> str | None:
    """The hex ``value`` of a seal field, or None when absent or malformed."""
    record = manifest.get(field)
    value = record.get("value") if isinstance(record, dict) else None
    return value if isinstance(value, str) else None
