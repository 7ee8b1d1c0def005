"""The dashboard sums rows that repeat a released cell (the command line refuses them unless
told ``--duplicates sum``); each query page says how many it summed of a user's table, and
nothing when none were or when the table is a bundled sample, whose rows are finer than its
releases by design (Italy's by municipality, sex and single year of age) (AppTest)."""

from __future__ import annotations

import pandas as pd
from test_app import assert_clean, on_upload, page, uploaded

NOTE = "repeat the cell of an earlier row"


def notes(at) -> list[str]:
    return [c.value for c in at.caption if NOTE in c.value]


def test_a_bundled_sample_gets_no_note():
    at = page("pages/9_Ranges.py").run()  # Italy's residents by sex, released by age
    assert_clean(at)
    assert notes(at) == []


def test_the_range_page_says_how_many_rows_of_an_upload_it_summed():
    rows = [(r, f"{r}{p}", minutes, 5 + minutes % 7)
            for r in ("N", "S") for p in ("a", "b") for minutes in range(0, 30, 5)]
    travel = pd.DataFrame(rows * 2, columns=["region", "district", "minutes", "commuters"])
    at = on_upload(uploaded(page("pages/9_Ranges.py"), travel, ["region", "district"]), "rg")
    at.selectbox(key="rg_up_attribute").select("minutes").run()
    at.selectbox(key="rg_up_count").select("commuters").run()
    assert_clean(at)
    (note,) = notes(at)
    assert "24 rows" in note and "--duplicates sum" in note


def test_the_hierarchy_page_says_it_of_an_upload_and_not_of_a_sample():
    counts = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a1", "b1"],
                           "n": [3, 4, 5]})
    at = uploaded(page("pages/2_Hierarchy.py"), counts, ["state", "county"], "n").run()
    assert_clean(at)
    (note,) = notes(at)
    assert note.startswith(":material/functions: 1 row of the table")
    at = page("pages/2_Hierarchy.py", "italy-municipalities").run()  # ages in age groups
    assert_clean(at)
    assert notes(at) == []
