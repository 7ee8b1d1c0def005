"""Group-size histograms from person records and from per-leaf histograms; conversions and
metrics."""

from __future__ import annotations

import doctest

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hierdp_core.groupsizes.data as gsd
from hierdp_core.errors import HierarchyError, InputError
from hierdp_core.groupsizes.data import (
    cumulative,
    decumulate,
    emd,
    group_size_data_from_histograms,
    group_size_data_from_people,
    group_size_metrics,
)


def test_module_doctest_passes():
    assert doctest.testmod(gsd).failed == 0


def running_example() -> pd.DataFrame:
    """Fioretto et al.'s running example: 11 persons, 6 households in GA and NY."""
    return pd.DataFrame({"state": ["GA"] * 5 + ["NY"] * 6,
                         "person": [f"{i:02d}" for i in (1, 3, 4, 2, 5, 6, 8, 9, 7, 10, 11)],
                         "household": list("AAABC") + list("DDDEFF")})


def test_running_example_histograms():
    d = group_size_data_from_people(running_example(), ["state"], "household", max_size=5)
    assert d.categories == ("0", "1", "2", "3", "4", "5")
    hist = d.node_counts()
    assert hist[1].tolist() == [0, 2, 0, 1, 0, 0]  # GA: A=3, B=1, C=1
    assert hist[2].tolist() == [0, 1, 1, 1, 0, 0]  # NY: D=3, E=1, F=2
    assert hist[0].tolist() == [0, 3, 1, 2, 0, 0]
    assert cumulative(hist)[1].tolist() == [0, 2, 2, 3, 3, 3]
    assert d.total_groups == 6 and d.groups().tolist() == [6, 3, 3] and d.top_coded == 0


def test_top_coding_counts_groups_at_max_size():
    d = group_size_data_from_people(running_example(), ["state"], "household", max_size=2)
    assert d.node_counts()[0].tolist() == [0, 3, 3]  # the two size-3 groups are top-coded
    assert d.top_coded == 2


def test_person_weights_and_histogram_input_agree():
    people = running_example().groupby(["state", "household"], as_index=False).size()
    weighted = group_size_data_from_people(people, ["state"], "household", max_size=5,
                                           count_column="size")
    sizes = people.groupby(["state", "size"], as_index=False).agg(n=("household", "count"))
    hist = group_size_data_from_histograms(sizes, ["state"], "size", "n", max_size=5)
    assert (weighted.node_counts() == hist.node_counts()).all()


def test_group_spanning_two_leaves_is_named():
    people = running_example()
    people.loc[0, "state"] = "NY"
    with pytest.raises(InputError, match=r"\['A'\].*more than one leaf"):
        group_size_data_from_people(people, ["state"], "household", max_size=5)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10", True, 10**6])
def test_bad_max_size_is_refused(bad):
    with pytest.raises(InputError, match="max_size"):
        group_size_data_from_people(running_example(), ["state"], "household", max_size=bad)


def test_bad_inputs_are_typed_errors():
    people = running_example()
    with pytest.raises(InputError, match="group column 'hh'"):
        group_size_data_from_people(people, ["state"], "hh", max_size=5)
    people.loc[3, "household"] = None
    with pytest.raises(InputError, match="missing"):
        group_size_data_from_people(people, ["state"], "household", max_size=5)
    with pytest.raises(HierarchyError):
        group_size_data_from_people(running_example().assign(state=None), ["state"],
                                    "household", max_size=5)
    sizes = pd.DataFrame({"state": ["GA"], "size": [-1], "n": [3]})
    with pytest.raises(InputError, match="size"):
        group_size_data_from_histograms(sizes, ["state"], "size", "n", max_size=5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=8), st.integers(0, 10_000))
