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
>>> use(DEFAULT)
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from plotly.colors import qualitative

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
