"""A workshop: several people open the dashboard at once, each in a browser of their own,
and walk the demo path (Home, Start with a sample, a seed, a move of the ε slider, Run
release, Export's release table and configuration). Used by the workshop browser test and
`benchmarks/bench_dashboard.py --sessions N`.

Each attendee runs in a thread with a browser context (cookies, storage, session) of its own in
one shared Chromium (`browser_threads.one_chromium`: the threads' calls overlap), so the server
sees N independent sessions at the same time. What each attendee
downloads is checked against the library's own release of the configuration it saved
(`check_isolation`): a session that saw another's data, settings or release fails it.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from tests.browser_threads import one_chromium
from tests.browser_tools import (
    CHROMIUM_ARGS,
    open_page,
    press_start,
    settle,
    timed_click,
    timed_rerun,
    watch_script_runs,
)

DEMO_SAMPLES = ("us-counties", "italy-municipalities", "synthetic-us-like")
STEP_TIMEOUT_MS = 300_000  # a step that takes longer fails its session
SEED_AGAIN_MS = 30_000  # the seed is typed once more if no run has started by then
STEPS = ("home_s", "start_s", "seed_s", "epsilon_s", "run_release_s", "export_s")


@dataclass
class Attendee:
    """One session of the workshop: its sample and seed, the seconds each step of the demo
    path took (input until the script is done), the files it downloaded, or its error."""

    index: int
    sample: str
    seed: int
    steps: dict[str, float] = field(default_factory=dict)
    release_csv: Path | None = None
    config_json: Path | None = None
    error: str | None = None
    step: str = ""  # the step it is on (the one that failed, if it did)


def epsilon_move(page, key: str) -> None:
    """One key press on the "Total ε" slider of the page shown."""
    slider = page.locator("[data-testid='stSlider']").filter(has_text="Total ε")
    slider.get_by_role("slider").first.focus()
    page.keyboard.press(key)


def _download(page, button: str, path: Path) -> Path:
    prepare = page.get_by_role("button", name=re.compile("^Prepare the downloads"))
    if prepare.count():  # a bootstrap waits for the click
        prepare.first.click()
        settle(page, STEP_TIMEOUT_MS)
    with page.expect_download(timeout=120_000) as download:
        page.get_by_role("button", name=button).first.click()
    download.value.save_as(path)
    return path


def _walk(page, url: str, who: Attendee, folder: Path) -> None:
    def step(name: str, act) -> None:
        who.step, started = name, time.perf_counter()
        act()
        who.steps[name] = round(time.perf_counter() - started, 3)

    def set_seed() -> None:
        seed = page.get_by_label("Seed", exact=True)
        seed.fill(str(who.seed))
        seed.press("Enter")

    def export() -> None:
        open_page(page, "Export")
        who.release_csv = _download(page, "Release table (CSV)", folder / "release.csv")
        page.get_by_text("Configuration: save it, or load a saved one").click()
        who.config_json = _download(page, "Save the configuration (JSON)",
                                    folder / "config.json")

    step("home_s", lambda: (page.goto(url), settle(page, STEP_TIMEOUT_MS)))
    step("start_s", lambda: press_start(page, who.sample, STEP_TIMEOUT_MS))
    step("seed_s", lambda: timed_rerun(page, set_seed, STEP_TIMEOUT_MS,
                                       again_after_ms=SEED_AGAIN_MS))
    step("epsilon_s", lambda: timed_rerun(page, lambda: epsilon_move(page, "ArrowRight"),
                                          STEP_TIMEOUT_MS))
    run = page.get_by_role("button", name="Run release")
    step("run_release_s", lambda: timed_click(page, run, STEP_TIMEOUT_MS))
    step("export_s", export)


def attend(browser, url: str, who: Attendee, folder: Path,
           reduced_motion: bool = False) -> Attendee:
    """Walk the demo path as ``who`` in a fresh context of ``browser`` (its page preferring
    reduced motion if asked, as the tests do: see `browser_tools.new_context`); errors are
    recorded, not raised."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        context = browser.new_context(
            viewport={"width": 1280, "height": 800}, accept_downloads=True,
            reduced_motion="reduce" if reduced_motion else "no-preference")
        try:
            watch_script_runs(context)
            page = context.new_page()
            page.set_default_timeout(STEP_TIMEOUT_MS)
            said: list[str] = []  # the page's console errors and crashes, for the report
            page.on("console", lambda m: m.type == "error" and said.append(m.text[:300]))
            page.on("crash", lambda: said.append("the page crashed"))
            try:
                _walk(page, url, who, folder)
            except Exception as exc:
                page.screenshot(path=str(folder / f"failed_at_{who.step}.png"))
                first_line = (str(exc).strip().splitlines() or [""])[0][:200]
                raise RuntimeError(f"{type(exc).__name__}: {first_line}; console: "
                                   f"{said[-5:]}") from exc
        finally:
            context.close()
    except Exception:  # recorded: the workshop reports every attendee
        who.error = traceback.format_exc(limit=3)
    return who


