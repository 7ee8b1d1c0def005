"""Declared group counts (`hierdp_core.groupsizes.declared_groups`) and the declared minimum
size: neighbours D and D' (D without the only member of a one-person household) give the
same exactly released numbers of groups when the groups file is declared; without it the
numbers are the data's (1,600 vs 1,599), and a release keeping them exactly is not
publishable. The groups file is validated (one line each); ``--min-size`` bottom-codes."""

from __future__ import annotations

import doctest

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledger_marks import charged_in_ledger

import hierdp_core.groupsizes.declared_groups as dg
from hierdp_core.errors import InputError, StructureError
from hierdp_core.groupsizes.data import group_size_data_from_people
from hierdp_core.groupsizes.declared_groups import declared_groups_from_table
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.structure import geography_from_table
from hierdp_core.verdict import GROUPS_FROM_DATA, release_verdict

LEVELS = ["state", "county"]
#: 2 states x 4 counties x 200 households = 1,600 households
HOUSEHOLDS_PER_COUNTY = 200


def test_module_doctest_passes():
    assert doctest.testmod(dg).failed == 0


def make_people() -> pd.DataFrame:
    """One row per person: 1,600 households of sizes 1..6 (about a third alone)."""
    rng = np.random.default_rng(27)
    rows = []
    for s in "AB":
        for c in range(4):
            for h in range(HOUSEHOLDS_PER_COUNTY):
                size = int(rng.choice(6, p=[.34, .3, .15, .12, .06, .03])) + 1
                rows += [(s, f"{s}{c}", f"{s}{c}-{h}")] * size
    return pd.DataFrame(rows, columns=[*LEVELS, "household"])


PEOPLE = make_people()
#: the first one-person household: D' is D without its only member
ALONE = PEOPLE["household"].value_counts().loc[lambda n: n == 1].index[0]
NEIGHBOUR = PEOPLE[PEOPLE["household"] != ALONE].reset_index(drop=True)
#: the public regions: the 8 counties and a county C0 (in a state C) without any household
GEOGRAPHY = pd.concat([PEOPLE[LEVELS].drop_duplicates(),
                       pd.DataFrame({"state": ["C"], "county": ["C0"]})], ignore_index=True)
#: the public groups file: every county's 200 households, 3 more declared in A0 (no records)
#: and 2 in the empty county C0
GROUPS = GEOGRAPHY.assign(groups=[HOUSEHOLDS_PER_COUNTY + 3] + [HOUSEHOLDS_PER_COUNTY] * 7
                          + [2])


def geography():
    return geography_from_table(GEOGRAPHY, LEVELS)


def data(people, *, declared: bool, min_size: int = 0, max_size: int = 5):
    geo = geography()
    counts = declared_groups_from_table(GROUPS, geo, LEVELS) if declared else None
    return group_size_data_from_people(people, LEVELS, "household", max_size=max_size,
                                       min_size=min_size, geography=geo, group_counts=counts)


def test_without_declared_counts_the_neighbours_differ_in_their_group_counts():
    d, d2 = data(PEOPLE, declared=False), data(NEIGHBOUR, declared=False)
    assert not d.groups_declared and not d2.groups_declared
    assert (d.total_groups, d2.total_groups) == (1600, 1599)
    assert int(np.count_nonzero(d.groups() != d2.groups())) == 3  # the root, a state, a county


def test_declared_counts_are_the_same_for_both_neighbours():
    d, d2 = data(PEOPLE, declared=True), data(NEIGHBOUR, declared=True)
    assert d.groups_declared and d2.groups_declared
    assert np.array_equal(d.groups(), d2.groups()) and d.total_groups == 1605
    assert d.groups()[-1] == 2  # C0: two declared groups without a member, at size 0
    assert d.node_counts()[-1].tolist() == [2, 0, 0, 0, 0, 0]
    # the one-person household of D is a group of size 0 in D': its size is protected
    assert (d2.node_counts()[0] - d.node_counts()[0]).tolist() == [1, -1, 0, 0, 0, 0]


#: (mechanism, parameters, what it keeps exactly: every G_v or the total G)
EXACT_GROUPS = [("gs-topdown", {}, "total"), ("gs-topdown", {"groups": "exact"}, "groups"),
                ("gs-mh-dp", {}, "total"), ("gs-mc-dp", {}, "groups"),
                ("gs-mc-chain", {}, "groups"), ("gs-kuo-hc", {}, "groups"),
                ("gs-kuo-hierarchical", {}, "groups")]


def seeded(name, d, params, seed=5):
    return get_mechanism(name).release(d, PrivacyBudget.pure(1.0), source=NoiseSource(seed=seed),
                                       **params)


