"""Boundaries and centroids of the bundled real samples, for maps.

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

GEO_DIR = Path(__file__).resolve().parents[1] / "sample_data" / "geo"

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


def available_levels(sample_name: str) -> list[str]:
    """Levels of a sample that have boundaries, coarse to fine ([] when none)."""
    from hierdp_core.data.samples import SAMPLES

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
    fc = _load(sample_name, level)
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


@functools.lru_cache(maxsize=1)
def _ids_by_level() -> dict[str, dict[str, frozenset]]:
    """sample -> level -> the ids of its units (with a centroid, or documented as missing)."""
    out: dict[str, dict[str, frozenset]] = {}
    for (sample, level), ids in _centroids().groupby(["sample", "level"])["id"]:
        extra = MISSING_UNITS.get((sample, level), ())
        out.setdefault(str(sample), {})[str(level)] = frozenset(map(str, ids)) | set(extra)
    return out


MATCH_COVERAGE = 0.95  # share of a level's codes that must be bundled feature ids


def matching_geometry(level_codes: dict[str, list[str]]) -> tuple[str, dict[str, str]] | None:
    """The bundled geometry that fits a user's geography, judged by its codes alone: for each
    level (name -> its unit codes, as strings), the bundled level whose feature ids include at
    least `MATCH_COVERAGE` of them. Returns (sample, {level name: bundled level}) for the
    bundled sample that matches the most levels (ties: the higher coverage), or None.

    >>> matching_geometry({"st": ["06", "36"], "fips": ["06037", "36061"]})
    ('us-counties', {'st': 'state', 'fips': 'county'})
    >>> matching_geometry({"zone": ["A", "B"]}) is None
    True
    """
    best, best_score = None, (0, 0.0)
    for sample, known_levels in _ids_by_level().items():
        levels, coverage = {}, 0.0
        for name, codes in level_codes.items():
            wanted = {str(c) for c in codes}
            if not wanted:
                continue
            share, level = max((len(wanted & known) / len(wanted), level)
                               for level, known in known_levels.items())
            if share >= MATCH_COVERAGE:
                levels[name], coverage = level, coverage + share
        if (len(levels), coverage) > best_score:
            best, best_score = (str(sample), levels), (len(levels), coverage)
    return best
