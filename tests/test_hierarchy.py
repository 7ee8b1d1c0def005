"""Tests for hierdp_core.hierarchy: construction, ids, aggregation, errors, summary."""

from __future__ import annotations

import doctest

import numpy as np
import pandas as pd
import pytest
from conftest import path_ids, tree_tables
from hypothesis import given, settings
from hypothesis import strategies as st

import hierdp_core.hierarchy as hierarchy_module
from hierdp_core.errors import HierarchyError, InputError, LevelOrderError
from hierdp_core.hierarchy import build_from_codes, build_hierarchy
from hierdp_core.ids import escape_codes, split_node_id, unescape_code

SMALL = pd.DataFrame({
    "state": ["B", "A", "A", "B", "A"],
    "county": ["b1", "a2", "a1", "b1", "a3"],
    "n": [5, 4, 3, 1, 0],
})


def test_module_doctest_passes():
    result = doctest.testmod(hierarchy_module)
    assert result.attempted >= 2 and result.failed == 0


# ---- construction ----------------------------------------------------------------------
def test_build_small_table_arrays():
    h, leaf = build_hierarchy(SMALL, ["state", "county"], root_name="usa")
    # root, A, B, A/a1, A/a2, A/a3, B/b1
    assert h.level_names == ("usa", "state", "county")
    assert h.n_levels == 3 and h.depth == 2 and h.n_nodes == 7 and h.n_leaves == 4
    assert h.level_offsets.tolist() == [0, 1, 3, 7]
    assert h.parent.tolist() == [-1, 0, 0, 1, 1, 1, 2]
    assert h.child_ptr.tolist() == [1, 3, 6, 7, 7, 7, 7, 7]
    assert [h.children(v).tolist() for v in range(3)] == [[1, 2], [3, 4, 5], [6]]
    assert h.node_ids().tolist() == ["root", "A", "B", "A/a1", "A/a2", "A/a3", "B/b1"]
    assert h.labels().tolist() == ["usa", "A", "B", "a1", "a2", "a3", "b1"]
    assert h.parent_ids().tolist() == ["", "root", "root", "A", "A", "A", "B"]
    assert h.level_of_nodes().tolist() == [0, 1, 1, 2, 2, 2, 2]
    # rows -> leaf index within the leaf level
    assert leaf.tolist() == [3, 1, 0, 3, 2]
    assert h.child_starts(2).tolist() == [0, 3]
    assert h.segment_of_level(2).tolist() == [0, 0, 0, 1]
    assert h.level_slice(1) == slice(1, 3)
    assert [h.level_size(lv) for lv in range(3)] == [1, 2, 4]


def test_single_level_tree():
    h, leaf = build_hierarchy(pd.DataFrame({"g": ["c", "a", "b", "a"]}), ["g"])
    assert h.node_ids().tolist() == ["root", "a", "b", "c"]
    assert h.parent.tolist() == [-1, 0, 0, 0]
    assert leaf.tolist() == [2, 0, 1, 0]
    assert h.aggregate(np.array([1, 2, 3])).tolist() == [6, 1, 2, 3]


def _check_structure(h, table, levels):
    """Invariants of the flat arrays, checked against the table itself."""
    ids = h.node_ids()
    assert len(ids) == h.n_nodes == len(set(ids))
    assert h.parent[0] == -1 and h.child_ptr[0] == 1 and h.child_ptr[-1] == h.n_nodes
    for level in range(1, h.n_levels):
        sl = h.level_slice(level)
        nodes = np.arange(sl.start, sl.stop)
        parents = h.parent[sl]
        assert np.all(h.level_of_nodes()[parents] == level - 1)
        # children of every node are a contiguous run, ordered by (parent, code)
        keys = list(zip(parents.tolist(), h.codes[level].astype(str).tolist(), strict=True))
        assert keys == sorted(keys) and len(set(keys)) == len(keys)
        for v in np.unique(parents):
            assert h.children(v).tolist() == nodes[parents == v].tolist()
        # ids are the parent's id + '/' + the code (the parent of level 1 is the root)
        expected = set(path_ids(table, levels, level))
        assert set(ids[sl]) == expected
        codes = h.codes[level].astype(str)
        for v in nodes:
            code = codes[v - sl.start]
            assert ids[v] == (code if level == 1 else f"{ids[h.parent[v]]}/{code}")
            assert h.parent_ids()[v] == ids[h.parent[v]]


