"""Integer ends of the intervals of integer releases (`bootstrap.integer_ends`, used by
`bootstrap.feasible`): every true value is a count, so an end moves inward to the nearest
integer without losing one, and a TopDown release's table reads ``275``, not ``275.0``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from hierdp_core.intervals import intervals_for
from hierdp_core.intervals.bootstrap import feasible, integer_ends
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import CountData, count_data_from_table

ends = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)


@given(st.lists(st.tuples(ends, ends), min_size=1, max_size=30))
def test_integer_ends_keep_every_integer_and_only_integers(pairs):
    lower = np.array([min(p) for p in pairs])
    upper = np.array([max(p) for p in pairs])
    iv = feasible(lower, upper, {}, integer=True)
    assert iv.lower.dtype == iv.upper.dtype == np.int64
    for lo, hi, new_lo, new_hi in zip(np.maximum(lower, 0), np.maximum(upper, 0),
                                      iv.lower, iv.upper, strict=True):
        assert new_lo >= lo - 1e-9 * (1 + abs(lo)) and new_hi <= hi + 1e-9 * (1 + abs(hi))
        assert new_lo == max(0, math.ceil(lo - 1e-9 * (1 + abs(lo))))  # no integer lost


def test_a_float_rounding_error_is_not_a_step():
    assert integer_ends(np.array([3.0000000000004, 2.9999999999996]), up=False).tolist() == [3, 3]
    assert integer_ends(np.array([3.0000000000004, 2.9999999999996])).tolist() == [3, 3]
    assert integer_ends(np.array([2.5]), up=False).tolist() == [2]
    assert integer_ends(np.array([2.5])).tolist() == [3]


def test_non_finite_or_integer_ends_are_left_alone():
    assert integer_ends(np.array([1.5, np.inf])).dtype == np.float64
    kept = np.array([1, 2], dtype=np.int64)
    assert integer_ends(kept) is kept
    assert feasible(np.array([0.5]), np.array([2.5]), {}).upper.dtype == np.float64


def test_topdown_intervals_are_integers_around_the_value():
    """TopDown's near-zero inversion adds a float half-width; its ends are integers now."""
    release = get_mechanism("topdown").release(_tiny_counts(), PrivacyBudget.pure(0.5),
                                               source=NoiseSource(seed=4))
    iv = intervals_for(release, 0.9, 20)
    assert iv.lower.dtype == iv.upper.dtype == np.int64
    assert ((iv.lower <= release.values) & (release.values <= iv.upper)).all()


def _tiny_counts() -> CountData:
    t = pd.DataFrame({"s": list("AAABBB"), "c": list("abcdef"), "n": [0, 1, 3, 40, 2, 0]})
    return count_data_from_table(t, ["s", "c"], count_column="n")
