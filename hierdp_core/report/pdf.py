"""The release report as a PDF, printed by a headless Chromium from the HTML report (the
figures are drawn by plotly.js, so a browser has to run it). Optional: without Chromium on
the PATH (Debian's package ``chromium``) `report_pdf` raises `PdfUnavailable`, and the HTML
report still works on its own.

Example
-------
>>> chromium_path() is None or chromium_path().endswith(("chromium", "chromium-browser"))
True
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from hierdp_core.errors import InputError

TIMEOUT_S = 180
PRINT_CSS = """<style>@media print {
  .banner.top { position: static; }
  .modebar-container { display: none !important; }
  section.figure, table, .explain { break-inside: avoid; }
  .scroll { overflow: visible; }
}</style>"""


class PdfUnavailable(InputError):
    """A PDF cannot be made here: no Chromium, or it failed; the message says which."""


def chromium_path() -> str | None:
    """The Chromium executable on the PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def report_pdf(html: str, *, chromium: str | None = None) -> bytes:
    """Print the report ``html`` (from `hierdp_core.report.stakeholder.report_html`) to PDF
    bytes with headless Chromium, no network needed. Raises `PdfUnavailable`."""
    browser = chromium or chromium_path()
    if browser is None:
        raise PdfUnavailable("a PDF needs Chromium (the Debian package chromium); the HTML "
                             "report opens in any browser and prints from there")
    with tempfile.TemporaryDirectory(prefix="hierdp-pdf-") as folder:
        source, target = Path(folder) / "report.html", Path(folder) / "report.pdf"
        source.write_text(html.replace("</head>", PRINT_CSS + "</head>", 1), encoding="utf-8")
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu",
                   "--no-pdf-header-footer", "--disable-background-networking",
                   f"--user-data-dir={Path(folder) / 'profile'}",
                   "--virtual-time-budget=20000", f"--print-to-pdf={target}",
                   source.as_uri()]
        try:
            done = subprocess.run(command, capture_output=True, timeout=TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PdfUnavailable(f"Chromium could not print the report: {exc}") from None
        if not target.is_file() or target.stat().st_size == 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
            raise PdfUnavailable("Chromium did not print the report"
                                 + (f": {tail[0]}" if tail else ""))
        return target.read_bytes()