def run_workshop(url: str, n_sessions: int, folder: Path,
                 reduced_motion: bool = False) -> list[Attendee]:
    """``n_sessions`` attendees at once (samples in turn from DEMO_SAMPLES, seed 101 + i),
    each as `attend`, in one Chromium."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    people = [Attendee(i, DEMO_SAMPLES[i % len(DEMO_SAMPLES)], 101 + i)
              for i in range(n_sessions)]
    with one_chromium(chromium, CHROMIUM_ARGS) as browser, \
            ThreadPoolExecutor(n_sessions) as pool:
        return list(pool.map(lambda who: attend(browser, url, who, folder / f"s{who.index}",
                                                reduced_motion), people))


def expected_release(sample: str, config_json: Path, folder: Path) -> pd.DataFrame:
    """The library's release of a saved configuration (as `hierdp release --config`), its
    values only: without intervals (a bootstrap of about 5 s each the comparison does not
    read; the values are the same with or without them)."""
    from hierdp_core.cli.main import main

    table = folder / f"{sample}.csv"
    if not table.exists():
        assert main(["sample", sample, "--out", str(table)]) == 0
    out = folder / f"cli_{config_json.parent.name}"
    # the dashboard sums rows that repeat a released cell (Italy's by age): declared here
    assert main(["release", str(table), "--config", str(config_json), "--interval", "none",
                 "--duplicates", "sum", "--out", str(out)]) == 0
    return _read(out / "release.csv")


def _read(path: Path) -> pd.Series:
    table = pd.read_csv(path, dtype={"node_id": str, "category": str, "label": str},
                        keep_default_na=False)
    return table.set_index(["node_id", "category"])["value"].sort_index()


def check_isolation(people: list[Attendee], folder: Path) -> list[str]:
    """What went wrong, one line per attendee: an error, a configuration that is not its own
    (sample, seed), or a downloaded release unlike the library's release of its configuration."""
    problems = []
    for who in people:
        if who.error:
            problems.append(f"session {who.index} ({who.sample}) failed at {who.step} after "
                            f"{who.steps}: {who.error.strip().splitlines()[-1]}")
            continue
        config = json.loads(who.config_json.read_text())
        if config["data"] != {"sample": who.sample} or config["seed"] != who.seed:
            problems.append(f"session {who.index}: saved {config['data']} seed "
                            f"{config['seed']}, not {who.sample} seed {who.seed}")
            continue
        shown, expected = _read(who.release_csv), expected_release(who.sample,
                                                                   who.config_json, folder)
        if not shown.equals(expected.astype(shown.dtype)):
            problems.append(f"session {who.index}: its release differs from the library's "
                            "release of its configuration")
    return problems


def server_memory_mb(port: int) -> dict[str, float]:
    """Resident memory of the dashboard serving ``port`` now and at its peak (from /proc)."""
    needle = f"--server.port\0{port}\0".encode()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if needle in (proc / "cmdline").read_bytes():
                status = dict(line.split(":", 1) for line in
                              (proc / "status").read_text().splitlines() if ":" in line)
                return {"rss_mb": int(status["VmRSS"].split()[0]) / 1024,
                        "peak_rss_mb": int(status["VmHWM"].split()[0]) / 1024}
        except OSError:
            continue
    raise LookupError(f"no dashboard process serves port {port}")

