"""A plotly.js of the traces the dashboard's own figures use (`TRACES`), built at set-up
(``python -m hierdp_core.ui.plotly_bundle``, called by ``scripts/setup.sh``) from plotly.js's
own modules, the version the plotly package ships, fetched from npm and bundled with esbuild.
It is 1.4 MB instead of 4.8 MB, and a fresh browser runs it in a fraction of the time: 0.5-0.7
s against 1.8-2.8 s for the full plotly.js on this 2-core machine under load, the wait of the
first map after "Start with this sample". `plotly_view` sends a figure whose traces are all in
`TRACES` to it and any other to the full plotly.js; without npm (or offline) the bundle is not
built and every figure uses the full plotly.js, as before.

The bundle is written to ``static/js/`` (git-ignored, served by Streamlit), named after the
plotly version and `TRACES`, so a new version or trace list is built anew; npm's packages are
kept in ``~/.cache/hierdp`` for the next set-up.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import plotly
from plotly.offline import get_plotlyjs_version

from hierdp_core.ui import map_layers

TRACES = ("scatter", "bar", "box", "choropleth", "scattergeo")
ESBUILD = "0.25"  # the esbuild release line the bundle is built with
NPM_SECONDS = 180  # set-up never waits longer for npm (an unreachable registry)


def bundle_name() -> str:
    """The bundle's file name under ``static/js/``: the plotly version and `TRACES`."""
    digest = hashlib.sha256(",".join(TRACES).encode()).hexdigest()[:8]
    return f"plotly-{plotly.__version__}-{digest}.min.js"


def bundle_path() -> Path:
    return map_layers.STATIC_DIR / "js" / bundle_name()


def covers(trace_types) -> bool:
    """Whether the bundle is built and holds every one of ``trace_types``."""
    return set(trace_types) <= set(TRACES) and bundle_path().is_file()


def entry_source() -> str:
    """The esbuild entry: plotly.js's core with `TRACES` registered, as ``window.Plotly``."""
    traces = ", ".join(f"require('plotly.js/lib/{t}')" for t in TRACES if t != "scatter")
    return (f"var Plotly = require('plotly.js/lib/core');\nPlotly.register([{traces}]);\n"
            "window.Plotly = Plotly;\n")


def build(cache: Path | None = None) -> str:
    """Build the bundle unless it is there; returns one line saying what happened (a
    missing npm or a failed install is said, not raised: the full plotly.js then serves)."""
    target = bundle_path()
    if target.is_file():
        return f"plotly.js bundle: kept {target.name}"
    npm = shutil.which("npm")
    if npm is None:
        return "plotly.js bundle: npm not found, the dashboard uses the full plotly.js"
    version = get_plotlyjs_version()
    work = (cache or Path.home() / ".cache" / "hierdp") / f"plotly.js-{version}"
    work.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([npm, "install", "--prefix", str(work), "--no-audit", "--no-fund",
                        "--ignore-scripts", "--loglevel=error", "--fetch-timeout=60000",
                        "--fetch-retries=1", f"plotly.js@{version}",
                        f"esbuild@~{ESBUILD}.0"], check=True, timeout=NPM_SECONDS,
                       capture_output=True, text=True)
        entry = work / "entry.js"
        entry.write_text(entry_source(), encoding="utf-8")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.js")
        subprocess.run([str(work / "node_modules" / ".bin" / "esbuild"), str(entry),
                        "--bundle", "--minify", "--format=iife", "--log-level=error",
                        "--define:global=window", f"--outfile={partial}"],
                       check=True, timeout=NPM_SECONDS, capture_output=True, text=True)
        partial.with_suffix(".css").unlink(missing_ok=True)  # maplibre's, unused by TRACES
        partial.replace(target)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", None) or str(exc)
        last = (detail.strip().splitlines() or [type(exc).__name__])[-1]
        return (f"plotly.js bundle: not built ({last}); the "
                "dashboard uses the full plotly.js")
    size = target.stat().st_size / 1e6
    return f"plotly.js bundle: built {target.name} ({size:.1f} MB, traces {', '.join(TRACES)})"


if __name__ == "__main__":
    print(build())
    sys.exit(0)
