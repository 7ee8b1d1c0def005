"""Colours as the browser paints them, in the light and the dark theme (the dashboard follows
the browser's colour scheme), in a real headless Chromium (Debian's, driven by Playwright).
The checks are here; the dark theme's walk runs them here, the light theme's in the layout
walk (test_browser_layout.py), each in one session with one release of the US counties:

- the first screen of Results at 1280 x 800: the whole map in it, and no county lost in the
  page (every area stands off the page's background);
- the Results map switched from a recoloured view (True, or Noisy) to the error map paints
  every one of the 3,141 US counties with its error on the error scale (the in-place
  recolour once left the previous colours over the new colour bar; its hover label names
  the error), and its title and colour bar keep the theme's text colour when the map alone is redrawn (a fragment's
  rerun once drew them in the light look on the dark page);
- every Hierarchy treemap label reads on its tile;
- the Flows map's legend text and the Range queries' true-values line and its legend swatch
  stand out from what lies under them (WCAG contrast: 4.5 for text, 3 for lines and for
  the legend's title, which Streamlit draws in its secondary grey).

Screenshots: test-artifacts/screenshots/colours_*.png and first_screen_*.png."""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest
import test_browser as tb
from test_browser import browser, server  # noqa: F401  (fixtures)

from tests.browser_tools import new_context, settle, wait_until

pytestmark = pytest.mark.browser
TEXT_CONTRAST, LINE_CONTRAST = 4.5, 3.0  # WCAG 2.1: 1.4.3 (text) and 1.4.11 (graphics)
WIDTH, FOLD = 1280, 800  # the window of every walk here and in the layout walk


@contextmanager
def themed_page(browser, scheme: str):  # noqa: F811
    """A fresh page at 1280 x 800 whose browser prefers the ``scheme`` ('light' or 'dark')
    colours."""
    context = new_context(browser, viewport={"width": WIDTH, "height": FOLD},
                                  color_scheme=scheme)
    pg = context.new_page()
    pg.set_default_timeout(90_000)
    try:
        yield pg
    finally:
        context.close()


# ---- colours and their contrast ----------------------------------------------------------
def rgba(colour: str) -> tuple[float, float, float, float]:
    """'#rgb', '#rrggbb', 'rgb(r, g, b)' or 'rgba(r, g, b, a)' as (r, g, b, a)."""
    if colour.startswith("#"):
        digits = colour[1:] if len(colour) == 7 else "".join(2 * c for c in colour[1:])
        return (*(int(digits[i:i + 2], 16) for i in (0, 2, 4)), 1.0)
    parts = [float(p) for p in re.findall(r"[\d.]+", colour)]
    return (*parts[:3], parts[3] if len(parts) > 3 else 1.0)


def over(top: tuple, below: tuple) -> tuple:
    """``top`` (r, g, b, a) painted over the opaque ``below``."""
    a = top[3]
    return (*(a * t + (1 - a) * b for t, b in zip(top[:3], below[:3], strict=True)), 1.0)


