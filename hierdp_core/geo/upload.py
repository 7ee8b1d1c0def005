"""Boundaries a user brings: read a GeoJSON, zipped Shapefile or GeoPackage, validate it,
build one layer per geography level (by a property holding the level's codes, or by
dissolving finer units along the table's hierarchy), simplify, and make it a map source.

`read_boundaries` checks the file (size, format, polygons, CRS: reprojected to EPSG:4326,
invalid rings repaired) and raises a `GeometryError` subclass naming what is wrong.
`build_geometry` turns the chosen properties into a `UserGeometry`: per level a GeoJSON
FeatureCollection whose feature ids are the codes (as `geo.level_geojson` gives for the
bundled samples), area centroids for flow maps, and the units with their parents for
`geo.match`. `register_geometry` makes it readable through `hierdp_core.geo.maps` by its source
name. geopandas / pyogrio are imported here only (not needed to import `hierdp_core`).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core.errors import (
    GeometryCRSError,
    GeometryFileError,
    GeometryPropertyError,
    GeometryTooLargeError,
    InvalidGeometryError,
)
from hierdp_core.geo import maps as geo
from hierdp_core.geo.match import Reference

MAX_BYTES = 60 * 2**20
MAX_FEATURES = 100_000
FORMATS = {".geojson": "GeoJSON", ".json": "GeoJSON", ".zip": "zipped Shapefile",
           ".gpkg": "GeoPackage"}
SIMPLIFY_SHARE = 1 / 4000  # simplification tolerance, as a share of the extent's diagonal
PRECISION = 1e-5  # degrees (about 1 m)


@dataclass
class Boundaries:
    """A validated boundary file: ``frame`` (GeoDataFrame in EPSG:4326, polygons only),
    ``properties`` (its attribute columns), ``digest`` (of the file's bytes) and ``notes``
    (what was repaired or assumed, for the user)."""

    name: str
    frame: object
    properties: list[str]
    digest: str
    notes: list[str] = field(default_factory=list)


@dataclass
class UserGeometry:
    """Boundaries per level: ``layers`` level -> FeatureCollection (ids = codes, coarse to
    fine), ``points`` (level, id, lon, lat), ``reference`` (for `geo.match.match_units`)."""

    source: str
    layers: dict[str, dict]
    points: pd.DataFrame
    reference: Reference


def _fail(name: str, exc: Exception, path: Path) -> GeometryFileError:
    text = str(exc).replace(f"'{path}' ", "").replace(str(path), name).strip()
    first = text.splitlines()[0].split(";")[0] if text else type(exc).__name__
    kind = FORMATS.get(Path(name).suffix.lower(), "boundary file")
    return GeometryFileError(f"{name} is not a readable {kind}: {first}")


def _read(data: bytes, name: str):
    import geopandas as gpd

    suffix = Path(name).suffix.lower()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"upload{suffix}"
        path.write_bytes(data)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return gpd.read_file(path, engine="pyogrio")
        except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
            raise _fail(name, exc, path) from None


def _polygons(frame, name: str, notes: list[str]):
    import shapely

    geoms = frame.geometry.to_numpy()
    missing = shapely.is_missing(geoms) | shapely.is_empty(geoms)
    if missing.all():
        raise InvalidGeometryError(f"{name}: no feature has a geometry")
    if missing.any():
        notes.append(f"{int(missing.sum()):,} features without a geometry were left out")
        frame, geoms = frame[~missing], geoms[~missing]
    kinds = shapely.get_type_id(geoms)
    polygonal = np.isin(kinds, (3, 6))  # Polygon, MultiPolygon
    if not polygonal.any():
        raise GeometryFileError(f"{name} holds no polygons (points or lines only): maps need "
                                "the units' areas")
    if not polygonal.all():
        notes.append(f"{int((~polygonal).sum()):,} features that are not polygons were left "
                     "out")
        frame, geoms = frame[polygonal], geoms[polygonal]
    invalid = ~shapely.is_valid(geoms)
    if invalid.any():
        fixed = shapely.make_valid(geoms[invalid])
        parts = shapely.get_parts(fixed, return_index=True)
        areal = shapely.get_type_id(parts[0]) >= 3
        kept = shapely.multipolygons(parts[0][areal], indices=parts[1][areal]) \
            if areal.any() else np.array([])
        if len(kept) != int(invalid.sum()) or shapely.is_empty(kept).any():
            raise InvalidGeometryError(f"{name}: {int(invalid.sum()):,} invalid geometries, "
                                       "some of which have no area once repaired")
        geoms = geoms.copy()
        geoms[invalid] = kept
        notes.append(f"{int(invalid.sum()):,} invalid geometries were repaired")
    return frame.set_geometry(geoms, crs=frame.crs)


def _lonlat(bounds) -> bool:
    minx, miny, maxx, maxy = bounds
    return bool(-180.5 <= minx and maxx <= 360 and -90.5 <= miny and maxy <= 90.5)


def _to_lonlat(frame, name: str, notes: list[str]):
    minx, miny, maxx, maxy = frame.total_bounds
    if frame.crs is None:
        if _lonlat(frame.total_bounds):
            notes.append("no coordinate reference system given: read as lon/lat (EPSG:4326)")
            return frame.set_crs(4326)
        raise GeometryCRSError(f"{name} has no coordinate reference system and its "
                               f"coordinates ({minx:.0f}, {miny:.0f}) are not lon/lat: save "
                               "it with its CRS (a .prj file inside the zip)")
    if frame.crs.to_epsg() == 4326:
        if not _lonlat(frame.total_bounds):
            raise GeometryCRSError(f"{name} says lon/lat (as GeoJSON must) but its coordinates "
                                   f"({minx:.0f}, {miny:.0f}) are not: convert it to "
                                   "EPSG:4326, or upload a Shapefile or GeoPackage with its CRS")
        return frame
    try:
        out = frame.to_crs(4326)
    except Exception as exc:  # noqa: BLE001 - pyproj errors
        raise GeometryCRSError(f"{name}: its coordinates cannot be converted to lon/lat "
                               f"({exc})") from None
    if not np.isfinite(out.total_bounds).all() or not _lonlat(out.total_bounds):
        raise GeometryCRSError(f"{name}: its coordinates fall outside the Earth once "
                               "converted to lon/lat; check its CRS")
    notes.append(f"reprojected from {frame.crs.to_string()} to lon/lat (EPSG:4326)")
    return out


def read_boundaries(data: bytes, name: str, *, max_bytes: int = MAX_BYTES,
                    max_features: int = MAX_FEATURES) -> Boundaries:
    """Read and validate a boundary file (``name`` gives its format by its ending: .geojson,
    .json, .zip (a zipped Shapefile), .gpkg). Raises a `GeometryError` subclass."""
    if Path(name).suffix.lower() not in FORMATS:
        raise GeometryFileError(f"{name}: boundaries must be a GeoJSON (.geojson, .json), a "
                                "zipped Shapefile (.zip) or a GeoPackage (.gpkg)")
    if len(data) > max_bytes:
        raise GeometryTooLargeError(f"{name} is {len(data) / 2**20:.1f} MB, over the "
                                    f"{max_bytes / 2**20:.0f} MB limit: simplify it first")
    if not data:
        raise GeometryFileError(f"{name} is empty")
    frame = _read(data, name)
    if len(frame) == 0 or "geometry" not in frame:
        raise GeometryFileError(f"{name} has no features")
    if len(frame) > max_features:
        raise GeometryTooLargeError(f"{name} has {len(frame):,} features, over the "
                                    f"{max_features:,} limit")
    notes: list[str] = []
    frame = _to_lonlat(_polygons(frame, name, notes), name, notes)
    properties = [str(c) for c in frame.columns if c != frame.geometry.name]
    return Boundaries(name, frame.reset_index(drop=True), properties,
                      hashlib.sha256(data).hexdigest()[:16], notes)


def property_codes(frame, prop: str, name: str = "the file") -> pd.Series:
    """A property's values as codes (text; whole numbers without '.0'). Raises
    `GeometryPropertyError` when the property is missing or empty."""
    geometry = frame.geometry.name if hasattr(frame, "geometry") else None
    if prop not in frame.columns or prop == geometry:
        raise GeometryPropertyError(f"{name} has no property {prop!r}")
    values = frame[prop]
    if values.isna().all():
        raise GeometryPropertyError(f"{name}: property {prop!r} is empty in every feature")
    if values.dtype.kind == "f" and np.all(values.dropna() == np.floor(values.dropna())):
        values = values.astype("Int64")
    return values.astype("string").str.strip().astype(object).where(values.notna(), None)


def _codes_by_level(b: Boundaries, levels: list[str], properties: dict[str, str],
                    ancestors: pd.DataFrame | None) -> pd.DataFrame:
    """Per feature, the code of each level that gets a layer: from its property, or (a level
    above the finest property) from ``ancestors`` (the table's units, one column per level)."""
    chosen = [lv for lv in levels if properties.get(lv)]
    if not chosen:
        raise GeometryPropertyError(f"{b.name}: choose the property holding at least one "
                                    "level's codes")
    out = pd.DataFrame({lv: property_codes(b.frame, properties[lv], b.name) for lv in chosen})
    finest = chosen[-1]
    if ancestors is not None:
        lookup = ancestors.astype(str).drop_duplicates(subset=finest).set_index(finest)
        for lv in levels[:levels.index(finest)]:
            if lv not in out and lv in lookup:
                out[lv] = out[finest].map(lookup[lv])
    return out[[lv for lv in levels if lv in out]]


def _finish(geoms: np.ndarray, tolerance: float) -> np.ndarray:
    import shapely

    geoms = shapely.simplify(geoms, tolerance, preserve_topology=True)
    geoms = shapely.set_precision(geoms, PRECISION)
    return shapely.orient_polygons(geoms, exterior_cw=True)  # Plotly's (d3) winding


def _layer(frame, codes: pd.Series, tolerance: float):
    """(FeatureCollection, centroids) of the units ``codes`` names, dissolved by code."""
    import geopandas as gpd
    import shapely

    keep = codes.notna().to_numpy()
    parts = gpd.GeoDataFrame({"code": codes[keep].to_numpy()},
                             geometry=frame.geometry.to_numpy()[keep], crs=frame.crs)
    if parts["code"].duplicated().any():
        parts = parts.dissolve(by="code", as_index=False)
    geoms = _finish(parts.geometry.to_numpy(), tolerance)
    ids = parts["code"].astype(str).to_numpy()
    shapes = shapely.to_geojson(geoms)
    fc = {"type": "FeatureCollection", "features": [
        {"type": "Feature", "id": i, "properties": {"name": i}, "geometry": json.loads(g)}
        for i, g in zip(ids, shapes, strict=True)]}
    centre = shapely.centroid(geoms)
    inside = shapely.contains(geoms, centre)
    centre = np.where(inside, centre, shapely.point_on_surface(geoms))
    points = pd.DataFrame({"id": ids, "lon": shapely.get_x(centre), "lat": shapely.get_y(centre)})
    return fc, points


def build_geometry(b: Boundaries, levels: list[str], properties: dict[str, str],
                   ancestors: pd.DataFrame | None = None) -> UserGeometry:
    """The user's geometry over the table's ``levels`` (coarse to fine): ``properties``
    level -> the property holding its codes (levels left out and coarser than a chosen one
    are built by dissolving, their codes taken from ``ancestors`` when given, a frame of the
    table's units with one column per level). Levels with no codes get no layer."""
    codes = _codes_by_level(b, levels, properties, ancestors)
    minx, miny, maxx, maxy = b.frame.total_bounds
    tolerance = float(np.hypot(maxx - minx, maxy - miny)) * SIMPLIFY_SHARE
    layers, points, reference = {}, [], {}
    for i, level in enumerate(codes.columns):
        fc, centre = _layer(b.frame, codes[level], tolerance)
        layers[level] = fc
        points.append(centre.assign(level=level))
        pairs = codes[list(codes.columns[max(i - 1, 0):i + 1])].dropna().drop_duplicates(level)
        reference[level] = (pd.Series(pairs[codes.columns[i - 1]].to_numpy(object),
                                      index=pairs[level].to_numpy(object)) if i
                            else pd.Series(None, index=pairs[level].to_numpy(object),
                                           dtype=object))
    settings = json.dumps([levels, sorted(properties.items()), ancestors is not None])
    source = geo.USER_PREFIX + hashlib.sha256((b.digest + settings).encode()).hexdigest()[:12]
    return UserGeometry(source, layers, pd.concat(points, ignore_index=True), reference)


def register_geometry(g: UserGeometry) -> str:
    """Make ``g`` readable through `hierdp_core.geo.maps` (level_geojson, centroids,
    available_levels) under its source name; returns the name."""
    return geo.register(g.source, g.layers, g.points)