@settings(max_examples=100, deadline=None)
@given(tree_tables(max_depth=3, max_children=4))
def test_structure_random_trees(tt):
    h, leaf = build_hierarchy(tt.table, tt.levels)
    _check_structure(h, tt.table, tt.levels)
    # every row's leaf has that row's full path as id
    assert h.node_ids()[h.level_offsets[-2] + leaf].tolist() == \
        path_ids(tt.table, tt.levels, len(tt.levels)).tolist()


@settings(max_examples=100, deadline=None)
@given(tree_tables(max_depth=3, max_children=4), st.booleans())
def test_aggregate_equals_groupby(tt, two_d):
    table, levels = tt.table, tt.levels
    if two_d:
        table = table.assign(m=np.arange(len(table)) * 7 % 11 - 3.5)
    value_cols = ["n", "m"] if two_d else ["n"]
    h, leaf = build_hierarchy(table, levels)
    leaf_values = np.zeros((h.n_leaves, len(value_cols)))
    np.add.at(leaf_values, leaf, table[value_cols].to_numpy(dtype=float))
    if not two_d:
        leaf_values = leaf_values[:, 0]
    agg = h.aggregate(leaf_values)
    assert agg.shape == (h.n_nodes,) + leaf_values.shape[1:]
    ids = h.node_ids()
    for level in range(h.n_levels):
        ref = table.groupby(path_ids(table, levels, level))[value_cols].sum()
        sl = h.level_slice(level)
        got = agg[sl].reshape(h.level_size(level), -1)
        want = ref.loc[ids[sl]].to_numpy(dtype=float)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert h.consistency_violations(agg, tol=1e-9) == 0


def test_aggregate_keeps_integer_dtype_and_checks_length():
    h, _ = build_hierarchy(SMALL, ["state", "county"])
    out = h.aggregate(np.array([[1, 0], [2, 1], [3, 0], [4, 2]], dtype=np.int64))
    assert out.dtype == np.int64
    assert out.tolist() == [[10, 3], [6, 1], [4, 2], [1, 0], [2, 1], [3, 0], [4, 2]]
    with pytest.raises(InputError, match="expected 4 leaf values, got 3"):
        h.aggregate(np.ones(3))


# ---- local codes -----------------------------------------------------------------------
def test_local_codes_vs_global_codes():
    t = pd.DataFrame({"state": ["06", "06", "36"], "county": ["001", "003", "001"]})
    with pytest.raises(HierarchyError, match="county '001'"):
        build_hierarchy(t, ["state", "county"])
    h, leaf = build_hierarchy(t, ["state", "county"], local_codes=True)
    assert h.node_ids().tolist() == ["root", "06", "36", "06/001", "06/003", "36/001"]
    assert leaf.tolist() == [0, 1, 2]
    assert h.parent.tolist() == [-1, 0, 0, 1, 1, 2]


@settings(max_examples=40, deadline=None)
@given(tree_tables(max_depth=3, max_children=3, local=True))
def test_local_codes_random_trees(tt):
    h, leaf = build_hierarchy(tt.table, tt.levels, local_codes=True)
    _check_structure(h, tt.table, tt.levels)
    counts = h.aggregate(np.bincount(leaf, weights=tt.table["n"], minlength=h.n_leaves))
    assert counts[0] == tt.table["n"].sum()
    # global codes: an error exactly when some code lies under two different parents; said
    # to be the levels' order when they nest ordered by their numbers of codes, fewest first
    t, lv = tt.table, tt.levels

    def nests(levels):
        return all(t.groupby(levels[i])[levels[i - 1]].nunique().max() <= 1
                   for i in range(1, len(levels)))

    by_size = sorted(lv, key=lambda c: t[c].nunique())
    if nests(lv):
        build_hierarchy(tt.table, tt.levels)
    elif by_size != lv and t[by_size[0]].nunique() > 1 and nests(by_size):
        with pytest.raises(LevelOrderError, match="coarsest to the finest"):
            build_hierarchy(tt.table, tt.levels)
    else:
        with pytest.raises(HierarchyError, match="do not nest"):
            build_hierarchy(tt.table, tt.levels)


