"""Tests of the one-core fast paths (issue 19 point 5): building a hierarchy from rows already
in tree order without sorting, and TopDown's per-segment projection and rounding made on
padded row blocks. Each is checked against a plain implementation of its contract, and
TopDown on one sub-tree alone against the same sub-tree in the whole tree."""

from __future__ import annotations

import doctest
import functools
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from conftest import tree_tables
from hypothesis import given, settings
from hypothesis import strategies as st

import hierdp_core.consistency.segment_rows as rows_module
import hierdp_core.consistency.segments as seg_module
import hierdp_core.tree_levels as levels_module
from hierdp_core.consistency.segment_rows import row_blocks
from hierdp_core.consistency.segments import project_and_round, project_segments, round_segments
from hierdp_core.consistency.topdown import topdown
from hierdp_core.hierarchy import build_from_codes, build_hierarchy
from hierdp_core.tree_levels import levels_any_order, levels_in_tree_order


@pytest.mark.parametrize("module", [rows_module, levels_module])
def test_module_doctests_pass(module):
    result = doctest.testmod(module)
    assert result.attempted >= 1 and result.failed == 0


def _starts(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


# ---- building from rows in tree order --------------------------------------------------
def _as(column: pd.Series, kind: str):
    if kind == "categorical":
        return pd.Categorical(column, categories=sorted(column.unique()))
    if kind == "integer":  # integer codes ordered like the strings
        return np.searchsorted(np.sort(column.unique()), column.to_numpy()).astype(np.int32)
    return column.to_numpy(dtype=object)


@settings(max_examples=80, deadline=None)
@given(tree_tables(max_depth=3, max_children=4), st.booleans(),
       st.sampled_from(["object", "categorical", "integer"]))
def test_tree_order_levels_equal_any_order_levels(tt, local, kind):
    table = tt.table.sort_values(tt.levels, kind="stable").reset_index(drop=True)
    codes = [_as(table[c], kind) for c in tt.levels]
    fast = levels_in_tree_order(codes, local)
    assert fast is not None  # sorted rows with globally increasing codes
    slow = levels_any_order(codes, tt.levels, local, None)
    for a, b in zip(fast[0] + fast[1] + [fast[2]], slow[0] + slow[1] + [slow[2]], strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(tree_tables(max_depth=3, max_children=4), st.integers(0, 2**32 - 1))
def test_build_is_the_same_for_sorted_and_shuffled_rows(tt, seed):
    table = tt.table.sort_values(tt.levels, kind="stable").reset_index(drop=True)
    h, leaf = build_hierarchy(table, tt.levels)
    perm = np.random.default_rng(seed).permutation(len(table))
    h2, leaf2 = build_hierarchy(table.iloc[perm].reset_index(drop=True), tt.levels)
    for name in ("level_offsets", "parent", "child_ptr"):
        assert np.array_equal(getattr(h, name), getattr(h2, name))
    assert all(np.array_equal(a, b) for a, b in zip(h.codes, h2.codes, strict=True))
    assert np.array_equal(leaf[perm], leaf2)


def test_rows_out_of_tree_order_take_the_general_path():
    codes = [np.array([1, 1, 2, 1]), np.array([10, 11, 20, 12])]
    assert levels_in_tree_order(codes, False) is None
    h, leaf = build_from_codes(codes, ["s", "c"])
    assert h.node_ids().tolist() == ["root", "1", "2", "1/10", "1/11", "1/12", "2/20"]
    assert leaf.tolist() == [0, 1, 3, 2]


# ---- projection and rounding on row blocks ---------------------------------------------
def _reference_segment(y: np.ndarray, total: float) -> np.ndarray:
    """The documented contract, one segment at a time: tau from the values sorted in
    decreasing order (sums running over them in that order), then floors plus one for the
    largest fractional parts on the 2^-35 grid, ties by position."""
    ys = np.sort(y)[::-1]
    tau_k = (np.cumsum(ys) - total) / np.arange(1, y.size + 1)
    active = np.flatnonzero(ys > tau_k)
    tau = tau_k[active[-1]] if active.size and total > 0 else np.inf
    x = np.maximum(y - tau, 0.0)
    floors = np.floor(x + 1e-9)
    deficit = int(np.clip(np.rint(total - floors.sum()), 0, y.size))
    grid = np.floor((x - floors + 2.0**-20) * 2.0**35)
    order = np.lexsort((np.arange(y.size), -grid))
    out = floors.astype(np.int64)
    out[order[:deficit]] += 1
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 40), st.integers(0, 300)), min_size=1, max_size=30),
       st.integers(0, 2**32 - 1), st.sampled_from([1, 7, 64]))
def test_project_and_round_matches_the_per_segment_contract(segments, seed, block_cells):
    rng = np.random.default_rng(seed)
    lengths = np.array([n for n, _ in segments])
    totals = np.array([t for _, t in segments], dtype=float)
    # near-ties on purpose: integer values plus one shared fraction, and repeats
    y = rng.integers(-5, 30, lengths.sum()) + rng.choice([0.0, 0.3, 1 / 3, 1 - 1e-10])
    y[rng.random(y.size) < 0.3] = rng.normal(10, 20)
    starts = _starts(lengths)
    expected = np.concatenate([_reference_segment(part, t) for part, t
                               in zip(np.split(y, starts[1:]), totals, strict=True)])
    # however the segments are cut into blocks
    with mock.patch.object(seg_module, "row_blocks",
                           functools.partial(row_blocks, block_cells=block_cells)):
        assert np.array_equal(project_and_round(y, starts, totals), expected)
        x = project_segments(y, starts, totals)
        assert np.array_equal(round_segments(x, starts, totals), expected)


def test_no_segments():
    empty = np.array([], dtype=np.int64)
    assert project_and_round(np.array([]), empty, np.array([])).size == 0
    assert round_segments(np.array([]), empty, np.array([])).size == 0


# ---- a sub-tree alone ------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(tree_tables(max_depth=3, max_children=4), st.integers(0, 2**32 - 1), st.integers(1, 2))
def test_topdown_of_a_subtree_alone_equals_the_whole(tt, seed, k):
    h, _ = build_hierarchy(tt.table, tt.levels)
    if h.depth < 2:
        return
    rng = np.random.default_rng(seed)
    est = rng.normal(8, 10, (h.n_nodes, k)).round(rng.integers(0, 3))
    whole = topdown(h, est, rng.integers(0, 60, k))
    ids = h.node_ids()
    index = {node_id: i for i, node_id in enumerate(ids)}
    first = tt.levels[0]
    for unit in np.unique(tt.table[first].astype(str)):
        rows = tt.table[tt.table[first].astype(str) == unit]
        sub, _ = build_hierarchy(rows, tt.levels[1:], root_name=unit)
        nodes = [index[unit]] + [index[f"{unit}/{i}"] for i in sub.node_ids()[1:]]
        alone = topdown(sub, est[nodes], whole[index[unit]])
        assert np.array_equal(alone, whole[nodes])
