"""The dashboard sums rows that repeat a released cell (the command line refuses them unless
told ``--duplicates sum``); each query page says how many it summed, and nothing when none
(AppTest)."""

from __future__ import annotations

from test_app import assert_clean, page

NOTE = "repeat the cell of an earlier row"


def notes(at) -> list[str]:
    return [c.value for c in at.caption if NOTE in c.value]


def test_the_range_page_says_how_many_rows_it_summed():
    at = page("pages/9_Ranges.py").run()  # Italy's residents by sex, released by age
    assert_clean(at)
    (note,) = notes(at)
    assert "1,585,195 rows" in note and "--duplicates sum" in note


def test_a_table_without_repeats_gets_no_note():
    at = page("pages/2_Hierarchy.py", "us-counties").run()
    assert_clean(at)
    assert notes(at) == []
