"""Start the Streamlit dashboard in a child process on a free local port (used by the browser
tests, the dashboard benchmark and live demos)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hierdp_core.data.samples import SAMPLES

APP = Path(__file__).resolve().parents[1] / "app.py"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux's /proc; None without)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_idle(pid: int, timeout: float, quiet: float = 1.0, share: float = 0.05) -> None:
    """Return once process ``pid`` has used less than ``share`` of a core for ``quiet``
    seconds (or ``timeout`` seconds have passed, or its CPU time cannot be read)."""
    deadline, before = time.monotonic() + timeout, cpu_seconds(pid)
    while before is not None and time.monotonic() < deadline:
        time.sleep(quiet)
        now = cpu_seconds(pid)
        if now is None or now - before < share * quiet:
            return
        before = now


@contextmanager
def running_dashboard(start_timeout: float = 60.0, home: Path | None = None,
                      warm_samples: bool = False, until_idle: bool = False) -> Iterator[str]:
    """Yield the URL of a freshly started dashboard (`hierdp_core.ui.serve`, as
    `scripts/run-dashboard.sh` starts it); stop it on exit. ``home``: its HIERDP_HOME (the
    budget ledger's folder), kept; by default a fresh temporary one, removed on exit.
    ``warm_samples``: the server prepares the bundled samples in the background as it does
    for a user (the benchmark); a test leaves them to the pages it opens (seconds of CPU
    per server otherwise). ``until_idle``: the URL once the server has also finished
    starting (`wait_until_idle`: its warm-up done), as a visitor of a dashboard started
    beforehand finds it. Raises RuntimeError (with the server's last output) if it does
    not become healthy."""
    port = free_port()
    own_home = home is None
    home = tempfile.mkdtemp(prefix="hierdp_home_") if own_home else home
    env = {"OPENBLAS_NUM_THREADS": "1",  # as scripts/run-dashboard.sh starts it
           **os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
           "HIERDP_HOME": str(home), "HIERDP_WARM_SAMPLES": "1" if warm_samples else "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hierdp_core.ui.serve", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1"],
        cwd=APP.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200:
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    output = proc.stdout.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"the dashboard did not start: {output}") from None
                time.sleep(0.5)
        if until_idle:
            wait_until_idle(proc.pid, start_timeout)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if own_home:
            shutil.rmtree(home, ignore_errors=True)


def empty_folder(folder: Path) -> None:
    """Remove everything inside ``folder`` (a dashboard's HIERDP_HOME between tests: its
    budget ledger starts empty again), keeping the folder."""
    for entry in folder.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def new_context(browser, **options):
    """A Playwright context for a test (``options``: viewport, colour scheme, ...) whose page
    prefers reduced motion: Streamlit then drops its CSS animations (the running indicator,
    fades), which a headless Chromium composites in software at 60 frames a second for as
    long as a script runs (measured: 15-19 s of CPU per query-page walk, against 1-3). No
    test checks an animation; every page, value and colour is the same. Its pages count
    their script runs (`watch_script_runs`)."""
    context = browser.new_context(reduced_motion="reduce", **options)
    watch_script_runs(context)
    return context


# Counts, in the page, the script runs its server reports: every binary websocket frame is a
# Streamlit ForwardMsg; its top-level fields are read (a length-delimited one skipped by its
# length, so nested messages are never mistaken for it): field 4 (new_session) starts a run,
# field 6 (script_finished, a varint) ends one unless its status is 2 (FINISHED_EARLY_FOR_RERUN:
# another run follows).
RUN_COUNTER = """(() => {
  if (window.__hdRuns !== undefined) return;
  window.__hdRuns = 0;
  window.__hdStarts = 0;
  const varint = (b, i) => {
    let v = 0, shift = 1, c;
    do { c = b[i++]; v += (c & 127) * shift; shift *= 128; } while (c & 128 && i < b.length);
    return [v, i];
  };
  window.__hdCountFrame = data => {
    if (!(data instanceof ArrayBuffer)) return;
    const b = new Uint8Array(data);
    let i = 0, tag, v;
    while (i < b.length) {
      [tag, i] = varint(b, i);
      const field = Math.floor(tag / 8), wire = tag % 8;
      if (wire === 0) {
        [v, i] = varint(b, i);
        if (field === 6 && v !== 2) window.__hdRuns++;
      } else if (wire === 2) {
        [v, i] = varint(b, i);
        if (field === 4) window.__hdStarts++;
        i += v;
      } else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else return;
    }
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", e => window.__hdCountFrame(e.data));
    }
  };
})()"""


def watch_script_runs(context) -> None:
    """Have every page of ``context`` count the script runs its server starts
    (``window.__hdStarts``) and finishes (``window.__hdRuns``), read from the websocket's
    messages (`RUN_COUNTER`): what `timed_rerun` waits for. The page's own running state is
    not enough: a run answered from warm caches can start and end within one frame, and
    the page then never shows it running (tests waited 120-300 s for such runs under load)."""
    context.add_init_script(RUN_COUNTER)


_SHOWN = "t => [...document.querySelectorAll('h1')].some(h => h.innerText.trim() === t)"


# ---- driving a Playwright page (the caller owns Playwright; nothing is imported here) -----
POLL_MS = 100


def wait_until(page, predicate: str, arg=None, timeout: float | None = None):
    """``page.wait_for_function(predicate, arg=arg, timeout=timeout)`` (the page's default
    timeout when None), the predicate run every POLL_MS ms. Playwright's default runs it at
    every animation frame, which keeps a waiting page drawing 60 frames a second: 1.3-1.5 s
    of Chromium's CPU per 10 s of waiting on Results, against 0.1-0.2 polled every 100 ms
    (measured; the browser tests wait for minutes in all)."""
    options = {} if timeout is None else {"timeout": timeout}
    return page.wait_for_function(predicate, arg=arg, polling=POLL_MS, **options)


IS_IDLE = "document.querySelector('[data-testid=\"stApp\"]')?.dataset.testScriptState" \
          " === 'notRunning'"
IDLE = "() => " + IS_IDLE


def settle(page, timeout_ms: int = 120_000) -> None:
    """Wait until a page title is shown and Streamlit has finished running the script."""
    page.wait_for_selector("[data-testid='stApp'] h1", timeout=timeout_ms)
    wait_until(page, IDLE, timeout=timeout_ms)
    time.sleep(0.3)
    wait_until(page, IDLE, timeout=timeout_ms)


def timed_click(page, locator, timeout_ms: int = 120_000) -> float:
    """Click, then return the seconds until the rerun it triggers has finished and the
    browser has painted twice (script run + transfer + rendering, as a user waits for it)."""
    return timed_rerun(page, locator.click, timeout_ms)


def timed_rerun(page, act, timeout_ms: int = 120_000, again_after_ms: int | None = None) -> float:
    """Do ``act()`` (an input that reruns the script), then return the seconds until the
    server has finished a run after it, the page shows no run under way and the browser has
    painted twice (script run + transfer + rendering, as a user waits for it). The runs are
    counted from the server's messages (the page's context made by `new_context` or given
    `watch_script_runs`). An input given while a run is under way restarts that run: the
    run cut short is not counted, the one that follows is. ``again_after_ms``: for an act
    that may be repeated (typing a value), do it once more if no run has started that long
    after it (an input lost under load: a workshop session once waited 300 s for a seed
    nobody received)."""
    counts = page.evaluate("() => [window.__hdStarts, window.__hdRuns]")
    if counts[0] is None:
        raise RuntimeError("timed_rerun needs a page that counts its script runs: make its "
                           "context with new_context or watch_script_runs")
    started = time.perf_counter()
    act()
    if again_after_ms is not None:
        try:
            wait_until(page, "starts => window.__hdStarts > starts", arg=counts[0],
                       timeout=again_after_ms)
        except Exception as exc:  # Playwright's TimeoutError (not imported here)
            if type(exc).__name__ != "TimeoutError":
                raise
            act()
    wait_until(page, "runs => window.__hdRuns > runs && " + IS_IDLE, arg=counts[1],
               timeout=timeout_ms)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    return time.perf_counter() - started


def open_page(page, label: str) -> None:
    """Open a dashboard page through the sidebar (a URL would start a new session) and wait
    until its title (the sidebar label; 'hierdp' for Home) is shown and the script is done."""
    title = "hierdp" if label == "Home" else label
    link = page.locator("[data-testid='stSidebar']").get_by_role("link", name=label, exact=True)
    link.click()
    try:
        wait_until(page, _SHOWN, arg=title, timeout=40_000)
    except Exception as exc:  # Playwright's TimeoutError (not imported here)
        if type(exc).__name__ != "TimeoutError":
            raise
        link.click()  # the click was lost (seen twice in a day under load): once more
        wait_until(page, _SHOWN, arg=title, timeout=80_000)
    settle(page)


def page_url(url: str, label: str) -> str:
    """The address of the dashboard page ``label`` (a sidebar label of `widgets.PAGES`) on
    the dashboard at ``url``: Streamlit serves Home at the root and every other page at the
    name it derives from the page's file (pages/7_Group_sizes.py at /Group_sizes)."""
    from streamlit.source_util import page_icon_and_name

    from hierdp_core.ui.widgets import PAGES  # the dashboard's own modules: on first use

    path = next(path for path, name, _ in PAGES if name == label)
    return url if path == PAGES[0][0] else f"{url}/{page_icon_and_name(Path(path))[1]}"


