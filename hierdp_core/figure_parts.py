"""The parts every figure builder shares: the active palette's colours, the plotly config
that keeps maps offline, and the text of numbers, names and titles in hover text and labels.

Offline maps need one more thing. plotly.js fetches a world outline file
(``https://cdn.plot.ly/un/world_110m.json``) for every geo subplot whose trace has a
``locationmode`` -- and a choropleth with ``geojson=...`` always has one (``geojson-id``) --
and draws nothing if that fetch fails. `plotly_config()` returns a plotly *config* whose
``topojsonURL`` points at an empty topology held in a ``data:`` URL, so no request leaves
the browser; pass it wherever a figure is shown:
``st.plotly_chart(fig, config=plotly_config())`` or ``fig.to_html(config=plotly_config())``.

Text from the data (node labels, level and category names) goes through `esc` before it
enters titles or hover text, so a label such as ``<b>`` is shown as typed.

>>> number_text(1234567.0), number_text(0.12345), esc("<b>")
('1,234,567', '0.123', '&lt;b&gt;')
"""

from __future__ import annotations

import html
import math
import urllib.parse
from collections.abc import Sequence

import numpy as np
from plotly.colors import hex_to_rgb

from hierdp_core import palette
from hierdp_core.errors import InputError


class _ActiveColours(Sequence):
    """The active palette's category colours (`hierdp_core.palette`), read when indexed."""

    def __getitem__(self, i):
        return palette.active().categorical[i]

    def __len__(self) -> int:
        return len(palette.active().categorical)


PALETTE = _ActiveColours()
_EMPTY_TOPOLOGY = '{"type":"Topology","objects":{},"arcs":[]}'


def plotly_config(**extra) -> dict:
    """A plotly config that lets map figures render offline (see module doc).

    ``extra`` keys are merged in (e.g. ``displaylogo=False``)."""
    url = "data:application/json," + urllib.parse.quote(_EMPTY_TOPOLOGY) + "#"
    return {"topojsonURL": url, "displaylogo": False, **extra}


def esc(text) -> str:
    return html.escape(str(text), quote=False)


def number_text(v: float) -> str:
    """A number for hover text: thousands separators, integers without decimals."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 999.5:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def number_texts(values) -> list[str]:
    return [number_text(v) for v in np.asarray(values, dtype=float).ravel()]


def numeric_1d(name: str, values, n: int | None = None) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric") from exc
    arr = arr.ravel() if arr.ndim != 1 else arr
    if n is not None and arr.size != n:
        raise InputError(f"{name} has {arr.size} values, expected {n}")
    return arr


def escaped_names(names, n: int, default) -> list[str]:
    if names is None:
        names = default
    names = [str(x) for x in np.asarray(names, dtype=object).ravel()]
    if len(names) != n:
        raise InputError(f"{len(names)} names given for {n} values")
    return [esc(x) for x in names]


def figure_title(text: str, subtitle: str | None = None) -> dict:
    """Title with an optional smaller second line (works on every plotly >= 5)."""
    full = text if not subtitle else f"{text}<br><sup>{subtitle}</sup>"
    return {"text": full, "x": 0.0, "xanchor": "left"}


def mark_x(fig, x: float, text: str, *, log_axis: bool) -> None:
    """A dashed grey vertical line at ``x`` with ``text`` at its top right. Over a log x axis
    (``log_axis``) the label's position is log10(x): plotly reads a shape's x as the value
    but an annotation's as its log10, so `add_vline`'s own label would stand at 10**x and
    stretch the axis to it."""
    fig.add_vline(x=x, line_dash="dash", line_color="grey")
    fig.add_annotation(x=math.log10(x) if log_axis else x, xref="x", y=1, yref="y domain",
                       text=text, showarrow=False, xanchor="left", yanchor="top")


def rgba(colour: str, alpha: float) -> str:
    r, g, b = hex_to_rgb(colour)
    return f"rgba({r}, {g}, {b}, {alpha})"


def short_number(v: float) -> str:
    """Compact tick label: 1, 10, 1k, 10k, 1M."""
    a = abs(v)
    sign = "-" if v < 0 else ""
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{sign}{a / div:g}{suffix}"
    return f"{sign}{a:g}"


def log_axis_ticks(values) -> dict:
    """Plotly axis settings for a log axis over positive ``values``: ticks at 1, 2 and 5
    times powers of ten (only powers of ten over more than three decades), full labels."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if v.size == 0:
        return {}
    lo, hi = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))
    steps = (1.0,) if hi - lo > 3 else (1.0, 2.0, 5.0)
    ticks = [m * 10.0**d for d in range(lo, hi + 1) for m in steps
             if v.min() / 1.5 <= m * 10.0**d <= v.max() * 1.5]
    return {"tickmode": "array", "tickvals": ticks, "ticktext": [short_number(t) for t in ticks]}


