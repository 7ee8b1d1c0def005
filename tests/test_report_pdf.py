"""The release report as a PDF (hierdp_core.report.pdf), printed by Debian's headless
Chromium: a PDF of several pages; without Chromium a typed error that says the HTML
report works on its own."""

from __future__ import annotations

import os
import re

import pytest

from hierdp_core.compare import Side, release_side
from hierdp_core.report import pdf
from hierdp_core.report.stakeholder import report_html


def test_without_chromium_a_typed_error(monkeypatch):
    monkeypatch.setattr(pdf.shutil, "which", lambda name: None)
    assert pdf.chromium_path() is None
    with pytest.raises(pdf.PdfUnavailable, match="needs Chromium"):
        pdf.report_pdf("<html></html>")
    with pytest.raises(pdf.PdfUnavailable, match="could not print"):
        pdf.report_pdf("<html></html>", chromium="/nonexistent/chromium")


@pytest.mark.browser
def test_the_report_prints_to_a_pdf(small_county_data):
    if pdf.chromium_path() is None:
        if os.environ.get("HIERDP_REQUIRE_BROWSER"):
            raise RuntimeError("Debian's chromium is required (HIERDP_REQUIRE_BROWSER is set)")
        pytest.skip("Debian's chromium is not installed")
    release = release_side(small_county_data, Side("topdown", 1.0, seed=1))
    page = report_html(release, small_county_data, {"mechanism": "topdown"},
                       structure_declared=False)
    document = pdf.report_pdf(page)
    assert document.startswith(b"%PDF-")
    pages = len(re.findall(rb"/Type\s*/Page\b", document))
    assert pages >= 2, pages  # explanation, tables and figures do not fit on one page
