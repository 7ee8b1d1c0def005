"""Screenshots of every dashboard page as a user first sees it (the viewport, no scrolling)
at 1280 x 800, in the light and the dark theme, after "Start with this sample" of the US
counties: for a reviewer to look at, not a test. Prints JSON: the files written, any page
that raised, and the seconds each page took to settle.

    PYTHONPATH=. .venv/bin/python benchmarks/screenshot_tour.py --out /tmp/tour
    PYTHONPATH=. .venv/bin/python benchmarks/screenshot_tour.py --pages Results --schemes light
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.browser_tools import (  # noqa: E402
    CHROMIUM_ARGS,
    has_exception,
    open_page,
    press_start,
    running_dashboard,
    settle,
)

PAGES = ["Data", "Hierarchy", "Mechanism & budget", "Results", "Trade-offs", "Export",
         "Group sizes", "Flows", "Range queries", "Compare"]


def tour(url: str, out: Path, scheme: str, width: int, height: int,
         pages: list[str] = PAGES) -> dict:
    """Screenshots of Home and the ``pages`` in ``scheme``; {page: seconds} and the
    failures."""
    from playwright.sync_api import sync_playwright

    seconds, failures = {}, []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True,
                                    args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": width, "height": height},
                                      color_scheme=scheme)
        page = context.new_page()
        page.set_default_timeout(180_000)
        started = time.perf_counter()
        page.goto(url)
        settle(page)
        page.wait_for_timeout(1500)  # the previews' maps
        seconds["Home"] = round(time.perf_counter() - started, 2)
        page.screenshot(path=str(out / f"{scheme}_00_home.png"))
        press_start(page, "us-counties")
        for k, label in enumerate(PAGES, start=1):
            if label not in pages:
                continue
            started = time.perf_counter()
            open_page(page, label)
            page.wait_for_timeout(1000)  # figures drawn after the script is done
            seconds[label] = round(time.perf_counter() - started, 2)
            slug = label.lower().replace(" & ", "_").replace(" ", "_").replace("-", "_")
            page.screenshot(path=str(out / f"{scheme}_{k:02d}_{slug}.png"))
            if has_exception(page):
                failures.append(f"{scheme}: {label} shows an exception")
        browser.close()
    return {"seconds": seconds, "failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("test-artifacts/tour"))
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--pages", default=",".join(PAGES),
                        help="comma-separated page titles (default: every page)")
    parser.add_argument("--schemes", default="light,dark")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with running_dashboard() as url:
        result = {scheme: tour(url, args.out, scheme, args.width, args.height,
                               args.pages.split(","))
                  for scheme in args.schemes.split(",")}
    result["files"] = sorted(p.name for p in args.out.glob("*.png"))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
