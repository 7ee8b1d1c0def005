"""Boundaries and centroids for maps: the bundled real samples', and boundaries a user
uploaded (`register`, built by `geo.upload`), all read through the same functions by a
*source* name (a sample name, or ``upload-<content hash>``).

The files live in ``sample_data/geo/`` (derived by ``scripts/derive_sample_data.py``; sources
and licences in ``sample_data/README.md``):

- ``<sample>/<level>.geojson.gz``: a GeoJSON FeatureCollection per level. Every feature's
  ``id`` is the level VALUE used in the sample table (the node's code: ``'06037'``,
  ``'058091'``), ``properties.name`` its readable name. Geometries are MultiPolygons in
  lon/lat (WGS84/NAD83), coordinates rounded to 4 decimals, exterior rings clockwise and
  holes counter-clockwise (the d3 / TopoJSON convention that Plotly's ``geo`` traces
  expect; MapLibre/deck.gl ignore the winding).
- ``centroids.parquet``: sample, level, id, lon, lat (area centroid of the unsimplified
  unit, or a point on its surface when the centroid falls outside it).
- ``index.json``: per sample and level the file, the number of features and the bounding box.

Coverage (checked by ``tests/test_geo.py``): every unit of every level has a feature, except
two US counties: 51515 Bedford City (merged into Bedford County in 2013, no boundary in the
2017 files) and 51610 Falls Church City (collapsed to zero area by us-atlas' quantisation;
it has a centroid). See `missing_units`.

Example
-------
>>> available_levels("us-counties")
['state', 'county']
>>> fc = level_geojson("us-counties", "state")
>>> len(fc["features"]), fc["features"][0]["id"], fc["features"][0]["properties"]["name"]
(51, '01', 'Alabama')
>>> level_geojson("synthetic-us-like", "state") is None
True
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
from pathlib import Path

import pandas as pd

from hierdp_core.errors import InputError
from hierdp_core.geo.match import GeoMatch, Reference, Units, match_units

GEO_DIR = Path(__file__).resolve().parents[2] / "sample_data" / "geo"

#: Units of the sample tables that have no polygon in the shipped files (sample, level) -> ids.
MISSING_UNITS: dict[tuple[str, str], tuple[str, ...]] = {
    ("us-counties", "county"): ("51515", "51610"),
}


def _missing_file(path: Path) -> InputError:
    return InputError(
        f"geometry file {path} is missing; it ships with the repository in sample_data/geo/ "
        "(re-create it with `python scripts/derive_sample_data.py`)"
    )


@functools.lru_cache(maxsize=1)
def _index() -> dict:
    path = GEO_DIR / "index.json"
    if not path.is_file():
        raise _missing_file(path)
    return json.loads(path.read_text(encoding="utf-8"))


USER_PREFIX = "upload-"
_USER: dict[str, dict] = {}  # source -> {"layers": {level: FeatureCollection}, "centroids"}
_USER_KEEP = 8  # uploaded geometries kept in this process (oldest dropped first)


def register(source: str, layers: dict[str, dict], points: pd.DataFrame) -> str:
    """Make uploaded boundaries readable as ``source`` (which must start with
    `USER_PREFIX`): ``layers`` level -> FeatureCollection (coarse to fine, ids = codes),
    ``points`` columns level, id, lon, lat. Returns ``source``."""
    if not source.startswith(USER_PREFIX):
        raise InputError(f"an uploaded geometry's name must start with {USER_PREFIX!r}")
    _USER.pop(source, None)
    _USER[source] = {"layers": dict(layers), "centroids": points}
    while len(_USER) > _USER_KEEP:
        _USER.pop(next(iter(_USER)))
    return source


def available_levels(sample_name: str) -> list[str]:
    """Levels of a sample that have boundaries, coarse to fine ([] when none)."""
    from hierdp_core.data.samples import SAMPLES

    if sample_name in _USER:
        return list(_USER[sample_name]["layers"])

    levels = _index().get(sample_name, {})
    sample = SAMPLES.get(sample_name)
    order = list(sample.levels) if sample is not None else sorted(levels)
    return [lv for lv in order if lv in levels]


@functools.lru_cache(maxsize=16)
def _load(sample_name: str, level: str) -> dict | None:
    entry = _index().get(sample_name, {}).get(level)
    if entry is None:
        return None
    path = GEO_DIR / entry["file"]
    if not path.is_file():
        raise _missing_file(path)
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def level_geojson(sample_name: str, level: str, *, copy_result: bool = False) -> dict | None:
    """The FeatureCollection of one level of a sample, or None if it has no geometry.

    The result is cached and shared between callers: do not modify it, or pass
    ``copy_result=True`` for a private deep copy. Use it directly with Plotly
    (``geojson=fc, featureidkey="id", locations=<level codes>``) or pydeck.
    """
    fc = (_USER[sample_name]["layers"].get(level) if sample_name in _USER
          else _load(sample_name, level))
    if fc is None or not copy_result:
        return fc
    return copy.deepcopy(fc)


@functools.lru_cache(maxsize=1)
def _centroids() -> pd.DataFrame:
    path = GEO_DIR / "centroids.parquet"
    if not path.is_file():
        raise _missing_file(path)
    return pd.read_parquet(path)


def centroids(sample_name: str, level: str) -> pd.DataFrame:
    """Columns id, lon, lat for the units of a level (empty frame if the level has none)."""
    if sample_name in _USER:
        table = _USER[sample_name]["centroids"]
        rows = table[table["level"] == level]
    else:
        table = _centroids()
        rows = table[(table["sample"] == sample_name) & (table["level"] == level)]
    return rows[["id", "lon", "lat"]].reset_index(drop=True)


def bounds(sample_name: str, level: str) -> tuple[float, float, float, float] | None:
    """(min lon, min lat, max lon, max lat) of a level's features, or None. For the US the
    box spans -179..180 because the Aleutians cross the antimeridian; to frame the lower 48
    states use about (-125, 24, -66, 50)."""
    entry = _index().get(sample_name, {}).get(level)
    return None if entry is None else tuple(float(v) for v in entry["bbox"])


def missing_units(sample_name: str, level: str) -> tuple[str, ...]:
    """Units of the sample table that have no polygon at this level (documented, tested)."""
    return MISSING_UNITS.get((sample_name, level), ())


@functools.lru_cache(maxsize=4)
def bundled_reference(sample_name: str) -> Reference:
    """The units of a bundled geometry for `geo.match`: per level with boundaries (coarse to
    fine) the unit codes, each with its parent's code (from the sample's public geography
    table)."""
    from hierdp_core.data.sample_files import SAMPLE_FILES

    levels = available_levels(sample_name)
    table = SAMPLE_FILES[sample_name].geography()[levels].astype(str).drop_duplicates()
    out: Reference = {levels[0]: pd.Series(None, index=table[levels[0]].unique(),
                                           dtype=object)}
    for parent, level in zip(levels, levels[1:], strict=False):
        pairs = table[[parent, level]].drop_duplicates(subset=level)
        out[level] = pd.Series(pairs[parent].to_numpy(object),
                               index=pairs[level].to_numpy(object))
    return out


def match_bundled(units: Units) -> list[GeoMatch]:
    """The table's ``units`` (`geo.match.hierarchy_units`) against every bundled geometry,
    usable matches first, then by rate.

    >>> from hierdp_core.geo.match import best_match
    >>> import numpy as np
    >>> units = {"st": (np.array(["06", "36"]), None),
    ...          "fips": (np.array(["06037", "36061"]), np.array(["06", "36"]))}
    >>> m = match_bundled(units)[0]
    >>> m.ok, m.source, m.targets()
    (True, 'us-counties', {'st': 'state', 'fips': 'county'})
    >>> wrong = {**units, "fips": (units["fips"][0], np.array(["36", "06"]))}
    >>> match_bundled(wrong)[0].ok
    False
    """
    matches = [match_units(units, bundled_reference(s), s) for s in _index()]
    return sorted(matches, key=lambda m: (not m.ok, -m.rate))