def open_directly(page, url: str, label: str) -> None:
    """Open the dashboard page ``label`` by its address in a new session (its defaults set
    up as on any first page: the default sample, no release), without running Home first;
    wait until its title is shown and the script is done. For tests not about Home: a
    visit to Home costs seconds of browser time (its map previews)."""
    page.goto(page_url(url, label))
    wait_until(page, _SHOWN, arg="hierdp" if label == "Home" else label,
               timeout=120_000)
    settle(page)


def start_with_sample(page, url: str, index: int = 0) -> None:
    """Open Home at ``url`` and press "Start with this sample" of the ``index``-th bundled
    sample (0: the US counties, 1: Italy); wait until the Results page it opens has run
    with that sample."""
    page.goto(url)
    settle(page)
    press_start(page, list(SAMPLES)[index])


def press_start(page, sample: str, timeout_ms: int = 120_000) -> None:
    """On Home, press the "Start with this sample" button of ``sample`` (by its widget key,
    not its position: Home's columns may rerun while the click is delivered); wait until
    Results has run with that sample."""
    page.locator(f".st-key-start_{sample} button").click()
    wait_until(page, _SHOWN, arg="Results", timeout=timeout_ms)
    settle(page, timeout_ms)
    page.get_by_text(f"Data: {SAMPLES[sample].title}").first.wait_for(timeout=timeout_ms)


def select_option(page, label: str, option: str) -> None:
    """In the select box whose label contains ``label``, pick the first option whose text
    starts with ``option``; wait for the rerun. The option is typed first: the box then
    lists the options that match it (a long list is drawn only in part, the rest when
    scrolled to, and a small window showed no "Colour-blind safe: cividis")."""
    page.locator("[data-testid='stSelectbox']").filter(has_text=label).first.click()
    page.keyboard.type(option)
    page.get_by_role("option").filter(has_text=re.compile("^" + re.escape(option))).first.click()
    settle(page)


def explains_in_plain_words(page, protects: str, per: str):
    """Open a query page's "In plain words" panel and wait until it names the neighbour
    (``protects``), the odds bound at ε = 1 and the a priori error (``per``) in a table;
    the panel's locator."""
    panel = page.locator(".st-key-explain_panel")
    panel.get_by_text("In plain words").click()
    panel.get_by_text(protects).wait_for()
    panel.get_by_text("at most e^ε ≈ 2.72 times as likely").wait_for()
    panel.get_by_text(per, exact=False).first.wait_for()
    panel.locator("[data-testid='stDataFrame']").wait_for()
    return panel


def has_exception(page) -> bool:
    return page.locator("[data-testid='stException']").count() > 0
