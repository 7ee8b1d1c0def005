"""Tests of least squares' down pass to the leaves made a chunk of parents at a time (issue 19
point 5: no temporary as large as the leaf level): bit for bit the one-shot update."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import hierdp_core.consistency.least_squares as ls_module
from hierdp_core.consistency.least_squares import add_to_children, tree_least_squares
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
