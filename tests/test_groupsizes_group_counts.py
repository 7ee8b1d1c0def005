"""Every region's number of groups (issue 17, item 4): `group_counts.keep_group_counts`
(rescaling and top-down rank matching), gs-mc-dp's size-0 bias (regression: the national
histogram no longer sums one-sided leaf fits into invented groups of size 0) and its kept
per-region group counts."""

from __future__ import annotations

import doctest

import numpy as np
import pandas as pd
import pytest
from conftest import tree_tables
from hypothesis import given, settings
from hypothesis import strategies as st

import hierdp_core.groupsizes.group_counts as gc
from hierdp_core.errors import InputError
from hierdp_core.groupsizes.data import GroupSizeData, group_size_data_from_histograms
from hierdp_core.groupsizes.group_counts import keep_group_counts, rescale_rows
from hierdp_core.groupsizes.samples import us_households
from hierdp_core.hierarchy import build_hierarchy
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource


def test_module_doctest_passes():
    result = doctest.testmod(gc)
    assert result.attempted >= 1 and result.failed == 0


def synthetic(n_states: int = 8, n_counties: int = 8, max_size: int = 10,
              seed: int = 0) -> GroupSizeData:
    """Households of sizes 1..6 (none of size 0) in ``n_states`` x ``n_counties`` counties."""
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"state": np.repeat([f"s{i}" for i in range(n_states)], n_counties),
                          "county": [f"c{i}" for i in range(n_states * n_counties)]})
    h, _ = build_hierarchy(table, ["state", "county"])
    leaves = np.zeros((h.n_leaves, max_size + 1), dtype=np.int64)
    leaves[:, 1:7] = rng.poisson([40, 50, 25, 20, 9, 4], (h.n_leaves, 6))
    return GroupSizeData(h, leaves, tuple(str(s) for s in range(max_size + 1)), ("size",),
                         max_size=max_size)


def positive_part_moments(scale: float) -> tuple[float, float]:
    """Mean and standard deviation of max(0, X), X two-sided geometric of this scale."""
    a = np.exp(-1 / scale)
    mean = a / (1 - a * a)
    return mean, float(np.sqrt(a / (1 - a) ** 2 - mean * mean))


# ---- rescale_rows and keep_group_counts ------------------------------------------------------
@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 12), st.integers(1, 8))
def test_rescale_rows_keeps_counts_and_stays_close(seed, width, rows):
    rng = np.random.default_rng(seed)
    est = rng.integers(0, 20, (rows, width)) * (rng.random((rows, width)) < 0.7)
    counts = rng.integers(0, 50, rows)
    out = rescale_rows(est, counts)
    assert out.min() >= 0 and out.sum(axis=1).tolist() == counts.tolist()
    same = est.sum(axis=1) == counts
    assert out[same].tolist() == est[same].tolist()  # nothing moves where the count is right


@settings(max_examples=60, deadline=None)
@given(tree_tables(max_depth=3, max_children=3, max_repeat=1), st.integers(0, 2**31),
       st.integers(2, 9))
def test_keep_group_counts_is_consistent_and_exact_on_random_trees(tree, seed, width):
    rng = np.random.default_rng(seed)
    h, _ = build_hierarchy(tree.table, tree.levels)
    groups = h.aggregate(rng.integers(0, 30, h.n_leaves))
    est = rng.integers(0, 15, (h.n_nodes, width))
    out = keep_group_counts(h, est, groups)
    assert out.dtype == np.int64 and out.min() >= 0
    assert out.sum(axis=1).tolist() == groups.tolist()
    assert h.consistency_violations(out) == 0
    truth = h.aggregate(rng.integers(0, 9, (h.n_leaves, width)))
    assert keep_group_counts(h, truth, truth.sum(axis=1)).tolist() == truth.tolist()


