"""The dashboard in a real headless Chromium (Debian's, driven by Playwright): load a sample,
choose levels and a mechanism, run a release, see a map, download the release CSV and check
that it adds up. Screenshots of every page go to test-artifacts/screenshots/."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)",
                allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
         "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not start: " + proc.stdout.read().decode()[-2000:])
    yield url
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 2600},
                                  accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(90_000)
    yield pg
    context.close()


def settle(pg) -> None:
    """Wait until Streamlit has finished running the script."""
    pg.wait_for_selector("[data-testid='stApp']")
    time.sleep(0.5)
    pg.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                         timeout=120_000)
    time.sleep(0.5)


def shot(pg, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def no_exception(pg) -> None:
    assert pg.locator("[data-testid='stException']").count() == 0


def goto(pg, label: str) -> None:
    """Open a page through the sidebar (a URL would start a new session)."""
    pg.locator("[data-testid='stSidebar']").get_by_role("link", name=label, exact=True).click()
    settle(pg)
    no_exception(pg)


def test_release_end_to_end(server, page, tmp_path):
    page.goto(server)
    settle(page)
    shot(page, "0_home")
    page.get_by_role("button", name="Start with this sample").first.click()
    settle(page)
    page.wait_for_selector("[data-testid='stPlotlyChart']")
    no_exception(page)
    # choose levels and the mechanism
    goto(page, "Data")
    shot(page, "1_data")
    goto(page, "Hierarchy")
    shot(page, "2_hierarchy")
    goto(page, "Mechanism & budget")
    mech = page.locator("[data-testid='stSelectbox']").filter(has_text="Mechanism").first
    mech.click()
    page.get_by_role("option", name="topdown").click()
    settle(page)
    shot(page, "3_mechanism")
    goto(page, "Results")
    page.get_by_role("button", name="Run release").click()
    settle(page)
    page.wait_for_selector(".js-plotly-plot .choroplethlayer path, .js-plotly-plot path.choroplethlocation",
                           timeout=120_000)
    no_exception(page)
    shot(page, "4_results")
    goto(page, "Trade-offs")
    shot(page, "5_tradeoffs")
    goto(page, "Export")
    shot(page, "6_export")
    with page.expect_download() as download:
        page.get_by_role("button", name="Release CSV").click()
    path = tmp_path / "release.csv"
    download.value.save_as(path)
    table = pd.read_csv(path, dtype={"node_id": str, "parent_id": str}, keep_default_na=False)
    assert list(table.columns)[:5] == ["level", "level_name", "node_id", "parent_id", "label"]
    keys = ["parent_id", "category"] if "category" in table.columns else ["parent_id"]
    children = table[table["level"] > 0].groupby(keys)["value"].sum()
    parents = table.set_index(["node_id", "category"] if "category" in table.columns
                              else ["node_id"])["value"]
    parents.index = parents.index.set_names(keys)
    joined = children.to_frame("c").join(parents.rename("p"))
    assert len(joined) > 0 and (joined["c"] == joined["p"]).all()
    assert (table["value"] >= 0).all()


def test_bad_upload_shows_an_error(server, page, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes("state,county,count\nA,x,1\nB,\xe9,2\n".encode("latin-1"))
    page.goto(server)
    settle(page)
    goto(page, "Data")
    page.locator("input[type='file']").set_input_files(str(bad))
    page.get_by_role("button", name="Use this file").click()
    settle(page)
    alert = page.locator("[data-testid='stAlert']").filter(has_text="cannot be read")
    alert.wait_for()
    assert "latin-1" in alert.inner_text() or "encoding" in alert.inner_text().lower()
    no_exception(page)
    shot(page, "7_bad_upload")
