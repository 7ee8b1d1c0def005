"""The dashboard in a real headless Chromium (Debian's, driven by Playwright): the Italian
sample's maps at every level; uploaded tables released on the Flows, Group sizes and Range
queries pages; a bad upload. The helpers here (fixtures, page moves, `check_release_csv`,
the Group sizes and Flows pages' checks) serve every browser test module: the Group sizes
page's sweep, plain-language panel, configuration box and kept seed are checked in the
layout walk (test_browser_layout.py), the Flows page's in the dark theme's walk
(test_browser_colours.py), which open those pages anyway; the Range queries page's own walk
is test_browser_ranges.py, the US counties' walk from Home to a publishable release
test_browser_us_walk.py. Screenshots (`shot`, with HIERDP_SCREENSHOTS=1) go to
test-artifacts/screenshots/."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hierdp_core.data.samples import load_sample
from tests.browser_tools import (
    empty_folder,
    explains_in_plain_words,
    has_exception,
    new_context,
    open_directly,
    open_page,
    press_start,
    select_option,
    settle,
    timed_click,
    timed_rerun,
    wait_until,
)

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    if os.environ.get("HIERDP_REQUIRE_BROWSER"):  # set by .ci/run: CI must not skip these
        raise RuntimeError("Debian's chromium is required (HIERDP_REQUIRE_BROWSER is set)")
    pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)",
                allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api")
PlaywrightTimeoutError = playwright_api.TimeoutError
MAP_PATHS = ".js-plotly-plot path.choroplethlocation"


@pytest.fixture
def server(shared_dashboard):
    """The URL of this test process's dashboard (conftest's ``shared_dashboard``) with an
    empty budget ledger: no test sees another's publishable draws."""
    url, home = shared_dashboard
    empty_folder(home)
    return url


@pytest.fixture
def browser(shared_chromium):
    """This test process's headless Chromium (conftest's ``shared_chromium``)."""
    return shared_chromium


