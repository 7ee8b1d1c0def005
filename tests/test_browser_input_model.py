"""The Data page with a wide census-style table in a real headless Chromium: the upload is
guessed wide, melted on one click with a preview of the long table, and its tree and
categories are built. Screenshot: test-artifacts/screenshots/data_wide_table.png."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from test_browser import (  # noqa: F401  (fixtures)
    browser,
    no_exception,
    page,
    server,
    shot,
    upload_on_data_page,
)

from tests.browser_tools import settle

pytestmark = pytest.mark.browser
BANDS = [f"age_{lo}_{lo + 4}" for lo in range(0, 100, 5)] + ["age_100"]


def test_a_wide_table_on_the_data_page(server, page, tmp_path):  # noqa: F811
    rng = np.random.default_rng(5)
    units = pd.DataFrame({"state": ["06"] * 4 + ["36"] * 3,
                          "county": ["06001", "06037", "06059", "06073", "36047", "36061",
                                     "36081"]})
    counts = pd.DataFrame(rng.integers(0, 5000, (len(units), len(BANDS))), columns=BANDS)
    upload_on_data_page(page, server, pd.concat([units, counts], axis=1),
                        tmp_path / "census_by_age.csv")
    page.get_by_text("looks wide: 21 columns age_0_4 … age_100").first.wait_for()
    page.get_by_text("A guess, not applied").wait_for()
    page.get_by_text("One column per category (a wide table)").click()  # accept the guess
    settle(page)
    page.get_by_text("The long table the release is made from: 147 rows").wait_for()
    levels = page.locator("[data-testid='stMultiSelect']").filter(has_text="Geography levels")
    if "county" not in levels.first.inner_text():  # the nested code columns are preselected
        levels.first.click()
        page.get_by_role("option").filter(has_text=re.compile("^county$")).first.click()
        page.keyboard.press("Escape")  # close the list of options
        settle(page)
    page.get_by_text("A tree of 10 units over 3 levels").wait_for()
    page.get_by_text("21 categories").wait_for()
    no_exception(page)
    shot(page, "data_wide_table")
