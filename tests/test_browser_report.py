"""Saved configurations in a real headless Chromium (Debian's, driven by Playwright), on the
US counties: a configuration as Export saves it (seed 5, written by the session code outside
the browser: the workshop saves one in the browser), loaded on Export in a new session: the
Results page's release is ``hierdp release --config``'s on the sample file. Screenshots (with
HIERDP_SCREENSHOTS=1): config_loaded.png.

The helpers for the release report (`download_report`, `assert_opens_offline`,
`state_map_values`) serve the report's checks in the US walk (test_browser_us_walk.py): the
exploration report opens offline; after the publishable draw the report is the publishable
release's. Screenshots: report_offline.png, report_publishable.png.

The report's trade-off figure, drawn on its own at ε = 20 and 0.5: the axis spans the data
and ε, and the "chosen ε" label stands at the line. Screenshots: tradeoff_eps20.png,
tradeoff_eps0.5.png."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from test_browser import (  # noqa: F401  (fixtures)
    browser,
    download_release_csv,
    goto,
    maps_drawn,
    no_exception,
    page,
    press,
    server,
    shot,
    start_on,
)
from test_report_figures import tradeoff_table

from hierdp_core.figure_parts import plotly_config
from hierdp_core.report.figures import tradeoff_figure
from hierdp_core.report.stakeholder import TRADEOFF_EPSILONS
from tests.browser_tools import new_context, settle, wait_until

pytestmark = pytest.mark.browser
FIGURES = ".js-plotly-plot"


def assert_opens_offline(browser, path: Path) -> tuple[pd.Series, str]:  # noqa: F811
    """The exploration report at ``path``, opened from disk in a context with every network
    request blocked: its figures (maps included) draw, and no request leaves it. What its
    state map shows and its banner (`read_state_map`)."""
    context = new_context(browser, viewport={"width": 1280, "height": 900}, offline=True)
    requests = []

    def block(route):
        if not route.request.url.startswith(("file:", "data:")):
            requests.append(route.request.url)
            return route.abort()
        return route.continue_()

    context.route("**/*", block)
    offline = context.new_page()
    offline.goto(path.as_uri(), timeout=120_000)  # 7 MB of inlined figures and maps
    wait_until(offline,
        "() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4",
        timeout=120_000)
    wait_until(offline,  # the state and county maps drew their areas
        f"""() => [...document.querySelectorAll('{FIGURES}')].filter(
                p => p.querySelector('path.choroplethlocation')).length >= 2""",
        timeout=120_000)
    counties = offline.evaluate(f"""() => Math.max(...[...document.querySelectorAll(
        '{FIGURES}')].map(p => p.querySelectorAll('path.choroplethlocation').length))""")
    assert counties >= 3000, f"offline report: its county map drew {counties} areas"
    assert offline.locator(f"{FIGURES} .barlayer").count() >= 1, "offline report: no ledger"
    assert offline.locator(f"{FIGURES} .scatterlayer .trace").count() >= 3, \
        "offline report: no trade-off figure"
    assert offline.get_by_text("Not publishable as it is", exact=True).count() == 1, \
        "offline report: the exploration's verdict is not shown once"
    assert requests == [], f"offline report: requests left it: {requests}"
    shot(offline, "report_offline")
    shown = read_state_map(offline)
    context.close()
    return shown


def download_report(pg, folder: Path) -> Path:
    """Prepare the report on the Export page and save it in ``folder``."""
    press(pg, "Prepare the report")
    with pg.expect_download() as download:
        pg.get_by_role("button", name="Download the report (HTML)").click()
    path = folder / download.value.suggested_filename
    download.value.save_as(path)
    return path


def state_map_values(browser, path: Path) -> tuple[pd.Series, str]:  # noqa: F811
    """The report at ``path``, opened: what its state map shows and its banner
    (`read_state_map`)."""
    context = new_context(browser, viewport={"width": 1280, "height": 900})
    report = context.new_page()
    report.goto(path.as_uri())
    shown = read_state_map(report)
    context.close()
    return shown


def read_state_map(report) -> tuple[pd.Series, str]:
    """The values the report opened in ``report`` shows on its state map (by state name,
    from the hover data plotly.js drew) and the text of its top banner."""
    wait_until(report,
        f"""() => [...document.querySelectorAll('{FIGURES}')].some(
                p => (p.layout.title.text || '').startsWith('Released: state')
                     && p.querySelector('path.choroplethlocation'))""", timeout=120_000)
    shown = report.evaluate(f"""() => {{
        const p = [...document.querySelectorAll('{FIGURES}')].find(
            p => (p.layout.title.text || '').startsWith('Released: state'));
        const t = p._fullData[0];
        return [Array.from(t.text), Array.from(t.customdata)]; }}""")
    banner = report.locator(".banner.top").text_content()
    if "EXPLORATION" not in banner:
        shot(report, "report_publishable", full_page=False)
    return pd.Series(shown[1], index=shown[0]).sort_index(), banner


@pytest.mark.parametrize("eps", [20.0, 0.5])
def test_tradeoff_label_at_the_chosen_epsilon(page, tmp_path, eps):  # noqa: F811
    """Drawn by plotly.js: the x axis runs over the data and ε (within half a decade), and the
    label's left edge is at the dashed line."""
    path = tmp_path / "tradeoff.html"
    path.write_text(tradeoff_figure(tradeoff_table(), eps).to_html(config=plotly_config()))
    page.goto(path.as_uri())
    wait_until(page, f"() => document.querySelector('{FIGURES} .annotation')")
    drawn = page.evaluate(f"""() => {{
        const p = document.querySelector('{FIGURES}');
        const box = s => p.querySelector(s).getBoundingClientRect();
        return [p._fullLayout.xaxis.range, box('.annotation-text-g').left,
                box('.shapelayer path').left]; }}""")
    (lo, hi), label_left, line_x = drawn
    assert math.log10(min(TRADEOFF_EPSILONS)) - 0.5 < lo
    assert hi < math.log10(max(*TRADEOFF_EPSILONS, eps)) + 0.5
    assert abs(label_left - line_x) < 10, drawn
    shot(page, f"tradeoff_eps{eps:g}", full_page=False)


