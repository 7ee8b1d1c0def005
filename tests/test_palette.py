"""hierdp_core.palette: the colour-blind safe palettes stay distinguishable under simulated
protanopia and deuteranopia (Viénot, Brettel & Mollon 1999), the active palette and theme
are per context, and viz's figures follow them."""

from __future__ import annotations

import contextvars

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.colors import convert_colors_to_same_type, get_colorscale, hex_to_rgb

from hierdp_core import figure_parts, palette
from hierdp_core.errors import InputError
from hierdp_core.map_figures import choropleth

#: linear-RGB simulation matrices of Viénot, Brettel & Mollon (1999)
DICHROMATS = {
    "protanopia": np.array([[0.11238, 0.88762, 0], [0.11238, 0.88762, 0],
                            [0.00401, -0.00401, 1]]),
    "deuteranopia": np.array([[0.29275, 0.70725, 0], [0.29275, 0.70725, 0],
                              [-0.02234, 0.02234, 1]]),
}
SAFE = [name for name in palette.PALETTES if name != "standard"]


def linear(rgb255):
    c = np.asarray(rgb255, dtype=float) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def seen(rgb255, matrix):
    """The sRGB colour (0-255) a dichromat sees."""
    c = np.clip(linear(rgb255) @ matrix.T, 0, 1)
    return 255 * np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def closest_pair(colours, matrix) -> float:
    s = seen(colours, matrix)
    d = np.linalg.norm(s[:, None] - s[None], axis=2)
    return float(d[~np.eye(len(s), dtype=bool)].min())


def scale_rgb(name: str) -> np.ndarray:
    colours = [c for _, c in get_colorscale(name)]
    return 255 * np.array(convert_colors_to_same_type(colours, colortype="tuple")[0])


@pytest.mark.parametrize("matrix", DICHROMATS.values(), ids=DICHROMATS)
def test_safe_category_colours_stay_apart(matrix):
    for name in SAFE:
        colours = [hex_to_rgb(c) for c in palette.get(name).categorical]
        assert closest_pair(colours, matrix) > 30, name
    plotly = [hex_to_rgb(c) for c in palette.get("standard").categorical[:7]]
    assert closest_pair(plotly, matrix) < 20  # why the standard one is not offered as safe


@pytest.mark.parametrize("name", SAFE)
def test_safe_scales(name):
    p = palette.get(name)
    luminance = linear(scale_rgb(p.sequential)) @ [0.2126, 0.7152, 0.0722]
    assert (np.diff(luminance) > 0).all()  # ordered by lightness: readable in any vision
    ends = scale_rgb(p.diverging)[[0, -1]]
    for matrix in DICHROMATS.values():  # below and above the truth stay apart
        assert np.linalg.norm(seen(ends[0], matrix) - seen(ends[1], matrix)) > 80


def test_the_choice_is_per_context_and_checked():
    def choose():
        palette.use("colour-blind", dark=True)
        return palette.active().sequential, palette.is_dark()

    assert contextvars.copy_context().run(choose) == ("Cividis", True)
    assert palette.active() is palette.get(palette.DEFAULT) and not palette.is_dark()
    with pytest.raises(InputError, match="unknown palette"):
        palette.use("rainbow")


def test_viz_follows_the_active_palette_and_theme():
    def figures():
        palette.use("colour-blind", dark=True)
        fig = choropleth("geo.json", ["a", "b"], [1.0, -2.0], title="t",
                         colorbar_title="error", diverging=True)
        return fig, figure_parts.PALETTE[0], len(figure_parts.PALETTE)

    fig, first, n = contextvars.copy_context().run(figures)
    trace = fig.data[0]
    puor = [c for _, c in get_colorscale("PuOr_r")]
    drawn = [c for _, c in trace.colorscale]
    assert drawn[1:-1] == [c for c in puor if c in drawn[1:-1]]  # PuOr_r, its ends cut (dark)
    assert trace.marker.line.color == palette._LOOKS[True]["line"]
    assert fig.layout.geo.bgcolor == "rgba(0,0,0,0)"
    assert (first, n) == (palette.OKABE_ITO[0], len(palette.OKABE_ITO))
    assert figure_parts.PALETTE[0] == palette.get("standard").categorical[0]  # here: the default


def test_the_figure_template_follows_the_theme_and_the_palette():
    def template(name: str, dark: bool) -> dict:
        palette.use(name, dark=dark)
        return palette.figure_template()["layout"]

    light = contextvars.copy_context().run(template, "standard", False)
    dark = contextvars.copy_context().run(template, "colour-blind", True)
    assert light["font"]["color"] == "#31333f" and dark["font"]["color"] == "#fafafa"
    assert light["paper_bgcolor"] == dark["paper_bgcolor"] == "rgba(0,0,0,0)"
    assert light["xaxis"]["gridcolor"] != dark["xaxis"]["gridcolor"]
    assert dark["colorway"] == list(palette.OKABE_ITO)
    assert light["colorway"] == list(palette.get("standard").categorical)
    go.layout.Template(palette.figure_template())  # plotly accepts every key of it


