"""Maps drawn by the server as SVG (the Home page's previews): the projections, one shaded
path per area with its tooltip, the theme's colours, and clear errors."""

from __future__ import annotations

import doctest
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core import palette
from hierdp_core.errors import InputError
from hierdp_core.geo import projection, svg_map
from hierdp_core.geo.maps import level_geojson

SVG = "{http://www.w3.org/2000/svg}"


def square(code: str, lon: float, lat: float, size: float = 1.0) -> dict:
    ring = [[lon, lat], [lon + size, lat], [lon + size, lat + size], [lon, lat + size],
            [lon, lat]]
    return {"type": "Feature", "id": code, "properties": {},
            "geometry": {"type": "Polygon", "coordinates": [ring]}}


def paths(svg: str) -> list[ET.Element]:
    return ET.fromstring(svg).findall(f".//{SVG}path")


@pytest.mark.parametrize("module", [projection, svg_map])
def test_doctests(module):
    assert doctest.testmod(module).failed == 0


def test_albers_usa_puts_alaska_and_hawaii_below_the_lower_48_and_leaves_out_the_rest():
    lon = np.array([-124.0, -67.0, -150.0, -155.5, -66.1, 12.5])  # WA, ME, AK, HI, PR, Rome
    lat = np.array([47.0, 45.0, 61.0, 19.6, 18.4, 41.9])
    x, y, kept = projection.project(lon, lat, "albers usa")
    assert kept.tolist() == [True, True, True, True, False, False]
    assert np.isnan(x[~kept]).all() and np.isnan(y[~kept]).all()
    west, east = x[0], x[1]
    assert west < 0 < east
    # the insets lie below San Diego and west of Brownsville, on the picture's left
    (sd_x, tx_x), (sd_y, _), _ = projection.project(np.array([-117.1, -97.4]),
                                                    np.array([32.7, 25.9]), "albers usa")
    assert (y[2:4] < sd_y).all() and (x[2:4] < tx_x).all() and (x[2:4] > west - 1e6).all()


def test_mercator_keeps_order_and_refuses_an_unknown_projection():
    x, y, kept = projection.project(np.array([0.0, 10.0]), np.array([0.0, 60.0]), "mercator")
    assert kept.all() and x[1] > x[0] and y[1] > y[0] and y[0] == pytest.approx(0, abs=1e-12)
    with pytest.raises(InputError, match="unknown projection 'robinson'"):
        projection.project(np.array([0.0]), np.array([0.0]), "robinson")


def test_each_area_is_one_path_shaded_from_the_least_to_the_greatest_value():
    fc = {"type": "FeatureCollection",
          "features": [square("a", 10, 45), square("b", 11, 45), square("c", 12, 45)]}
    palette.use("standard")
    svg = svg_map.choropleth_svg(fc, ["c", "a", "b"], [5, 1, 3], names=["Gamma", "<b>A", "B"],
                                 title="Three", colorbar_title="units")
    drawn = paths(svg)
    scale = palette.colour_scale()  # Viridis, its palest yellows cut on the white page
    fills = [p.get("fill") for p in drawn]
    assert fills[1] == _rgb(scale[0][1]) and fills[0] == _rgb(scale[-1][1])
    assert [p.find(f"{SVG}title").text for p in drawn] == ["Gamma: 5 units", "<b>A: 1 units",
                                                           "B: 3 units"]
    assert "&lt;b&gt;A" in svg  # escaped, shown as typed


def _rgb(colour: str) -> str:
    """Plotly's colour scales name their stops as #rrggbb or rgb(r, g, b)."""
    if colour.startswith("#"):
        return "rgb({}, {}, {})".format(*(int(colour[i:i + 2], 16) for i in (1, 3, 5)))
    return colour


def test_the_dark_theme_draws_dark_borders_and_light_text():
    fc = {"type": "FeatureCollection", "features": [square("a", 0, 0)]}
    palette.use("colour-blind", dark=True)
    try:
        svg = svg_map.choropleth_svg(fc, ["a"], [1], title="T", colorbar_title="u")
        dark_line = palette.figure_look()["line"]
    finally:
        palette.use(palette.DEFAULT)
    root = ET.fromstring(svg)
    assert root.find(f"{SVG}g[@stroke]").get("stroke") == dark_line == "rgba(14,17,23,0.7)"
    assert root.find(f"{SVG}text").get("fill") == "#fafafa"


def test_areas_outside_the_projection_are_left_out_and_bad_input_is_refused():
    fc = {"type": "FeatureCollection",
          "features": [square("ks", -98, 38), square("it", 12, 42)]}
    svg = svg_map.choropleth_svg(fc, ["ks", "it"], [1, 2], title="T", colorbar_title="u",
                                 projection="albers usa")
    assert len(paths(svg)) == 1
    with pytest.raises(InputError, match="no boundary for 1 area"):
        svg_map.choropleth_svg(fc, ["ks", "zz"], [1, 2], title="T", colorbar_title="u")
    with pytest.raises(InputError, match="one finite value per area"):
        svg_map.choropleth_svg(fc, ["ks", "it"], [1, np.nan], title="T", colorbar_title="u")
    with pytest.raises(InputError, match="no area falls inside"):
        svg_map.choropleth_svg(fc, ["it"], [1], title="T", colorbar_title="u",
                               projection="albers usa")


def test_the_us_states_fill_the_picture_with_every_state():
    fc = level_geojson("us-counties", "state")
    ids = [f["id"] for f in fc["features"]]
    svg = svg_map.choropleth_svg(fc, ids, np.arange(len(ids)), title="States",
                                 colorbar_title="n", projection="albers usa")
    drawn = paths(svg)
    assert len(drawn) == 51
    numbers = np.array([float(v) for p in drawn
                        for v in p.get("d").replace("M", " ").replace("Z", " ")
                        .replace(",", " ").split()])
    xs, ys = numbers[0::2], numbers[1::2]
    top = svg_map.TITLE_PX + svg_map.BAR_PX + svg_map.PAD_PX
    assert xs.min() >= 0 and xs.max() <= 300 and ys.min() >= top and ys.max() <= 220
    assert xs.max() - xs.min() > 290 or ys.max() - ys.min() > 220 - top - 1  # fitted


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-170, 170), st.floats(-80, 80), st.floats(0.01, 5),
                          st.integers(0, 10**6)), min_size=1, max_size=12))
def test_any_set_of_areas_gives_well_formed_svg_with_a_path_each(areas):
    fc = {"type": "FeatureCollection",
          "features": [square(str(i), lon, lat, size) for i, (lon, lat, size, _) in
                       enumerate(areas)]}
    svg = svg_map.choropleth_svg(fc, [str(i) for i in range(len(areas))],
                                 [a[3] for a in areas], title="T", colorbar_title="u")
    assert len(paths(svg)) == len(areas)
