"""Colour palettes and the light/dark look of the figures.

A `Palette` names a sequential colour scale (maps of counts), a diverging one (maps of
errors, centred at 0) and a list of category colours (bars and lines). `PALETTES` holds the
choices the dashboard offers; every one is readable by people with the common forms of
colour blindness except ``standard`` (plotly's category colours mix red and green).

The active palette and theme are per script run (a context variable: the dashboard sets them
at the top of every page with `use`, so two browser sessions never see each other's choice);
the figure builders in `hierdp_core.viz` read them with `active` and `figure_look`. Outside
the dashboard they are the defaults (``standard``, light).

Example
-------
>>> use("colour-blind", dark=True)
>>> active().sequential, figure_look()["line"]
('Cividis', 'rgba(14,17,23,0.7)')
>>> colour_scale()[0]  # Cividis from its first colour that stands off the dark page
[0.0, 'rgb(94, 99, 111)']
>>> use(DEFAULT)
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from plotly.colors import (
    find_intermediate_color,
    get_colorscale,
    hex_to_rgb,
    label_rgb,
    qualitative,
    unlabel_rgb,
)

from hierdp_core.errors import InputError


@dataclass(frozen=True)
class Palette:
    """A choice of colours: ``label`` (shown), plotly colour scale names ``sequential`` and
    ``diverging`` (low = below the truth), and category colours ``categorical``."""

    label: str
    sequential: str
    diverging: str
    categorical: tuple[str, ...]


#: Okabe & Ito (2008), "Color Universal Design": eight colours distinguishable under
#: protanopia, deuteranopia and tritanopia (black left out: it is the text colour)
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")

PALETTES: dict[str, Palette] = {
    "standard": Palette("Standard", "Viridis", "RdBu_r", tuple(qualitative.Plotly)),
    "colour-blind": Palette("Colour-blind safe: cividis", "Cividis", "PuOr_r", OKABE_ITO),
    "viridis-safe": Palette("Colour-blind safe: viridis", "Viridis", "PuOr_r", OKABE_ITO),
}
DEFAULT = "standard"
#: figure colours per theme: the background around a map (transparent: the page's), the
#: borders between units (light on the light theme, dark on the dark one), the box of a
#: legend drawn over a figure (the page's colour, so the theme's text reads on it) and the
#: line of the true values (the text's colour, softened)
_LOOKS = {False: {"bgcolor": "rgba(0,0,0,0)", "line": "rgba(255,255,255,0.6)",
                  "legend": "rgba(255,255,255,0.85)", "truth": "rgba(40,40,40,0.75)"},
          True: {"bgcolor": "rgba(0,0,0,0)", "line": "rgba(14,17,23,0.7)",
                 "legend": "rgba(14,17,23,0.85)", "truth": "rgba(235,235,235,0.8)"}}

_ACTIVE: ContextVar[tuple[str, bool]] = ContextVar("hierdp_palette", default=(DEFAULT, False))


def get(name: str) -> Palette:
    """The palette called ``name``; an `InputError` naming the choices otherwise."""
    try:
        return PALETTES[name]
    except KeyError:
        raise InputError(f"unknown palette {name!r}; use one of {', '.join(PALETTES)}") \
            from None


def use(name: str, dark: bool = False) -> None:
    """Make ``name`` the palette, and the light or ``dark`` look, of the figures built from
    now on in this context (a dashboard script run)."""
    get(name)
    _ACTIVE.set((name, bool(dark)))


def current() -> tuple[str, bool]:
    """The active palette's name and whether the look is dark."""
    return _ACTIVE.get()


def active() -> Palette:
    """The palette figures are drawn with now."""
    return PALETTES[_ACTIVE.get()[0]]


def is_dark() -> bool:
    return _ACTIVE.get()[1]


def figure_look() -> dict:
    """The figure colours of the current theme: a map's ``bgcolor`` and unit border
    ``line``, the ``legend`` box over a figure and the ``truth`` line."""
    return dict(_LOOKS[is_dark()])