def test_the_flow_legend_and_the_true_values_line_follow_the_theme():
    """A legend box over the flow map in the page's colour (the theme's text reads on it),
    the map around the areas transparent, and the true values' line of a range histogram in
    a colour that shows on the theme's background."""
    from hierdp_core.flows.figures import flow_map
    from hierdp_core.ranges.figures import histogram_with_buckets

    def figures(dark: bool):
        palette.use(palette.DEFAULT, dark=dark)
        pairs = pd.DataFrame({"origin_id": ["A"], "destination_id": ["B"], "value": [5]})
        coords = pd.DataFrame({"latitude": [40.0, 34.0], "longitude": [-74.0, -118.0]},
                              index=["A", "B"])
        flows = flow_map(pairs, coords, title="t")
        ranges = histogram_with_buckets(["0", "1"], [3, 1], [2, 2], None, "u")
        return flows.layout.legend.bgcolor, flows.layout.geo.bgcolor, ranges.data[0].line.color

    for dark in (False, True):
        legend, around, truth = contextvars.copy_context().run(figures, dark)
        look = palette._LOOKS[dark]
        assert (legend, around, truth) == (look["legend"], look["bgcolor"], look["truth"])
    assert palette._LOOKS[True]["legend"] != palette._LOOKS[False]["legend"]
    assert palette._LOOKS[True]["truth"] != palette._LOOKS[False]["truth"]


def _scale(name: str, dark: bool, diverging: bool) -> list:
    def run():
        palette.use(name, dark=dark)
        return palette.colour_scale(diverging)
    return contextvars.copy_context().run(run)


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("name", list(palette.PALETTES))
def test_both_ends_of_every_map_scale_stand_off_the_page(name, dark):
    """A map's least and greatest values (and, on the error scale, the largest errors both
    ways) never take a colour lost in the page: WCAG's 3:1 for graphics against the theme's
    background (Viridis' dark purple stood 1.2:1 off the dark page, its yellow 1.3:1 off the
    white one). The rest of the scale is the palette's own: its stops in order, colours of
    the named scale, lightness still ordered (colour-blind readers read the order from it),
    and the error scale's pale middle still at 0."""
    page = palette.BACKGROUND[dark]
    for diverging in (False, True):
        scale = _scale(name, dark, diverging)
        positions, colours = [at for at, _ in scale], [c for _, c in scale]
        assert positions[0] == 0.0 and positions[-1] == 1.0 and np.all(np.diff(positions) > 0)
        for end in (colours[0], colours[-1]):
            assert palette.contrast(end, page) >= palette.MAP_CONTRAST, (diverging, end)
        named = get_colorscale(palette.get(name).diverging if diverging
                               else palette.get(name).sequential)
        assert set(colours[1:-1]) <= {c for _, c in named}
        if diverging:  # cut equally at both ends: the middle colour stays at 0.5
            assert np.abs(np.subtract(_rgb(palette._at(named, 0.5)),
                                      _rgb(palette._at(scale, 0.5)))).max() <= 1
        elif name in SAFE:
            lightness = [palette.luminance(c) for c in colours]
            assert np.all(np.diff(lightness) > 0)


def _rgb(colour: str) -> tuple:
    return tuple(hex_to_rgb(colour)) if colour.startswith("#") else tuple(
        int(v) for v in colour[colour.index("(") + 1:-1].split(","))


def test_a_map_in_the_dark_theme_uses_the_scale_cut_for_the_dark_page():
    """The map figures (plotly's and Home's SVG) draw with `colour_scale`: in the dark
    theme their darkest colour stands 3:1 off the page (Viridis' #440154 did not)."""
    from hierdp_core.geo import svg_map

    def figures():
        palette.use(palette.DEFAULT, dark=True)
        fig = choropleth("geo.json", ["a", "b"], [1.0, 2.0], title="t", colorbar_title="n")
        fc = {"type": "FeatureCollection", "features": [
            {"type": "Feature", "id": k, "properties": {}, "geometry": {
                "type": "Polygon", "coordinates": [[[x, 45], [x + 1, 45], [x + 1, 46],
                                                    [x, 46], [x, 45]]]}}
            for k, x in (("a", 10), ("b", 11))]}
        svg = svg_map.choropleth_svg(fc, ["a", "b"], [1.0, 2.0], title="t", colorbar_title="n")
        return [c for _, c in fig.data[0].colorscale], svg, palette.colour_scale()

    drawn, svg, scale = contextvars.copy_context().run(figures)
    assert drawn == [c for _, c in scale]
    assert f'fill="{scale[0][1]}"' in svg  # the least value's area
    assert palette.contrast(drawn[0], palette.BACKGROUND[True]) >= palette.MAP_CONTRAST
