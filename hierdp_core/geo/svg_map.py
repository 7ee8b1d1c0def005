"""Small choropleths drawn by the server as SVG (the Home page's previews): painted with the
page, no plotly.js to load first. Each area is one ``<path>`` with its name and value as a
tooltip (``<title>``); a colour bar under the title gives the scale.

Coordinates are projected (`geo.projection`), fitted to the picture and rounded to a tenth
of a pixel; the areas' rings are read with shapely in one pass, not point by point.

Example
-------
>>> fc = {"type": "FeatureCollection", "features": [
...     {"type": "Feature", "id": "a", "properties": {}, "geometry": {"type": "Polygon",
...      "coordinates": [[[10, 45], [11, 45], [11, 46], [10, 45]]]}}]}
>>> svg = choropleth_svg(fc, ["a"], [3], names=["Alpha"], title="One area",
...                      colorbar_title="units")
>>> svg.count("<path"), "<title>Alpha: 3 units</title>" in svg
(1, True)
"""

from __future__ import annotations

import json
import zlib
from html import escape

import numpy as np
from plotly.colors import sample_colorscale

from hierdp_core import palette
from hierdp_core.errors import InputError
from hierdp_core.geo.projection import albers_usa_part, project

TITLE_PX, BAR_PX, PAD_PX = 22, 16, 4  # the title line, the colour bar with its labels