def values(table: pd.DataFrame) -> pd.Series:
    return table.set_index(["node_id", "category"])["value"].sort_index()


def _save_the_configuration(seed: int) -> None:
    """What Export's "Save the configuration (JSON)" writes for a new session on the US
    counties (the default sample) whose Results seed is ``seed`` (in an AppTest's script)."""
    import streamlit as st

    from hierdp_core.config import config_json
    from hierdp_core.ui import config as config_ui
    from hierdp_core.ui import session

    session.load_sample_into_state("us-counties")
    st.session_state[config_ui.RANDOMNESS] = {config_ui.MODE: config_ui.EXPLORATION,
                                              config_ui.SEED: seed}
    st.session_state["out"] = config_json(config_ui.current_config())


def saved_configuration(path: Path, seed: int) -> Path:
    """The configuration file of a US counties session with seed ``seed``, written at
    ``path`` by the session code Export's save button calls (`ui.config.current_config`),
    outside the browser: the save path in the browser (Results' seed, Run release, Export's
    button) is walked by the workshop, whose downloads are checked against the library's
    release of the file it saved (test_browser_workshop.py)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_save_the_configuration, args=(seed,), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    path.write_text(at.session_state["out"])
    return path


def test_saved_configuration_reproduces_the_release(server, page, tmp_path):  # noqa: F811
    """A configuration saved from a session (seed 5), loaded on Export in a new session:
    Results takes its seed, and the release downloaded from Export is the command line's
    release of the same file (``hierdp release --config``) on the sample."""
    saved = saved_configuration(tmp_path / "hierdp_config.json", 5)
    config = json.loads(saved.read_text())
    assert config["seed"] == 5 and config["data"] == {"sample": "us-counties"}
    start_on(page, server, "Export")  # no release yet: the configuration section is open
    page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(
        str(saved))
    page.get_by_text("Loaded hierdp_config.json").wait_for()
    settle(page)
    no_exception(page)
    shot(page, "config_loaded")
    goto(page, "Results")
    maps_drawn(page)
    assert page.get_by_label("Seed", exact=True).input_value() == "5"
    assert page.get_by_text("set via the Session State API").count() == 0
    shot(page, "config_loaded_results")
    loaded = download_release_csv(page, tmp_path)

    from hierdp_core.cli.main import main

    assert main(["sample", "us-counties", "--out", str(tmp_path / "s.csv")]) == 0
    assert main(["release", str(tmp_path / "s.csv"), "--config", str(saved), "--interval",
                 "none", "--out", str(tmp_path / "cli")]) == 0  # the values: no bootstrap
    cli = pd.read_csv(tmp_path / "cli" / "release.csv", dtype={"node_id": str},
                      keep_default_na=False)
    pd.testing.assert_series_equal(values(loaded), values(cli), check_dtype=False)
