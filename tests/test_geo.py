"""Shipped boundaries: one feature per unit, ids = level values, plausible lon/lat, small files."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hierdp_core.data.samples import SAMPLES, load_sample
from hierdp_core.errors import InputError
from hierdp_core.geo import maps as geo

ROOT = Path(__file__).resolve().parents[1]
GEO_LEVELS = {
    "us-counties": ["state", "county"],
    "italy-municipalities": ["region", "province", "municipality"],
}
# (min lon, min lat, max lon, max lat) that every coordinate must lie in
PLAUSIBLE = {
    "us-counties": (-180.0, 18.0, 180.0, 72.0),  # Hawaii .. Alaska (Aleutians cross 180)
    "italy-municipalities": (6.5, 35.4, 18.6, 47.1),
}
# units without a polygon, and why (see sample_data/README.md)
KNOWN_MISSING = {
    ("us-counties", "county"): {"51515",   # Bedford City: merged into Bedford County in 2013
                                "51610"},  # Falls Church City: zero area in us-atlas
}
CASES = [(s, lv) for s, levels in GEO_LEVELS.items() for lv in levels]


@functools.cache
def _units(sample_name: str) -> pd.DataFrame:
    """One row per leaf unit: the level columns and their name columns (as strings)."""
    sample = SAMPLES[sample_name]
    table = load_sample(sample_name)
    cols = [*sample.levels, *sample.label_columns.values()]
    return table.drop_duplicates(sample.levels[-1])[cols].astype(str).reset_index(drop=True)


def _rings(feature: dict):
    for polygon in feature["geometry"]["coordinates"]:
        for k, ring in enumerate(polygon):
            yield k == 0, np.asarray(ring, dtype=float)


def _signed_area(ring: np.ndarray) -> float:
    x, y = ring[:, 0], ring[:, 1]
    return 0.5 * float(np.dot(x[:-1], y[1:]) - np.dot(x[1:], y[:-1]))


def test_available_levels():
    for sample, levels in GEO_LEVELS.items():
        assert geo.available_levels(sample) == levels
    assert geo.available_levels("synthetic-us-like") == []
    assert geo.level_geojson("synthetic-us-like", "state") is None
    assert geo.level_geojson("us-counties", "tract") is None
    assert geo.centroids("synthetic-us-like", "state").empty


@pytest.mark.parametrize("sample_name,level", CASES)
def test_features_match_units(sample_name, level):
    fc = geo.level_geojson(sample_name, level)
    assert fc["type"] == "FeatureCollection"
    ids = [f["id"] for f in fc["features"]]
    assert len(ids) == len(set(ids))
    table = _units(sample_name)
    units = set(table[level])
    missing = units - set(ids)
    assert missing == KNOWN_MISSING.get((sample_name, level), set())
    assert set(geo.missing_units(sample_name, level)) == missing
    assert set(ids) <= units  # no feature without a unit
    # names agree with the sample's label column
    name_col = SAMPLES[sample_name].label_columns[level]
    names = table[[level, name_col]].drop_duplicates(level).set_index(level)[name_col]
    for f in fc["features"]:
        assert f["type"] == "Feature"
        assert f["properties"]["name"] == names[f["id"]]
        assert f["geometry"]["type"] == "MultiPolygon"


@pytest.mark.parametrize("sample_name,level", CASES)
def test_coordinates_plausible_rounded_and_clockwise(sample_name, level):
    fc = geo.level_geojson(sample_name, level)
    x0, y0, x1, y1 = PLAUSIBLE[sample_name]
    lo = np.array([np.inf, np.inf])
    hi = -lo
    for f in fc["features"]:
        for exterior, ring in _rings(f):
            assert len(ring) >= 4 and (ring[0] == ring[-1]).all()
            assert ((ring[:, 0] >= x0) & (ring[:, 0] <= x1)).all(), f["id"]
            assert ((ring[:, 1] >= y0) & (ring[:, 1] <= y1)).all(), f["id"]
            assert np.allclose(ring, np.round(ring, 4), rtol=0, atol=1e-9)
            area = _signed_area(ring)
            assert (area < 0) if exterior else (area > 0), f["id"]  # exterior clockwise
            lo, hi = np.minimum(lo, ring.min(axis=0)), np.maximum(hi, ring.max(axis=0))
    assert np.allclose(geo.bounds(sample_name, level), [*lo, *hi], atol=1e-6)


@pytest.mark.parametrize("sample_name,level", CASES)
def test_centroids(sample_name, level):
    cent = geo.centroids(sample_name, level)
    assert list(cent.columns) == ["id", "lon", "lat"]
    assert cent["id"].is_unique
    units = set(_units(sample_name)[level])
    no_point = {"51515"} if (sample_name, level) == ("us-counties", "county") else set()
    assert set(cent["id"]) == units - no_point
    x0, y0, x1, y1 = PLAUSIBLE[sample_name]
    assert cent["lon"].between(x0, x1).all() and cent["lat"].between(y0, y1).all()
    # every centroid lies in (or within 0.05 degrees of) its feature's bounding box
    fc = geo.level_geojson(sample_name, level)
    boxes = {}
    for f in fc["features"]:
        pts = np.concatenate([r for _, r in _rings(f)])
        boxes[f["id"]] = (*pts.min(axis=0), *pts.max(axis=0))
    for fid, lon, lat in cent.itertuples(index=False):
        if fid in boxes:
            bx0, by0, bx1, by1 = boxes[fid]
            assert bx0 - 0.05 <= lon <= bx1 + 0.05 and by0 - 0.05 <= lat <= by1 + 0.05, fid


def test_known_places():
    c = geo.centroids("italy-municipalities", "municipality").set_index("id")
    assert abs(c.loc["058091", "lon"] - 12.5) < 0.3 and abs(c.loc["058091", "lat"] - 41.9) < 0.3
    s = geo.centroids("us-counties", "county").set_index("id")
    assert abs(s.loc["06037", "lon"] + 118.2) < 0.5 and abs(s.loc["06037", "lat"] - 34.3) < 0.5


def test_cached_and_copy():
    a = geo.level_geojson("us-counties", "state")
    assert geo.level_geojson("us-counties", "state") is a
    b = geo.level_geojson("us-counties", "state", copy_result=True)
    assert b == a and b is not a
    b["features"].clear()
    assert len(geo.level_geojson("us-counties", "state")["features"]) == 51


def test_missing_file_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(geo, "GEO_DIR", tmp_path)
    geo._index.cache_clear()
    geo._load.cache_clear()
    geo._centroids.cache_clear()
    try:
        with pytest.raises(InputError, match="index.json is missing"):
            geo.level_geojson("us-counties", "county")
        with pytest.raises(InputError, match="centroids.parquet is missing"):
            geo.centroids("us-counties", "county")
    finally:
        monkeypatch.undo()
        geo._index.cache_clear()
        geo._load.cache_clear()
        geo._centroids.cache_clear()


def test_files_are_small():
    data = ROOT / "sample_data"
    for path in (data / "geo").rglob("*.geojson.gz"):
        assert path.stat().st_size < 1_600_000, path
    total = sum(p.stat().st_size for p in data.rglob("*") if p.is_file())
    assert total < 5_000_000, total


def _table_units(sample: str) -> dict:
    """A sample table's units for `geo.match`: level -> (codes, parent codes)."""
    table = load_sample(sample)
    levels = list(SAMPLES[sample].levels)
    out = {}
    for i, level in enumerate(levels):
        pairs = table[levels[max(i - 1, 0):i + 1]].astype(str).drop_duplicates(level)
        out[level] = (pairs[level].to_numpy(), pairs[levels[i - 1]].to_numpy() if i else None)
    return out