# ---- errors ----------------------------------------------------------------------------
def test_missing_column_names_it():
    with pytest.raises(InputError, match="tract") as info:
        build_hierarchy(SMALL, ["state", "tract"])
    assert "'county'" in str(info.value)  # lists the columns the table has


def test_missing_level_values_name_rows():
    t = pd.DataFrame({"state": ["A", None, "B", " ", "B"], "county": ["1", "2", "3", "4", "5"]})
    with pytest.raises(HierarchyError) as info:
        build_hierarchy(t, ["state", "county"])
    message = str(info.value)
    assert "'state'" in message and "2 missing" in message and "[2, 4]" in message
    t = pd.DataFrame({"state": [6.0, 6.0, np.nan], "county": [1, 2, 3]})
    with pytest.raises(HierarchyError, match=r"'state' has 1 missing value\(s\), e.g. in rows \[3\]"):
        build_hierarchy(t, ["state", "county"])


def test_child_with_two_parents_names_value_parents_and_rows():
    t = pd.DataFrame({"state": ["A", "A", "B", "B"], "county": ["x", "y", "z", "x"]})
    with pytest.raises(HierarchyError) as info:
        build_hierarchy(t, ["state", "county"])
    message = str(info.value)
    assert "county 'x'" in message
    assert "state 'A', 'B'" in message
    assert "(rows 1, 4)" in message
    assert "1 county value(s)" in message and "local codes" in message


def test_two_parents_at_a_deeper_level():
    t = pd.DataFrame({"s": ["A", "A", "A"], "c": ["c1", "c2", "c2"], "t": ["t1", "t2", "t1"]})
    with pytest.raises(HierarchyError) as info:
        build_hierarchy(t, ["s", "c", "t"])
    message = str(info.value)
    assert "t 't1' lies in c 'c1', 'c2' (rows 1, 3)" in message


def test_duplicate_level_empty_levels_empty_table():
    with pytest.raises(HierarchyError, match="listed twice"):
        build_hierarchy(SMALL, ["state", "state"])
    with pytest.raises(HierarchyError, match="at least one"):
        build_hierarchy(SMALL, [])
    with pytest.raises(InputError, match="no rows"):
        build_hierarchy(SMALL.iloc[:0], ["state", "county"])
    with pytest.raises(InputError, match="no rows"):
        build_from_codes([np.array([])], ["g"])
    with pytest.raises(HierarchyError, match="one name per level"):
        build_from_codes([np.array([1])], ["a", "b"])


def test_float_codes_shown_as_integers():
    t = pd.DataFrame({"state": [6.0, 6.0, 36.0], "county": [6037.0, 6059.0, 36061.0]})
    h, _ = build_hierarchy(t, ["state", "county"])
    assert h.node_ids().tolist() == ["root", "36", "6", "36/36061", "6/6037", "6/6059"]
    assert h.labels().tolist()[1:3] == ["36", "6"]
    # non-integral floats stay as they are
    h2, _ = build_hierarchy(pd.DataFrame({"g": [1.5, 2.0]}), ["g"])
    assert h2.labels().tolist()[1:] == ["1.5", "2.0"]


def test_codes_are_stripped():
    t = pd.DataFrame({"state": ["A ", " A"], "county": ["a1", "a2"]})
    h, _ = build_hierarchy(t, ["state", "county"])
    assert h.node_ids().tolist() == ["root", "A", "A/a1", "A/a2"]


# ---- checks and summary ----------------------------------------------------------------
def test_consistency_violations_counts_cells():
    h, _ = build_hierarchy(SMALL, ["state", "county"])
    leaf = np.array([[3, 1], [4, 0], [0, 2], [6, 0]])
    good = h.aggregate(leaf)
    assert h.consistency_violations(good) == 0
    assert h.consistency_violations(good[:, 0]) == 0
    bad = good.astype(float).copy()
    bad[0, 1] += 1  # root, column 1
    bad[1, 0] += 0.5  # A column 0: violates A vs its children and root vs A + B
    assert h.consistency_violations(bad) == 3
    assert h.consistency_violations(bad, tol=0.6) == 1
    assert h.consistency_violations(bad, tol=1.0) == 0
    bad[6] += 1  # leaf B/b1 both columns: B (2 cells) now differs
    assert h.consistency_violations(bad) == 5


