"""Write a Release to disk: the release table (CSV and/or Parquet) and ``manifest.json``.

The manifest says how the release was made (mechanism, parameters, privacy definition and
budget, split and ledger, randomness, hierdp version, input fingerprint, timestamp) and holds
no true value. The input fingerprint is an HMAC-SHA256 keyed by a secret that stays with the
publisher (``private/fingerprint.key``, never to be published): a plain hash of the input
would let someone who knows all records but one test guesses about the last one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import io
import json
import secrets
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core import __version__
from hierdp_core.errors import InputError
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.release import Release

MANIFEST = "manifest.json"
RELEASE_CSV = "release.csv"
RELEASE_PARQUET = "release.parquet"
PRIVATE_DIR = "private"
KEY_FILE = "fingerprint.key"


def keyed_fingerprint(content: bytes, key: bytes) -> str:
    """HMAC-SHA256 of the input bytes under a secret key (hex)."""
    return hmac.new(key, content, hashlib.sha256).hexdigest()


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def build_manifest(release: Release, *, input_spec: dict | None = None,
                   input_fingerprint: dict | None = None, files: dict | None = None) -> dict:
    """The manifest as a dict (JSON-ready). ``input_spec`` records how the input was read
    (level columns, count column, categories): public facts, no values."""
    info = get_mechanism(release.mechanism).info
    ledger = release.ledger.replace({np.nan: None}).to_dict(orient="records")
    manifest = {
        "format": "hierdp-release/1",
        "hierdp_version": __version__,
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mechanism": {
            "name": info.name, "description": info.description, "reference": info.reference,
            "private": info.private, "consistent": info.consistent,
            "warning": info.warning or None,
        },
        "parameters": release.parameters,
        "privacy": release.privacy,
        "split": {row["level_name"]: row["share"] for row in ledger},
        "ledger": ledger,
        "randomness": release.randomness,
        **release.manifest_structure(),
        "invariants": list(release.invariants),
        "integer_values": release.is_integer,
        "input": {**(input_spec or {}), "fingerprint": input_fingerprint},
        "files": files or {},
    }
    return _jsonable(manifest)


def write_release(
    release: Release,
    out_dir: str | Path,
    *,
    formats: tuple[str, ...] = ("csv",),
    input_spec: dict | None = None,
    input_bytes: bytes | None = None,
) -> dict[str, Path]:
    """Write the release files and the manifest into ``out_dir``; return their paths.

    With ``input_bytes`` a fresh secret key is written to ``out_dir/private/fingerprint.key``
    and the manifest carries the keyed fingerprint of the input.
    """
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create output folder {str(out)!r}: {exc.strerror}") from None
    unknown = set(formats) - {"csv", "parquet"}
    if unknown:
        raise InputError(f"unknown export format(s) {sorted(unknown)}; use csv or parquet")
    table = release.to_frame()
    paths: dict[str, Path] = {}
    if "csv" in formats:
        paths["csv"] = out / RELEASE_CSV
        table.to_csv(paths["csv"], index=False)
    if "parquet" in formats:
        paths["parquet"] = out / RELEASE_PARQUET
        table.to_parquet(paths["parquet"], index=False)
    fingerprint = None
    if input_bytes is not None:
        key = secrets.token_bytes(32)
        (out / PRIVATE_DIR).mkdir(exist_ok=True)
        paths["key"] = out / PRIVATE_DIR / KEY_FILE
        paths["key"].write_text(key.hex() + "\n")
        fingerprint = {
            "method": "hmac-sha256",
            "value": keyed_fingerprint(input_bytes, key),
            "key": f"kept by the publisher in {PRIVATE_DIR}/{KEY_FILE}; do not publish it",
        }
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
             for kind, p in paths.items() if kind != "key"}
    manifest = build_manifest(release, input_spec=input_spec, input_fingerprint=fingerprint,
                              files=files)
    paths["manifest"] = out / MANIFEST
    paths["manifest"].write_text(json.dumps(manifest, indent=2))
    return paths


def read_release(release_dir: str | Path) -> tuple[pd.DataFrame, dict]:
    """The release table and manifest of a release folder."""
    d = Path(release_dir)
    manifest_path = d / MANIFEST
    if not manifest_path.exists():
        raise InputError(f"no {MANIFEST} in {str(d)!r}: not a hierdp release folder")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{manifest_path} is not valid JSON: {exc}") from None
    if (d / RELEASE_PARQUET).exists() and not (d / RELEASE_CSV).exists():
        table = pd.read_parquet(d / RELEASE_PARQUET)
    elif (d / RELEASE_CSV).exists():
        table = pd.read_csv(d / RELEASE_CSV, dtype={"node_id": str, "parent_id": str,
                                                    "label": str, "category": str},
                            keep_default_na=False)
    else:
        raise InputError(f"no {RELEASE_CSV} or {RELEASE_PARQUET} in {str(d)!r}")
    return table, manifest


# ---- in-memory exports (dashboard downloads) ---------------------------------------------
def release_table_bytes(release: Release, fmt: str) -> bytes:
    """The release table as a file's bytes: ``fmt`` "csv" or "parquet", the same table
    `write_release` writes (the CSV bytes are identical to ``release.csv``)."""
    table = release.to_frame()
    if fmt == "csv":
        return table.to_csv(index=False).encode("utf-8")
    if fmt == "parquet":
        buffer = io.BytesIO()
        table.to_parquet(buffer, index=False)
        return buffer.getvalue()
    raise InputError(f"unknown export format {fmt!r}; use csv or parquet")


def manifest_bytes(release: Release, *, input_spec: dict | None = None) -> bytes:
    """`build_manifest` as JSON bytes, formatted as `write_release` writes it (without
    the input fingerprint and file hashes, which need the files)."""
    return json.dumps(build_manifest(release, input_spec=input_spec), indent=2).encode("utf-8")


def release_geojson(release: Release, geojson: dict, level: int) -> dict:
    """The released values of one level joined to their geometry, as a GeoJSON dict.

    A node matches the feature whose ``id`` (as a string) equals the node's code at that
    level (``release.hierarchy.codes[level]``); when the codes of the level are not unique
    (local codes) or a code has no feature, the node's path id (``node_id``) is tried
    instead. Each output feature has the node's geometry (shared with the input, not
    copied) and the properties ``node_id, label, level_name, value`` (the released total)
    and, with categories, one property per category (named ``category <name>`` if it
    would clash with those four). Only released values are used, never the truth. Nodes
    without geometry are listed by node id in the top-level ``missing_geometry``.
    """
    h = release.hierarchy
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) \
            or not 0 <= level < h.n_levels:
        raise InputError(f"level must be an integer from 0 to {h.n_levels - 1}, got {level!r}")
    if not isinstance(geojson, dict) or not isinstance(geojson.get("features"), list):
        raise InputError("geojson must be a FeatureCollection dict with a 'features' list")
    geometry: dict[str, dict] = {}
    for feature in geojson["features"]:
        if isinstance(feature, dict) and feature.get("id") is not None:
            geometry.setdefault(str(feature["id"]), feature.get("geometry"))
    sl = h.level_slice(level)
    codes = np.asarray(h.codes[level]).astype(str)
    codes_unique = len(set(codes.tolist())) == codes.size
    node_ids = h.node_ids()[sl]
    labels = h.labels()[sl]
    values = release.values[sl]
    totals = values.sum(axis=1)
    base = ("node_id", "label", "level_name", "value")
    cat_keys = []
    if release.categories is not None:
        cat_keys = [f"category {c}" if c in base else str(c) for c in release.categories]
    level_name = h.level_names[level]
    features, missing = [], []
    for i, (code, node_id) in enumerate(zip(codes, node_ids, strict=True)):
        key = code if codes_unique and code in geometry else node_id
        if key not in geometry:
            missing.append(str(node_id))
            continue
        props = {"node_id": str(node_id), "label": str(labels[i]), "level_name": level_name,
                 "value": _jsonable(totals[i])}
        for c, key_name in enumerate(cat_keys):
            props[key_name] = _jsonable(values[i, c])
        features.append({"type": "Feature", "id": str(key), "geometry": geometry[key],
                         "properties": props})
    return {"type": "FeatureCollection", "features": features,
            "missing_geometry": missing}
