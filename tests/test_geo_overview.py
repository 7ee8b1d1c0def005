"""The overview boundaries: fewer vertices, the same features, neighbours still meeting
(no gaps or overlaps), Plotly's winding, and a file served next to the full detail."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pytest

shapely = pytest.importorskip("shapely")

from hierdp_core.geo import overview as geo_overview  # noqa: E402
from hierdp_core.geo.maps import level_geojson  # noqa: E402
from hierdp_core.geo.overview import overview_geojson, overview_tolerance  # noqa: E402


def _geoms(fc: dict) -> np.ndarray:
    return shapely.from_geojson([json.dumps(f["geometry"]) for f in fc["features"]])


@pytest.fixture(scope="module")
def provinces():
    fc = level_geojson("italy-municipalities", "province")
    return fc, overview_geojson(fc)


def test_overview_keeps_every_feature_with_fewer_vertices(provinces):
    fc, light = provinces
    assert [f["id"] for f in light["features"]] == [f["id"] for f in fc["features"]]
    assert [f["properties"] for f in light["features"]] == [f["properties"]
                                                              for f in fc["features"]]
    before, after = _geoms(fc), _geoms(light)
    assert shapely.get_num_coordinates(after).sum() < 0.6 * shapely.get_num_coordinates(
        before).sum()
    assert shapely.is_valid(after).all() and not shapely.is_empty(after).any()
    assert fc["features"][0]["geometry"] is not light["features"][0]["geometry"]  # no edit


def test_neighbours_still_meet_and_borders_move_a_pixel_or_two(provinces):
    fc, light = provinces
    before, after = _geoms(fc), _geoms(light)
    tolerance = overview_tolerance(before)
    assert 0.005 < tolerance < 0.05  # degrees: about a pixel on a map of Italy
    # a coverage simplified as one: areas neither overlap nor leave gaps between them
    union = shapely.union_all(after).area
    assert shapely.area(after).sum() == pytest.approx(union, rel=1e-3)
    assert union == pytest.approx(shapely.union_all(before).area, rel=0.01)
    # coverage simplification removes triangles of area ~ tolerance^2: a border moves a pixel
    # or two, a few pixels where a thin bend (a river's meander) is cut
    moved = shapely.hausdorff_distance(before, after) / tolerance
    assert np.median(moved) <= 2 and moved.max() <= 5


def test_exterior_rings_run_clockwise_for_plotly(provinces):
    _, light = provinces
    polygons = shapely.get_parts(_geoms(light))
    assert not shapely.is_ccw(shapely.get_exterior_ring(polygons)).any()


def test_overlapping_areas_are_simplified_one_by_one():
    square = {"type": "Polygon", "coordinates": [[[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]]}
    shifted = {"type": "Polygon",
               "coordinates": [[[0.5, 0], [0.5, 1], [1.5, 1], [1.5, 0], [0.5, 0]]]}
    fc = {"type": "FeatureCollection", "features": [
        {"type": "Feature", "id": i, "properties": {}, "geometry": g}
        for i, g in (("a", square), ("b", shifted))]}
    light = overview_geojson(fc)
    assert [f["id"] for f in light["features"]] == ["a", "b"]
    assert shapely.area(_geoms(light)).tolist() == pytest.approx([1.0, 1.0])
    assert overview_geojson({"type": "FeatureCollection", "features": []})["features"] == []


def test_doctests():
    assert doctest.testmod(geo_overview).failed == 0