def test_summary():
    h, leaf = build_hierarchy(SMALL, ["state", "county"])
    s = h.summary()
    assert s.columns.tolist() == ["level", "level_name", "units"]
    assert s["units"].tolist() == [1, 2, 4] and s["level_name"].tolist() == [
        "total", "state", "county"]
    totals = np.bincount(leaf, weights=SMALL["n"], minlength=h.n_leaves)  # a1 3,a2 4,a3 0,b1 6
    s = h.summary(totals)
    assert s.columns.tolist() == ["level", "level_name", "units", "min", "median", "max",
                                  "empty_units"]
    assert s["min"].tolist() == [13, 6, 0]
    assert s["median"].tolist() == [13, 6.5, 3.5]
    assert s["max"].tolist() == [13, 7, 6]
    assert s["empty_units"].tolist() == [0, 0, 1]


def test_unit_names_label_nodes_and_conflicting_names_are_named():
    from hierdp_core.queries.counts import count_data_from_table

    t = pd.DataFrame({"s": ["B", "A", "A"], "c": ["b1", "a2", "a1"], "n": [1, 2, 3],
                      "s_name": ["Bee", "Ay", "Ay"], "c_name": ["b one", "a two", "a one"]})
    data = count_data_from_table(t, ["s", "c"], count_column="n",
                                 name_columns={"s": "s_name", "c": "c_name"})
    h = data.hierarchy
    assert h.labels().tolist() == ["total", "Ay", "Bee", "a one", "a two", "b one"]
    assert h.node_ids().tolist() == ["root", "A", "B", "A/a1", "A/a2", "B/b1"]  # ids keep codes
    partly = count_data_from_table(t, ["s", "c"], count_column="n", name_columns={"c": "c_name"})
    assert partly.hierarchy.labels().tolist() == ["total", "A", "B", "a one", "a two", "b one"]
    t.loc[2, "s_name"] = "Aye"
    with pytest.raises(InputError, match=r"\['A'\].*more than one name"):
        count_data_from_table(t, ["s", "c"], count_column="n", name_columns={"s": "s_name"})
    with pytest.raises(InputError, match="not levels"):
        count_data_from_table(t, ["s", "c"], count_column="n", name_columns={"x": "s_name"})
    with pytest.raises(InputError):
        h.with_names({1: np.array(["only one"])})


def test_a_unit_with_an_empty_name_is_labelled_by_its_code(tmp_path):
    """An empty (or blank) name cell labelled its unit 'nan' in the release; the label falls
    back to the code, at every level, from the data and from a geography file. A unit
    named in one row and empty in another keeps its name."""
    from hierdp_core.queries.counts import count_data_from_table
    from hierdp_core.structure import read_geography

    t = pd.DataFrame({"s": ["B", "A", "A", "C"], "c": ["b1", "a2", "a1", "c1"],
                      "n": [1, 2, 3, 4], "s_name": ["Bee", None, "Ay", " "],
                      "c_name": ["b one", "", None, "c one"]})
    names = {"s": "s_name", "c": "c_name"}
    data = count_data_from_table(t, ["s", "c"], count_column="n", name_columns=names)
    assert data.hierarchy.labels().tolist() == ["total", "Ay", "Bee", "C", "a1", "a2",
                                                "b one", "c one"]
    t.drop(columns="n").to_csv(tmp_path / "geo.csv", index=False)
    geography = read_geography(tmp_path / "geo.csv", ["s", "c"], name_columns=names)
    assert geography.hierarchy.labels().tolist() == data.hierarchy.labels().tolist()


# ---- ids of any code (issue 16) ----------------------------------------------------------
ODD_CHARS = "ab/%>é 0"


