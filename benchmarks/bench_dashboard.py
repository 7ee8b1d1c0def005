"""Dashboard response times in a real headless Chromium, as a user waits for them.

For each bundled sample: start from the home page, then press "Run release" on the Results
page repeatedly (each press = new noise, metrics, four maps, charts and tables) and time from
the click until the rerun has finished and the browser has painted. Also times opening each
page, and on the Export page the publishable release (the same configuration drawn again
with secure noise through OpenDP, its verdict and downloads painted). Prints one JSON object. Needs Debian's chromium and Playwright (requirements-dev.txt).

    python benchmarks/bench_dashboard.py [--repeats 5] [--samples us-counties,italy-municipalities]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics

from playwright.sync_api import sync_playwright

from hierdp_core.data.samples import SAMPLES
from hierdp_core.serve import open_page, running_dashboard, select_option, settle, timed_click

PAGES = ("Data", "Hierarchy", "Mechanism & budget", "Trade-offs", "Export", "Results")


def time_runs(page, repeats: int) -> dict:
    return time_clicks(page, page.get_by_role("button", name="Run release"), repeats)


def time_clicks(page, button, repeats: int) -> dict:
    times = [timed_click(page, button) for _ in range(repeats)]
    return {"median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
            "all_s": [round(t, 3) for t in times]}


def bench_sample(browser, url: str, index: int, name: str, repeats: int) -> dict:
    page = browser.new_page(viewport={"width": 1440, "height": 1800})
    page.set_default_timeout(120_000)
    page.goto(url)
    settle(page)
    start = page.get_by_role("button", name="Start with this sample").nth(index)
    result = {"first_run_from_home_s": round(timed_click(page, start), 3)}
    settle(page)
    result["default_view"] = time_runs(page, repeats)
    if name == "italy-municipalities":  # default: municipalities of the first region
        select_option(page, "Drill down", "all of")
        result["all_municipalities_view"] = time_runs(page, max(2, repeats // 2))
    result["open_page_s"] = {}
    for label in PAGES:
        link = page.locator("[data-testid='stSidebar']").get_by_role("link", name=label,
                                                                     exact=True)
        result["open_page_s"][label] = round(timed_click(page, link), 3)
        settle(page)
    open_page(page, "Export")
    secure = page.get_by_role("button", name="Draw the publishable release (secure noise)")
    result["publishable_release"] = time_clicks(page, secure, max(2, repeats // 2))
    page.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--samples", default="us-counties,italy-municipalities")
    args = parser.parse_args()
    order = list(SAMPLES)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    out = {"chromium": chromium, "repeats": args.repeats, "samples": {}}
    with running_dashboard() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        for name in args.samples.split(","):
            out["samples"][name] = bench_sample(browser, url, order.index(name), name,
                                                args.repeats)
        browser.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