@pytest.mark.parametrize(("name", "params", "kept"), EXACT_GROUPS)
def test_every_exact_value_is_identical_for_neighbours_with_declared_counts(name, params,
                                                                             kept):
    """The acceptance test: with the groups file, the released numbers of groups (the
    invariants) of D and D' are identical (seeded, the same seed); without it they are the
    data's and differ."""
    d, d2 = data(PEOPLE, declared=True), data(NEIGHBOUR, declared=True)
    a, b = seeded(name, d, params), seeded(name, d2, params)
    exact = (lambda r: r.values.sum(axis=1)) if kept == "groups" \
        else (lambda r: r.values[0].sum())
    assert np.array_equal(exact(a), exact(b))
    declared = d.groups() if kept == "groups" else d.total_groups
    assert np.array_equal(exact(a), declared)
    u, u2 = data(PEOPLE, declared=False), data(NEIGHBOUR, declared=False)
    assert not np.array_equal(exact(seeded(name, u, params)), exact(seeded(name, u2, params)))


@pytest.mark.parametrize(("name", "params"), [("gs-topdown", {"groups": "exact"}),
                                              ("gs-mc-dp", {}), ("gs-noisy", {})])
def test_with_min_size_1_the_neighbours_whole_releases_are_identical(name, params):
    """Bottom-coded at the declared minimum 1, the emptied household counts as size 1: the
    truth, hence every released value, is the same for D and D'; size 0 is not released."""
    d, d2 = (data(t, declared=True, min_size=1) for t in (PEOPLE, NEIGHBOUR))
    assert d.categories == tuple("12345") and np.array_equal(d.node_counts(),
                                                             d2.node_counts())
    a, b = seeded(name, d, params), seeded(name, d2, params)
    assert a.categories == tuple("12345") and np.array_equal(a.values, b.values)


def secure(name, d, **params):
    """A secure release marked as charged to the budget ledger (as `hierdp release` marks
    it): these tests are about the group counts, not the charge."""
    return charged_in_ledger(get_mechanism(name).release(
        d, PrivacyBudget.pure(1.0), source=NoiseSource(secure=True), **params))


@pytest.mark.parametrize(("name", "params"), [("gs-topdown", {}), ("gs-mc-dp", {}),
                                              ("gs-kuo-hc", {})])
def test_exact_group_counts_from_the_data_are_not_publishable(name, params):
    undeclared = secure(name, data(PEOPLE, declared=False), **params)
    assert undeclared.privacy["group_counts"] == "from-data" and undeclared.invariants
    result = release_verdict(undeclared, structure_declared=True)
    assert not result["publishable"]
    assert result["not_publishable_because"] == [GROUPS_FROM_DATA]
    assert GROUPS_FROM_DATA.startswith("group counts read from the confidential data, not "
                                       "declared")
    declared = secure(name, data(PEOPLE, declared=True), **params)
    assert declared.privacy["group_counts"] == "declared"
    assert release_verdict(declared, structure_declared=True)["publishable"]


@pytest.mark.parametrize(("name", "params"), [("gs-noisy", {}),
                                              ("gs-topdown", {"groups": "estimated"}),
                                              ("gs-mh-dp", {"groups": "estimated"})])
def test_without_declared_counts_estimated_group_counts_are_publishable(name, params):
    """gs-noisy keeps nothing exact; gs-topdown and gs-mh-dp with ``groups=estimated``
    estimate G from the root's noisy histogram: no exact group count, publishable."""
    release = secure(name, data(PEOPLE, declared=False), **params)
    assert release.invariants == () and release.privacy["invariants"] == []
    assert release_verdict(release, structure_declared=True)["publishable"]


def test_an_estimated_total_follows_the_noise_not_the_data():
    """With ``groups=estimated`` the released G is the rounded sum of the root's noisy
    histogram (so it differs from the data's G for most seeds), consistent at every level."""
    d = data(PEOPLE, declared=False)
    totals = []
    for seed in range(6):
        r = seeded("gs-topdown", d, {"groups": "estimated"}, seed=seed)
        assert r.values[0].sum() == max(0, int(np.rint(r.noisy[0].sum())))
        assert d.hierarchy.consistency_violations(r.values) == 0
        totals.append(int(r.values[0].sum()))
    assert any(t != d.total_groups for t in totals)


def test_cumulative_mechanisms_cannot_estimate_the_total():
    from hierdp_core.errors import MechanismError

    with pytest.raises(MechanismError, match="groups"):
        get_mechanism("gs-mc-dp").params(groups="estimated")