@pytest.mark.parametrize("sample", ["us-counties", "italy-municipalities"])
def test_a_sample_geography_matches_its_own_boundaries(sample):
    units = _table_units(sample)
    best = geo.match_bundled(units)[0]
    assert best.ok and best.source == sample and best.rate == 1.0
    assert best.targets() == {lv: lv for lv in units}
    renamed = {f"my_{lv}": c for lv, c in units.items()}  # the column names do not matter
    assert geo.match_bundled(renamed)[0].targets() == {f"my_{lv}": lv for lv in units}
    others = [m for m in geo.match_bundled(units) if m.source != sample]
    assert others and not any(m.ok for m in others)


def test_matching_needs_most_codes_at_every_level_and_their_parents():
    units = _table_units("us-counties")
    counties, states = units["county"]
    keep = int(0.96 * len(counties))
    assert geo.match_bundled({"c": (counties[:keep], None)})[0].ok
    unknown = np.array([f"X{i}" for i in range(int(0.1 * len(counties)))])
    mixed = np.concatenate([counties[:len(counties) - len(unknown)], unknown])
    best = geo.match_bundled({"c": (mixed, None)})[0]
    assert not best.ok and set(unknown) <= set(best.levels[0].unmatched_codes)
    assert not geo.match_bundled({"zone": (np.array(["north", "south"]), None)})[0].ok
    # '01'..'05' are both US states and Italian regions: the finer level decides
    both = {"top": (np.array(["01", "02", "04", "05"]), None),
            "fine": (np.array(["01001", "02013", "04001", "05001"]),
                     np.array(["01", "02", "04", "05"]))}
    best = geo.match_bundled(both)[0]
    assert best.ok and best.targets() == {"top": "state", "fine": "county"}
    # the codes of every level exist but the parents do not agree: no match
    shuffled = {**both, "fine": (both["fine"][0], np.array(["02", "01", "05", "04"]))}
    assert not any(m.ok for m in geo.match_bundled(shuffled))
    # only the top level matches: not enough
    partly = {**both, "fine": (np.array(["a1", "a2", "b1", "b2"]), both["fine"][1])}
    assert not any(m.ok for m in geo.match_bundled(partly))
