"""Release tables list their units in reading order (`hierdp_core.reading_order`): level by
level, a parent's units together in their parent's order, among them by number where all
of their codes are whole numbers ('2' before '11'), else as text; the same in one file, in
a partitioned dataset read back, in a subtree, and for flows."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.export import read_release, write_release
from hierdp_core.hierarchy import build_hierarchy
from hierdp_core.mechanisms.base import get_mechanism
from hierdp_core.mechanisms.streams import subtree
from hierdp_core.privacy.budget import PrivacyBudget
from hierdp_core.privacy.samplers import NoiseSource
from hierdp_core.queries.counts import count_data_from_table
from hierdp_core.reading_order import listed, reading_order, sibling_order

CODES = st.one_of(st.integers(0, 120).map(str), st.sampled_from(["007", "2A", "2B", "x", "10"]))


def _sibling_key(codes: list[str]):
    """What a reader expects: numbers by value where all are whole numbers, else text."""
    if all(c.isdigit() and c.isascii() for c in codes):
        return lambda c: (int(c), c)
    return lambda c: c.encode()


@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.tuples(CODES, CODES, CODES), min_size=1, max_size=40))
def test_reading_order_lists_each_parent_s_units_together_by_number_or_text(rows):
    table = pd.DataFrame(rows, columns=["a", "b", "c"]).drop_duplicates()
    h, _ = build_hierarchy(table, ["a", "b", "c"], local_codes=True)
    order = reading_order(h)
    assert sorted(order.tolist()) == list(range(h.n_nodes))  # a permutation
    levels = h.level_of_nodes()[order]
    assert (np.diff(levels) >= 0).all()  # level by level
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    for level in range(1, h.n_levels):
        nodes = order[levels == level]
        parents = position[h.parent[nodes]]
        assert (np.diff(parents) >= 0).all()  # under their parents, in the parents' order
        for parent in np.unique(h.parent[nodes]):
            siblings = nodes[h.parent[nodes] == parent]
            codes = [str(c) for c in np.asarray(h.codes[level], dtype=object)[
                siblings - h.level_offsets[level]]]
            assert codes == sorted(codes, key=_sibling_key(codes))


def test_sibling_order_reads_numbers_by_value_and_other_codes_as_text():
    assert sibling_order(["1", "11", "2", "007", "10"]).tolist() == [0, 2, 3, 4, 1]
    assert sibling_order(["b", "a", "10", "9"]).tolist() == [2, 3, 1, 0]


def _region_release():
    table = pd.DataFrame({"region": ["1", "1", "2", "11", "11", "2"],
                          "commune": ["10", "2", "3", "100", "20", "1"],
                          "n": [5, 7, 4, 3, 9, 1]})
    data = count_data_from_table(table, ["region", "commune"], count_column="n")
    return get_mechanism("topdown").release(data, PrivacyBudget.pure(1.0),
                                            source=NoiseSource(seed=1))


def test_a_release_table_lists_regions_2_before_11_in_every_format(tmp_path):
    release = _region_release()
    frame = release.to_frame()
    assert frame["node_id"].tolist() == ["root", "1", "2", "11", "1/2", "1/10", "2/1", "2/3",
                                         "11/20", "11/100"]
    h = release.hierarchy
    assert (frame["value"].to_numpy() == release.values[reading_order(h), 0]).all()
    write_release(release, tmp_path / "one", formats=("csv",), structure_declared=True)
    write_release(release, tmp_path / "parts", formats=("parquet-dataset",),
                  structure_declared=True)
    one, _ = read_release(tmp_path / "one")
    parts, _ = read_release(tmp_path / "parts")
    assert parts["node_id"].tolist() == frame["node_id"].tolist()
    pd.testing.assert_frame_equal(parts[one.columns], one, check_dtype=False)


def test_a_subtree_lists_its_units_as_the_whole_tree_does():
    h = _region_release().hierarchy
    block = subtree(h, 1, 3)  # regions '11' and '2' with their communes
    whole = h.node_ids()[reading_order(h)].tolist()
    mine = block.node_ids()[reading_order(block)].tolist()[1:]
    assert mine == [i for i in whole if i.split("/")[0] in {"2", "11"}]
    assert listed(h, np.array([3, 2, 1])).tolist() == [1, 3, 2]


def test_a_flow_release_lists_pairs_by_origin_then_destination_by_number():
    from hierdp_core.flows.data import flow_data_from_table

    flows = pd.DataFrame({"o": ["11", "2", "1", "11", "2"], "d": ["2", "11", "2", "1", "1"],
                          "n": [5, 6, 7, 8, 9]})
    data = flow_data_from_table(flows, ["o"], ["d"], count_column="n")
    release = get_mechanism("vanilla-gauss").release(data, PrivacyBudget.zcdp(10.0),
                                                     source=NoiseSource(seed=2))
    frame = release.to_frame()
    leaves = frame[frame["level"] == frame["level"].max()]
    pairs = list(zip(leaves["origin_id"], leaves["destination_id"], strict=True))
    assert len(pairs) == 5 and pairs == sorted(pairs, key=lambda p: (int(p[0]), int(p[1])))