def test_codes_with_separators_give_distinct_ids():
    t = pd.DataFrame({"a": ["A/B", "A", "50%", "root", "x>y"],
                      "b": ["x", "B/x", "x", "r", "z"]})
    h, _ = build_hierarchy(t, ["a", "b"], local_codes=True)
    ids = h.node_ids().tolist()
    assert len(set(ids)) == h.n_nodes
    assert ids[:6] == ["root", "50%25", "A", "A%2FB", "%72oot", "x%3Ey"]
    assert set(ids[6:]) == {"50%25/x", "A/B%2Fx", "A%2FB/x", "%72oot/r", "x%3Ey/z"}
    assert h.labels().tolist()[1:6] == ["50%", "A", "A/B", "root", "x>y"]  # codes as they are


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(ODD_CHARS, min_size=1, max_size=4),
                          st.text(ODD_CHARS, min_size=1, max_size=4)), min_size=1, max_size=8))
def test_ids_are_unique_and_split_back_to_the_codes(rows):
    t = pd.DataFrame(rows, columns=["a", "b"])
    t = t[t["a"].str.strip().ne("") & t["b"].str.strip().ne("")]
    if t.empty:
        return
    h, _ = build_hierarchy(t, ["a", "b"], local_codes=True)
    ids = h.node_ids()
    assert len(set(ids.tolist())) == h.n_nodes
    for level in range(1, h.n_levels):  # the path of codes of every node comes back
        sl = h.level_slice(level)
        nodes = np.arange(sl.start, sl.stop)
        paths = [[] for _ in nodes]
        node = nodes
        for up in range(level, 0, -1):
            codes = h.codes[up].astype(str)[node - h.level_offsets[up]]
            paths = [[c, *p] for c, p in zip(codes, paths, strict=True)]
            node = h.parent[node]
        assert [split_node_id(i) for i in ids[sl]] == paths
    assert split_node_id("root") == []


def test_escape_codes_leaves_plain_codes_alone_and_unescape_inverts():
    codes = ["06", "06037", "a b", "é", "%", "/", ">", "%2F", "root", "roots"]
    escaped = escape_codes(codes).tolist()
    assert escaped[:4] == codes[:4] and escaped[-1] == "roots"
    assert escaped[4:9] == ["%25", "%2F", "%3E", "%252F", "%72oot"]
    assert [unescape_code(e) for e in escaped] == codes
    assert escape_codes(np.array([6, 36])).tolist() == ["6", "36"]