def luminance(colour: tuple) -> float:
    def linear(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in colour[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple, b: tuple) -> float:
    """WCAG contrast ratio of two opaque colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def page_background(pg) -> tuple:
    return rgba(pg.evaluate("() => getComputedStyle(document.querySelector("
                            "'[data-testid=\"stApp\"]')).backgroundColor"))


def assert_theme(pg, scheme: str) -> tuple:
    """The app shows the ``scheme`` theme; its background colour."""
    background = page_background(pg)
    assert (luminance(background) < 0.2) == (scheme == "dark"), background
    return background


# ---- 1. the Results map after a recoloured view -------------------------------------------
AREAS = """() => {
    const map = [...document.querySelectorAll('.js-plotly-plot')]
        .find(p => p._fullData && p._fullData[0].type === 'choropleth');
    const trace = map._fullData[0];
    return {colorbar: map.querySelector('.cbtitle')?.textContent ?? '',
            title: map.querySelector('.gtitle')?.textContent ?? '',
            scale: trace.colorscale, zmin: trace.zmin, zmax: trace.zmax,
            texts: Array.from(map.querySelectorAll('.gtitle, .cbtitle text, .cbaxis text'),
                              t => getComputedStyle(t).fill),
            areas: Array.from(map.querySelectorAll('path.choroplethlocation'),
                              p => [p.__data__.z, getComputedStyle(p).fill])};
}"""


def scale_colour(scale: list, zmin: float, zmax: float, z: float) -> tuple:
    """The colour plotly's scale gives ``z``: linear in RGB between the stops, clamped."""
    t = min(max((z - zmin) / (zmax - zmin), 0.0), 1.0) if zmax > zmin else 0.0
    stops = [(at, rgba(c)) for at, c in scale]
    k = next((i for i in range(1, len(stops)) if stops[i][0] >= t), len(stops) - 1)
    (a0, c0), (a1, c1) = stops[k - 1], stops[k]
    f = (t - a0) / (a1 - a0) if a1 > a0 else 0.0
    return tuple(u + (v - u) * f for u, v in zip(c0[:3], c1[:3], strict=True))


def worst_area(state: dict) -> float:
    """The largest channel difference between an area's painted colour and the colour its
    value has on the drawn colour scale (0 when every area is painted right)."""
    return max(max(abs(p - e) for p, e in zip(rgba(fill)[:3], scale_colour(
        state["scale"], state["zmin"], state["zmax"], z), strict=True))
        for z, fill in state["areas"])


def pick_map(pg, shown: str) -> None:
    """Click the map ``shown`` in the control above the Results map; wait for the rerun."""
    pg.locator("[data-testid='stButtonGroup']").get_by_role("radio", name=shown,
                                                            exact=True).click()
    settle(pg)


def choose_map(pg, shown: str, colorbar: str) -> dict:
    """Pick the map ``shown`` above the Results map; wait until its 3,141 areas are drawn
    under its title and colour bar; the painted state (`AREAS`)."""
    pick_map(pg, shown)
    wait_until(pg, f"""() => {{ const s = ({AREAS})();
        return s.areas.length === 3141 && s.title.startsWith({shown!r})
            && s.colorbar.startsWith({colorbar!r}); }}""", timeout=60_000)
    pg.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    return pg.evaluate(AREAS)


def the_error_map_after_a_recoloured_view_paints_every_area_by_its_error(
        pg, scheme: str, background: tuple) -> None:
    """On Results (the US counties' release drawn): from a recoloured view (True in the
    light theme, Noisy in the dark) to the error map and back to the released counts."""
    first = {"light": "True", "dark": "Noisy (measured)"}[scheme]
    # Released -> True (or Noisy): same areas, same colour scale: recoloured in place
    pick_map(pg, first)
    wait_until(pg, f"() => ({AREAS})().title.startsWith({first!r})", timeout=60_000)
    error = choose_map(pg, "Error (released − true)", "error")
    tb.no_exception(pg)
    assert "error:" in tb.map_hover(pg)  # its hover label names the error
    tb.shot(pg, f"colours_error_map_{scheme}")
    assert len({fill for _, fill in error["areas"]}) > 50  # the map shows its errors
    assert worst_area(error) <= 2  # every area: its error's colour, up to rounding
    released = choose_map(pg, "Released", "people")  # and back: the counts' colours
    assert worst_area(released) <= 2
    for state in (error, released):  # title and colour bar in the theme's text colour
        assert min(contrast(rgba(fill), background) for fill in state["texts"]) \
            >= TEXT_CONTRAST, state["texts"]


# ---- 2. legends and lines in both themes --------------------------------------------------
FLOW_LEGEND = """() => {
    const map = [...document.querySelectorAll('.js-plotly-plot')]
        .find(p => p._fullData && p._fullData.some(t => t.type === 'scattergeo'));
    const legend = map.querySelector('.legend');
    const bg = legend.querySelector('rect.bg');
    const base = map._fullData.find(t => t.type === 'choropleth');
    return {texts: Array.from(legend.querySelectorAll('text'),
                              t => [t.textContent, getComputedStyle(t).fill]),
            background: [getComputedStyle(bg).fill, getComputedStyle(bg).fillOpacity],
            areas: base ? base.colorscale.map(([, c]) => c) : [],
            map: map._fullLayout.geo.bgcolor};
}"""
TRUE_LINE = """() => {
    const chart = [...document.querySelectorAll('.js-plotly-plot')]
        .find(p => p._fullData && p._fullData.some(t => t.type === 'bar'));
    const isTrue = g => g.__data__?.[0]?.trace?.name?.startsWith('true');
    const painted = path => { const s = getComputedStyle(path);
        return [s.stroke, s.strokeOpacity, getComputedStyle(path.closest('g.trace')).opacity]; };
    const line = [...chart.querySelectorAll('.scatterlayer g.trace')].find(isTrue)
        .querySelector('path.js-line');
    const swatch = [...chart.querySelectorAll('.legend g.traces')]
        .find(isTrue)
        .querySelector('.legendlines path');
    const bar = chart._fullData.find(t => t.type === 'bar');
    return {line: painted(line), swatch: [getComputedStyle(swatch).stroke,
                                          getComputedStyle(swatch).strokeOpacity, '1'],
            bar: [bar.marker.color, bar.opacity]};
}"""


def drawn(pg, state_js: str, ready: str = "true") -> dict:
    """``state_js``'s answer once it can be read (its figure drawn) and ``ready`` (a JS
    condition on ``state``) holds."""
    wait_until(pg, f"""() => {{ let state;
        try {{ state = ({state_js})(); }} catch (error) {{ return false; }}
        return {ready}; }}""", timeout=120_000)
    return pg.evaluate(state_js)


def painted(stroke: str, *opacities: str) -> tuple:
    """A stroke with its opacities, as (r, g, b, a)."""
    r, g, b, a = rgba(stroke)
    for o in opacities:
        a *= float(o)
    return r, g, b, a


def the_flow_map_legend_reads(pg, scheme: str, background: tuple) -> None:
    """The Flows map's legend text stands out from the legend box over what lies under it."""
    legend = drawn(pg, FLOW_LEGEND, "state.texts.length >= 5")
    box = rgba(legend["background"][0])[:3] + (float(legend["background"][1]),)
    # the legend lies over the map's background (on the page) or the base map's areas
    under = [over(rgba(legend["map"]), background)] + [rgba(c) for c in legend["areas"]]
    (_, title), *entries = legend["texts"]  # the title in Streamlit's secondary grey
    pg.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")
    tb.shot(pg, f"colours_flows_{scheme}")
    for fills, least in (([title], LINE_CONTRAST), ([f for _, f in entries], TEXT_CONTRAST)):
        assert min(contrast(rgba(fill), over(box, u)) for fill in fills
                   for u in under) >= least, legend


def the_flows_page_and_its_legend(pg, scheme: str, background: tuple) -> None:
    """The Flows legend reads (`the_flow_map_legend_reads`), then test_browser.py's checks
    of the page: its maps, a sweep, its plain-language panel and configuration box."""
    the_flow_map_legend_reads(pg, scheme, background)
    tb.the_flows_page_draws_sweeps_and_explains(pg)


def the_range_true_values_line_shows(pg, scheme: str, background: tuple) -> None:
    """The Range queries' true-values line and its legend swatch stand out from the page
    and the bars."""
    truth = drawn(pg, TRUE_LINE, "true")
    pg.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")
    tb.shot(pg, f"colours_ranges_{scheme}")
    bar = over(painted(truth["bar"][0], str(truth["bar"][1])), background)
    for part in ("line", "swatch"):
        colour = painted(*truth[part])
        for below in (background, bar):  # the line runs over the page and the bars
            assert contrast(over(colour, below), below) >= LINE_CONTRAST, (part, truth)


# ---- 3. the first screen at 1280 x 800 (issue 31 item 5) ----------------------------------
#: the bounding box of every map's drawn areas (not its figure: title, colour bar, margins)
DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')]
    .filter(p => p.querySelector('path.choroplethlocation')).map(p => {
        const boxes = [...p.querySelectorAll('path.choroplethlocation')]
            .map(a => a.getBoundingClientRect()).filter(b => b.width > 0);
        const left = Math.min(...boxes.map(b => b.left)), top = Math.min(...boxes.map(b => b.top));
        return {x: left, y: top, width: Math.max(...boxes.map(b => b.right)) - left,
                height: Math.max(...boxes.map(b => b.bottom)) - top};
    })"""
FILLS = """() => [...new Set(Array.from(document.querySelectorAll('path.choroplethlocation'),
                                     p => getComputedStyle(p).fill))]"""
TILES = """() => Array.from(document.querySelectorAll('.treemaplayer g.slice'), g => {
    const text = g.querySelector('text'), tile = g.querySelector('path.surface');
    const style = tile && getComputedStyle(tile);
    return text && text.textContent.trim() && style ? [text.textContent,
        getComputedStyle(text).fill, style.fill, style.fillOpacity] : null;
}).filter(t => t)"""


def the_whole_results_map_is_in_the_first_screen(pg, scheme: str, background: tuple) -> None:
    """At 1280 x 800, Results opened: the whole map in the first screen (its top was at y 502
    and its foot at 1022), drawn at least 300 px high (not shrunk to fit); no county lost in
    the page: every area stands WCAG 3:1 off the page's background (the dark theme's
    darkest purples stood about 2:1 off it, the light theme's yellows 1.3:1)."""
    assert tb.maps_drawn(pg, expect=[3141]) == [3141]
    tb.no_exception(pg)
    tb.shot(pg, f"first_screen_results_{scheme}")
    figure = pg.locator(".js-plotly-plot").filter(
        has=pg.locator("path.choroplethlocation")).first.bounding_box()
    (shown,) = pg.evaluate(DRAWN)
    assert figure["y"] >= 0 and figure["y"] + figure["height"] <= FOLD, figure
    assert shown["y"] + shown["height"] <= FOLD and shown["height"] >= 300, shown
    # every county's colour stands off the page (3:1 at each end of the scale; channel
    # rounding moves a ratio by less than 0.05)
    worst = min((contrast(over(rgba(f), background), background), f)
                for f in pg.evaluate(FILLS))
    assert worst[0] >= LINE_CONTRAST - 0.05, worst


def every_treemap_label_reads_on_its_tile(pg, scheme: str, background: tuple) -> None:
    """On Hierarchy: every treemap label stands WCAG 4.5:1 off its tile (white on light
    pink in the dark theme)."""
    wait_until(pg, f"() => ({TILES})().length > 50")
    tb.shot(pg, f"first_screen_hierarchy_{scheme}")
    tiles = pg.evaluate(TILES)
    ratios = [(contrast(rgba(text), over((*rgba(fill)[:3], float(opacity)), background)),
               label) for label, text, fill, opacity in tiles]
    assert min(ratios)[0] >= TEXT_CONTRAST, sorted(ratios)[:5]


def refuse_requests_outside(pg, url: str) -> list[str]:
    """Abort every request of ``pg``'s context that goes anywhere but the dashboard at
    ``url`` (or a data: or blob: address); the list the refused addresses are added to."""
    outside: list[str] = []

    def refuse(route):
        outside.append(route.request.url)
        route.abort()

    pg.context.route(re.compile(rf"^(?!{re.escape(url)}|data:|blob:)"), refuse)
    return outside


def the_results_colours(pg, scheme: str) -> tuple:
    """On Results at 1280 x 800 (the US counties' release drawn): the theme shown, the whole
    map in the first screen, then the error map after a recoloured view; the page's
    background colour."""
    background = assert_theme(pg, scheme)
    the_whole_results_map_is_in_the_first_screen(pg, scheme, background)
    the_error_map_after_a_recoloured_view_paints_every_area_by_its_error(pg, scheme,
                                                                         background)
    return background


def test_the_colours_in_the_dark_theme(server, browser):  # noqa: F811
    """One session in the dark theme (one release of the US counties): Results' first screen
    at 1280 x 800, its error map after a recoloured view and its colour-blind safe colours,
    the Hierarchy treemap's labels, the Flows legend (and the Flows page's maps, sweep,
    plain-language panel and configuration box: test_browser.py's checks of the page), the
    Range queries' true-values line;
    none of these pages requests anything but the dashboard's own address (issue 18, item
    6: the tab icon was fetched from Google's font server, which fails on an offline agency
    network). The light theme's colours are checked in the layout walk
    (test_browser_layout.py), which tours every page with the same refusal. Screenshots of
    the Results maps: results_dark.png, results_dark_colour_blind.png."""
    with themed_page(browser, "dark") as pg:
        outside = refuse_requests_outside(pg, server)
        tb.start_on(pg, server, "Results")  # the US counties, the default sample
        background = the_results_colours(pg, "dark")
        tb.shot(pg, "results_dark")
        tb.select_option(pg, "Colours", "Colour-blind safe: cividis")
        assert tb.maps_drawn(pg, expect=[3141]) == [3141]
        tb.shot(pg, "results_dark_colour_blind")
        tb.goto(pg, "Hierarchy")
        every_treemap_label_reads_on_its_tile(pg, "dark", background)
        for label, check in (("Flows", the_flows_page_and_its_legend),
                             ("Range queries", the_range_true_values_line_shows)):
            tb.goto(pg, label)
            check(pg, "dark", background)
    assert outside == [], f"requests outside the dashboard: {sorted(set(outside))}"
