"""The boundary property guess (issue 27, item 3): chosen by codes AND parents, and below
the match coverage a level is built by merging the level below when that gives every unit
an area."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.geo.guess import guess_properties
from hierdp_core.geo.match import MATCH_COVERAGE

TOWNS = np.repeat(["101", "102", "103", "104"], 5)
TRACTS = np.array([f"{t}{i:02d}" for t, i in zip(TOWNS, list(range(5)) * 4, strict=True)])


def units(towns=TOWNS, tracts=TRACTS):
    distinct = pd.unique(towns)
    return {"town": (distinct, None), "tract": (tracts, towns)}


def test_the_right_property_wins_when_it_is_the_second_one():
    shuffled = np.roll(TRACTS, 5)  # the same codes, each in another town
    frame = pd.DataFrame({"old_tract": shuffled, "tract": TRACTS, "town": TOWNS})
    guess = guess_properties(frame, list(frame.columns), units())
    assert guess.properties == {"town": "town", "tract": "tract"}
    assert guess.rates == {"town": 1.0, "tract": 1.0}


def test_a_level_below_the_coverage_is_built_by_merging_when_that_reaches_every_unit():
    frame = pd.DataFrame({"town_old": np.where(TOWNS == "104", "999", TOWNS),  # 75%
                          "tract": TRACTS})
    guess = guess_properties(frame, list(frame.columns), units())
    assert guess.properties == {"tract": "tract"} and guess.merged == ("town",)
    assert guess.rates["town"] == 1.0
    text = guess.describe(["town", "tract"])
    assert "town: build by merging tract (100%)" in text
    assert "tract ← 'tract' (100% of codes with their parents)" in text


def test_no_merge_when_merging_leaves_a_unit_without_an_area():
    frame = pd.DataFrame({"town_old": np.where(TOWNS == "104", "999", TOWNS),
                          "tract": np.where(TOWNS == "104", "x", TRACTS)})
    guess = guess_properties(frame, list(frame.columns), units())
    assert guess.merged == ()  # town 104 has no tract in the file: merging cannot reach it
    assert guess.properties["town"] == "town_old" and guess.rates["town"] == 0.75


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 6), st.integers(1, 5), st.integers(0, 2**31), st.integers(1, 3))
def test_a_decoy_with_the_same_codes_in_other_parents_never_wins(n_towns, per_town, seed,
                                                                shift):
    """Property: a first property holding every tract code, but each under another town,
    loses to the right one (codes alone tie)."""
    towns = np.repeat([f"T{i}" for i in range(n_towns)], per_town)
    tracts = np.array([f"t{i}" for i in range(towns.size)])
    order = np.random.default_rng(seed).permutation(towns.size)
    shift = 1 + shift % (n_towns - 1)  # never a whole turn
    decoy = np.roll(tracts, shift * per_town)  # every code moved to another town
    frame = pd.DataFrame({"decoy": decoy[order], "right": tracts[order],
                          "town": towns[order]})
    guess = guess_properties(frame, list(frame.columns), units(towns, tracts))
    assert guess.properties["tract"] == "right"
    assert guess.rates["tract"] == 1.0 >= MATCH_COVERAGE
