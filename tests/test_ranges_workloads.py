"""Workloads (answers, the bucket transform of DAWA, generators, user bands and files) and the
Hilbert ordering of 2-D grids."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hierdp_core.errors import InputError
from hierdp_core.ranges.hilbert import from_hilbert, hilbert_cells, rectangles, to_hilbert
from hierdp_core.ranges.workloads import (
    Workload,
    all_ranges,
    bands,
    clustered_ranges,
    identity,
    named_workload,
    prefix_ranges,
    random_ranges,
    read_workload_file,
)


def test_example_4_5_query_transform():
    """Spec 2.0: q = x2 + ... + x6 over B = {[1,2],[3,3],[4,7],[8,10]} is (1/2, 1, 3/4, 0)."""
    w = Workload(n=10, name="q", lo=np.array([1]), hi=np.array([5]))
    assert w.bucket_matrix(np.array([0, 2, 3, 7, 10])).ravel().tolist() == [0.5, 1, 0.75, 0]


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 30), st.integers(0, 2**31))
def test_expansion_identity_prop_4_6(n, seed):
    """W expand(B, s) = W-hat s for ranges and for the same queries as a matrix."""
    rng = np.random.default_rng(seed)
    edges = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, size=3)]))
    s = rng.normal(size=edges.size - 1)
    expanded = np.repeat(s / np.diff(edges), np.diff(edges))
    w = random_ranges(n, 20, seed=seed % 1000)
    as_matrix = Workload(n=n, name="m", matrix=w.to_matrix())
    for workload in (w, as_matrix):
        assert np.allclose(workload.answer(expanded), workload.bucket_matrix(edges) @ s)
    assert np.allclose(w.bucket_gram(edges), as_matrix.bucket_gram(edges))


def test_answers_against_brute_force():
    x = np.arange(12.0) ** 2
    w = random_ranges(12, 40, seed=4)
    brute = [x[a:b + 1].sum() for a, b in zip(w.lo, w.hi, strict=True)]
    assert np.allclose(w.answer(x), brute)
    assert np.allclose(w.answer(np.stack([x, 2 * x])), [brute, 2 * np.array(brute)])
    assert np.allclose(w.to_matrix() @ x, brute)


def test_generators():
    assert all_ranges(5).m == 15
    sampled = all_ranges(200, max_queries=1000, seed=1)
    pairs = set(zip(sampled.lo.tolist(), sampled.hi.tolist(), strict=True))
    assert sampled.m == len(pairs) == 1000 and (sampled.lo <= sampled.hi).all()
    assert prefix_ranges(4).hi.tolist() == [0, 1, 2, 3] and identity(3).m == 3
    c = clustered_ranges(4096, 2000, sigma=256, seed=2)
    assert c.m == 2000 and c.lo.min() >= 0 and c.hi.max() <= 4095
    assert np.array_equal(random_ranges(50, 10, 3).lo, random_ranges(50, 10, 3).lo)
    with pytest.raises(InputError, match="unknown workload"):
        named_workload("diagonal", 5)


def test_bands_and_files(tmp_path):
    ages = [str(a) for a in range(101)]
    w = bands(ages, "0-17, 18-64,65-100,42")
    assert w.lo.tolist() == [0, 18, 65, 42] and w.hi.tolist() == [17, 64, 100, 42]
    with pytest.raises(InputError, match="'120' is not a value"):
        bands(ages, "65-120")
    with pytest.raises(InputError, match="backwards"):
        bands(ages, "64-18")
    path = tmp_path / "w.csv"
    path.write_text("lo,hi\n0,4\n5,100\n")
    assert read_workload_file(ages, path).hi.tolist() == [4, 100]
    path.write_text("start,end\n0,4\n")
    with pytest.raises(InputError, match="needs columns lo and hi"):
        read_workload_file(ages, path)


def test_bad_workloads():
    with pytest.raises(InputError, match="not inside"):
        Workload(n=5, name="x", lo=np.array([0]), hi=np.array([5]))
    with pytest.raises(InputError, match="cannot answer"):
        prefix_ranges(4).answer(np.zeros(5))


@pytest.mark.parametrize("side", [1, 2, 4, 16, 64])
def test_hilbert_curve_visits_every_cell_by_unit_steps(side):
    cells = hilbert_cells(side)
    assert len({tuple(c) for c in cells.tolist()}) == side * side
    assert (np.abs(np.diff(cells, axis=0)).sum(axis=1) == 1).all()


def test_hilbert_round_trip_and_rectangles():
    grid = np.random.default_rng(1).integers(0, 9, size=(16, 16))
    assert np.array_equal(from_hilbert(to_hilbert(grid)), grid)
    assert from_hilbert(to_hilbert(grid) * 0.5).dtype == float  # estimates stay real
    w = rectangles(16, 30, 3, 5, seed=2)
    rng = np.random.default_rng(2)
    top, left = rng.integers(0, 14, size=30), rng.integers(0, 12, size=30)
    brute = [grid[t:t + 3, c:c + 5].sum() for t, c in zip(top, left, strict=True)]
    assert np.allclose(w.answer(to_hilbert(grid)), brute)
    with pytest.raises(InputError, match="power of two"):
        to_hilbert(np.zeros((6, 6)))