@pytest.fixture
def page(browser):
    context = new_context(browser, viewport={"width": 1440, "height": 2600},
                                  accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(90_000)
    yield pg
    context.close()


def shot(target, name: str, full_page: bool = True) -> None:
    """A screenshot for a reviewer at SHOTS/{name}.png, with HIERDP_SCREENSHOTS=1: of a page
    (the whole page, or its window with ``full_page=False``) or of an element (a locator).
    Nothing asserts on them, and each costs Chromium 0.3-8 s (the whole of a report's page
    the most); `benchmarks/screenshot_tour.py` takes the review set of every page."""
    if os.environ.get("HIERDP_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        whole = {"full_page": full_page} if hasattr(target, "goto") else {}
        target.screenshot(path=str(SHOTS / f"{name}.png"), **whole)


def no_exception(pg) -> None:
    assert not has_exception(pg)


def explain_panel(pg, name: str, protects: str, per: str) -> None:
    """The page's "In plain words" panel explains (`explains_in_plain_words`), the page
    raised nothing; screenshots (`shot`) of the panel (explain_{name}.png) and of the whole
    page (explain_{name}_page.png)."""
    panel = explains_in_plain_words(pg, protects, per)
    no_exception(pg)
    shot(panel, f"explain_{name}")
    shot(pg, f"explain_{name}_page")


def press(pg, button: str) -> None:
    """Click a button, wait for the page to settle, check it raised nothing."""
    pg.get_by_role("button", name=button).click()
    settle(pg)
    no_exception(pg)


def goto(pg, label: str) -> None:
    open_page(pg, label)
    no_exception(pg)


def start_on(pg, server: str, label: str) -> None:
    """Open the page ``label`` by its address in a new session (not through Home: its map
    previews cost seconds of browser time); check it raised nothing."""
    open_directly(pg, server, label)
    no_exception(pg)


def maps_drawn(pg, n_maps: int = 1, expect: list[int] | None = None) -> list[int]:
    """Wait until ``n_maps`` choropleths have drawn their areas; the areas drawn per map.
    With ``expect`` (the areas per map), wait up to 60 s for exactly that: a map kept
    across reruns shows its old areas until the new figure is drawn."""
    wait_until(pg,
        """n => [...document.querySelectorAll('.js-plotly-plot')].filter(
               p => p.querySelector('path.choroplethlocation')).length >= n""",
        arg=n_maps, timeout=120_000)
    drawn = """() => [...document.querySelectorAll('.js-plotly-plot')]
        .map(p => p.querySelectorAll('path.choroplethlocation').length).filter(n => n > 0)"""
    if expect is not None:
        with contextlib.suppress(PlaywrightTimeoutError):  # the caller's assert shows the difference
            wait_until(pg, f"e => JSON.stringify(({drawn})()) === JSON.stringify(e)",
                       arg=list(expect), timeout=60_000)
    return pg.evaluate(drawn)


def map_hover(pg) -> str:
    """The hover label over an area of the map (name and value)."""
    for area in pg.locator(MAP_PATHS).all()[::50]:
        box = area.bounding_box()
        if box and box["width"] > 4 and box["height"] > 4:
            pg.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            label = pg.locator(".js-plotly-plot .hoverlayer .hovertext")
            if label.count():
                return label.first.text_content()
    raise AssertionError("no hover label over the map's areas")


def check_release_csv(path: Path) -> pd.DataFrame:
    """The downloaded release parses, is non-negative, every parent equals the sum of its
    children (per category when there are categories), and every value lies in its
    interval (``lower``, ``upper``)."""
    table = pd.read_csv(path, dtype={"node_id": str, "parent_id": str}, keep_default_na=False)
    assert list(table.columns)[:5] == ["level", "level_name", "node_id", "parent_id", "label"]
    by_category = "category" in table.columns
    keys = ["parent_id", "category"] if by_category else ["parent_id"]
    children = table[table["level"] > 0].groupby(keys)["value"].sum()
    parents = table.set_index(["node_id", "category"] if by_category else ["node_id"])["value"]
    parents.index = parents.index.set_names(keys)
    joined = children.to_frame("c").join(parents.rename("p"))
    assert len(joined) == len(children) > 0 and (joined["c"] == joined["p"]).all()
    assert (table["value"] >= 0).all()
    assert ((table["lower"] <= table["value"]) & (table["value"] <= table["upper"])).all()
    return table


def save_release_csv(pg, path: Path) -> pd.DataFrame:
    """On a page with release downloads: prepare them when a bootstrap waits for the click,
    save the (first) release CSV at ``path`` and check it (see `check_release_csv`)."""
    prepare = pg.get_by_role("button", name=re.compile("^Prepare the downloads"))
    if prepare.count():
        timed_click(pg, prepare.first)  # until the run it starts (and its redraw) is done
        settle(pg)
        no_exception(pg)
    button = pg.get_by_role("button", name="Release table (CSV)").first
    for attempt in range(3):  # a click during a redraw can hit the previous file's URL
        button.wait_for(timeout=120_000)
        settle(pg)
        try:
            with pg.expect_download(timeout=40_000) as download:
                button.click()
            break
        except PlaywrightTimeoutError:
            if attempt == 2:
                raise
    download.value.save_as(path)
    return check_release_csv(path)


def download_release_csv(pg, folder: Path) -> pd.DataFrame:
    """Open Export, download release.csv, and check it (`save_release_csv`)."""
    goto(pg, "Export")
    return save_release_csv(pg, folder / "release.csv")


def test_italy_maps_at_every_level(server, page):
    """Start with the Italian sample on Home: its maps at every level and a drill-down.
    Its release table (the level names, adding up) is checked from the CLI's release of
    the sample (test_cli_samples.py); the workshop downloads an Italian release from Export
    and finds it equal to the CLI's release of its configuration (test_browser_workshop.py)."""
    page.goto(server)
    settle(page)
    press_start(page, "italy-municipalities")
    maps_drawn(page)
    for level, units in (("region", 20), ("province", 107)):
        select_option(page, "Level", level)
        assert maps_drawn(page, expect=[units]) == [units], level
        no_exception(page)
        shot(page, f"8_italy_{level}")
    select_option(page, "Level", "municipality")
    select_option(page, "Drill down", "Torino")
    units = load_sample("italy-municipalities").query("province == '001'")["municipality"]
    turin = [units.nunique()]  # the municipalities of Turin province
    assert maps_drawn(page, expect=turin) == turin
    shot(page, "8_italy_municipality_torino")
    select_option(page, "Drill down", "all of")
    assert maps_drawn(page, expect=[7901]) == [7901]
    no_exception(page)
    shot(page, "8_italy_municipality")


def the_group_sizes_page_sweeps_and_explains(pg) -> None:
    """On the Group sizes page (the US households): the per-county EMD map, a sweep drawn,
    the plain-language panel, the configuration box; the seed set to 3 (the caller checks
    it is kept, `the_group_sizes_seed_is_kept`). Run in the layout walk
    (test_browser_layout.py), which opens the page anyway."""
    assert min(maps_drawn(pg, 1)) >= 3000  # per-county EMD map
    pg.get_by_role("button", name="Run the sweep").click()
    settle(pg)
    pg.wait_for_selector(".js-plotly-plot .scatterlayer")
    no_exception(pg)
    shot(pg, "9_group_sizes")
    explain_panel(pg, "group_sizes", "The guarantee protects one household member",
                  "per region and size")
    offers_to_save_the_configuration(pg)
    seed = pg.locator(".st-key-gs_seed input")
    seed.fill("3")
    timed_rerun(pg, lambda: seed.press("Enter"))


def the_group_sizes_seed_is_kept(pg) -> None:
    """Back on Group sizes after visits to other pages: the seed is still 3. A page switch
    in a browser drops every widget value of the page left (AppTest does not show it): the
    settings are put back (`ui.session.keep_page_settings`)."""
    goto(pg, "Group sizes")
    assert pg.locator(".st-key-gs_seed input").input_value() == "3", "the seed was reset"


def the_flows_page_draws_sweeps_and_explains(pg) -> None:
    """On the Flows page (the US flights): the flow map's width classes over the states,
    the O/D matrices, a sweep drawn, the plain-language panel, the configuration box. Run
    in the dark theme's walk (test_browser_colours.py, at 1280 x 800), which opens the page
    anyway."""
    lines = ".js-plotly-plot g.trace.scattergeo path.js-line"
    pg.wait_for_selector(lines, state="attached")
    assert pg.locator(lines).count() >= 4  # the width classes of the flow map
    assert pg.locator(".js-plotly-plot g.trace.choropleth path").count() >= 50  # states
    assert pg.locator(".js-plotly-plot .heatmaplayer").count() >= 3  # O/D matrices
    assert pg.get_by_text("evaluation only, not a DP release").count() >= 1
    charts = pg.locator(".js-plotly-plot").count()
    one_trial_per_sweep(pg)  # the sweep's scale is not what this test checks
    pg.get_by_role("button", name="Run the sweep").click()
    settle(pg)
    wait_until(pg, "n => document.querySelectorAll('.js-plotly-plot').length > n",
               arg=charts)
    no_exception(pg)
    pg.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")
    shot(pg, "10_flows")
    explain_panel(pg, "flows", "The guarantee protects one trip",
                  "per O/D pair released, in trips")
    offers_to_save_the_configuration(pg)


def offers_to_save_the_configuration(pg) -> None:
    """A query page's configuration box, opened, offers to save the configuration."""
    pg.get_by_text("Configuration: save it, or load a saved one").click()
    pg.get_by_role("button", name="Save the configuration (JSON)").wait_for()


def test_bad_upload_shows_an_error(server, page, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"state,county,count\nA,x,1\nB,\x81,2\n")  # neither UTF-8 nor cp1252
    start_on(page, server, "Data")
    page.locator("input[type='file']").set_input_files(str(bad))
    page.get_by_role("button", name="Use this file").click()
    settle(page)
    alert = page.locator("[data-testid='stAlert']").filter(has_text="cannot be read")
    alert.wait_for()
    assert "neither UTF-8 nor cp1252" in alert.inner_text()
    assert "Text encoding" in alert.inner_text() and "--encoding" not in alert.inner_text()
    no_exception(page)
    shot(page, "7_bad_upload")


def one_trial_per_sweep(pg, label: str = "Trials", default: int = 2) -> None:
    """Move the sweep's trials slider (``label``) from its ``default`` to 1 and wait for
    the rerun."""
    thumb = pg.get_by_role("slider", name=label)
    thumb.focus()
    timed_rerun(pg, lambda: [thumb.press("ArrowLeft") for _ in range(default - 1)])
    assert thumb.input_value() == "1"
    settle(pg)


def upload_on_data_page(pg, server: str, table: pd.DataFrame, path: Path) -> None:
    """Write ``table`` to ``path``, use it as the session's data on the Data page and accept
    the guessed level and count columns (nothing is preset without that click)."""
    table.to_csv(path, index=False)
    start_on(pg, server, "Data")
    pg.locator("input[type='file']").set_input_files(str(path))
    press(pg, "Use this file")
    pg.get_by_text("Guessed from the table, not applied").wait_for()
    press(pg, "Use the guessed columns")


def use_your_table(pg, name: str) -> None:
    """On a query page the uploaded table fits: the page started on it (without drawing its
    bundled sample first); accept its guessed columns."""
    assert pg.get_by_role("radio", name=f"your table: {name}").is_checked()
    press(pg, "Use the guessed columns")


def test_flows_page_on_an_uploaded_table(server, page, tmp_path):
    """A user's own trips file, uploaded on the Data page, released on the Flows page; the
    downloaded release adds up."""
    rng = np.random.default_rng(3)
    areas = [(fips[:2], fips) for fips in ("06037", "06073", "06059", "36061", "36047",
                                           "36081", "48201", "48113", "48029")]
    o, d = rng.integers(0, len(areas), 400), rng.integers(0, len(areas), 400)
    trips = pd.DataFrame({"o_state": [areas[i][0] for i in o],
                          "o_county": [areas[i][1] for i in o],
                          "d_state": [areas[i][0] for i in d],
                          "d_county": [areas[i][1] for i in d]})
    page.set_viewport_size({"width": 1440, "height": 3200})
    upload_on_data_page(page, server, trips, tmp_path / "trips.csv")
    goto(page, "Flows")
    use_your_table(page, "trips.csv")
    page.get_by_text("400 trips between 9 areas").wait_for()
    lines = ".js-plotly-plot g.trace.scattergeo path.js-line"  # on the bundled US states
    page.wait_for_selector(lines, state="attached")
    assert page.locator(".js-plotly-plot g.trace.choropleth path").count() >= 50
    wait_until(page, "() => document.querySelectorAll('.js-plotly-plot .heatmaplayer')"
               ".length >= 3")
    table = save_release_csv(page, tmp_path / "release.csv")
    assert table.loc[table["level"] == 0, "value"].tolist() == [400]
    page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")
    shot(page, "12_flows_upload")


def test_group_sizes_and_ranges_pages_on_an_uploaded_table(server, page, tmp_path):
    """One person file (state, county, household, age) uploaded on the Data page, released
    as group sizes and as age histograms on their pages."""
    rng = np.random.default_rng(4)
    sizes = rng.integers(1, 6, 120)
    people = pd.DataFrame({
        "state": np.repeat([f"S{i % 3}" for i in range(120)], sizes),
        "household": np.repeat([f"h{i}" for i in range(120)], sizes),
        "age": rng.integers(0, 90, int(sizes.sum()))})
    people.insert(1, "county", people["state"] + "-" + (people.index % 2).astype(str))
    people["county"] = people.groupby("household")["county"].transform("first")
    page.set_viewport_size({"width": 1440, "height": 2400})
    upload_on_data_page(page, server, people, tmp_path / "people.csv")
    for label, text, drawn, name in [
            ("Group sizes", f"{len(sizes)} households in", ".scatterlayer path.js-line",
             "13_group_sizes_upload"),
            ("Range queries", "by age (0..", ".barlayer .point", "14_ranges_upload")]:
        goto(page, label)
        use_your_table(page, "people.csv")
        page.get_by_text(text).wait_for()
        page.wait_for_selector(f".js-plotly-plot {drawn}", state="attached")
        save_release_csv(page, tmp_path / f"{name}.csv")  # adds up, non-negative
        page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')"
                      "?.scrollTo(0, 0)")
        shot(page, name)