def test_emd_is_l1_between_sorted_size_lists(sizes, seed):
    rng = np.random.default_rng(seed)
    other = rng.integers(0, 7, size=len(sizes))
    a = np.bincount(sizes, minlength=7)
    b = np.bincount(other, minlength=7)
    assert emd(a, b) == np.abs(np.sort(sizes) - np.sort(other)).sum()
    assert (decumulate(cumulative(a)) == a).all()


def test_emd_example_and_metrics():
    assert emd(np.array([0, 100, 0, 0, 0, 0]), np.array([0, 0, 100, 0, 0, 0])) == 100
    assert emd(np.array([0, 100, 0, 0, 0, 0]), np.array([0, 0, 0, 0, 0, 100])) == 400
    d = group_size_data_from_people(running_example(), ["state"], "household", max_size=5)
    released = d.node_counts().copy()
    released[1] = [0, 1, 1, 1, 0, 0]  # GA off by one person; now the root is inconsistent
    m = group_size_metrics(d, released).set_index("level_name")
    assert m.loc["state", "l1"] == 2 and m.loc["state", "emd_mean"] == 0.5
    assert m.loc["total", "consistency_violations"] == 2
    assert m.loc["state", "consistency_violations"] == 0
    assert (m["faithfulness_gap"] == 0).all()


def test_us_households_sample_is_deterministic_and_plausible():
    from hierdp_core.data.samples import us_counties
    from hierdp_core.groupsizes.samples import us_households

    t = us_households()
    assert list(t.columns) == ["state", "state_name", "county", "county_name", "size",
                               "households"]
    assert t.equals(us_households()) and not t.equals(us_households(seed=1))
    assert (t["households"] > 0).all() and t["size"].between(1, 1000).all()
    assert t["county"].nunique() == 3141
    people = (t["size"] * t["households"]).sum()
    population = us_counties()["population"].sum()
    assert abs(people / population - 1) < 0.02  # households carry the real population
    assert (t["size"] >= 10).sum() >= 51  # group quarters in every state
    d = group_size_data_from_histograms(t, ["state", "county"], "size", "households",
                                        max_size=1000)
    assert d.total_groups == t["households"].sum() and d.leaf_counts.shape == (3141, 1001)


def test_the_household_sample_declares_its_groups():
    """The sample's groups table (the generator's first step, its public declaration) gives
    every county its households and group quarters: declared over the sample's geography it
    adds no group and the data says the numbers of groups are declared."""
    from hierdp_core.data.sample_files import SAMPLE_FILES, sample_geography
    from hierdp_core.groupsizes.declared_groups import declared_groups_from_table
    from hierdp_core.groupsizes.samples import us_household_groups, us_households

    groups = us_household_groups()
    assert list(groups.columns) == ["state", "county", "groups"]
    assert groups["county"].is_unique and len(groups) == 3141
    counted = us_households().groupby("county")["households"].sum()
    np.testing.assert_array_equal(groups.set_index("county")["groups"][counted.index],
                                  counted)
    assert groups.equals(us_household_groups()) and not groups.equals(
        us_household_groups(seed=1))
    assert SAMPLE_FILES["us-households"].groups().equals(groups)  # what `hierdp sample` writes
    geography = sample_geography("us-households", ("state", "county"))
    declared = declared_groups_from_table(groups, geography, ["state", "county"])
    d = group_size_data_from_histograms(us_households(), ["state", "county"], "size",
                                        "households", max_size=30, geography=geography,
                                        group_counts=declared)
    assert d.groups_declared and d.total_groups == counted.sum()


def test_dense_blocks_and_large_group_quarters_variants():
    from hierdp_core.groupsizes.samples import us_blocks, us_households

    blocks = us_blocks()
    assert blocks["county"].nunique() == 3141 and (blocks["households"] > 0).all()
    assert (blocks["size"] == 0).any() and blocks["size"].nunique() > 300  # dense sizes
    wide = us_households(max_size=10_000, largest_group=10_000)
    assert wide["size"].max() > 1000 and wide["size"].max() <= 10_000