def test_flow_node_ids_escape_codes():
    from hierdp_core.flows.data import flow_data_from_trips
    from hierdp_core.flows.release import FlowRelease
    from hierdp_core.flows.tree import TreeLevel

    trips = pd.DataFrame({"o": ["a>b", "a"], "d": ["a", "a>b"]})
    data = flow_data_from_trips(trips, ["o"], ["d"])
    levels = []
    for level in range(data.depth + 1):
        keys, counts = data.level_table(level)
        width = data.level_width(data.pair_levels(level)[1])
        parent = np.zeros(keys.size, dtype=np.int64)
        levels.append(TreeLevel(keys // width, keys % width, counts, parent))
    frame = FlowRelease.of(data, levels, mechanism="", parameters={}, privacy={},
                           ledger=pd.DataFrame(), randomness={}).to_frame()
    leaf = frame[frame["level"] == 2]
    assert sorted(leaf["node_id"]) == ["a%3Eb>a", "a>a%3Eb"]
    assert sorted(leaf["origin_id"]) == ["a", "a>b"]  # the code columns stay as they are


# ---- pass-through units (ragged hierarchies) ------------------------------------------------
def test_pass_through_units_are_labelled_as_their_parent():
    t = pd.DataFrame({"region": ["Bamako", "Kayes", "Kayes", "06"],
                      "cercle": ["Bamako", "Kita", "Nioro", "06"],
                      "commune": ["Bamako", "K1", "N1", "06001"]})
    h, _ = build_hierarchy(t, ["region", "cercle", "commune"])
    through = h.pass_through()
    assert through.dtype == bool and through.shape == (h.n_nodes,)
    by_id = dict(zip(h.node_ids().tolist(), h.labels().tolist(), strict=True))
    flags = dict(zip(h.node_ids().tolist(), through.tolist(), strict=True))
    assert by_id["Bamako/Bamako"] == "Bamako (no cercle)"
    assert by_id["Bamako/Bamako/Bamako"] == "Bamako (no cercle) (no commune)"
    assert by_id["06/06"] == "06 (no cercle)" and by_id["06/06/06001"] == "06001"
    assert by_id["Kayes/Kita"] == "Kita" and by_id["Kayes"] == "Kayes"
    assert [i for i, f in flags.items() if f] == ["06/06", "Bamako/Bamako",
                                                   "Bamako/Bamako/Bamako"]


def test_pass_through_uses_the_parent_name():
    h, _ = build_hierarchy(pd.DataFrame({"state": ["06", "11"], "county": ["06037", "11"]}),
                           ["state", "county"])
    named = h.with_names({1: np.array(["California", "District of Columbia"], dtype=object),
                          2: np.array(["Los Angeles", "Washington"], dtype=object)})
    assert named.labels().tolist() == ["total", "California", "District of Columbia",
                                       "Los Angeles", "District of Columbia (no county)"]
    assert h.labels().tolist()[-1] == "11 (no county)"
    assert h.pass_through().tolist() == [False, False, False, False, True]
    one, _ = build_hierarchy(pd.DataFrame({"g": ["a", "a"]}), ["g"])
    assert one.pass_through().tolist() == [False, False]


# ---- deep trees --------------------------------------------------------------------------
def test_more_than_127_levels():
    depth = 200
    t = pd.DataFrame({f"l{i}": [f"a{i}", f"b{i}" if i > 150 else f"a{i}"] for i in range(depth)})
    h, leaf = build_hierarchy(t, list(t.columns))
    levels = h.level_of_nodes()
    assert h.n_levels == depth + 1 and levels.max() == depth and levels.min() == 0
    assert np.all(np.diff(levels) >= 0) and levels[-1] == depth
    totals = h.aggregate(np.array([3, 4]))
    assert totals[0] == 7 and totals[-2:].tolist() == [3, 4]


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16", "uint64", "Int64"])
def test_integer_level_codes_are_those_of_their_texts(dtype):
    """Integer codes take a path of their own (texts made and sorted by pyarrow): the same
    Categorical as the texts' sorted distinct values, '10' before '9', missing kept."""
    rng = np.random.default_rng(5)
    info = np.iinfo(dtype.lower())
    values = rng.integers(info.min, info.max, 5000, dtype=dtype.lower(), endpoint=True)
    ends = np.array([info.min, info.max, 0, 9, 10], dtype=dtype.lower())
    values = pd.Series(np.concatenate([values, ends]), dtype=dtype)
    if dtype == "Int64":
        values.iloc[3] = pd.NA
    got = hierarchy_module.level_codes(values)
    text = values.astype(str).where(values.notna())
    want = pd.Categorical(text, categories=sorted(set(text.dropna())))
    assert got.categories.tolist() == want.categories.tolist()
    assert got.codes.tolist() == want.codes.tolist()


def test_a_pickled_hierarchy_is_the_same_tree():
    """Text codes and names travel as pyarrow arrays (`Hierarchy.__reduce__`) and come
    back as the same object arrays; other arrays as they were."""
    import pickle

    codes = [np.array(["A", "A", "B"], dtype=object), np.array(["a1", "a/2", "b1"], dtype=object)]
    h, _ = build_from_codes(codes, ["state", "county"])
    h = h.with_names({1: np.array(["Ay", None], dtype=object), 2: np.array([1, 2, 3])})
    back = pickle.loads(pickle.dumps(h))
    for was, now in [*zip(h.codes, back.codes, strict=True),
                     *((h.names[lv], back.names[lv]) for lv in (1, 2))]:
        assert now.dtype == was.dtype and now.tolist() == was.tolist()
        assert [type(v) for v in now] == [type(v) for v in was]
    assert back.node_ids().tolist() == h.node_ids().tolist()
    assert back.labels().tolist() == h.labels().tolist()
    assert np.array_equal(back.parent, h.parent) and back.level_names == h.level_names