#: the dashboard's text colour per theme (Streamlit's defaults) and its font
_TEXT = {False: "#31333f", True: "#fafafa"}
_FONT_FAMILY = '"Source Sans", "Source Sans Pro", sans-serif'


#: the page's background per theme (Streamlit 1.67's light and dark themes)
BACKGROUND = {False: "#ffffff", True: "#171614"}
#: the least WCAG contrast of a map's colour with the page (WCAG 2.1, 1.4.11: graphics 3:1)
MAP_CONTRAST = 3.0


def luminance(colour: str) -> float:
    """WCAG relative luminance of '#rrggbb' or 'rgb(r, g, b)'."""
    rgb = hex_to_rgb(colour) if colour.startswith("#") else unlabel_rgb(colour)
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
              for c in (v / 255 for v in rgb)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _at(scale: list, t: float) -> str:
    """The colour of the plotly colour scale ``scale`` ([position, colour] stops) at ``t``."""
    k = next(i for i in range(1, len(scale)) if scale[i][0] >= t or i == len(scale) - 1)
    (a0, c0), (a1, c1) = scale[k - 1], scale[k]
    rgb = [tuple(hex_to_rgb(c)) if c.startswith("#") else unlabel_rgb(c) for c in (c0, c1)]
    return label_rgb(tuple(round(v) for v in find_intermediate_color(
        *rgb, (t - a0) / (a1 - a0) if a1 > a0 else 0.0)))


def colour_scale(diverging: bool = False) -> list[list]:
    """The active palette's sequential (or ``diverging``) colour scale as [position, colour]
    stops, without the ends that would vanish into the current theme's page: each end
    moved inwards to the first colour that stands at least `MAP_CONTRAST` off `BACKGROUND`
    (the dark theme loses the darkest purples and blues, the light one the palest yellows).
    A diverging scale is cut by the same amount at both ends, so its middle (no error)
    stays at 0; its middle is pale by design and not held to the contrast. The colours in
    between are the scale's own, so it stays as readable by colour-blind people as it
    was."""
    scale = [[float(at), colour] for at, colour in get_colorscale(
        active().diverging if diverging else active().sequential)]
    page = BACKGROUND[is_dark()]
    steps = [i / 200 for i in range(201)]
    low = next(t for t in steps if contrast(_at(scale, t), page) >= MAP_CONTRAST)
    high = next(t for t in reversed(steps) if contrast(_at(scale, t), page) >= MAP_CONTRAST)
    if diverging:
        low = max(low, 1 - high)
        low, high = (low, 1 - low) if low < 0.5 else (0.0, 1.0)
    elif low >= high:
        low, high = 0.0, 1.0  # no part of the scale stands off the page: all of it
    if (low, high) == (0.0, 1.0):
        return scale
    cut = [[at, colour] for at, colour in scale if low <= at <= high]  # stops kept as named
    if cut[0][0] > low:
        cut.insert(0, [low, _at(scale, low)])
    if cut[-1][0] < high:
        cut.append([high, _at(scale, high)])
    return [[(at - low) / (high - low), colour] for at, colour in cut]


def text_colour() -> str:
    """The dashboard's text colour in the current theme."""
    return _TEXT[is_dark()]


def figure_template() -> dict:
    """A plotly template (as a dict) giving a figure the page's look in the current theme:
    its font and text colour, transparent backgrounds, faint grid lines and the active
    palette's category colours (what ``st.plotly_chart`` does with Streamlit's theme)."""
    text = text_colour()
    faint = "rgba(250,250,250,0.16)" if is_dark() else "rgba(49,51,63,0.14)"
    font = {"family": _FONT_FAMILY, "color": text, "size": 13}
    axis = {"gridcolor": faint, "zerolinecolor": faint, "linecolor": faint,
            "automargin": True}
    return {"layout": {
        "font": font, "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)",
        "colorway": list(active().categorical),
        "title": {"font": {**font, "size": 16, "weight": 600}},
        "xaxis": axis, "yaxis": axis, "hovermode": "closest",
        "hoverlabel": {"font": {"family": _FONT_FAMILY}},
        "modebar": {"bgcolor": "rgba(0,0,0,0)", "color": faint, "activecolor": text}}}