def test_keep_group_counts_refuses_inconsistent_counts():
    h, _ = build_hierarchy(pd.DataFrame({"state": ["A", "B"]}), ["state"])
    with pytest.raises(InputError, match="sum of its children"):
        keep_group_counts(h, np.ones((3, 4)), np.array([5, 2, 2]))
    with pytest.raises(InputError, match="group counts"):
        keep_group_counts(h, np.ones((3, 4)), np.array([4, 2]))


# ---- gs-mc-dp: size-0 bias and group counts ------------------------------------------------
def national_size0(data: GroupSizeData, seeds: range) -> np.ndarray:
    mechanism = get_mechanism("gs-mc-dp")
    out = []
    for seed in seeds:
        release = mechanism.release(data, PrivacyBudget.pure(1.0), source=NoiseSource(seed=seed))
        values = np.asarray(release.values)
        assert values.sum(axis=1).tolist() == data.groups().tolist()  # G_v kept exactly
        assert data.hierarchy.consistency_violations(values) == 0
        out.append(values[0, 0])
    return np.array(out)


@pytest.mark.parametrize("name", ["synthetic", "us-households"])
def test_mc_dp_invents_no_national_groups_of_size_0(name):
    """No group has size 0, and the national histogram's size-0 count is the positive part
    of one region's noise (scale L / epsilon = 3: mean 1.47), within 4 standard errors; it
    was about lambda * log(leaves) before (9 on 64 leaves, 7-11 on 242 counties)."""
    if name == "synthetic":
        data = synthetic()
    else:
        table = us_households(max_size=50)
        table = table[table["state"].isin(sorted(table["state"].unique())[:5])]
        data = group_size_data_from_histograms(table, ["state", "county"], "size",
                                               "households", max_size=50)
    assert data.node_counts()[:, 0].max() == 0
    size0 = national_size0(data, range(20))
    mean, sd = positive_part_moments(3.0)
    assert size0.mean() <= mean + 4 * sd / np.sqrt(size0.size)


# ---- the groups option: declared per-region group counts kept exactly ----------------------
OPTIONED = ("gs-mh-dp", "gs-topdown", "gs-mc-dp")


@st.composite
def group_data(draw) -> GroupSizeData:
    """A small random tree (1-3 levels below the root) with random histograms over sizes
    0..N, size-0 groups included."""
    tree = draw(tree_tables(max_depth=3, max_children=3, max_repeat=1))
    h, _ = build_hierarchy(tree.table, tree.levels)
    max_size = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    leaves = rng.poisson(rng.uniform(0, 6), (h.n_leaves, max_size + 1))
    return GroupSizeData(h, leaves, tuple(str(s) for s in range(max_size + 1)), ("size",),
                         max_size=max_size)


@settings(max_examples=25, deadline=None)
@given(group_data(), st.integers(0, 1000), st.sampled_from(OPTIONED))
def test_groups_exact_keeps_every_region_count_on_random_trees(data, seed, name):
    mechanism = get_mechanism(name)
    for groups, kept in (("exact", data.groups()), ("noisy", None)):
        release = mechanism.release(data, PrivacyBudget.pure(0.5), source=NoiseSource(seed=seed),
                                    groups=groups)
        values = np.asarray(release.values)
        assert values.min() >= 0 and data.hierarchy.consistency_violations(values) == 0
        assert values[0].sum() == data.total_groups
        if kept is not None:
            assert values.sum(axis=1).tolist() == kept.tolist()


@pytest.mark.parametrize("name", OPTIONED)
def test_groups_option_says_what_is_exact(name):
    from hierdp_core.mechanisms.group_sizes_base import G_PUBLIC, G_V_PUBLIC

    mechanism = get_mechanism(name)
    data = synthetic(2, 3)
    for groups, kept in (("exact", G_V_PUBLIC), ("noisy", G_PUBLIC)):
        assert mechanism.kept_invariants(groups=groups) == (kept,)
        assert kept in mechanism.privacy_plan(groups=groups).stages[0].note
        release = mechanism.release(data, PrivacyBudget.pure(1.0), source=NoiseSource(seed=1),
                                    groups=groups)
        assert release.invariants == (kept,) and release.privacy["invariants"] == [kept]
    assert mechanism.kept_invariants() == mechanism.invariants  # what the CLI reads today


