"""The first screen at 1280 x 800 and its colours (issue 31 item 5 and the review of the
screenshots), in a real headless Chromium (Debian's, driven by Playwright), on the US
counties:

- Results: the whole map in the first screen, in both themes (its top was at y 502 and its
  foot at 1022: the controls above it took two rows more), drawn at least 300 px high (not
  shrunk to fit); and no county lost in the page: every area stands WCAG 3:1 off the
  page's background (the dark theme's darkest purples stood about 2:1 off it, the light
  theme's yellows 1.3:1);
- Compare: A's and B's controls on the same rows (A's long description pushed its slider,
  split and seed 130 px below B's) and A's and B's maps at least 300 px wide (beside their
  colour bars they were about 150 px);
- Hierarchy: every treemap label stands WCAG 4.5:1 off its tile, in both themes (white on
  light pink in the dark theme).

Screenshots: test-artifacts/screenshots/first_screen_*.png (with HIERDP_SCREENSHOTS=1)."""

from __future__ import annotations

import pytest
import test_browser as tb
from test_browser import browser, server  # noqa: F401  (fixtures)
from test_browser_colours import (
    LINE_CONTRAST,
    TEXT_CONTRAST,
    assert_theme,
    contrast,
    over,
    rgba,
    themed_page,
)
from test_browser_layout import HIDDEN_CHIPS

pytestmark = pytest.mark.browser
WIDTH, FOLD = 1280, 800
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


def first_screen(browser, scheme: str):  # noqa: F811
    """A fresh 1280 x 800 page whose browser prefers the ``scheme`` colours."""
    return themed_page(browser, scheme, height=FOLD, width=WIDTH)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_whole_results_map_is_in_the_first_screen_and_no_area_is_lost(
        server, browser, scheme):  # noqa: F811
    with first_screen(browser, scheme) as pg:
        tb.start_on(pg, server, "Results")  # the US counties, the default sample
        background = assert_theme(pg, scheme)
        assert tb.maps_drawn(pg, expect=[3141]) == [3141]
        tb.no_exception(pg)
        tb.shot(pg, f"first_screen_results_{scheme}")
        figure = pg.locator(".js-plotly-plot").filter(
            has=pg.locator("path.choroplethlocation")).first.bounding_box()
        (drawn,) = pg.evaluate(DRAWN)
        assert figure["y"] >= 0 and figure["y"] + figure["height"] <= FOLD, figure
        assert drawn["y"] + drawn["height"] <= FOLD and drawn["height"] >= 300, drawn
        # every county's colour stands off the page (3:1 at each end of the scale; channel
        # rounding moves a ratio by less than 0.05)
        worst = min((contrast(over(rgba(f), background), background), f)
                    for f in pg.evaluate(FILLS))
        assert worst[0] >= LINE_CONTRAST - 0.05, worst


def test_compare_lines_up_a_and_b_and_draws_readable_maps(server, browser):  # noqa: F811
    with first_screen(browser, "light") as pg:
        tb.start_on(pg, server, "Compare")
        assert tb.maps_drawn(pg, 3, expect=[3141] * 3) == [3141] * 3
        tb.no_exception(pg)
        tb.shot(pg, "first_screen_compare")
        for label in ("Mechanism", "Total ε", "Split over levels"):
            a, b = (w.bounding_box() for w in pg.get_by_text(label, exact=True).all())
            assert abs(a["y"] - b["y"]) <= 2 and a["x"] < b["x"], (label, a, b)
        a_map, b_map, difference = pg.evaluate(DRAWN)
        for box in (a_map, b_map, difference):
            assert box["width"] >= 300 and box["x"] + box["width"] <= WIDTH, box
        assert abs(a_map["y"] - b_map["y"]) <= 2 and a_map["x"] + a_map["width"] < b_map["x"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_treemap_label_reads_on_its_tile(server, browser, scheme):  # noqa: F811
    with first_screen(browser, scheme) as pg:
        tb.start_on(pg, server, "Hierarchy")
        background = assert_theme(pg, scheme)
        pg.wait_for_function(f"() => ({TILES})().length > 50")
        tb.shot(pg, f"first_screen_hierarchy_{scheme}")
        tiles = pg.evaluate(TILES)
        ratios = [(contrast(rgba(text), over((*rgba(fill)[:3], float(opacity)), background)),
                   label) for label, text, fill, opacity in tiles]
        assert min(ratios)[0] >= TEXT_CONTRAST, sorted(ratios)[:5]


@pytest.mark.parametrize("label", ["Trade-offs", "Group sizes", "Flows", "Range queries"])
def test_every_default_mechanism_of_a_sweep_is_shown_whole(server, browser, label):  # noqa: F811
    """The sweep's mechanisms, now shown by their plain (longer) names, each whole in its
    box at 1280 px (a chip past the box's right end fades out)."""
    with first_screen(browser, "light") as pg:
        tb.start_on(pg, server, label)
        chips = pg.locator("[data-testid='stMultiSelect']").filter(has_text="Mechanisms")
        chips.first.locator("[data-tag]").first.wait_for()
        assert pg.evaluate(HIDDEN_CHIPS) == []
