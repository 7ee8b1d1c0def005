"""Tests of least squares' passes over the leaves without leaf-sized temporaries (issue 19
point 5): the down pass made a chunk of parents at a time, the up pass summing the leaves'
one variance without writing it per leaf; both bit for bit the plain computations."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import hierdp_core.consistency.least_squares as ls_module
from hierdp_core.consistency.least_squares import (
    add_to_children,
    level_variances,
    repeated_sums,
    tree_least_squares,
    up_pass,
)
from hierdp_core.hierarchy import build_from_codes


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=40), st.integers(1, 2),
       st.integers(1, 50), st.integers(0, 2**32 - 1))
def test_add_to_children_is_the_repeated_add(lengths, k, chunk, seed):
    rng = np.random.default_rng(seed)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    children = rng.normal(0, 1e3, (int(ptr[-1]), k))
    per_parent = rng.normal(0, 1e3, (len(lengths), k))
    expected = children + np.repeat(per_parent, lengths, axis=0)
    with mock.patch.object(ls_module, "_CHUNK_NODES", chunk):
        add_to_children(children, per_parent, ptr)
    assert children.tobytes() == expected.tobytes()


def test_tree_least_squares_does_not_depend_on_the_chunks():
    rng = np.random.default_rng(5)
    states = np.repeat(np.arange(4), [3, 50, 1, 20])
    codes = [states, np.arange(states.size)]
    h, _ = build_from_codes(codes, ["s", "c"])
    y = rng.normal(10, 5, (h.n_nodes, 2))
    variance = np.array([np.inf, 2.0, 1.0])
    whole = tree_least_squares(h, y, variance)
    for chunk in (1, 7, 64):
        with mock.patch.object(ls_module, "_CHUNK_NODES", chunk):
            assert tree_least_squares(h, y, variance).tobytes() == whole.tobytes()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=1, max_size=30),
       st.sampled_from([0.1, 1 / 3, 2.0 / 7, 1e-30, 12345.678]), st.integers(0, 1))
def test_up_pass_sums_the_leaf_variance_like_a_leaf_sized_array(lengths, leaf_var, last):
    codes = [np.repeat(np.arange(len(lengths)), lengths), np.arange(sum(lengths))]
    h, _ = build_from_codes(codes, ["s", "c"])
    variance = level_variances(h, np.array([np.inf, 3.0, leaf_var]))
    up = up_pass(h, np.ones((h.n_nodes, 1)), variance, last_level=last)
    expected = np.add.reduceat(np.full(h.n_leaves, variance[2]), h.child_starts(2))
    assert up.child_var_sums[1].tobytes() == expected.tobytes()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 2000), min_size=1, max_size=60),
       st.floats(1e-30, 1e12, allow_nan=False, allow_infinity=False))
def test_repeated_sums_are_the_sums_of_a_leaf_sized_array(lengths, value):
    lengths = np.array(lengths * 2)  # every length at least twice: one sum serves both
    starts = np.cumsum(lengths) - lengths
    expected = np.add.reduceat(np.full(int(lengths.sum()), value), starts)
    assert repeated_sums(value, lengths).tobytes() == expected.tobytes()


def test_up_pass_writes_the_leaf_variance_when_the_leaves_are_its_top():
    h, _ = build_from_codes([np.array([0, 1, 2])], ["c"])
    up = up_pass(h, np.ones((h.n_nodes, 1)), np.array([np.inf, 0.25]), last_level=1)
    assert up.node_var[h.level_slice(1)].tolist() == [0.25, 0.25, 0.25]
