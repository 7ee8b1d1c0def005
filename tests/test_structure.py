"""The declared public structure (`hierdp_core.structure`): geographies, the mapping of data
rows to their leaves, declared category values and domains, the data builders over them, and
every mechanism on declared units that have no records."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.categories import category_index
from hierdp_core.errors import InputError, StructureError
from hierdp_core.flows.data import flow_data_from_table, read_flow_geography
from hierdp_core.groupsizes.data import (
    group_size_data_from_histograms,
    group_size_data_from_people,
)
from hierdp_core.mechanisms.base import get_mechanism, list_mechanisms
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.queries.ranges import range_data_from_table
from hierdp_core.structure import (
    geography_from_table,
    parse_category_values,
    parse_domain,
    read_geography,
)

GEO = pd.DataFrame({"state": ["A", "A", "B", "C"], "county": ["a1", "a2", "b1", "c1"],
                    "county_name": ["Ay", "Bee", "Sea", "Dee"]})
DATA = pd.DataFrame({"state": ["A", "A", "B", "A"], "county": ["a1", "a2", "b1", "a1"],
                     "sex": ["F", "M", "F", "F"], "n": [3, 4, 5, 1]})


def geo(**kwargs):
    return geography_from_table(GEO, ["state", "county"], **kwargs)


# ---- geography --------------------------------------------------------------------------
def test_geography_builds_the_hierarchy_from_the_declaration_alone():
    g = geo(name_columns={"county": "county_name"})
    h = g.hierarchy
    assert h.node_ids().tolist() == ["root", "A", "B", "C", "A/a1", "A/a2", "B/b1", "C/c1"]
    assert h.labels().tolist()[-4:] == ["Ay", "Bee", "Sea", "Dee"]
    assert g.leaf_of_rows(DATA).tolist() == [0, 1, 2, 0]


@pytest.mark.parametrize("table, needle", [
    (pd.DataFrame({"state": ["A", "A"], "county": ["a1", "a1"]}),
     "1 unit(s) are listed more than once (one row per leaf unit): ('A', 'a1') (rows [1, 2])"),
    (pd.DataFrame({"state": ["A", "B"], "county": ["x", "x"]}), "do not nest"),
    (pd.DataFrame({"state": ["A", None], "county": ["x", "y"]}),
     "level column 'state' has 1 missing code(s), e.g. in rows [2]"),
    (pd.DataFrame({"state": ["A", "B"], "county": ["x", " "]}), "missing code(s)"),
    (pd.DataFrame({"state": ["A"], "cnty": ["x"]}), "'county' not found"),
    (pd.DataFrame({"state": [], "county": []}), "lists no units"),
])
def test_bad_geographies_are_clear_errors(table, needle):
    with pytest.raises(StructureError, match="geography") as info:
        geography_from_table(table, ["state", "county"], source="geo.csv")
    assert needle in str(info.value) and "geo.csv" in str(info.value)


def test_local_codes_and_codes_that_a_joined_string_would_confuse():
    # joined with '/', both leaves are 'a/b/c': matched as tuples they stay two units
    table = pd.DataFrame({"l1": ["a/b", "a"], "l2": ["c", "b/c"]})
    g = geography_from_table(table, ["l1", "l2"])
    rows = pd.DataFrame({"l1": ["a", "a/b", "a"], "l2": ["b/c", "c", "b/c"]})
    leaf = g.leaf_of_rows(rows)
    assert leaf[0] == leaf[2] != leaf[1]
    with pytest.raises(StructureError, match="1 data row"):
        g.leaf_of_rows(pd.DataFrame({"l1": ["a/b"], "l2": ["b/c"]}))
    # the same county code under two states: one geography with local codes
    local = pd.DataFrame({"state": ["01", "02"], "county": ["001", "001"]})
    g = geography_from_table(local, ["state", "county"], local_codes=True)
    assert g.leaf_of_rows(pd.DataFrame({"state": ["02", "01"], "county": ["001", "001"]})
                          ).tolist() == [1, 0]


def test_rows_outside_the_geography_name_values_levels_and_rows():
    g = geo()
    rows = pd.DataFrame({"state": ["A", "Z", "A", "B", "Z", "A", "A", "A", "A"],
                         "county": ["a1", "z1", "b1", "b9", "z1", "x1", "x2", "x3", "x4"]})
    with pytest.raises(StructureError) as info:
        g.leaf_of_rows(rows)
    text = str(info.value)
    assert text.startswith("8 data row(s) lie outside the declared geography: ")
    assert "state 'Z' (not in the geography)" in text
    assert "county 'b1' under state 'A' (the geography has no such county there)" in text
    assert "county 'b9' (not in the geography)" in text and "'x2'" in text
    assert "'x3'" not in text and text.endswith("; ...")  # five values at most
    with pytest.raises(StructureError, match="missing value"):
        g.leaf_of_rows(pd.DataFrame({"state": ["A", None], "county": ["a1", "a2"]}))


def test_codes_that_lost_their_leading_zeros_are_said_so():
    """A table saved through Excel: '01001' became 1001 (the geography keeps it as text)."""
    g = geography_from_table(pd.DataFrame({"state": ["01", "01", "10"],
                                           "county": ["01001", "01003", "10001"]}),
                             ["state", "county"])
    with pytest.raises(StructureError) as info:
        g.leaf_of_rows(pd.DataFrame({"state": [1, 10], "county": [1001, 10001]}))
    text = str(info.value)
    assert "state '1' (not in the geography; it has '01': the leading zeros lost" in text
    assert "'10'" not in text  # a code that kept its digits is no suspect
    with pytest.raises(StructureError) as info:  # the geography file lost them
        geography_from_table(pd.DataFrame({"state": [1, 10], "county": [1001, 10001]}),
                             ["state", "county"]).leaf_of_rows(
            pd.DataFrame({"state": ["01"], "county": ["01001"]}))
    assert "state '01' (not in the geography; it has '1': the geography file lost" in str(
        info.value)


def test_numeric_data_codes_match_string_geography_codes():
    g = geography_from_table(pd.DataFrame({"state": ["1", "2"], "county": ["10", "20"]}),
                             ["state", "county"])
    rows = pd.DataFrame({"state": [2.0, 1.0], "county": [20, 10]})
    assert g.leaf_of_rows(rows).tolist() == [1, 0]
    # a leading zero is part of a code
    with pytest.raises(StructureError, match="state '01'"):
        g.leaf_of_rows(pd.DataFrame({"state": ["01"], "county": ["10"]}))


def test_read_geography_records_the_file_and_its_alternative_columns(tmp_path):
    path = tmp_path / "units.csv"
    GEO.rename(columns={"state": "o_state", "county": "o_county"}).to_csv(path, index=False)
    g = read_flow_geography(path, ["o_state", "o_county"], ["d_state", "d_county"])
    assert g.source == "units.csv" and len(g.sha256) == 64
    assert g.hierarchy.level_names == ("total", "state", "county")
    with pytest.raises(StructureError, match="needs the level columns state,county; it has"):
        read_geography(path, ["state", "county"])


def test_a_file_of_finer_units_is_read_at_the_chosen_levels(tmp_path):
    """Municipalities read at region and province (a dashboard configuration of the Italian
    sample's two upper levels); a row repeated whole is still an error."""
    finer = pd.DataFrame({"region": ["R", "R", "R", "S"], "province": ["p1", "p1", "p2", "s1"],
                          "province_name": ["P1", "P1", "P2", "S1"],
                          "town": ["t1", "t2", "t3", "t4"]})
    finer.to_csv(tmp_path / "towns.csv", index=False)
    g = read_geography(tmp_path / "towns.csv", ["region", "province"],
                       name_columns={"province": "province_name"})
    assert g.hierarchy.level_size(2) == 3 and g.hierarchy.labels().tolist()[-1] == "S1"
    pd.concat([finer, finer.head(1)]).to_csv(tmp_path / "twice.csv", index=False)
    with pytest.raises(StructureError, match="listed more than once"):
        read_geography(tmp_path / "twice.csv", ["region", "province"])
    # a file of the level columns alone (not searched for finer units): still refused
    only = finer[["region", "province"]]
    pd.concat([only, only.head(1)]).to_parquet(tmp_path / "levels.parquet")
    with pytest.raises(StructureError, match=r"listed more than once.*rows \[1, 2, 5\]"):
        read_geography(tmp_path / "levels.parquet", ["region", "province"])


@st.composite
def geography_and_rows(draw):
    """A random geography (codes with '/', leading zeros, spaces; local or global codes)
    and data rows, most inside it and some outside."""
    local = draw(st.booleans())
    depth = draw(st.integers(1, 3))
    code = st.text("01/a", min_size=1, max_size=3)
    paths = [()]
    for _ in range(depth):
        grown = []
        for path in paths:
            for c in draw(st.lists(code, min_size=1, max_size=3, unique=True)):
                grown.append(path + ((c if local else "|".join(path + (c,))),))
        paths = grown
    levels = [f"l{i}" for i in range(depth)]
    geography = pd.DataFrame(paths, columns=levels)
    picks = draw(st.lists(st.integers(0, len(paths) - 1), min_size=1, max_size=30))
    rows = [paths[i] for i in picks]
    for _ in range(draw(st.integers(0, 3))):  # rows outside: a new code, or another path
        row = list(draw(st.sampled_from(paths)))
        level = draw(st.integers(0, depth - 1))
        row[level] = draw(st.sampled_from([draw(code), *[p[level] for p in paths]]))
        rows.insert(draw(st.integers(0, len(rows))), tuple(row))
    spaced = [tuple(f" {c}" if i == 0 else c for i, c in enumerate(r)) for r in rows]
    return geography, pd.DataFrame(spaced, columns=levels, dtype=object), levels, local


@settings(max_examples=150, deadline=None)
@given(geography_and_rows())
def test_mapping_equals_a_naive_per_row_mapping(case):
    geography, rows, levels, local = case
    g = geography_from_table(geography, levels, local_codes=local)
    h = g.hierarchy
    leaf_path = {}
    for leaf in range(h.n_leaves):
        node, path = leaf + int(h.level_offsets[h.depth]), []
        for level in range(h.depth, 0, -1):
            path.append(str(h.codes[level][node - h.level_offsets[level]]))
            node = h.parent[node]
        leaf_path[tuple(reversed(path))] = leaf
    naive = [leaf_path.get(tuple(str(c).strip() for c in row)) for row in rows.itertuples(
        index=False)]
    outside = sum(x is None for x in naive)
    # as read from a file by pyarrow (Categoricals: matched on one row per finest code)
    # and as plain strings (every row level by level): the same leaves, the same error
    outcomes = []
    for table in (rows, rows.astype("category")):
        try:
            outcomes.append(g.leaf_of_rows(table).tolist())
        except StructureError as exc:
            outcomes.append(str(exc))
    if outside:
        assert str(outcomes[0]).startswith(f"{outside} data row")
    else:
        assert outcomes[0] == naive
    assert outcomes[1] == outcomes[0]


def test_categorical_rows_whose_finest_code_has_two_parents_are_matched_level_by_level():
    """Codes local to their parent: a finest code under two parents cannot fix the codes
    above it, so every row is matched level by level (and lands in its own parent)."""
    g = geography_from_table(pd.DataFrame({"s": ["A", "B"], "c": ["x", "x"]}), ["s", "c"],
                             local_codes=True)
    rows = pd.DataFrame({"s": ["B", "A", "B"], "c": ["x", "x", "x"]}, dtype="category")
    assert g.leaf_of_rows(rows).tolist() == [1, 0, 1]
    missing = pd.DataFrame({"s": pd.Categorical(["A", None]), "c": pd.Categorical(["x", "x"])})
    with pytest.raises(StructureError, match="missing value"):
        g.leaf_of_rows(missing)


# ---- categories and domains -------------------------------------------------------------
def test_category_values_are_parsed_and_checked():
    assert parse_category_values(["sex=F|M", " age = 0-17 | 18+ "]) == {
        "sex": ("F", "M"), "age": ("0-17", "18+")}
    for bad, needle in [("sex", "COLUMN=V1"), ("sex=", "COLUMN=V1"), ("sex=F||M", "COLUMN=V1"),
                        ("sex=F|F", "repeat")]:
        with pytest.raises(StructureError, match=needle):
            parse_category_values([bad])
    with pytest.raises(StructureError, match="declared twice"):
        parse_category_values(["sex=F", "sex=M"])
    index, labels = category_index(DATA, ["sex"], {"sex": ("M", "F", "X")})
    assert labels == ("M", "F", "X") and index.tolist() == [1, 0, 1, 1]
    table = pd.DataFrame({"sex": ["F", "u", "v", "u", "w", "x", "y", "z"]})
    with pytest.raises(StructureError) as info:
        category_index(table, ["sex"], {"sex": ("F", "M")})
    assert str(info.value) == ("7 row(s) have 'sex' value(s) outside the declared values "
                               "(F|M): 'u', 'v', 'w', 'x', 'y'")


def test_domains():
    assert parse_domain("0-100") == (0, 100) and parse_domain(" -5 - 5 ") == (-5, 5)
    for bad in ("0..100", "a-b", "10-1", "5"):
        with pytest.raises(StructureError):
            parse_domain(bad)


# ---- data builders over a declared structure --------------------------------------------
def test_counts_over_a_declared_structure():
    d = count_data_from_table(DATA, ["state", "county"], count_column="n",
                              category_columns=["sex"], geography=geo(),
                              category_values={"sex": ("F", "M", "X")})
    assert d.declared_structure and d.categories == ("F", "M", "X")
    assert d.node_counts().tolist() == [[9, 4, 0], [4, 4, 0], [5, 0, 0], [0, 0, 0],
                                        [4, 0, 0], [0, 4, 0], [5, 0, 0], [0, 0, 0]]
    half = count_data_from_table(DATA, ["state", "county"], count_column="n",
                                 category_columns=["sex"], geography=geo())
    assert not half.declared_structure and half.categories == ("F", "M")
    explore = count_data_from_table(DATA, ["state", "county"], count_column="n")
    assert not explore.declared_structure and explore.hierarchy.n_leaves == 3
    with pytest.raises(InputError, match="not category columns"):
        count_data_from_table(DATA, ["state", "county"], category_values={"sex": ("F",)})


def test_group_sizes_flows_and_ranges_over_a_declared_structure():
    people = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a1", "b1"],
                           "household": ["h1", "h1", "h2"]})
    d = group_size_data_from_people(people, ["state", "county"], "household", max_size=3,
                                    geography=geo())
    assert d.declared_structure and d.hierarchy.n_leaves == 4
    assert d.leaf_counts.tolist() == [[0, 0, 1, 0], [0] * 4, [0, 1, 0, 0], [0] * 4]
    hist = pd.DataFrame({"state": ["C"], "county": ["c1"], "size": [2], "groups": [5]})
    d = group_size_data_from_histograms(hist, ["state", "county"], "size", "groups",
                                        max_size=3, geography=geo())
    assert d.declared_structure and d.groups().tolist() == [5, 0, 0, 5, 0, 0, 0, 5]

    trips = pd.DataFrame({"o_state": ["A", "B"], "o_county": ["a1", "b1"],
                          "d_state": ["B", "B"], "d_county": ["b1", "b1"]})
    f = flow_data_from_table(trips, ["o_state", "o_county"], ["d_state", "d_county"],
                             geography=geo())
    assert f.declared_structure and f.level_width(2) == 4 and f.n == 2
    children = f.children(1, np.array([0]), np.array([0]))  # total>total: every state
    assert children[2].tolist() == [3]
    with pytest.raises(StructureError, match="d_county 'zz'"):
        flow_data_from_table(trips.assign(d_county=["b1", "zz"]), ["o_state", "o_county"],
                             ["d_state", "d_county"], geography=geo())

    ages = pd.DataFrame({"state": ["A", "B"], "county": ["a2", "b1"], "age": [3, 0]})
    r = range_data_from_table(ages, ["state", "county"], "age", domain=(0, 5), geography=geo())
    assert r.declared_structure and r.values == ("0", "1", "2", "3", "4", "5")
    assert r.leaf_counts.sum(axis=1).tolist() == [0, 1, 1, 0]
    assert r.with_workload(r.workload).declared_structure
    with pytest.raises(InputError, match="need the public domain"):
        range_data_from_table(ages, ["state", "county"], "age", geography=geo())