def test_blockwise_engine_takes_the_declared_counts():
    from hierdp_core.engine.blockwise_group_sizes import release_group_size_data

    budget, source = PrivacyBudget.pure(1.0), NoiseSource(seed=8)
    d, d2 = data(PEOPLE, declared=True), data(NEIGHBOUR, declared=True)
    a = release_group_size_data(get_mechanism("gs-topdown"), d, budget, source=source,
                                groups="exact")
    b = release_group_size_data(get_mechanism("gs-topdown"), d2, budget,
                                source=NoiseSource(seed=8), groups="exact")
    assert np.array_equal(a.values.sum(axis=1), b.values.sum(axis=1))
    assert np.array_equal(a.values.sum(axis=1), d.groups())
    assert a.privacy["group_counts"] == "declared"
    whole = seeded("gs-topdown", d, {"groups": "exact"}, seed=8)
    assert np.array_equal(a.values, whole.values)


# ---- the groups file ---------------------------------------------------------------------
def test_the_ids_form_counts_every_leafs_groups():
    ids = PEOPLE.drop_duplicates("household").rename(columns={"household": "group"})
    extra = pd.DataFrame({"state": ["C", "C"], "county": ["C0", "C0"], "group": ["x", "y"]})
    declared = declared_groups_from_table(pd.concat([ids, extra]), geography(), LEVELS)
    assert declared.form == "ids"
    assert declared.leaf_counts.tolist() == [HOUSEHOLDS_PER_COUNTY] * 8 + [2]


def bad(**change):
    table = GROUPS.copy()
    for column, value in change.items():
        table[column] = table[column].astype(object)
        table.loc[0, column] = value
    return table


@pytest.mark.parametrize(("table", "message"), [
    (bad(county="Z9"), r"outside the declared geography.*Z9"),
    (GROUPS.iloc[1:], r"1 region\(s\) missing.*A/A0"),
    (pd.concat([GROUPS, GROUPS.iloc[:1]]), r"listed more than once.*A/A0"),
    (bad(groups=-1), "negative"),
    (bad(groups=2.5), "2.5"),
    (bad(groups=None), "missing"),
    (GROUPS.drop(columns="county"), r"missing level column\(s\) \['county'\]"),
    (GROUPS.drop(columns="groups"), "exactly one of the columns 'groups'.*or 'group'"),
    (GROUPS.assign(group="x"), "exactly one of the columns"),
    (GROUPS.assign(note="x"), r"unexpected column\(s\) \['note'\]"),
    (GROUPS.drop(columns="groups").assign(group="x"), r"group id\(s\) \['x'\] listed more"),
])
def test_a_malformed_groups_file_is_one_typed_error(table, message):
    with pytest.raises(StructureError, match=message) as error:
        declared_groups_from_table(table, geography(), LEVELS, source="g.csv")
    assert "\n" not in str(error.value) and str(error.value).startswith("groups file 'g.csv'")


def test_fewer_declared_groups_than_the_records_show_is_refused():
    fewer = GROUPS.assign(groups=GROUPS["groups"] - 1)
    geo = geography()
    with pytest.raises(StructureError, match="contradict the data") as error:
        group_size_data_from_people(PEOPLE, LEVELS, "household", max_size=5, geography=geo,
                                    group_counts=declared_groups_from_table(fewer, geo, LEVELS))
    assert "7 leaf region(s)" in str(error.value)  # A0 declares 3 more: 202 is enough there


CODES = st.sampled_from(["A", "B", "C", "Z", "", "A0", "B3", "C0", "x"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(CODES, CODES, st.one_of(st.integers(-3, 300), st.floats(),
                                                  st.text(max_size=3), st.none())),
                max_size=12),
       st.sampled_from(["groups", "group"]))
def test_any_groups_table_is_read_or_refused_with_a_structure_error(rows, column):
    table = pd.DataFrame(rows, columns=[*LEVELS, column])
    geo = geography()
    try:
        declared = declared_groups_from_table(table, geo, LEVELS)
    except StructureError as error:
        assert "\n" not in str(error)
        return
    assert declared.leaf_counts.shape == (geo.n_leaves,) and (declared.leaf_counts >= 0).all()
    if column == "groups":
        assert len(table) == geo.n_leaves


# ---- the minimum size --------------------------------------------------------------------
def test_min_size_bottom_codes_and_is_checked():
    d = group_size_data_from_people(PEOPLE, LEVELS, "household", max_size=5, min_size=2,
                                    geography=geography())
    full = group_size_data_from_people(PEOPLE, LEVELS, "household", max_size=5,
                                       geography=geography())
    assert d.categories == tuple("2345") and d.min_size == 2
    assert d.node_counts()[0, 0] == full.node_counts()[0, :3].sum()  # sizes 0..2 at 2
    assert np.array_equal(d.node_counts()[:, 1:], full.node_counts()[:, 3:])
    for min_size in (-1, 5, 1.5, True):
        with pytest.raises(InputError, match="min_size"):
            group_size_data_from_people(PEOPLE, LEVELS, "household", max_size=5,
                                        min_size=min_size)
