"""Boundary files a user brings (`hierdp_core.geo.upload`): GeoJSON, zipped Shapefile and
GeoPackage read and validated with typed errors, layers built by property or by dissolving
along the table's hierarchy, and matched against the table (both directions). Geometries are
tiny squares made here."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hierdp_core.errors import (
    GeometryCRSError,
    GeometryError,
    GeometryFileError,
    GeometryPropertyError,
    GeometryTooLargeError,
    InvalidGeometryError,
)
from hierdp_core.geo import maps as geo
from hierdp_core.geo.match import hierarchy_units, match_units
from hierdp_core.geo.upload import build_geometry, read_boundaries, register_geometry

pytest.importorskip("geopandas")


def square(x: float, y: float, d: float = 1.0) -> dict:
    return {"type": "Polygon",
            "coordinates": [[[x, y], [x + d, y], [x + d, y + d], [x, y + d], [x, y]]]}


def squares_geojson(codes: list[str], **props) -> bytes:
    """One unit square per code along the equator from lon 0, property ``code`` (and any
    other ``props``: name -> one value per code)."""
    features = [{"type": "Feature", "geometry": square(float(i), 0.0),
                 "properties": {"code": c, **{k: v[i] for k, v in props.items()}}}
                for i, c in enumerate(codes)]
    return json.dumps({"type": "FeatureCollection", "features": features}).encode()


def test_a_geojson_builds_layers_by_property_and_by_dissolving():
    data = squares_geojson(["a1", "a2", "b1"], zone=["A", "A", "B"])
    b = read_boundaries(data, "t.geojson")
    assert b.properties == ["code", "zone"] and not b.notes
    by_property = build_geometry(b, ["zone", "tract"], {"zone": "zone", "tract": "code"})
    units = pd.DataFrame({"zone": ["A", "A", "B"], "tract": ["a1", "a2", "b1"]})
    dissolved = build_geometry(b, ["zone", "tract"], {"tract": "code"}, units)
    for g in (by_property, dissolved):
        zones = g.layers["zone"]["features"]
        assert [f["id"] for f in zones] == ["A", "B"]
        ring = np.array(zones[0]["geometry"]["coordinates"][0])
        assert ring[:, 0].min() == 0 and ring[:, 0].max() == 2  # two squares merged
        area2 = np.sum(ring[:-1, 0] * ring[1:, 1] - ring[1:, 0] * ring[:-1, 1])
        assert area2 < 0  # exterior clockwise (Plotly's winding)
        points = g.points.set_index(["level", "id"])
        assert points.loc[("zone", "A"), "lon"] == pytest.approx(1.0)
        assert points.loc[("tract", "b1"), "lat"] == pytest.approx(0.5)
        assert list(g.reference["tract"].loc[["a1", "b1"]]) == ["A", "B"]
    assert by_property.source != dissolved.source  # one source per file and settings


def test_registered_geometry_is_read_like_a_bundled_one():
    b = read_boundaries(squares_geojson(["x", "y"]), "t.geojson")
    g = build_geometry(b, ["unit"], {"unit": "code"})
    register_geometry(g)
    assert geo.available_levels(g.source) == ["unit"]
    assert [f["id"] for f in geo.level_geojson(g.source, "unit")["features"]] == ["x", "y"]
    assert list(geo.centroids(g.source, "unit")["id"]) == ["x", "y"]


def test_match_rate_and_unmatched_codes_in_both_directions():
    from hierdp_core.queries.counts import count_data_from_table

    b = read_boundaries(squares_geojson(["a1", "a2", "c9"]), "t.geojson")
    g = build_geometry(b, ["tract"], {"tract": "code"})
    table = pd.DataFrame({"tract": ["a1", "a2", "b1", "b2"], "n": [1, 2, 3, 4]})
    h = count_data_from_table(table, ["tract"], count_column="n").hierarchy
    m = match_units(hierarchy_units(h), g.reference, g.source)
    (lm,) = m.levels
    assert lm.coverage == 0.5 and lm.feature_coverage == pytest.approx(2 / 3)
    assert lm.unmatched_codes == ("b1", "b2") and lm.unmatched_features == ("c9",)
    assert not m.ok


def test_numeric_codes_lose_no_leading_text_and_no_float_tail():
    b = read_boundaries(squares_geojson(["01", "02"], num=[6.0, 36.0]), "t.geojson")
    g = build_geometry(b, ["state"], {"state": "num"})
    assert [f["id"] for f in g.layers["state"]["features"]] == ["6", "36"]
    g = build_geometry(b, ["state"], {"state": "code"})
    assert [f["id"] for f in g.layers["state"]["features"]] == ["01", "02"]


def _frame(codes):
    import geopandas as gpd
    import shapely

    return gpd.GeoDataFrame({"code": codes},
                            geometry=[shapely.box(i, 0, i + 1, 1) for i in range(len(codes))],
                            crs=4326)


def test_shapefile_zip_and_geopackage_are_reprojected_to_lon_lat(tmp_path):
    frame = _frame(["a", "b"]).to_crs(3857)
    frame.to_file(tmp_path / "t.shp")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in tmp_path.glob("t.*"):
            z.write(path, path.name)
    b = read_boundaries(buffer.getvalue(), "tracts.zip")
    assert b.frame.crs.to_epsg() == 4326 and "reprojected" in b.notes[0]
    assert np.allclose(b.frame.total_bounds, [0, 0, 2, 1], atol=1e-6)
    frame.to_file(tmp_path / "t.gpkg")
    b = read_boundaries((tmp_path / "t.gpkg").read_bytes(), "t.gpkg")
    assert np.allclose(b.frame.total_bounds, [0, 0, 2, 1], atol=1e-6)


def test_typed_errors(tmp_path):
    with pytest.raises(GeometryFileError, match="must be a GeoJSON"):
        read_boundaries(b"{}", "t.csv")
    with pytest.raises(GeometryTooLargeError, match="MB"):
        read_boundaries(squares_geojson(["a"]), "t.geojson", max_bytes=10)
    with pytest.raises(GeometryTooLargeError, match="features"):
        read_boundaries(squares_geojson(["a", "b"]), "t.geojson", max_features=1)
    with pytest.raises(GeometryFileError, match="not a readable GeoJSON"):
        read_boundaries(b"{not json", "t.geojson")
    points = {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {}, "geometry": {"type": "Point",
                                                           "coordinates": [1, 2]}}]}
    with pytest.raises(GeometryFileError, match="no polygons"):
        read_boundaries(json.dumps(points).encode(), "t.geojson")
    metres = _frame(["a"]).to_crs(3857)
    metres.geometry = metres.geometry.translate(5e6, 5e6)
    projected = {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {}, "geometry": square(5e6, 5e6, 1e3)}]}
    with pytest.raises(GeometryCRSError, match="are not"):
        read_boundaries(json.dumps(projected).encode(), "metres.geojson")
    metres.set_crs(None, allow_override=True).to_file(tmp_path / "n.shp")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in tmp_path.glob("n.*"):
            if path.suffix != ".prj":
                z.write(path, path.name)
    with pytest.raises(GeometryCRSError, match="no coordinate reference system"):
        read_boundaries(buffer.getvalue(), "n.zip")
    b = read_boundaries(squares_geojson(["a"]), "t.geojson")
    with pytest.raises(GeometryPropertyError, match="'GEOID'"):
        build_geometry(b, ["unit"], {"unit": "GEOID"})
    with pytest.raises(GeometryPropertyError, match="at least one"):
        build_geometry(b, ["unit"], {})


def test_invalid_rings_are_repaired_or_refused():
    bowtie = {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}
    fc = {"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"code": "a"}, "geometry": bowtie},
        {"type": "Feature", "properties": {"code": "b"}, "geometry": square(2, 0)}]}
    b = read_boundaries(json.dumps(fc).encode(), "t.geojson")
    assert b.frame.geometry.is_valid.all() and "repaired" in b.notes[0]
    flat = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [2, 0], [0, 0]]]}
    fc["features"][0]["geometry"] = flat
    with pytest.raises(InvalidGeometryError, match="no area"):
        read_boundaries(json.dumps(fc).encode(), "t.geojson")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300) | st.text(max_size=200).map(str.encode)
       | st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                      lambda c: st.lists(c, max_size=4)
                      | st.dictionaries(st.sampled_from(["type", "features", "geometry",
                                                         "coordinates", "properties"]), c,
                                        max_size=4), max_leaves=12)
       .map(lambda v: json.dumps(v).encode()),
       st.sampled_from(["x.geojson", "x.json", "x.zip", "x.gpkg"]))
def test_malformed_uploads_raise_a_geometry_error_only(data, name):
    try:
        b = read_boundaries(data, name)
    except GeometryError:
        return
    assert len(b.frame) > 0 and b.frame.crs.to_epsg() == 4326


def test_the_property_holding_most_codes_is_suggested():
    from hierdp_core.geo.guess import guess_properties

    b = read_boundaries(squares_geojson(["a1", "a2", "b1"], zone=["A", "A", "B"],
                                        other=["a1", "x", "y"]), "t.geojson")
    units = {"zone": (np.array(["A", "B"]), None),
             "tract": (np.array(["a1", "a2", "b1"]), np.array(["A", "A", "B"])),
             "block": (np.array(["k1", "k2"]), np.array(["a1", "a2"]))}
    guess = guess_properties(b.frame, b.properties, units)
    assert guess.properties == {"zone": "zone", "tract": "code"} and guess.merged == ()


def test_codes_that_lost_their_leading_zeros_are_named():
    b = read_boundaries(squares_geojson(["06037", "06073", "36061"]), "t.geojson")
    g = build_geometry(b, ["county"], {"county": "code"})
    units = {"county": (np.array(["6037", "6073", "36061"]), None)}
    (lm,) = match_units(units, g.reference, g.source).levels
    assert lm.zeros_differ and lm.unmatched_codes == ("6037", "6073")
    (lm,) = match_units({"county": (np.array(["x", "y"]), None)}, g.reference, g.source).levels
    assert not lm.zeros_differ


def test_the_core_geography_needs_no_geopandas():
    import subprocess
    import sys

    code = ("import sys, hierdp_core, hierdp_core.geo.maps, hierdp_core.geo.match, "
            "hierdp_core.geo.upload, hierdp_core.column_roles; "
            "assert 'geopandas' not in sys.modules and 'shapely' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