def test_every_consistent_mechanism_keeping_counts_keeps_them():
    """Every consistent private mechanism that declares every region's number of groups
    (with its default parameters or ``groups="exact"``) keeps it at every region, and its
    national size-0 count (none is true) is the positive part of one region's noise: mean
    over seeds within 4 standard errors (scale = sensitivity x levels / epsilon)."""
    from hierdp_core.mechanisms.base import list_mechanisms
    from hierdp_core.mechanisms.group_sizes_base import G_V_PUBLIC, LEVEL_SENSITIVITY

    data = synthetic(3, 4, max_size=8, seed=3)
    seeds = range(12)
    for info in list_mechanisms("group-sizes"):
        if not (info.consistent and info.private):
            continue
        mechanism = get_mechanism(info.name)
        params = {"groups": "exact"} if "groups" in mechanism.params() else {}
        if G_V_PUBLIC not in mechanism.kept_invariants(**params):
            continue
        size0 = []
        for seed in seeds:
            values = np.asarray(mechanism.release(data, PrivacyBudget.pure(1.0),
                                                  source=NoiseSource(seed=seed), **params).values)
            assert values.sum(axis=1).tolist() == data.groups().tolist(), info.name
            size0.append(values[0, 0])
        scale = LEVEL_SENSITIVITY[mechanism.representation] * data.hierarchy.n_levels
        mean, sd = positive_part_moments(scale)
        assert np.mean(size0) <= mean + 4 * sd / np.sqrt(len(seeds)), (info.name, size0)


# ---- groups of size 0: representable and kept ------------------------------------------------
def test_size_0_groups_from_aggregated_rows_and_declared_counts_are_kept():
    from hierdp_core.groupsizes.data import group_size_data_from_people

    rows = pd.DataFrame({"state": list("aabbc"), "county": ["a1", "a1", "b1", "b2", "c1"],
                         "size": [0, 2, 1, 0, 3], "n": [4, 10, 12, 3, 7]})
    data = group_size_data_from_histograms(rows, ["state", "county"], "size", "n", max_size=4)
    assert data.node_counts()[:, 0].tolist()[0] == 7 and data.groups()[0] == 36
    people = pd.DataFrame({"state": ["GA"] * 5 + ["NY"] * 6,
                           "household": list("AABAC") + list("DEDDFF")})
    declared = group_size_data_from_people(people, ["state"], "household", max_size=5,
                                           group_counts={"GA": 5, "NY": 3})
    assert declared.node_counts()[:, 0].tolist() == [2, 2, 0]
    assert declared.groups().tolist() == [8, 5, 3]
    for d in (data, declared):
        for name in OPTIONED:
            values = np.asarray(get_mechanism(name).release(
                d, PrivacyBudget.pure(1.0), source=NoiseSource(seed=3), groups="exact").values)
            assert values.sum(axis=1).tolist() == d.groups().tolist()
            assert d.hierarchy.consistency_violations(values) == 0


@pytest.mark.parametrize(("counts", "message"), [({"XX": 3}, "unknown leaf"),
                                                  ({"GA": 2}, "fewer groups"),
                                                  ({"GA": -1}, "group_counts.*negative")])
def test_bad_declared_group_counts_are_refused(counts, message):
    from hierdp_core.groupsizes.data import group_size_data_from_people

    people = pd.DataFrame({"state": ["GA"] * 5, "household": list("AABAC")})
    with pytest.raises(InputError, match=message):
        group_size_data_from_people(people, ["state"], "household", max_size=5,
                                    group_counts=counts)
