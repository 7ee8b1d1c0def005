"""Lighter boundaries for a map of a whole level (every county of the US, every municipality
of Italy): the shapes simplified to what a map about `OVERVIEW_PIXELS` wide can show.

A browser draws a map's areas vertex by vertex, so a whole-country map of full-detail
boundaries costs seconds while most vertices fall within one pixel. `overview_geojson`
simplifies the level as a *coverage* (`shapely.coverage_simplify`: borders shared by two
areas are simplified once, so neighbours keep meeting without gaps or overlaps), with a
tolerance of one pixel on a map `OVERVIEW_PIXELS` across the area where most units lie
(vertices are only dropped, never moved), and keeps every feature's id and properties.
A drill-down to a few units keeps the full-detail boundaries. Needs shapely (a dashboard
dependency, imported here only).

Example
-------
>>> from hierdp_core.geo.maps import level_geojson
>>> fc = overview_geojson(level_geojson("italy-municipalities", "province"))
>>> len(fc["features"]), fc["features"][0]["id"] == level_geojson(
...     "italy-municipalities", "province")["features"][0]["id"]
(107, True)
"""

from __future__ import annotations

import json

import numpy as np

OVERVIEW_PIXELS = 600  # the map size (pixels across the units) the overview is drawn for
CORE_QUANTILES = (0.02, 0.98)  # the units' positions that span the mapped area


def overview_tolerance(geoms: np.ndarray) -> float:
    """One pixel, in degrees, on a map `OVERVIEW_PIXELS` wide showing where most of the
    areas ``geoms`` lie (their centres' 2nd to 98th percentiles, so far-off islands and the
    antimeridian do not widen it)."""
    import shapely

    box = shapely.bounds(geoms)
    centres = (box[:, :2] + box[:, 2:]) / 2
    low, high = np.nanquantile(centres, CORE_QUANTILES, axis=0)
    return float(max(high - low)) / OVERVIEW_PIXELS


def _simplified(geoms: np.ndarray, tolerance: float) -> np.ndarray:
    import shapely

    try:
        out = shapely.coverage_simplify(geoms, tolerance)
    except shapely.errors.GEOSException:  # not a coverage (overlaps): area by area
        out = shapely.simplify(geoms, tolerance, preserve_topology=True)
    return shapely.orient_polygons(out, exterior_cw=True)  # Plotly's (d3) winding


def overview_geojson(fc: dict) -> dict:
    """``fc`` (a FeatureCollection of polygons in lon/lat) with every geometry simplified
    for a map of the whole collection; ids, properties and order are kept."""
    import shapely

    features = fc["features"]
    if not features:
        return fc
    geoms = shapely.from_geojson([json.dumps(f["geometry"]) for f in features])
    shapes = shapely.to_geojson(_simplified(geoms, overview_tolerance(geoms)))
    return {"type": "FeatureCollection", "features": [
        {**f, "geometry": json.loads(g)} for f, g in zip(features, shapes, strict=True)]}
