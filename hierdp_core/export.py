"""Write a Release to disk: the release table (CSV and/or Parquet) and ``manifest.json``.

The manifest says how the release was made (mechanism, parameters, privacy definition and
budget, the mechanism's privacy plan (`hierdp_core.privacy.plan`), split and ledger,
randomness with the privacy loss of every secure measurement, hierdp version, input
fingerprint, timestamp, and how the cells' ``lower``/``upper`` intervals were computed when
the release has them), whether it is publishable and why not (`hierdp_core.verdict`, with
the public epsilon ceiling), the table rules of its released values
(`hierdp_core.table_rules`), and holds no true value. It is sealed: its checksum and
signature (`hierdp_core.manifest_seal`) are checked, with the files' sha256, by
`verify_release` and `read_release`. The input fingerprint is an HMAC-SHA256
keyed by a secret that stays with the publisher, outside the release folder (by default
``$XDG_CONFIG_HOME/hierdp/fingerprint.key``, i.e. ``~/.config/hierdp/fingerprint.key``): a
plain hash of the input would let someone who knows all records but one test guesses about
the last one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from hierdp_core import __version__
from hierdp_core.atomic import staged_folder
from hierdp_core.data.arrow_io import release_csv_bytes, write_release_csv
from hierdp_core.errors import InputError
from hierdp_core.groupsizes.data import size_coding
from hierdp_core.manifest_seal import check_seal, seal
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.publisher_key import (  # noqa: F401  (default_key_file, keyed_fingerprint: API)
    default_key_file,
    keyed_fingerprint,
    local_key,
    publisher_key,
)
from hierdp_core.releases import Release, ReleaseRecord
from hierdp_core.table_rules import table_rules, written_table_rules
from hierdp_core.verdict import DEFAULT_MAX_DELTA, DEFAULT_MAX_EPSILON, release_verdict

MANIFEST = "manifest.json"
RELEASE_CSV = "release.csv"
RELEASE_PARQUET = "release.parquet"
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


def build_manifest(release: ReleaseRecord, *, structure_declared: bool,
                   input_spec: dict | None = None, input_fingerprint: dict | None = None,
                   files: dict | None = None, max_epsilon: float = DEFAULT_MAX_EPSILON,
                   rules: dict | None = None, max_delta: float = DEFAULT_MAX_DELTA) -> dict:
    """The manifest as a dict (JSON-ready, not sealed: `hierdp_core.manifest_seal.seal`).
    ``input_spec`` records how the input was read (level columns, count column,
    categories): public facts, no values. ``structure_declared``: the release's shape came
    from public declarations, not from the data, and ``max_epsilon`` and ``max_delta`` the
    public ceilings (conditions of the publishable verdict). ``rules``: the table rules when the release's
    values are not in memory (default: `hierdp_core.table_rules.table_rules`)."""
    mechanism = get_mechanism(release.mechanism)
    info = mechanism.info
    ledger = release.ledger.replace({np.nan: None}).to_dict(orient="records")
    manifest = {
        "format": "hierdp-release/1",
        **release_verdict(release, structure_declared=structure_declared,
                          max_epsilon=max_epsilon, max_delta=max_delta),
        "table_rules": rules or table_rules(release),
        "structure": "declared" if structure_declared else "from-data",
        "hierdp_version": __version__,
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "mechanism": {
            "name": info.name, "description": info.description, "reference": info.reference,
            "private": info.private, "consistent": info.consistent,
            "warning": info.warning or None,
        },
        "parameters": release.parameters,
        "privacy": {**release.privacy, "plan": mechanism.release_plan(release).as_dict()},
        "split": {row["level_name"]: row["share"] for row in ledger},
        "ledger": ledger,
        "randomness": release.randomness,
        **release.manifest_structure(),
        **({"size_coding": size_coding(release.categories)}
           if "group-sizes" in info.queries and release.categories else {}),
        "invariants": list(release.invariants),
        "integer_values": release.is_integer,
        **intervals_record(release),
        "input": {**(input_spec or {}), "fingerprint": input_fingerprint},
        "files": files or {},
    }
    return _jsonable(manifest)


def intervals_record(release: ReleaseRecord) -> dict:
    """``{"intervals": record}`` for a release with intervals (any query kind, see
    `hierdp_core.intervals`), else ``{}`` (``--interval none``)."""
    intervals = getattr(release, "intervals", None)
    return {} if intervals is None else {"intervals": intervals.record}


def check_formats(formats) -> None:
    """An `InputError` for a list of export formats that cannot be written (unknown, none,
    or both parquet forms): the command line and the API check it before anything is
    charged."""
    unknown = set(formats) - {"csv", "parquet", "parquet-dataset"}
    if unknown or not formats:
        raise InputError(f"unknown export format(s) {sorted(unknown)}; use csv, parquet or "
                         "parquet-dataset")
    if {"parquet", "parquet-dataset"} <= set(formats):
        raise InputError("give parquet (one file) or parquet-dataset (a file per top-level "
                         "unit), not both")


def write_release(
    release: Release,
    out_dir: str | Path,
    *,
    formats: tuple[str, ...] = ("csv",),
    structure_declared: bool,
    input_spec: dict | None = None,
    input_content: bytes | str | Path | list | None = None,
    key_file: str | Path | None = None,
    overwrite: bool = False,
    max_epsilon: float = DEFAULT_MAX_EPSILON,
    max_delta: float = DEFAULT_MAX_DELTA,
) -> dict[str, Path]:
    """Write the release files and the manifest (with every file's sha256) into ``out_dir``
    whole or not at all (`hierdp_core.atomic.staged_folder`): an existing release there is
    replaced whole with ``overwrite``, refused without; return the files' paths.

    The manifest is sealed (`hierdp_core.manifest_seal`) and signed with the publisher's key
    (``key_file``, see `publisher_key`; its path is returned as ``"key"``; it never lies in
    ``out_dir``); with ``input_content`` (the input's bytes, or its path) it carries the
    input's fingerprint keyed by the same key. ``max_epsilon``, ``max_delta``: the public
    ceilings of the verdict (`hierdp_core.verdict`). The format ``parquet-dataset``
    writes the table as a Parquet dataset partitioned by top-level unit
    (`hierdp_core.engine.partitioned`), every part listed with its sha256.
    """
    out = Path(out_dir)
    if hasattr(release, "move_into") and tuple(formats) != ("parquet-dataset",):
        raise InputError("a release whose parts the workers wrote is a parquet-dataset; "
                         "write csv or parquet from the in-memory release")
    check_formats(formats)
    paths: dict[str, Path] = {}
    fingerprint = None
    key, paths["key"] = publisher_key(key_file, out)  # first: a refused key writes nothing
    if input_content is not None:
        fingerprint = {
            "method": "hmac-sha256",
            "value": keyed_fingerprint(input_content, key),
            "key": "kept by the publisher outside the release folder; never published",
        }
    table = release.to_arrow() if {"csv", "parquet"} & set(formats) else None
    names = {"csv": RELEASE_CSV, "parquet": RELEASE_PARQUET}
    try:
        with staged_folder(out, overwrite=overwrite, marker=MANIFEST) as stage:
            if "csv" in formats:
                write_release_csv(table, stage / RELEASE_CSV)
            if "parquet" in formats:
                pq.write_table(table, stage / RELEASE_PARQUET)
            files = {names[f]: file_sha256(stage / names[f]) for f in ("csv", "parquet")
                     if f in formats}
            if "parquet-dataset" in formats:
                from hierdp_core.engine.partitioned import write_dataset

                files.update(write_dataset(release, stage))
            rules = written_table_rules(release, stage) if hasattr(release, "move_into") \
                else None
            manifest = build_manifest(release, structure_declared=structure_declared,
                                      input_spec=input_spec, input_fingerprint=fingerprint,
                                      files=files, max_epsilon=max_epsilon, rules=rules,
                                      max_delta=max_delta)
            (stage / MANIFEST).write_text(json.dumps(seal(manifest, key), indent=2))
    finally:  # the workers' parts (`hierdp_core.engine.written`) never outlive the call
        if hasattr(release, "discard"):
            release.discard()
    paths.update({f: out / names[f] for f in ("csv", "parquet") if f in formats})
    if "parquet-dataset" in formats:
        paths["parquet-dataset"] = out / RELEASE_PARQUET
    paths["manifest"] = out / MANIFEST
    return paths


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def bytes_sha256(data: bytes) -> str:
    """The hex sha256 of a file's bytes in memory (as `file_sha256` of the file)."""
    return hashlib.sha256(data).hexdigest()


def manifest_path(folder: Path) -> Path:
    """The manifest of a release folder: its ``manifest.json``, else its one
    ``*_manifest.json`` (a manifest saved from the dashboard under its download name)."""
    named = sorted(folder.glob(f"*_{MANIFEST}"))
    return named[0] if not (folder / MANIFEST).exists() and len(named) == 1 \
        else folder / MANIFEST


def verify_release_files(folder: Path, manifest: dict) -> None:
    """Every file the manifest lists exists with its recorded sha256, and no release table
    lies in the folder unlisted; otherwise an `InputError` naming the file."""
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise InputError(f"the manifest in {str(folder)!r} lists no file hashes: the release "
                         "cannot be checked")
    from hierdp_core.engine.partitioned import is_dataset_file, unlisted_parts

    for name, expected in files.items():
        path = folder / name
        if (Path(name).name != name and not is_dataset_file(name)) or not path.is_file():
            raise InputError(f"{name!r}, listed in the manifest, is missing from "
                             f"{str(folder)!r}")
        if file_sha256(path) != expected:
            raise InputError(f"{str(path)!r} does not match the sha256 in the manifest: the "
                             "file was changed or truncated after the release was written")
    for name in [*(n for n in (RELEASE_CSV, RELEASE_PARQUET) if (folder / n).is_file()),
                 *unlisted_parts(folder, files)]:
        if name not in files:
            raise InputError(f"{name!r} in {str(folder)!r} is not listed in the manifest")


def checked_manifest(release_dir: str | Path, key_file: str | Path | None = None,
                     checksum_only: bool = False) -> tuple[dict, str]:
    """The manifest of a release folder (`manifest_path`) with what was checked: its seal (checksum, and
    signature when the publisher's key is here, `local_key`, unless ``checksum_only``:
    `hierdp_core.manifest_seal.check_seal`) and every file against the sha256 it records
    (`verify_release_files`). An edited manifest is a `ManifestError`, any other fault an
    `InputError`."""
    d = Path(release_dir)
    path = manifest_path(d)
    if not path.exists():
        raise InputError(f"no {MANIFEST} in {str(d)!r}: not a hierdp release folder")
    try:
        manifest = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise InputError(f"{path} is not a hierdp manifest")
    checked = check_seal(manifest, None if checksum_only else local_key(key_file))
    verify_release_files(d, manifest)
    return manifest, checked


def verify_release(release_dir: str | Path, key_file: str | Path | None = None,
                   checksum_only: bool = False) -> str:
    """One line saying what `checked_manifest` found sound (``hierdp verify``)."""
    manifest, checked = checked_manifest(release_dir, key_file, checksum_only)
    files = f"{len(manifest['files'])} file(s)"
    if checked == "signature":
        return (f"verified: {files}, the manifest's checksum and its signature "
                f"(key {manifest['signature']['key_id']}) match")
    why = "signature not checked (--checksum-only)" if checksum_only else \
        "no signature key here: checksum only"
    return f"verified: {files} and the manifest's checksum match; {why}"


def read_release(release_dir: str | Path,
                 key_file: str | Path | None = None) -> tuple[pd.DataFrame, dict]:
    """The release table and manifest of a release folder, its manifest's seal and every
    file checked first (`checked_manifest`)."""
    d = Path(release_dir)
    manifest, _ = checked_manifest(d, key_file)
    if (d / RELEASE_PARQUET).is_dir() and not (d / RELEASE_CSV).exists():
        from hierdp_core.engine.partitioned import read_dataset

        table = read_dataset(d, manifest["files"])
    elif (d / RELEASE_PARQUET).exists() and not (d / RELEASE_CSV).exists():
        table = pd.read_parquet(d / RELEASE_PARQUET)
    elif (d / RELEASE_CSV).exists():
        table = pd.read_csv(d / RELEASE_CSV, dtype={"node_id": str, "parent_id": str,
                                                    "label": str, "category": str},
                            keep_default_na=False)
    else:
        raise InputError(f"no {RELEASE_CSV} or {RELEASE_PARQUET} in {str(d)!r}")
    return table, manifest


# ---- in-memory exports (dashboard downloads) ---------------------------------------------
def release_table_bytes(release: ReleaseRecord, fmt: str) -> bytes:
    """The release table as a file's bytes: ``fmt`` "csv" or "parquet", the same table
    `write_release` writes (the CSV bytes are identical to ``release.csv``)."""
    table = release.to_arrow()
    if fmt == "csv":
        return release_csv_bytes(table)
    if fmt == "parquet":
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        return buffer.getvalue()
    raise InputError(f"unknown export format {fmt!r}; use csv or parquet")


def manifest_bytes(release: ReleaseRecord, *, structure_declared: bool,
                   input_spec: dict | None = None, files: dict | None = None,
                   max_epsilon: float = DEFAULT_MAX_EPSILON,
                   max_delta: float = DEFAULT_MAX_DELTA) -> bytes:
    """`build_manifest` as JSON bytes, sealed and signed with the publisher's key and
    formatted as `write_release` writes it. ``files``: file name -> sha256 of the table
    files offered beside it (`bytes_sha256`), which `verify_release` checks; no input
    fingerprint (it needs the input's bytes: null)."""
    manifest = build_manifest(release, structure_declared=structure_declared,
                              input_spec=input_spec, files=files, max_epsilon=max_epsilon,
                              max_delta=max_delta)
    key, _ = publisher_key(None, None)
    return json.dumps(seal(manifest, key), indent=2).encode("utf-8")


def release_geojson(release: Release, geojson: dict, level: int) -> dict:
    """The released values of one level joined to their geometry, as a GeoJSON dict.

    A node matches the feature whose ``id`` (as a string) equals the node's code at that
    level (``release.hierarchy.codes[level]``); when the codes of the level are not unique
    (local codes) or a code has no feature, the node's path id (``node_id``) is tried
    instead. Each output feature has the node's geometry (shared with the input, not
    copied) and the properties ``node_id, label, level_name, value`` (the released total)
    and, with categories, one property per category (named ``category <name>`` if it
    would clash with those four); a release with intervals adds ``lower`` and ``upper``
    (with categories ``lower <name>`` and ``upper <name>`` per category: the total has
    none). Only released values are used, never the truth. Nodes without geometry are
    listed by node id in the top-level ``missing_geometry``.
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
    bounds = _interval_properties(release, sl, cat_keys)
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
        for key_name, column in bounds:
            props[key_name] = _jsonable(column[i])
        features.append({"type": "Feature", "id": str(key), "geometry": geometry[key],
                         "properties": props})
    return {"type": "FeatureCollection", "features": features,
            "missing_geometry": missing}


def _interval_properties(release: Release, sl: slice, cat_keys: list) -> list:
    """(property name, values of the level's nodes) of each interval bound of a GeoJSON
    feature (`release_geojson`); none for a release without intervals."""
    if release.intervals is None:
        return []
    return [(f"{side} {name}".strip(), getattr(release.intervals, side)[sl][:, c])
            for side in ("lower", "upper") for c, name in enumerate(cat_keys or [""])]
