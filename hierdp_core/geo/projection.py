"""Map projections for maps drawn by the server (`geo.svg_map`), matching the plotly geo
projections the dashboard's interactive maps use: ``mercator``, and ``albers usa`` (the
lower 48 states in an Albers equal-area conic, Alaska shrunk and Hawaii moved into insets
below them, everything else left out, as plotly.js and d3 draw it). The conic projections
are pyproj's.

Example
-------
>>> import numpy as np
>>> x, y, kept = project(np.array([-96.0, -150.0, 12.5]), np.array([37.5, 61.0, 41.9]),
...                      "albers usa")
>>> kept.tolist()  # Kansas, Alaska (an inset); Rome is not in this projection
[True, True, False]
>>> round(float(x[0]), 6), round(float(y[0]), 6)  # the lower 48 centred on (96 W, 37.5 N)
(0.0, 0.0)
"""

from __future__ import annotations

from functools import cache

import numpy as np

from hierdp_core.errors import InputError

PROJECTIONS = ("mercator", "albers usa")
EARTH_RADIUS_M = 6_371_000.0

# the parts of "albers usa": conic parameters (lat_1, lat_2, lat_0, lon_0), the scale of the
# part and where its centre (lon_0, lat_0 projected) goes in the lower 48's plane, in metres
_ALBERS_USA = {
    "lower48": ((29.5, 45.5, 37.5, -96.0), 1.0, (0.0, 0.0)),
    "alaska": ((55.0, 65.0, 50.0, -154.0), 0.35, (-1.7e6, -1.75e6)),
    "hawaii": ((8.0, 18.0, 3.0, -157.0), 1.0, (-1.1e6, -3.35e6)),
}


@cache
def _conic(lat_1: float, lat_2: float, lat_0: float, lon_0: float):
    from pyproj import Transformer

    return Transformer.from_crs(
        "EPSG:4326", f"+proj=aea +lat_1={lat_1} +lat_2={lat_2} +lat_0={lat_0} +lon_0={lon_0} "
        "+datum=WGS84 +units=m", always_xy=True)


def albers_usa_part(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Which part of "albers usa" each point falls in: 'alaska', 'hawaii', 'lower48', or ''
    (outside the projection: Puerto Rico, the other territories, the rest of the world)."""
    lon, lat = np.asarray(lon, float), np.asarray(lat, float)
    alaska = (lat > 50) & ((lon < -129) | (lon > 170))
    hawaii = (lat > 18) & (lat < 23) & (lon > -161) & (lon < -154)
    lower48 = (lat > 24) & (lat < 50) & (lon > -125) & (lon < -66)
    return np.select([alaska, hawaii, lower48], ["alaska", "hawaii", "lower48"], "")


def project(lon, lat, projection: str, part: np.ndarray | None = None):
    """Project points (degrees) to a plane: ``(x, y, kept)``, x east and y north, in metres
    for "albers usa" (``part``: `albers_usa_part` per point, by default of the point itself;
    pass one part per area so an area is drawn whole), in Earth radii for "mercator";
    ``kept`` is False where the projection leaves the point out (x, y are then NaN)."""
    lon, lat = np.asarray(lon, float), np.asarray(lat, float)
    if projection == "mercator":
        phi = np.radians(np.clip(lat, -85.0, 85.0))
        return np.radians(lon), np.log(np.tan(np.pi / 4 + phi / 2)), np.isfinite(lon + lat)
    if projection != "albers usa":
        raise InputError(f"unknown projection {projection!r}; use one of "
                         f"{', '.join(PROJECTIONS)}")
    part = albers_usa_part(lon, lat) if part is None else np.asarray(part)
    x, y = np.full(lon.shape, np.nan), np.full(lon.shape, np.nan)
    for name, (conic, scale, (dx, dy)) in _ALBERS_USA.items():
        sel = part == name
        if sel.any():
            px, py = _conic(*conic).transform(lon[sel], lat[sel])
            x[sel], y[sel] = np.asarray(px) * scale + dx, np.asarray(py) * scale + dy
    return x, y, part != ""