# ---- every mechanism copes with declared units that have no records ---------------------
def _declared_data(query: str):
    g = geo()
    if query == "counts":
        return count_data_from_table(DATA, ["state", "county"], count_column="n",
                                     category_columns=["sex"], geography=g,
                                     category_values={"sex": ("F", "M")})
    if query == "group-sizes":
        people = pd.DataFrame({"state": ["A"] * 5 + ["B"] * 2, "county": ["a1"] * 5 + ["b1"] * 2,
                               "household": list("xxyzz") + ["w", "v"]})
        return group_size_data_from_people(people, ["state", "county"], "household",
                                           max_size=4, geography=g)
    if query == "flows":
        trips = pd.DataFrame({"o_state": ["A", "A", "B"] * 20, "o_county": ["a1", "a2", "b1"] * 20,
                              "d_state": ["B", "A", "A"] * 20, "d_county": ["b1", "a1", "a1"] * 20})
        return flow_data_from_table(trips, ["o_state", "o_county"], ["d_state", "d_county"],
                                    geography=g)
    ages = pd.DataFrame({"state": ["A", "A", "B"], "county": ["a1", "a2", "b1"],
                         "age": [1, 7, 3], "n": [4, 9, 2]})
    return range_data_from_table(ages, ["state", "county"], "age", count_column="n",
                                 domain=(0, 7), geography=g)