def _number(value: float) -> str:
    """1,506 for a whole number, three significant digits otherwise."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"


def _rings(fc: dict, ids: list[str]):
    """The rings of the features ``ids`` (in that order): coordinates (n, 2), the ring of
    each coordinate, the feature of each ring, and a point inside each feature (n, 2). A
    missing id is an `InputError`."""
    import shapely

    by_id = {str(f.get("id")): f["geometry"] for f in fc["features"]}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise InputError(f"no boundary for {len(missing)} area(s), e.g. {missing[0]!r}")
    geoms = shapely.from_geojson([json.dumps(by_id[i], separators=(",", ":"))
                                  for i in ids])
    polygons, polygon_feature = shapely.get_parts(geoms, return_index=True)
    rings, ring_polygon = shapely.get_rings(polygons, return_index=True)
    coords, coord_ring = shapely.get_coordinates(rings, return_index=True)
    inside = shapely.get_coordinates(shapely.point_on_surface(geoms))
    return coords, coord_ring, polygon_feature[ring_polygon], inside


def _fitted(coords, coord_ring, ring_feature, inside, projection, width, height):
    """Pixel positions of the coordinates on a ``width`` x ``height`` picture (the map
    centred, its aspect kept) and which rings the projection keeps; ``inside``: a point
    inside each feature, which decides the part of a composite projection it is drawn in."""
    lon, lat = coords[:, 0], coords[:, 1]
    part = None
    if projection == "albers usa":  # an area is drawn whole, in the part of its inside
        part = albers_usa_part(inside[:, 0], inside[:, 1])[ring_feature[coord_ring]]
    x, y, kept = project(lon, lat, projection, part)
    if not kept.any():
        raise InputError("no area falls inside the map's projection")
    lo_x, hi_x = np.nanmin(x[kept]), np.nanmax(x[kept])
    lo_y, hi_y = np.nanmin(y[kept]), np.nanmax(y[kept])
    scale = min(width / max(hi_x - lo_x, 1e-12), height / max(hi_y - lo_y, 1e-12))
    off_x = (width - (hi_x - lo_x) * scale) / 2
    off_y = (height - (hi_y - lo_y) * scale) / 2
    px = off_x + (x - lo_x) * scale
    py = off_y + (hi_y - y) * scale  # SVG's y grows downwards
    ring_kept = np.zeros(coord_ring.max() + 1, bool)
    ring_kept[coord_ring[kept]] = True
    return px, py, ring_kept


def _paths(px, py, coord_ring, ring_feature, ring_kept, n_features) -> list[str]:
    """One path ``d`` per feature (empty where none of its rings is kept)."""
    points = np.char.add(np.char.add(np.char.mod("%.1f", px), ","), np.char.mod("%.1f", py))
    starts = np.flatnonzero(np.r_[True, coord_ring[1:] != coord_ring[:-1]])
    ring_text = ["M" + " ".join(chunk) + "Z" for chunk in np.split(points, starts[1:])]
    paths = [[] for _ in range(n_features)]
    for ring, text in zip(coord_ring[starts], ring_text, strict=True):
        if ring_kept[ring]:
            paths[ring_feature[ring]].append(text)
    return ["".join(p) for p in paths]


def choropleth_svg(fc: dict, ids, values, *, title: str, colorbar_title: str, names=None,
                   projection: str = "mercator", width: int = 300, height: int = 220) -> str:
    """An SVG map (``width`` x ``height``, scaled to its container's width, its aspect kept)
    of ``values`` over the features of ``fc`` whose ids are ``ids``, coloured on the active
    palette's sequential scale from the least to the greatest value, in the current theme's
    look (`palette`); hover shows each area's name (``names``, default the id) and value."""
    ids = [str(i) for i in ids]
    v = np.asarray(values, dtype=float)
    if v.shape != (len(ids),) or not np.isfinite(v).all():
        raise InputError(f"choropleth_svg needs one finite value per area ({len(ids)})")
    labels = [str(n) for n in (names if names is not None else ids)]
    coords, coord_ring, ring_feature, inside = _rings(fc, ids)
    map_top = TITLE_PX + BAR_PX + PAD_PX
    px, py, ring_kept = _fitted(coords, coord_ring, ring_feature, inside, projection, width,
                                height - map_top)
    paths = _paths(px, py + map_top, coord_ring, ring_feature, ring_kept, len(ids))
    lo, hi = float(v.min()), float(v.max())
    scale = palette.colour_scale()
    fills = sample_colorscale(scale, list((v - lo) / (hi - lo) if hi > lo else v * 0))
    look, text = palette.figure_look(), palette.text_colour()
    bar = _colour_bar(scale, lo, hi, colorbar_title, text, width, zlib.crc32(title.encode()))
    areas = "".join(
        f'<path d="{d}" fill="{fill}"><title>{escape(name)}: {_number(value)} '
        f'{escape(colorbar_title)}</title></path>'
        for d, fill, name, value in zip(paths, fills, labels, v, strict=True) if d)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="hierdp-svg-map" role="img" '
            f'viewBox="0 0 {width} {height}" width="100%" '
            f'preserveAspectRatio="xMidYMid meet" aria-label="{escape(title)}">'
            f'<text x="{width / 2}" y="16" text-anchor="middle" fill="{text}" '
            f'font-size="14" font-weight="600">{escape(title)}</text>'
            f'{bar}'
            f'<g stroke="{look["line"]}" stroke-width="0.5" stroke-linejoin="round">'
            f'{areas}</g></svg>')


def _colour_bar(scale, lo: float, hi: float, label: str, text: str, width: int,
                tag: int) -> str:
    """A horizontal gradient under the title, its ends labelled with the values; ``tag``
    makes its id one of its own on a page of several maps."""
    stops = "".join(f'<stop offset="{at:g}" stop-color="{colour}"/>' for at, colour in scale)
    left, right, top = width * 0.2, width * 0.55, TITLE_PX + 2
    return (f'<defs><linearGradient id="hd-bar-{tag}">{stops}</linearGradient></defs>'
            f'<rect x="{left}" y="{top}" width="{right - left}" height="6" '
            f'fill="url(#hd-bar-{tag})"/>'
            f'<g fill="{text}" font-size="11" dominant-baseline="middle">'
            f'<text x="{left - 4}" y="{top + 3}" text-anchor="end">{_number(lo)}</text>'
            f'<text x="{right + 4}" y="{top + 3}">{_number(hi)} {escape(label)}</text></g>')
