"""Map figures (plotly): a choropleth of one value per area, light enough to redraw fast.

Maps are `go.Choropleth` traces over a GeoJSON given by the caller (a dict, or the URL of a
file the browser fetches once and caches; no tile server) with the base map hidden. Render
them with ``config=figure_parts.plotly_config()`` so they work offline (see `hierdp_core.figure_parts`).

A figure carries, per area, its id, its colour value, its value for the hover (full
precision) and its name; the numbers travel as typed arrays (plotly's binary encoding), and
the hover is formatted by the browser, so no text is repeated per area. Names from the data
are HTML-escaped, so a label such as ``<b>`` is shown as typed.

Example
-------
>>> fig = choropleth("app/static/geo/x.geojson", ["a", "b"], [3, 1500], title="Released",
...                  colorbar_title="people", log_scale=True)
>>> fig.data[0].hovertemplate
'<b>%{text}</b><br>people: %{customdata:,.1~f}<extra></extra>'
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from hierdp_core import palette
from hierdp_core.errors import InputError
from hierdp_core.figure_parts import esc, escaped_names, figure_title, numeric_1d, short_number

HOVER_FORMAT = ",.1~f"  # d3-format: 1,234 for counts, 1,234.5 for a noisy measurement


def symlog(v: np.ndarray) -> np.ndarray:
    """sign(v) * log10(1 + |v|): log10(1 + v) for counts, defined for negative values."""
    return np.sign(v) * np.log10(1 + np.abs(v))


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Tick positions in symlog space from ``lo`` to ``hi`` (also symlog space) with labels
    in original units: powers of ten, plus 2 and 5 times them over short ranges."""
    top = 10.0 ** max(abs(lo), abs(hi))  # >= 1 + the largest |value| shown
    n_dec = int(math.ceil(math.log10(top))) + 1
    candidates = {0.0}
    for steps in ((1.0,), (1.0, 2.0, 5.0)):
        mags = {m * 10.0**d for d in range(n_dec) for m in steps}
        candidates = {0.0} | mags | {-v for v in mags}
        inside = [v for v in candidates if lo - 1e-9 <= symlog(np.array(v)) <= hi + 1e-9]
        if len(inside) >= 3:
            break
    ticks = sorted(inside)
    return [float(symlog(np.array(t))) for t in ticks], [short_number(t) for t in ticks]


def nice_ceiling(value: float) -> float:
    """The least of 1, 2, 5 times a power of ten that is >= ``value`` (> 0), so a colour
    scale ending there stays put when a new release moves its largest value a little."""
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"nice_ceiling needs a finite positive value, got {value!r}")
    exponent = math.floor(math.log10(value))
    candidates = [m * 10.0**exponent for m in (1.0, 2.0, 5.0)] + [10.0 ** (exponent + 1)]
    return next(c for c in candidates if c >= value * (1 - 1e-12))


def colour_range(values: np.ndarray, value_range: tuple | None,
                 diverging: bool) -> tuple[float, float]:
    """The (low, high) the colours span: ``value_range`` or the finite values' range,
    symmetric about 0 when ``diverging``, never empty."""
    finite = values[np.isfinite(values)]
    if value_range is not None:
        lo, hi = (float(value_range[0]), float(value_range[1]))
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise InputError(f"value_range must be (low, high) with low <= high, got "
                             f"{value_range!r}")
    elif finite.size:
        lo, hi = float(finite.min()), float(finite.max())
    else:
        lo, hi = 0.0, 1.0
    if diverging:
        m = max(abs(lo), abs(hi)) or 1.0
        return -m, m
    return (lo, lo + 1.0) if lo == hi else (lo, hi)


def choropleth(
    geojson: dict | str,
    locations,
    values,
    *,
    title: str,
    colorbar_title: str,
    names=None,
    diverging: bool = False,
    log_scale: bool = False,
    value_range: tuple | None = None,
    height: int = 420,
    projection: str = "mercator",
    colorbar_below: bool = False,
) -> go.Figure:
    """A map of ``values`` over the GeoJSON features whose ``id`` equals ``locations``.

    ``geojson`` is a FeatureCollection dict, or the URL of one: the browser then fetches it
    once and caches it, and the figure carries only ids and values (much lighter).

    ``projection`` is a plotly geo projection type ('albers usa' suits the United States).

    ``diverging``: a diverging scale centred at 0 with a symmetric range (for errors).
    ``log_scale``: colour by log10(1 + v) (sign-symmetric for negative v), ticks in
    original units. ``value_range`` (lo, hi) fixes the colour range so several maps
    share one scale (with ``diverging`` it is widened to be symmetric about 0).
    Hover: the area's name (``names``, default its id) and its value. NaN values (e.g. an
    unmeasured level) are left blank. Render with ``config=plotly_config()`` offline.
    ``colorbar_below``: the colour bar across the foot of the figure, not beside the map
    (a map in a narrow column keeps its width).
    """
    if not isinstance(geojson, dict | str):
        raise InputError("geojson must be a GeoJSON dict (a FeatureCollection) or its URL")
    locs = np.asarray(locations, dtype=object).ravel().astype(str)
    v = numeric_1d("values", values, locs.size)
    labels = escaped_names(names, locs.size, locs)
    lo, hi = colour_range(v, value_range, diverging)

    z = symlog(v) if log_scale else v
    zmin, zmax = (float(symlog(np.array(lo))), float(symlog(np.array(hi)))) \
        if log_scale else (lo, hi)
    colorbar = {"title": {"text": esc(colorbar_title) + (" (log scale)" if log_scale else "")}}
    if log_scale:
        tickvals, ticktext = log_ticks(zmin, zmax)
        colorbar.update(tickmode="array", tickvals=tickvals, ticktext=ticktext)

    look = palette.figure_look()
    trace = go.Choropleth(
        geojson=geojson,
        featureidkey="id",
        locations=locs,  # numpy arrays: plotly validates them whole, not item by item
        z=z.astype(np.float32),  # colour only: single precision is plenty
        zmin=zmin,
        zmax=zmax,
        colorscale=palette.colour_scale(diverging),  # its ends stand off the page
        colorbar=colorbar,
        marker_line_width=0.3,
        marker_line_color=look["line"],
        text=np.asarray(labels, dtype=str),
        customdata=v,
        hovertemplate="<b>%{text}</b><br>" + esc(colorbar_title)
        + ": %{customdata:" + HOVER_FORMAT + "}<extra></extra>",
    )
    if diverging:
        trace.update(zmid=0)
    if colorbar_below:
        trace.colorbar.update(orientation="h", x=0.5, xanchor="center", y=0, yanchor="top",
                              len=0.9, thickness=12, title_side="top")
    fig = go.Figure(trace)
    fig.update_geos(fitbounds="locations", visible=False, projection_type=projection,
                    bgcolor=look["bgcolor"])
    fig.update_layout(title=figure_title(esc(title)), height=height,
                      margin={"l": 10, "r": 10, "t": 50, "b": 70 if colorbar_below else 10})
    return fig