@pytest.mark.parametrize("name", [i.name for i in list_mechanisms()])
def test_every_mechanism_releases_declared_empty_units(name):
    mechanism = get_mechanism(name)
    query = mechanism.info.queries[0]
    data = _declared_data(query)
    budget = {"zcdp": PrivacyBudget.zcdp(0.5, 1e-8), "approx-dp": PrivacyBudget.approx(1.0, 1e-8),
              }.get(mechanism.info.privacy, PrivacyBudget.pure(1.0))
    release = mechanism.release(data, budget, source=NoiseSource(seed=3))
    h = data.geography if query == "flows" else data.hierarchy
    assert h.n_leaves == 4  # C/c1 (and A/a2 for group sizes) have no record
    if query != "flows":
        values = np.asarray(release.values)
        assert values.shape[0] == h.n_nodes and np.isfinite(values).all()


def test_threads_sharing_a_fresh_geography_all_match_their_rows():
    """The per-level lookup a geography builds on first use is published whole: threads
    sharing one geography (Dask workers in one process) never see it half built."""
    states = np.repeat(np.arange(40), 2_500).astype(str)
    counties = np.char.add(states, np.char.add("-", (np.arange(100_000) % 50).astype(str)))
    tracts = np.arange(100_000).astype(str)
    table = pd.DataFrame({"state": states, "county": counties, "tract": tracts})
    rows = table.iloc[::997]
    for _ in range(6):
        g = geography_from_table(table, ["state", "county", "tract"])
        with ThreadPoolExecutor(4) as pool:
            found = list(pool.map(lambda g: g.leaf_of_rows(rows), [g] * 8))
        assert all(np.array_equal(f, found[0]) for f in found)
