"""The root of a range release over a workload of sums of several atoms (prefixes, ranges):
its atom totals from the estimates' cumulative sums made non-decreasing and non-negative
(`ranges.consistency.cumulative_nonnegative`), not each clipped at 0, whose losses add up
along every prefix (measured: prefix answers 3-6 times worse than the estimates' at the
roots of small tables at ε 0.1)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.ranges import RangeData
from hierdp_core.ranges.consistency import cumulative_nonnegative
from hierdp_core.ranges.workloads import bands, identity, prefix_ranges, ranges
from hierdp_core.structure import geography_from_table


def test_a_few_totals():
    got = cumulative_nonnegative(np.array([[3.0, -2, 1, -1, 4], [0.2, -5, 7, 0, 0]]))
    assert got.tolist() == [[2, 0, 0, 0, 3], [0, 0, 2, 0, 0]]  # clipping: [3,0,1,0,4], [0,0,7,0,0]


@settings(max_examples=200, deadline=None)
@given(truth=arrays(np.int64, st.integers(1, 40), elements=st.integers(0, 30)),
       noise=st.floats(0.1, 50), seed=st.integers(0, 2**32 - 1))
def test_never_further_from_the_truths_cumulative_sums(truth, noise, seed):
    """Non-negative integers whose cumulative sums are no further from the truth's (in the
    sum of squares) than the estimates' were, but for the rounding (at most 1/2 each)."""
    estimate = truth + np.random.default_rng(seed).laplace(0, noise, truth.size)
    got = cumulative_nonnegative(estimate[None])[0]
    assert (got >= 0).all() and (got == np.rint(got)).all()
    true_sums = np.cumsum(truth)
    fitted = np.linalg.norm(np.cumsum(got) - true_sums)
    assert fitted <= np.linalg.norm(np.cumsum(estimate) - true_sums) + 0.5 * np.sqrt(truth.size)


def test_only_workloads_of_several_atoms_ask_for_it():
    assert prefix_ranges(8).spans_atoms()
    assert ranges(8, [0, 2], [3, 5]).spans_atoms()
    assert not identity(8).spans_atoms()
    assert not bands([str(a) for a in range(10)], "0-4,5-9").spans_atoms()
    assert not ranges(8, [0, 4], [3, 7]).spans_atoms()  # two atoms, each asked alone


def test_a_small_roots_prefixes_are_no_longer_biased_up():
    """H2 on 40 units of 2 people over 16 ages at ε 0.1: the root's released prefixes stay
    near the truth's on average; clipping each root cell at 0 put them hundreds too high."""
    geo = geography_from_table(
        __import__("pandas").DataFrame({"u": [f"u{i}" for i in range(40)]}), ["u"])
    leaves = np.zeros((40, 16), dtype=np.int64)
    leaves[np.arange(40), np.arange(40) % 16] = 2
    data = RangeData(geo.hierarchy, leaves, tuple(map(str, range(16))), "age",
                     prefix_ranges(16))
    mechanism = get_mechanism("h2")
    errors = []
    for seed in range(30):
        release = mechanism.release(data, PrivacyBudget.pure(0.1), source=NoiseSource(seed=seed))
        errors.append(np.cumsum(release.values[0]) - np.cumsum(data.node_counts()[0]))
    bias = np.mean(errors, axis=0)
    spread = np.std(errors, axis=0, ddof=1) / np.sqrt(len(errors))
    assert (np.abs(bias) < 4 * spread + 1).all(), bias
